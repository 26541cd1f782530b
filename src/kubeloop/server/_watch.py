"""watch: a chunked stream of ``{"type": ..., "object": ...}\\n`` events from the store.

Guarantees (apimachinery reference 5.3; apiserver ``handlers/watch.go``, ``storage/cacher``):

- Start point: resourceVersion unset or ``0`` sends a synthetic ADDED for every matching object of
  the current state, then the changes after it; ``N`` sends only changes after N (also when N is
  newer than the store: the watch waits for it, as upstream's watch cache does). A compacted N is
  answered with HTTP 200 and a single ERROR event (410, reason Expired), then the stream ends.
- Events are in revision order with no gaps; every event ends with a newline; all events pending
  when the writer wakes go out in one write. Objects are the stored bytes, not re-encoded.
- With selectors, an object that starts matching is ADDED, one that stops matching is DELETED
  (its previous state with the event's resourceVersion), one that matches before and after is
  MODIFIED (cacher.go convertToWatchEvent). The selectors are judged on objects decoded at most
  once per event, whatever the number of watchers: the decoded objects are kept on the event the
  store shares among its watchers (``StoreEvent.memo``), read only.
- What a watcher renders from an event is shared the same way, by what it depends on: a custom
  resource converted to the version watched is converted once per event and version; an event
  rendered as a Table (``kubectl get -w``) once per event and distinct rendering (kind, version,
  ``includeObject``, printer columns, whether the watcher's first event, which carries the column
  definitions) and wall-clock second (ages count whole seconds from timestamps in whole seconds, so
  two watchers rendering within one second render the same bytes). Each watcher still gets exactly
  the bytes it would render alone, in its own order.
- BOOKMARK events only when ``allowWatchBookmarks=true``; their resourceVersion is one every
  earlier event of this watch has been delivered for.
- The store gives each watcher a bounded buffer; a watcher that falls behind gets an ERROR 410
  event and the stream ends, so the client relists instead of the server growing memory.
- ``timeoutSeconds`` (on the injected clock) ends the stream cleanly; so does a client disconnect.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

import orjson

from kubeloop.api import Expired, ResourceInfo
from kubeloop.server._http import Receive, Send
from kubeloop.server._list import current_objects, matches, served_value
from kubeloop.server._options import ListOptions
from kubeloop.server._state import ServerState, collection_prefix
from kubeloop.server._tables import TableEvents
from kubeloop.store import Compacted, StoreEvent, StoreWatch

__all__ = ["BOOKMARK_INTERVAL", "serve_watch"]

BOOKMARK_INTERVAL = 60.0
# A watch's event objects are rendered by ``transform`` when it has one (``as=Table``): called once per
# event, ``key``, ``first`` (a watcher's first event) and second of ``now``, shared by the watchers whose
# transforms have equal keys. (A concrete class, not a Protocol: defining a Protocol subclass here made
# every create ~900 instructions dearer, measured with benchmarks/instructions.py.)
EventTransform = TableEvents


def _event(kind: str, obj: bytes) -> bytes:
    return b'{"type":"' + kind.encode() + b'","object":' + obj + b"}\n"


def _expired_event(message: str) -> bytes:
    return _event("ERROR", orjson.dumps(Expired(message).to_status()))


class _Decoded:
    """One event's objects, decoded on first use and shared by every watcher of the event (its ``memo``).
    Shared, so read only: nothing here or in ``matches`` changes them."""

    __slots__ = ("_current", "_event", "_left", "_previous", "rendered")

    def __init__(self, event: StoreEvent) -> None:
        self._event = event
        self._current: dict[str, Any] | None = None
        self._previous: dict[str, Any] | None = None
        self._left: bytes | None = None
        # What watchers render from the event (an object converted to a version, a Table), by what the
        # rendering depends on; written once by the first watcher that needs it.
        self.rendered: dict[Hashable, bytes] = {}

    @staticmethod
    def of(event: StoreEvent) -> _Decoded:
        memo = event.memo
        if memo is None:
            memo = event.memo = _Decoded(event)
        assert isinstance(memo, _Decoded)
        return memo

    def current(self) -> dict[str, Any]:
        if self._current is None:
            self._current = orjson.loads(self._event.kv.value)
        return self._current

    def previous(self) -> dict[str, Any]:
        if self._previous is None:
            prev = self._event.prev
            assert prev is not None
            self._previous = orjson.loads(prev.value)
        return self._previous

    def left(self) -> bytes:
        """What a watcher the object left is sent (as DELETED): its previous state at the event's revision."""
        if self._left is None:
            previous = self.previous()
            obj = dict(previous)  # a copy of the two levels changed: ``previous`` is shared
            obj["metadata"] = {**(previous.get("metadata") or {}), "resourceVersion": str(self._event.revision)}
            self._left = orjson.dumps(obj)
        return self._left


class _Encoder:
    def __init__(self, info: ResourceInfo, options: ListOptions, transform: EventTransform | None,
                 now: Callable[[], float]) -> None:
        self.info = info
        self.options = options
        self.transform = transform
        self.now = now
        self.first = True
        # What a custom resource stored at the watched version starts with (``_rest.storage_form``
        # puts apiVersion first): such bytes are served as they are.
        self.served_prefix = b'{"apiVersion":"' + info.api_version.encode() + b'"'

    def encode(self, kind: str, value: bytes, event: StoreEvent | None = None, *, left: bool = False) -> bytes:
        """The event line for ``value``; ``event`` (with ``left``: ``value`` is the object's state as it
        left the selection) lets the watchers of one store event share the conversion and rendering."""
        info = self.info
        transform = self.transform
        if transform is None and not info.custom:
            return _event(kind, value)
        if info.custom and not value.startswith(self.served_prefix):
            value = self._served(value, event, left)
        if transform is None:
            return _event(kind, value)
        first = self.first
        self.first = False
        now = self.now()
        if event is None:
            return _event(kind, orjson.dumps(transform(orjson.loads(value), first, now)))
        shared = _Decoded.of(event).rendered
        key = (transform.key, first, int(now), left)
        rendered = shared.get(key)
        if rendered is None:
            rendered = shared[key] = orjson.dumps(transform(orjson.loads(value), first, now))
        return _event(kind, rendered)

    def _served(self, value: bytes, event: StoreEvent | None, left: bool) -> bytes:
        """``value`` at the watched version: converted once per event and version."""
        if event is None:
            return served_value(self.info, value)
        shared = _Decoded.of(event).rendered
        key = (self.info.api_version, left)
        served = shared.get(key)
        if served is None:
            served = shared[key] = served_value(self.info, value)
        return served

    def convert(self, event: StoreEvent) -> bytes | None:
        """cacher.go convertToWatchEvent: the event this watcher sees, or None."""
        if not self.options.filters:
            if event.type == "DELETE":
                return self.encode("DELETED", event.kv.value, event)
            kind = "MODIFIED" if event.prev is not None else "ADDED"
            return self.encode(kind, event.kv.value, event)
        decoded = _Decoded.of(event)
        current = decoded.current()
        cur_passes = event.type != "DELETE" and matches(self.info, self.options, current)
        old_passes = False
        if event.type == "DELETE":
            old_passes = matches(self.info, self.options, current)
        elif event.prev is not None:
            old_passes = matches(self.info, self.options, decoded.previous())
        if cur_passes and not old_passes:
            return self.encode("ADDED", event.kv.value, event)
        if cur_passes and old_passes:
            return self.encode("MODIFIED", event.kv.value, event)
        if old_passes:
            if event.type == "DELETE":
                return self.encode("DELETED", event.kv.value, event)
            return self.encode("DELETED", decoded.left(), event, left=True)
        return None


async def serve_watch(
    state: ServerState,
    info: ResourceInfo,
    namespace: str,
    options: ListOptions,
    receive: Receive,
    send: Send,
    *,
    transform: EventTransform | None = None,
    bookmark_interval: float = BOOKMARK_INTERVAL,
) -> None:
    encoder = _Encoder(info, options, transform, state.clock.now)
    prefix = collection_prefix(info, namespace)
    initial: list[bytes] = []
    rv = options.resource_version
    send_initial = options.send_initial_events if options.send_initial_events is not None else rv in ("", "0")
    watch: StoreWatch | None = None
    error: bytes | None = None
    try:
        if send_initial:
            current = await current_objects(state, info, namespace, options)
            after = current.revision
            initial.extend(encoder.encode("ADDED", kv.value) for kv in current.items)
            if options.send_initial_events:
                initial.append(_bookmark(info, after, initial_end=True))
        else:
            after = _parse_rv(rv)
        watch = state.store.watch(prefix, after=after)
    except Compacted as exc:
        error = _expired_event(f"too old resource version: {exc.requested} ({exc.compacted})")
    except ValueError:
        error = _event("ERROR", orjson.dumps(Expired(f"invalid resource version: {rv}").to_status()))

    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")],
    })
    if error is not None or watch is None:
        await send({"type": "http.response.body", "body": error or b"", "more_body": False})
        return
    if initial:
        await send({"type": "http.response.body", "body": b"".join(initial), "more_body": True})
    try:
        await _pump(state, info, options, encoder, watch, after, receive, send, bookmark_interval)
    finally:
        watch.close()


def _bookmark(info: ResourceInfo, revision: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return _event("BOOKMARK", orjson.dumps({"kind": info.kind, "apiVersion": info.api_version, "metadata": meta}))


def _parse_rv(rv: str) -> int:
    value = int(rv, 10)
    if value < 0:
        raise ValueError(rv)
    return value


async def _pump(
    state: ServerState,
    info: ResourceInfo,
    options: ListOptions,
    encoder: _Encoder,
    watch: StoreWatch,
    after: int,
    receive: Receive,
    send: Send,
    bookmark_interval: float,
) -> None:
    clock = state.clock
    deadline = clock.monotonic() + options.timeout_seconds if options.timeout_seconds else None
    last_revision = after
    next_bookmark = clock.monotonic() + bookmark_interval if options.allow_watch_bookmarks else None

    async def wait_disconnect() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return

    disconnect = asyncio.ensure_future(wait_disconnect())
    # The store read and the timer outlive a loop turn that the other one ended: one task each until
    # it completes (a new timer only when its wake-up time moves), not two new tasks per batch.
    batch_task: asyncio.Future[list[StoreEvent]] | None = None
    timer: asyncio.Future[None] | None = None
    timer_at: float | None = None
    try:
        while True:
            wakeups = [t for t in (deadline, next_bookmark) if t is not None]
            wake = min(wakeups) if wakeups else None
            if timer is not None and (timer.done() or timer_at != wake):
                await _reap(timer)
                timer = None
            if timer is None and wake is not None:
                timer = asyncio.ensure_future(clock.sleep(max(0.0, wake - clock.monotonic())))
                timer_at = wake
            if batch_task is None:
                batch_task = asyncio.ensure_future(watch.next_batch())
            waiting: set[asyncio.Future[Any]] = {batch_task, disconnect}
            if timer is not None:
                waiting.add(timer)
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if disconnect in done:
                return
            chunks: list[bytes] = []
            ended = False
            if batch_task in done:
                finished, batch_task = batch_task, None
                try:
                    batch = finished.result()
                except Compacted:
                    chunks.append(_expired_event(
                        f"too old resource version: {last_revision} ({state.store.revision})"))
                    batch = []
                    ended = True
                if not batch and not ended:
                    ended = True  # the store closed
                for event in batch:
                    if event.revision <= after:
                        # A watch from a resourceVersion the store has not reached yet starts there:
                        # cacheWatcher only sends events newer than the requested one (cacher.go).
                        continue
                    last_revision = event.revision
                    out = encoder.convert(event)
                    if out is not None:
                        chunks.append(out)
            now = clock.monotonic()
            if next_bookmark is not None and now >= next_bookmark and not ended:
                chunks.append(_bookmark(info, last_revision))
                next_bookmark = now + bookmark_interval
            if deadline is not None and now >= deadline:
                ended = True
            if chunks:
                await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": not ended})
            if ended:
                if not chunks:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
    finally:
        await _reap(*(task for task in (batch_task, timer, disconnect) if task is not None))


async def _reap(*tasks: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` and wait until they have finished, whatever they raise.

    ``asyncio.wait`` never raises a child's outcome, so a ``CancelledError`` here can only be this
    handler's own cancellation (its client went away, the server stops), and it propagates (the
    children are cancelled already and finish on their own). Suppressing CancelledError around
    ``await task`` instead would swallow that cancellation when it arrives while a child is
    finishing, and leave the watch running with no client.
    """
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
    for task in tasks:
        if not task.cancelled():
            task.exception()  # retrieved: a child's error (e.g. Compacted) is not reported as lost
