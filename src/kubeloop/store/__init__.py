"""Storage for the API server: the ``Store`` protocol (etcd-shaped MVCC) and its SQLite backend."""

from kubeloop.store._protocol import (
    Compacted,
    KeyExists,
    KeyNotFound,
    KeyValue,
    RangeResult,
    Render,
    RevisionMismatch,
    Store,
    StoreError,
    StoreEvent,
)

__all__ = [
    "Compacted",
    "KeyExists",
    "KeyNotFound",
    "KeyValue",
    "RangeResult",
    "Render",
    "RevisionMismatch",
    "Store",
    "StoreError",
    "StoreEvent",
]
