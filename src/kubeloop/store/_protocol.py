"""The ``Store`` protocol: the storage contract, shaped like etcd's MVCC.

Guarantees every backend gives:

- **One global revision.** Every committed write (create, update, delete) gets the next revision;
  revisions never decrease, not even across a restart on the same data.
- **Compare-and-swap writes.** ``create`` succeeds only if the key is absent; ``update`` and
  ``delete`` succeed only if the key's current ``mod_revision`` equals ``expected_revision``
  (``None`` means "whatever is there now": an unconditional write, still atomic). ``create`` may
  also carry a ``guard=(other_key, mod_revision)``: it commits only while ``other_key`` is still at
  that revision, else :class:`GuardChanged` (etcd's ``Txn`` with a compare on a second key). The
  server guards a create by its namespace, so a namespace marked for deletion gets no new content
  after the mark commits.
- **Values carry their revision.** A write takes ``render(revision) -> bytes``; the store calls it
  once with the revision the write commits at, so the stored bytes can embed their own
  ``resourceVersion`` and lists can be served from stored bytes without re-encoding.
- **Durable on acknowledgement.** A write's coroutine returns only after its transaction is on
  disk. Concurrent writes may share one transaction (group commit).
- **Reads see only committed writes.** ``get`` and ``range`` read the latest committed state, or,
  with ``revision=R``, the state as of revision R while R is inside the history window.
- **Watch from a revision.** ``watch(prefix, after=R)`` yields every change with revision > R under
  the prefix, in revision order, with no gaps, then live changes. R older than the window raises
  :class:`Compacted` (the server's 410 Expired).
- **A watch is never behind the revision.** A change is pending on every watch of its prefix from the
  moment ``revision`` reports it (before its writer is answered), so ``poll()`` after reading
  ``revision`` returns every change up to it that the watch has not handed out yet: a cache can tell
  in one call, without waiting, whether anything under a prefix changed since it was filled.
- **Compaction** drops history at or below a revision; reads and watches below it are Compacted.

Keys are strings such as ``/registry/apps/deployments/ns/name``; ranges are by prefix, in key order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

__all__ = [
    "Compacted",
    "GuardChanged",
    "KeyExists",
    "KeyNotFound",
    "KeyValue",
    "RangeResult",
    "Render",
    "RevisionMismatch",
    "Store",
    "StoreError",
    "StoreEvent",
    "StoreWatch",
]

Render = Callable[[int], bytes]


class StoreError(Exception):
    """Base of the store's own errors; the server maps each one to an API error."""


class KeyExists(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} already exists")
        self.key = key


class KeyNotFound(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} not found")
        self.key = key


class RevisionMismatch(StoreError):
    """The key's mod revision is not the expected one (the optimistic lock failed)."""

    def __init__(self, key: str, expected: int, actual: int) -> None:
        super().__init__(f"key {key!r} is at revision {actual}, expected {expected}")
        self.key = key
        self.expected = expected
        self.actual = actual


class GuardChanged(StoreError):
    """A guarded create's guard key is no longer at the revision the caller read (absent: revision 0)."""

    def __init__(self, key: str, expected: int, actual: int) -> None:
        super().__init__(f"guard key {key!r} is at revision {actual}, expected {expected}")
        self.key = key
        self.expected = expected
        self.actual = actual


class Compacted(StoreError):
    """A read or watch asked for a revision older than the history the store still keeps."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"revision {requested} has been compacted (oldest kept: {compacted})")
        self.requested = requested
        self.compacted = compacted


class KeyValue(NamedTuple):
    """One version of a key. Immutable (a named tuple: built once per write on the hot path, where a
    frozen dataclass's construction cost several times as much; reads and watchers share it)."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int


@dataclass(slots=True)
class StoreEvent:
    """One committed change. For ``DELETE``, ``kv`` holds the last value (re-rendered at the delete's revision
    when the delete had a ``render``) and ``kv.mod_revision`` is the delete's revision.

    ``type``, ``kv`` and ``prev`` are never reassigned. A backend hands the same event object to every live
    watcher the change reaches, and ``memo`` (``None`` until a consumer sets it, not part of the event's
    equality) lets those watchers share what they derive from it: the first one to need it stores it there
    and the others reuse it (the server keeps the decoded objects there, so a change seen by N watchers
    with selectors is decoded once, not N times). Not frozen: a frozen dataclass's construction costs
    several times as much, and one is built per change a watcher receives.
    """

    type: Literal["PUT", "DELETE"]
    kv: KeyValue
    prev: KeyValue | None
    memo: Any = field(default=None, compare=False, repr=False)

    @property
    def revision(self) -> int:
        return self.kv.mod_revision


@dataclass(frozen=True, slots=True)
class RangeResult:
    items: list[KeyValue]
    revision: int  # the revision the read was served at
    more: bool  # True when ``limit`` cut the result short
    count: int  # keys in the whole range, ``limit`` ignored (etcd RangeResponse.count)


class StoreWatch(Protocol):
    """A watch: an async iterator of events in revision order, or whole batches at once.

    ``next_batch()`` waits for at least one event and returns every event pending (so a server can
    write them in one go); it returns ``[]`` when the watch or the store is closed. ``poll()`` returns
    every event pending without waiting (``[]`` when there is none). A watcher that falls more than
    the store's buffer behind gets :class:`Compacted` from either (it must relist), never unbounded
    memory. ``close()`` is idempotent.
    """

    def __aiter__(self) -> AsyncIterator[StoreEvent]: ...

    async def __anext__(self) -> StoreEvent: ...

    async def next_batch(self) -> list[StoreEvent]: ...

    def poll(self) -> list[StoreEvent]: ...

    def close(self) -> None: ...


class Store(Protocol):
    @property
    def revision(self) -> int:
        """The latest committed revision."""
        ...

    @property
    def compacted_revision(self) -> int:
        """History at or below this revision is gone."""
        ...

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None: ...

    async def range(
        self,
        prefix: str,
        *,
        start_after: str | None = None,
        limit: int | None = None,
        revision: int | None = None,
    ) -> RangeResult: ...

    async def create(self, key: str, render: Render, *, guard: tuple[str, int] | None = None) -> KeyValue: ...

    async def update(self, key: str, render: Render, *, expected_revision: int | None) -> KeyValue: ...

    async def delete(
        self, key: str, *, expected_revision: int | None, render: Render | None = None
    ) -> KeyValue: ...

    def watch(self, prefix: str, *, after: int) -> StoreWatch:
        """Changes under ``prefix`` with revision > ``after``. Raises :class:`Compacted` at once when
        ``after`` is older than the history kept. See :class:`StoreWatch`."""
        ...

    async def compact(self, revision: int) -> None: ...

    async def close(self) -> None: ...
