"""The SQLite backend of the ``Store`` protocol: MVCC rows, group commit, watch history across restarts.

Layout (one table, as kine does): every write inserts a row ``(rev, key, type, create_rev, prev_rev,
value)``; the current state is the newest row of each key whose type is PUT. ``meta`` keeps the
compaction point and, written by each compaction, the latest revision, so revisions keep increasing
across restarts even when the newest rows were compacted away.

Writes (group commit): ``create``/``update``/``delete`` queue an operation and wait. One committer
task takes every queued operation, checks each against the committed state plus the earlier
operations of the same batch, assigns revisions in order, renders values, and writes the whole batch
in one SQLite transaction on a dedicated thread (WAL, ``synchronous=FULL``: the commit is on disk
when it returns; a batch of up to 128 writes is one INSERT statement, its own transaction, of one of
eight fixed sizes, padded). Only
then is the in-memory index updated, watchers fed and callers answered, so no reader or watcher
ever sees a write that could be lost in a crash. Operations arriving while a
batch commits form the next batch: many writers share one fsync. A queued write is committed even if
its caller is cancelled meanwhile (the cancellation ends the wait, not the write).

Reads are served from memory: a dict of current key-values plus the keys in order for prefix ranges,
and a ring of recent events (with each event's previous value) used both to resume watches and to
read the state as of an older revision inside the window. Compaction drops rows superseded at or
below the compaction revision, keeping for each key its newest version at or below it (as etcd), so
any revision above the compaction point stays readable.

This module is a single state machine (the committer) with its read side, hence its length.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kubeloop.store._keys import SortedKeys
from kubeloop.store._protocol import (
    Compacted,
    GuardChanged,
    KeyExists,
    KeyNotFound,
    KeyValue,
    RangeResult,
    Render,
    RevisionMismatch,
    StoreError,
    StoreEvent,
)

__all__ = ["SqliteStore", "StoreClosed"]

_PUT = 0
_DELETE = 1

# No index on ``key``: nothing reads rows by key (opening scans the table in revision order, compaction
# selects by revision), and keeping one cost every insert a second B-tree update (about 2.5 us of the
# SQLite thread per write). Databases written before keep no index either: opening drops theirs (a
# one-off that frees its pages; an older kubeloop opening the file again simply builds it anew).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS revisions (
    rev INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    type INTEGER NOT NULL,
    create_rev INTEGER NOT NULL,
    prev_rev INTEGER,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
DROP INDEX IF EXISTS revisions_key_rev;
"""


class StoreClosed(StoreError):
    """The store was closed; no further writes are accepted."""


# A queued write: (kind, key, render, expected revision, the caller's future, guard). A plain tuple:
# one is built per write, on the hot path.
_Op = tuple[int, str, Render | None, int | None, asyncio.Future[KeyValue], tuple[str, int] | None]
_CREATE = 0
_UPDATE = 1
_DELETE_OP = 2
# A batch's rows, flattened into the INSERT's parameters: rev, key, type, create_rev, prev_rev, value.
# Only types the sqlite3 module binds as they are (int, str, bytearray): it sends any other value (bytes,
# None) through its adapter protocol first, whose failed ``__adapt__`` lookup formats an AttributeError
# each time (about 2-3k instructions per parameter, on the SQLite thread while it holds the GIL). So the
# value goes as a bytearray copy, and a row without a previous revision says ``_NO_PREV`` (revisions
# start at 1), which the statement stores as NULL.
_Params = list[int | str | bytearray]
_NO_PREV = 0
_COLUMNS = 6
_Job = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]
# A committed change as the store keeps it: (type, kv, prev). The public StoreEvent is built from it
# only for a watcher that receives it: most writes in a busy server have no watcher under their key.
_Change = tuple[Literal["PUT", "DELETE"], KeyValue, KeyValue | None]
# Rows per INSERT statement: one statement per batch in the common case (a statement's own implicit
# transaction, so one SQLite call and one GIL hand-off per commit), within SQLite's 999-parameter floor.
_ROWS_PER_STATEMENT = 128
# Builds a KeyValue without its named-tuple ``__new__``, a Python function call (about 1k instructions
# a write, on the event loop); the same tuple, as ``KeyValue._make`` builds it.
_new_kv = tuple.__new__
# A batch is written by the statement of the smallest of a few fixed sizes that holds it (the powers of
# two up to _ROWS_PER_STATEMENT), its other rows padding of zeros that the statement's WHERE leaves out
# (revisions start at 1). SQLite compiles a statement the first time its text is seen (about 12k
# instructions a row, with the GIL held); one size per batch size meant compiling a new statement for
# each new size a busy server's batches came in, dozens over its first minutes: now eight in all.
_INSERT = (
    "INSERT INTO revisions (rev, key, type, create_rev, prev_rev, value)"
    f" SELECT column1, column2, column3, column4, NULLIF(column5, {_NO_PREV}), column6 FROM (VALUES "
)
_INSERT_END = ") WHERE column1 > 0"
_ROW = "(?, ?, ?, ?, ?, ?)"
_PADDING: _Params = [0] * (_COLUMNS * _ROWS_PER_STATEMENT)


class _History:
    """The recent changes, oldest first: what watches resume from and older reads undo.

    Kept as three parallel deques (types, values, previous values), not one deque of ``_Change``
    tuples: a tuple holding a ``KeyValue`` (a tuple subclass, which the cyclic collector never
    untracks) is a container the collector walks in every collection for as long as it stays in the
    window, one more per write (0.9k instructions per create in ``benchmarks/instructions.py``). The values are the
    very ``KeyValue`` objects the index holds, so the window adds no object per write."""

    def __init__(self) -> None:
        self._types: deque[Literal["PUT", "DELETE"]] = deque()
        self._kvs: deque[KeyValue] = deque()
        self._prevs: deque[KeyValue | None] = deque()

    def __len__(self) -> int:
        return len(self._kvs)

    def append(self, change: _Change) -> None:
        typ, kv, prev = change
        self._types.append(typ)
        self._kvs.append(kv)
        self._prevs.append(prev)

    def extend(self, changes: list[_Change]) -> None:
        types, kvs, prevs = zip(*changes, strict=True)
        self._types.extend(types)
        self._kvs.extend(kvs)
        self._prevs.extend(prevs)

    def revision_at(self, i: int) -> int:
        """The revision of the ``i``-th change (negative: from the newest)."""
        return self._kvs[i].mod_revision

    def drop_through(self, revision: int) -> None:
        """Forget the changes at or below ``revision``."""
        kvs = self._kvs
        while kvs and kvs[0].mod_revision <= revision:
            kvs.popleft()
            self._types.popleft()
            self._prevs.popleft()

    def newest_first(self) -> Iterator[_Change]:
        return zip(reversed(self._types), reversed(self._kvs), reversed(self._prevs), strict=True)


@dataclass(eq=False, slots=True)
class _Watcher:
    prefix: str
    buffer_limit: int
    events: deque[StoreEvent] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False
    overflowed: int | None = None  # the last revision delivered before the buffer overflowed
    needle: str = ""  # NUL and the prefix: what a batch's joined keys hold if a key may be under it

    def __post_init__(self) -> None:
        self.needle = "\0" + self.prefix


class _Watch:
    """A :class:`~kubeloop.store.StoreWatch` over a :class:`SqliteStore`."""

    def __init__(self, store: SqliteStore, watcher: _Watcher) -> None:
        self._store = store
        self._w = watcher

    def __aiter__(self) -> AsyncIterator[StoreEvent]:
        return self

    async def __anext__(self) -> StoreEvent:
        if not self._w.events and not await self._wait():
            raise StopAsyncIteration
        return self._w.events.popleft()

    async def next_batch(self) -> list[StoreEvent]:
        if not self._w.events and not await self._wait():
            return []
        return self.poll()

    def poll(self) -> list[StoreEvent]:
        w = self._w
        if not w.events:
            self._check_overflow()
            return []
        batch = list(w.events)
        w.events.clear()
        return batch

    def _check_overflow(self) -> None:
        """Raise :class:`Compacted` (closing the watch) if the watcher fell more than its buffer behind."""
        if self._w.overflowed is not None:
            self.close()
            raise Compacted(self._w.overflowed, self._store.revision)

    async def _wait(self) -> bool:
        """Until an event is pending (``True``) or the watch is closed (``False``); an overflow raises
        :class:`Compacted` and closes the watch."""
        w = self._w
        while not w.events:
            self._check_overflow()
            if w.closed:
                return False
            w.wake.clear()
            await w.wake.wait()
        return True

    def close(self) -> None:
        if not self._w.closed:
            self._w.closed = True
            self._w.wake.set()
            self._store._watchers.discard(self._w)


class SqliteStore:
    """An etcd-shaped MVCC store on one SQLite file. Create with :meth:`open`."""

    _loop: asyncio.AbstractEventLoop  # the loop open() ran on: writes and the committer live there

    def __init__(self, path: Path, *, history: int, watch_buffer: int) -> None:
        self._path = path
        self._history = history
        self._watch_buffer = watch_buffer
        # The SQLite thread: every database call runs there, in order (the connection is not shared).
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._jobs_thread = threading.Thread(target=self._serve_jobs, name="kubeloop-sqlite", daemon=True)
        self._db: sqlite3.Connection | None = None
        self._index: dict[str, KeyValue] = {}
        self._keys = SortedKeys()
        self._ring = _History()
        self._revision = 0
        self._compacted = 0
        self._pending: list[_Op] = []
        self._waiter: asyncio.Future[None] | None = None  # the idle committer's wake-up
        self._committer: asyncio.Task[None] | None = None
        self._watchers: set[_Watcher] = set()
        self._closed = True  # until open() has started the committer
        self._closing: asyncio.Future[None] | None = None
        self.batches_committed = 0
        self.writes_committed = 0

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    async def open(cls, path: str | Path, *, history: int = 10_000, watch_buffer: int = 10_000) -> SqliteStore:
        """Open (creating if needed) the database at ``path``; ``history`` is how many recent revisions
        stay watchable and readable; ``watch_buffer`` how far one watcher may fall behind."""
        store = cls(Path(path), history=history, watch_buffer=watch_buffer)
        store._loop = asyncio.get_running_loop()
        store._jobs_thread.start()
        try:
            await store._on_thread(store._load)
        except BaseException:
            store._jobs.put(None)
            raise
        store._closed = False
        store._committer = asyncio.create_task(store._commit_loop(), name="kubeloop-store-committer")
        return store

    def _load(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        # Statements are cached by text: the eight INSERT sizes, plus the few others.
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False,
                             cached_statements=2 * _ROWS_PER_STATEMENT)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(_SCHEMA)
        self._db = db
        meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
        max_rev = db.execute("SELECT MAX(rev) FROM revisions").fetchone()[0] or 0
        self._revision = max(int(meta.get("revision", 0)), max_rev)
        self._compacted = int(meta.get("compacted", 0))
        # One scan in revision order (the table's own order: ``rev`` is its rowid) rebuilds the current
        # state, each key's newest row winning, and the event ring above the compaction point. The previous
        # version of a row is its key's state just before it in the scan: compaction keeps every row a
        # newer one names in ``prev_rev``.
        index = self._index
        compacted = self._compacted
        for key, typ, create_rev, prev_rev, rev, value in db.execute(
            "SELECT key, type, create_rev, prev_rev, rev, value FROM revisions ORDER BY rev"
        ):
            kv = KeyValue(key, bytes(value), create_rev, rev)
            current = index.get(key)
            if typ == _PUT:
                index[key] = kv
            elif current is not None:
                del index[key]
            if rev > compacted:
                prev = current if current is not None and current.mod_revision == prev_rev else None
                self._ring.append(("PUT" if typ == _PUT else "DELETE", kv, prev))
        self._keys = SortedKeys(index)

    async def close(self) -> None:
        """Commit what is queued, end every watch, close the database. Idempotent; cancelling a close
        stops the caller's wait, not the closing (a later ``close()`` waits for the same closing)."""
        if self._closing is None:
            self._closed = True
            self._wake()
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        if self._committer is not None:
            await asyncio.wait([self._committer])  # however it ended: queued writes are answered either way
        for w in list(self._watchers):
            w.closed = True
            w.wake.set()
        self._watchers.clear()
        try:
            await self._on_thread(self._close_db)
        finally:
            self._jobs.put(None)

    async def _on_thread(self, call: Callable[..., Any], *args: Any) -> Any:
        """Run ``call(*args)`` on the SQLite thread and return its result (one queue hand-off each way;
        an executor's futures, locks and idle-thread bookkeeping cost about as much again)."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._jobs.put((call, args, future))
        return await future

    def _serve_jobs(self) -> None:
        """The SQLite thread's loop: each job in turn, its outcome handed to the event loop."""
        loop = self._loop
        while (job := self._jobs.get()) is not None:
            call, args, future = job
            try:
                result = call(*args)
            except BaseException as exc:  # handed to the waiting coroutine, which decides
                try:
                    loop.call_soon_threadsafe(_fail, future, exc)
                except RuntimeError:  # the event loop is gone: nobody waits
                    return
            else:
                try:
                    loop.call_soon_threadsafe(_succeed, future, result)
                except RuntimeError:
                    return

    def _close_db(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # ---------------------------------------------------------------- reads

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def _check_revision(self, revision: int | None) -> None:
        if revision is not None and revision < self._compacted:
            raise Compacted(revision, self._compacted)

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        if revision is None:
            return self._index.get(key)
        self._check_revision(revision)
        if revision >= self._revision:
            return self._index.get(key)
        return self._state_at(revision, key, key + "\x00", exact=True).get(key)

    async def range(
        self,
        prefix: str,
        *,
        start_after: str | None = None,
        limit: int | None = None,
        revision: int | None = None,
    ) -> RangeResult:
        self._check_revision(revision)
        end = prefix + "\U0010ffff"
        if revision is None or revision >= self._revision:
            keys, count = self._keys.select(prefix, end, after=start_after or None, limit=limit)
            return RangeResult([self._index[k] for k in keys], self._revision, len(keys) < count, count)
        state = self._state_at(revision, prefix, end, exact=False)
        keys = sorted(k for k in state if start_after is None or k > start_after)
        count = len(keys)
        if limit is not None:
            keys = keys[:limit]
        return RangeResult([state[k] for k in keys], revision, len(keys) < count, count)

    def _state_at(self, revision: int, lo: str, hi: str, *, exact: bool) -> dict[str, KeyValue]:
        """The keys in [lo, hi) as of ``revision``: the current state with later events undone."""
        if exact:
            state = {lo: self._index[lo]} if lo in self._index else {}
        else:
            state = {k: self._index[k] for k in self._keys.select(lo, hi)[0]}
        for _, kv, prev in self._ring.newest_first():
            if kv.mod_revision <= revision:
                break
            key = kv.key
            if not (lo <= key < hi):
                continue
            if prev is None:
                state.pop(key, None)
            else:
                state[key] = prev
        return state

    def watch(self, prefix: str, *, after: int) -> _Watch:
        if self._closed:
            raise StoreClosed("the store is closed")
        if after < self._compacted:
            raise Compacted(after, self._compacted)
        watcher = _Watcher(prefix, self._watch_buffer)
        if after < self._revision:
            # Walk back from the newest event only as far as ``after``: a watch that resumes near the head
            # (the common case) costs what it replays, not the whole history window.
            replay: list[_Change] = []
            for change in self._ring.newest_first():
                if change[1].mod_revision <= after:
                    break
                if change[1].key.startswith(prefix):
                    replay.append(change)
            watcher.events.extend(StoreEvent(*change) for change in reversed(replay))
        self._watchers.add(watcher)
        return _Watch(self, watcher)

    # ---------------------------------------------------------------- writes

    async def create(self, key: str, render: Render, *, guard: tuple[str, int] | None = None) -> KeyValue:
        if self._closed:
            raise StoreClosed("the store is closed")
        future: asyncio.Future[KeyValue] = self._loop.create_future()
        self._pending.append((_CREATE, key, render, None, future, guard))
        if self._waiter is not None:
            self._wake()
        # A cancelled caller cancels ``future`` only: the queued operation is still committed (the
        # committer ignores whether anyone waits) and a committed write is never undone.
        return await future

    async def update(self, key: str, render: Render, *, expected_revision: int | None) -> KeyValue:
        if self._closed:
            raise StoreClosed("the store is closed")
        future: asyncio.Future[KeyValue] = self._loop.create_future()
        self._pending.append((_UPDATE, key, render, expected_revision, future, None))
        if self._waiter is not None:
            self._wake()
        return await future

    async def delete(self, key: str, *, expected_revision: int | None, render: Render | None = None) -> KeyValue:
        if self._closed:
            raise StoreClosed("the store is closed")
        future: asyncio.Future[KeyValue] = self._loop.create_future()
        self._pending.append((_DELETE_OP, key, render, expected_revision, future, None))
        if self._waiter is not None:
            self._wake()
        return await future

    def _wake(self) -> None:
        """Wake the committer for the operation just queued (once per batch, not once per write)."""
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def compact(self, revision: int) -> None:
        """Forget history at or below ``revision`` (clamped to the current revision)."""
        revision = min(revision, self._revision)
        if revision <= self._compacted:
            return
        await self._on_thread(self._compact_db, revision)
        self._compacted = revision
        self._ring.drop_through(revision)

    def _compact_db(self, revision: int) -> None:
        """Delete the rows no read at or after ``revision`` needs: deletions, and rows superseded by a
        later row of their key at or below it. A row's successor names it in ``prev_rev``, and the
        previous compaction (at ``self._compacted``) removed every row superseded by then, so only
        rows written since are looked at: the cost is the history window, not the whole table."""
        db = self._db
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        try:
            bounds = {"c": revision, "p": self._compacted, "d": _DELETE}
            # Commits do not write the latest revision anywhere but in their rows; the rows about to be
            # dropped may include the newest ones (deletions), so the revision is recorded first.
            db.execute(
                "INSERT OR REPLACE INTO meta (name, value) SELECT 'revision', MAX("
                "COALESCE((SELECT MAX(rev) FROM revisions), 0), "
                "COALESCE((SELECT value FROM meta WHERE name = 'revision'), 0))"
            )
            # Two statements, superseded rows first: the successors' prev_rev list is built before
            # anything is deleted (one statement with OR lets SQLite delete a deletion row before
            # reading its prev_rev).
            db.execute(
                "DELETE FROM revisions WHERE rev IN ("
                "SELECT prev_rev FROM revisions WHERE rev > :p AND rev <= :c AND prev_rev IS NOT NULL)",
                bounds,
            )
            db.execute("DELETE FROM revisions WHERE type = :d AND rev > :p AND rev <= :c", bounds)
            db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('compacted', ?)", (revision,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    async def _commit_loop(self) -> None:
        loop = self._loop
        while True:
            if not self._pending and not self._closed:
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiter = waiter
                await waiter
            batch, self._pending = self._pending, []
            if not batch:
                if self._closed:
                    return
                continue
            rows, changes, futures = self._prepare(batch)
            failure: StoreError | None = None
            if rows:
                try:
                    await self._on_thread(self._write_rows, rows)
                except Exception as exc:  # disk full, I/O error: nobody is acknowledged
                    failure = StoreError(f"commit failed: {exc}")
                else:
                    self._apply(changes)
            if failure is None:
                for future, change in zip(futures, changes, strict=True):
                    if not future.done():  # its caller was cancelled: the write stands all the same
                        future.set_result(change[1])
            else:
                for future in futures:
                    if not future.done():
                        future.set_exception(failure)
            if failure is None and len(self._ring) > self._history * 11 // 10:
                await self.compact(self._ring.revision_at(-self._history) - 1)
            if self._closed and not self._pending:
                return

    def _prepare(
        self, batch: list[_Op]
    ) -> tuple[_Params, list[_Change], list[asyncio.Future[KeyValue]]]:
        """Check each operation against committed state plus earlier ones in the batch; assign revisions.

        Every queued operation is judged, including those whose caller has since been cancelled."""
        overlay: dict[str, KeyValue | None] = {}
        index = self._index
        rows: _Params = []
        changes: list[_Change] = []
        futures: list[asyncio.Future[KeyValue]] = []  # of each change, in order
        rev = self._revision
        for kind, key, render, expected, future, guard in batch:
            current = overlay[key] if key in overlay else index.get(key)
            try:
                if kind == _CREATE:
                    if current is not None:
                        raise KeyExists(key)
                    if guard is not None:
                        guard_key, guard_rev = guard
                        held = overlay[guard_key] if guard_key in overlay else index.get(guard_key)
                        held_rev = held.mod_revision if held is not None else 0
                        if held_rev != guard_rev:
                            raise GuardChanged(guard_key, guard_rev, held_rev)
                elif current is None:
                    raise KeyNotFound(key)
                elif expected is not None and current.mod_revision != expected:
                    raise RevisionMismatch(key, expected, current.mod_revision)
                if render is not None:
                    # Copied into the bytearray the INSERT binds (see _Params), and from it into the
                    # bytes the index keeps for as long as the key lives, so at their own size: orjson
                    # hands back bytes in an 8 KiB allocation when the document is smaller (a 900-byte
                    # ConfigMap held 8.2 KB of memory, and faulted in two fresh pages per create).
                    # (About 1k instructions less than the former bytes(memoryview(...)) alone.)
                    stored = bytearray(render(rev + 1))
                    value = bytes(stored)
                else:
                    assert current is not None
                    value = current.value
                    stored = bytearray(value)
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
                continue
            rev += 1
            if current is None:
                kv = _new_kv(KeyValue, (key, value, rev, rev))
                rows += (rev, key, _PUT, rev, _NO_PREV, stored)
                changes.append(("PUT", kv, None))
                overlay[key] = kv
            else:
                kv = _new_kv(KeyValue, (key, value, current.create_revision, rev))
                if kind == _DELETE_OP:
                    rows += (rev, key, _DELETE, current.create_revision, current.mod_revision, stored)
                    changes.append(("DELETE", kv, current))
                    overlay[key] = None
                else:
                    rows += (rev, key, _PUT, current.create_revision, current.mod_revision, stored)
                    changes.append(("PUT", kv, current))
                    overlay[key] = kv
            futures.append(future)
        return rows, changes, futures

    def _write_rows(self, rows: _Params) -> None:
        """Commit ``rows`` in one transaction (on the store's thread): one INSERT statement, committed
        by itself, for a batch of up to ``_ROWS_PER_STATEMENT`` rows; an explicit transaction around
        several statements for a larger one."""
        db = self._db
        assert db is not None
        count = len(rows) // _COLUMNS
        if count <= _ROWS_PER_STATEMENT:
            size = _statement_size(count)
            if size != count:
                rows = rows + _PADDING[: (size - count) * _COLUMNS]
            # executemany of the one parameter list, not execute: the same statement, bound and stepped
            # once, minus the ``lastrowid`` read that execute() makes after it, which Python 3.11's sqlite3
            # wraps in a GIL release. Each release is a re-take of the GIL from the busy event loop (a
            # futex hand-off and often two context switches on the server's core): 6 → 5 per commit.
            db.executemany(_insert_statement(size), (rows,))
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            step = _ROWS_PER_STATEMENT * _COLUMNS
            for start in range(0, len(rows), step):
                chunk = rows[start : start + step]
                count = len(chunk) // _COLUMNS
                size = _statement_size(count)
                if size != count:
                    chunk += _PADDING[: (size - count) * _COLUMNS]
                db.execute(_insert_statement(size), chunk)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _apply(self, changes: list[_Change]) -> None:
        """Make a committed batch visible: index, key list, ring, watchers (in revision order)."""
        index = self._index
        keys: list[str] = []
        for change in changes:
            kind, kv, _ = change
            key = kv.key
            keys.append(key)
            if kind == "PUT":
                if key not in index:
                    self._keys.add(key)
                index[key] = kv
            elif index.pop(key, None) is not None:
                self._keys.remove(key)
        self._ring.extend(changes)
        self._revision = changes[-1][1].mod_revision
        self.batches_committed += 1
        self.writes_committed += len(changes)
        if not self._watchers:
            return
        delivered: dict[int, StoreEvent] = {}  # one StoreEvent per change, shared by its watchers
        # Most watchers want none of a batch (a server's own watches are on RBAC objects and CRDs, and a
        # busy server mostly writes other things): one substring search over the batch's keys, each
        # after a NUL, rules such a watcher out without a test per change in Python. A key holding a
        # NUL can only make the search say "maybe", never "no": the test per change still decides.
        joined = "\0" + "\0".join(keys)
        for w in list(self._watchers):
            if w.needle not in joined:
                continue
            fed = False
            for i, change in enumerate(changes):
                if change[1].key.startswith(w.prefix):
                    if len(w.events) >= w.buffer_limit:
                        w.overflowed = w.events[-1].revision if w.events else change[1].mod_revision - 1
                        w.events.clear()
                        self._watchers.discard(w)
                        fed = True
                        break
                    event = delivered.get(i)
                    if event is None:
                        event = delivered[i] = StoreEvent(*change)
                    w.events.append(event)
                    fed = True
            if fed:
                w.wake.set()


_INSERT_STATEMENTS: dict[int, str] = {}


def _statement_size(rows: int) -> int:
    """The rows of the INSERT that writes ``rows`` rows (1 to _ROWS_PER_STATEMENT): the smallest power of
    two that holds them."""
    return 1 << (rows - 1).bit_length()


def _insert_statement(rows: int) -> str:
    """The INSERT of ``rows`` rows, padding included (the same text each time, so SQLite's statement
    cache keeps it)."""
    text = _INSERT_STATEMENTS.get(rows)
    if text is None:
        text = _INSERT_STATEMENTS[rows] = _INSERT + ",".join([_ROW] * rows) + _INSERT_END
    return text


def _succeed(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():  # its waiter was cancelled: the work was done all the same
        future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
