"""Storage for the API server: the ``Store`` protocol (etcd-shaped MVCC) and its SQLite backend."""

from kubeloop.store._protocol import (
    Compacted,
    GuardChanged,
    KeyExists,
    KeyNotFound,
    KeyValue,
    RangeResult,
    Render,
    RevisionMismatch,
    Store,
    StoreError,
    StoreEvent,
    StoreWatch,
)
from kubeloop.store._sqlite import SqliteStore, StoreClosed

__all__ = [
    "Compacted",
    "GuardChanged",
    "KeyExists",
    "KeyNotFound",
    "KeyValue",
    "RangeResult",
    "Render",
    "RevisionMismatch",
    "SqliteStore",
    "Store",
    "StoreClosed",
    "StoreError",
    "StoreEvent",
    "StoreWatch",
]
