"""The real kubeloop API server (SQLite store, ASGI app) reached in-process by the real Client.

Faults are injected by *wrapping*, never by patching or faking the server:

* :class:`FaultyApp` wraps the real ASGI app: it records every request, answers scripted error
  statuses (with ``Retry-After``), cuts open watch streams (a clean end, a dropped connection, or
  an ``ERROR`` 410 event as a real apiserver sends when a watcher's version is too old), and counts
  requests in flight so tests can wait until the server is quiet.
* :class:`FlakyClient` is a ``Client`` whose calls fail while ``down`` is set and that records its writes.

Timing: the store commits in a worker thread, so a write takes real (if tiny) time. Tests on a
:class:`FakeClock` therefore wait for the server to be *quiet* (:func:`settle`) between steps of fake
time, rather than for a fixed number of event-loop turns, which is what made earlier tests flaky.
Wall time only bounds these waits; no test asserts on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import orjson

from kubeloop.api import AlreadyExists, ApiError, KindRegistry, ResourceInfo, ServiceUnavailable
from kubeloop.client import Client
from kubeloop.server import App, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

KINDS = KindRegistry()

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_REASONS = {
    403: "Forbidden", 409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}  # fmt: skip


def kind(group: str, name: str) -> ResourceInfo:
    info = KINDS.by_kind(group, name)
    assert info is not None
    return info


@dataclass
class Fault:
    method: str
    status: int
    path_contains: str = ""
    retry_after: int | None = None
    times: int = 1
    reason: str = ""
    query_has: str = ""  # only requests carrying this query parameter


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    at: float = 0.0  # the fake clock's monotonic time when the request arrived
    headers: dict[str, str] = field(default_factory=dict, compare=False)
    body: bytearray = field(default_factory=bytearray, compare=False)


@dataclass
class _Stream:
    cut: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    started: bool = False


class FaultyApp:
    """The real app, wrapped to record requests and inject faults (see the module docstring)."""

    def __init__(self, app: Any, clock: FakeClock | None = None) -> None:
        self.app = app
        self.clock = clock
        self.requests: list[Seen] = []
        self.faults: list[Fault] = []
        self.in_flight = 0
        self._streams: list[_Stream] = []

    # -- scripting --------------------------------------------------------------------------------

    def fail(
        self, method: str, status: int, *, path_contains: str = "", retry_after: int | None = None,
        times: int = 1, reason: str = "", query_has: str = "",
    ) -> None:  # fmt: skip
        self.faults.append(Fault(method, status, path_contains, retry_after, times, reason, query_has))

    def heal(self) -> None:
        self.faults.clear()

    @property
    def open_watches(self) -> int:
        """Watch streams the server has started answering and nobody has cut yet."""
        return sum(1 for s in self._streams if s.started and not s.cut.done())

    def end_watches(self) -> None:
        """The server ends every open watch cleanly (as on its ``timeoutSeconds``)."""
        self._cut("end")

    def drop_watches(self) -> None:
        """Every open watch connection breaks mid-stream (the client sees a transport error)."""
        self._cut("drop")

    def expire_watches(self) -> None:
        """Every open watch gets ``ERROR`` 410 Expired, then ends (apiserver: version too old)."""
        self._cut("expire")

    def watches(self) -> list[Seen]:
        return [r for r in self.requests if r.query.get("watch") in ("true", "1")]

    def lists(self, plural: str = "") -> list[Seen]:
        return [
            r for r in self.requests
            if r.method == "GET" and "watch" not in r.query and r.path.endswith(plural)
        ]  # fmt: skip

    def _cut(self, how: str) -> None:
        for s in self._streams:
            if s.started and not s.cut.done():
                s.cut.set_result(how)

    # -- ASGI -------------------------------------------------------------------------------------

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True))
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        seen = Seen(scope["method"], scope["path"], query, self.clock.monotonic() if self.clock else 0.0, headers)
        self.requests.append(seen)

        inner_receive = receive

        async def recording_receive() -> Message:
            message = await inner_receive()
            if message.get("type") == "http.request":
                seen.body.extend(message.get("body", b""))
            return message

        receive = recording_receive
        fault = self._take_fault(seen)
        if fault is not None:
            await _status(send, fault)
            return
        if query.get("watch") in ("true", "1"):
            await self._watch(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1

    def _take_fault(self, seen: Seen) -> Fault | None:
        for fault in self.faults:
            if (
                fault.times > 0 and fault.method == seen.method and fault.path_contains in seen.path
                and (not fault.query_has or fault.query_has in seen.query)
            ):  # fmt: skip
                fault.times -= 1
                return fault
        return None

    async def _watch(self, scope: Message, receive: Receive, send: Send) -> None:
        stream = _Stream()
        self._streams.append(stream)

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                stream.started = True
            await send(message)

        async def cut_receive() -> Message:
            # Once the stream is cut, the server sees its client go away, as over a real socket.
            getter = asyncio.ensure_future(receive())
            await asyncio.wait({getter, stream.cut}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                return getter.result()
            getter.cancel()
            await asyncio.gather(getter, return_exceptions=True)
            return {"type": "http.disconnect"}

        inner = asyncio.ensure_future(self.app(scope, cut_receive, tracking_send))
        try:
            await asyncio.wait({inner, stream.cut}, return_when=asyncio.FIRST_COMPLETED)
            if stream.cut.done():
                await asyncio.wait({inner})  # the server notices the disconnect and ends its handler
        finally:
            await _cancel(inner)
            self._streams.remove(stream)
        if inner.exception() is not None:
            raise inner.exception()  # type: ignore[misc]
        if not stream.cut.done():
            stream.cut.cancel()
            return  # the server ended it by itself
        how = stream.cut.result()
        if how == "drop":
            raise OSError("injected: connection reset mid-stream")
        if how == "expire":
            status = {
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
                "message": "too old resource version: injected",
            }  # fmt: skip
            line = orjson.dumps({"type": "ERROR", "object": status}) + b"\n"
            await send({"type": "http.response.body", "body": line, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _cancel(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait for it, re-cancelling if it swallowed a cancellation."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.01)
    if not task.cancelled():
        task.exception()  # retrieved: not reported as never retrieved


async def _status(send: Send, fault: Fault) -> None:
    reason = fault.reason or _REASONS.get(fault.status, "InternalError")
    body = orjson.dumps({
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": fault.status, "reason": reason,
        "message": f"injected {fault.status}",
    })  # fmt: skip
    headers = [(b"content-type", b"application/json")]
    if fault.retry_after is not None:
        headers.append((b"retry-after", str(fault.retry_after).encode()))
    await send({"type": "http.response.start", "status": fault.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class FlakyClient(Client):
    """A Client that answers 503 for every call while ``down`` is true, and records its writes
    (``(verb, body, keyword arguments)``)."""

    down = False

    @property
    def writes(self) -> list[tuple[str, Any, dict[str, Any]]]:
        if not hasattr(self, "_writes"):
            self._writes: list[tuple[str, Any, dict[str, Any]]] = []
        return self._writes

    def _check(self) -> None:
        if self.down:
            raise ServiceUnavailable("injected: the API server is unreachable")

    async def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        return await super().get(*args, **kwargs)

    async def create(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("create", args[1], kwargs))
        return await super().create(*args, **kwargs)

    async def update(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("update", args[1], kwargs))
        return await super().update(*args, **kwargs)

    async def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("patch", args[2], kwargs))
        return await super().patch(*args, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("delete", args[1], kwargs))
        return await super().delete(*args, **kwargs)


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {
                "status": {},
                "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
            },
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "replicas": {"type": "integer"},
                    }},
                    "status": {"type": "object", "properties": {
                        "ready": {"type": "boolean"}, "replicas": {"type": "integer"},
                    }},
                },
            }},
        }],
    },
}  # fmt: skip
WIDGETS = ResourceInfo(
    "example.com", "v1", "Widget", "widgets", "widget", True, status_subresource=True, custom=True
)


async def install_widgets(client: Client) -> ResourceInfo:
    """Create the Widget CRD and wait until the server serves it."""
    await client.create(kind("apiextensions.k8s.io", "CustomResourceDefinition"), WIDGET_CRD)
    limit = time.monotonic() + WAIT_LIMIT
    while True:
        try:
            await client.list(WIDGETS, namespace="")
            return WIDGETS
        except ApiError:
            if time.monotonic() > limit:
                raise
            await asyncio.sleep(0.001)


@dataclass
class Cluster:
    """A fresh real server: ``cluster.client()`` opens clients on it (closed at the end)."""

    app: FaultyApp
    server: App
    store: SqliteStore
    clock: FakeClock
    clients: list[Client] = field(default_factory=list)

    def client(self, cls: type[Client] = Client, **kwargs: Any) -> Any:
        c = cls.from_asgi(self.app, clock=self.clock, **kwargs)
        self.clients.append(c)
        return c

    __call__ = client

    async def settle(self) -> None:
        await settle(self.app)

    async def run_for(self, seconds: float, step: float = 0.25) -> None:
        await run_for(self.clock, self.app, seconds, step)


@asynccontextmanager
async def real_cluster(
    tmp_path: Path, clock: FakeClock | None = None, *, namespaces: tuple[str, ...] = ("ns",)
) -> AsyncIterator[Cluster]:
    """Yield a :class:`Cluster` over a fresh real server; ``namespaces`` are created first."""
    clock = clock if clock is not None else FakeClock()
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    server = create_app(store=store, clock=clock, rng=random.Random(7))
    await server.startup()
    cluster = Cluster(FaultyApp(server, clock), server, store, clock)
    try:
        admin = cluster.client()
        for ns in namespaces:
            with contextlib.suppress(AlreadyExists):  # system namespaces exist from the start
                await admin.create(kind("", "Namespace"), {"metadata": {"name": ns}})
        yield cluster
    finally:
        for c in cluster.clients:
            await c.close()
        await server.shutdown()
        await store.close()


# -- waiting without sleeping on the wall clock -------------------------------------------------

WAIT_LIMIT = 20.0  # wall-clock seconds: a safety bound for a stuck test, never an assertion


async def settle(app: FaultyApp, *, quiet_turns: int = 40) -> None:
    """Return once no (non-watch) request has been in flight for ``quiet_turns`` loop turns."""
    limit = time.monotonic() + WAIT_LIMIT
    quiet = 0
    while quiet < quiet_turns:
        if app.in_flight:
            quiet = 0
            if time.monotonic() > limit:
                raise AssertionError("the server never became quiet")
            await asyncio.sleep(0.0005)  # a store commit runs in a thread: give it real time
        else:
            quiet += 1
            await asyncio.sleep(0)


async def run_for(clock: FakeClock, app: FaultyApp, seconds: float, step: float = 0.25) -> None:
    """Let fake time pass in small steps, letting in-process round-trips complete in between."""
    await settle(app)
    for _ in range(round(seconds / step)):
        await clock.advance(step)
        await settle(app)


async def eventually(cond: Callable[[], bool], *, what: str = "condition") -> None:
    """Let the loop (and the store's commit thread) run until ``cond()`` holds."""
    limit = time.monotonic() + WAIT_LIMIT
    turns = 0
    while not cond():
        turns += 1
        if turns % 50 == 0:
            if time.monotonic() > limit:
                raise AssertionError(f"{what} never became true")
            await asyncio.sleep(0.0005)
        else:
            await asyncio.sleep(0)
