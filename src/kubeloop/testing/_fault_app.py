"""HTTP-level fault injection: an ASGI app that wraps a real API server to record and break requests.

:class:`FaultyApp` wraps any ASGI app (usually ``kubeloop.server.create_app(...)``; ``InProcessCluster``
builds one with ``inject_http_faults=True``) and is itself an ASGI app, so a client reaches it
exactly as it reaches the server (``Client.from_asgi(faulty)``), or uvicorn serves it on a socket.
Faults are injected by *wrapping*, never by patching or faking the server:

* every HTTP request is recorded, in arrival order, in :attr:`FaultyApp.requests` (method, path,
  query, headers, the body as the server reads it, and the injected clock's monotonic time);
* :meth:`FaultyApp.fail` scripts error answers: the next ``times`` requests matching a method (and
  optionally a path fragment and a query parameter) get a ``Status`` body with that code, and a
  ``Retry-After`` header when asked; the wrapped server never sees them. Scripted faults are
  matched in the order they were added; :meth:`FaultyApp.heal` drops the ones left;
* open watch streams can be cut: :meth:`~FaultyApp.end_watches` ends them cleanly (as a server's
  ``timeoutSeconds``), :meth:`~FaultyApp.drop_watches` breaks the connection mid-stream (the
  client sees a transport failure), :meth:`~FaultyApp.expire_watches` sends an ``ERROR`` event
  with a 410 ``Expired`` status first (what an apiserver sends when a watcher's version is too
  old). In every case the wrapped server sees its client disconnect, as over a real socket;
* non-watch requests in flight are counted, so a test on a fake clock can wait until the server
  is *quiet* (:meth:`FaultyApp.settle`) before it advances time: a store commits in a worker
  thread, so a write takes real, if tiny, time and a fixed number of event-loop turns is not enough.

Nothing here reads the wall clock: waits are bounded by a number of polls, never by a deadline.
Non-HTTP scopes (``lifespan``) pass through untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import orjson

from kubeloop.api import Clock

__all__ = ["FaultyApp", "HttpFault", "RecordedRequest"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_REASONS = {
    403: "Forbidden", 409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class HttpFault:
    """A scripted error answer: ``status`` (with ``reason``, by default the usual one for the code,
    and ``Retry-After: retry_after`` when set) for requests with ``method`` whose path contains
    ``path_contains`` and, when set, whose query carries the parameter ``query_has``."""

    method: str
    status: int
    path_contains: str = ""
    retry_after: int | None = None
    reason: str = ""
    query_has: str = ""

    def matches(self, request: RecordedRequest) -> bool:
        return (
            self.method == request.method and self.path_contains in request.path
            and (not self.query_has or self.query_has in request.query)
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request as it reached the wrapper. ``at`` is the injected clock's monotonic time
    (0.0 without a clock); ``headers`` are lower-cased; ``body`` fills in as the server reads it."""

    method: str
    path: str
    query: dict[str, str]
    at: float = 0.0
    headers: dict[str, str] = field(default_factory=dict, compare=False)
    body: bytearray = field(default_factory=bytearray, compare=False)

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


@dataclass(slots=True)
class _Scripted:
    fault: HttpFault
    left: int


@dataclass(slots=True)
class _Stream:
    cut: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    started: bool = False


class FaultyApp:
    """The wrapped ``app``, recording requests and injecting faults (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, clock: Clock | None = None) -> None:
        self.app = app
        self.clock = clock
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self._scripted: list[_Scripted] = []
        self._streams: list[_Stream] = []

    # -- scripting --------------------------------------------------------------------------------

    def fail(
        self, method: str, status: int, *, path_contains: str = "", retry_after: int | None = None,
        times: int = 1, reason: str = "", query_has: str = "",
    ) -> HttpFault:  # fmt: skip
        """Answer the next ``times`` matching requests with ``status`` (see :class:`HttpFault`)."""
        fault = HttpFault(method, status, path_contains, retry_after, reason, query_has)
        self._scripted.append(_Scripted(fault, times))
        return fault

    def heal(self) -> None:
        """Drop every scripted fault not used up yet."""
        self._scripted.clear()

    @property
    def pending_faults(self) -> list[HttpFault]:
        """Scripted faults with answers left, once per answer left, in matching order."""
        return [s.fault for s in self._scripted for _ in range(s.left)]

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

    # -- what was asked ---------------------------------------------------------------------------

    def watches(self) -> list[RecordedRequest]:
        """The watch requests, in arrival order."""
        return [r for r in self.requests if r.is_watch]

    def lists(self, plural: str = "") -> list[RecordedRequest]:
        """The non-watch GETs whose path ends with ``plural`` (every one by default)."""
        return [
            r for r in self.requests
            if r.method == "GET" and "watch" not in r.query and r.path.endswith(plural)
        ]  # fmt: skip

    async def settle(self, *, quiet_turns: int = 40, polls: int = 40_000, interval: float = 0.0005) -> None:
        """Return once no non-watch request has been in flight for ``quiet_turns`` event-loop turns.

        While one is, sleep ``interval`` real seconds between polls (a store commits in a worker
        thread: it needs real time, not loop turns); after ``polls`` busy polls, raise
        ``AssertionError``: the server never became quiet.
        """
        busy = quiet = 0
        while quiet < quiet_turns:
            if self.in_flight:
                quiet = 0
                busy += 1
                if busy > polls:
                    raise AssertionError("the server never became quiet")
                await asyncio.sleep(interval)
            else:
                quiet += 1
                await asyncio.sleep(0)

    def _cut(self, how: str) -> None:
        for s in self._streams:
            if s.started and not s.cut.done():
                s.cut.set_result(how)

    # -- ASGI -------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True))
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        at = self.clock.monotonic() if self.clock is not None else 0.0
        seen = RecordedRequest(scope["method"], scope["path"], query, at, headers)
        self.requests.append(seen)
        inner_receive = receive

        async def recording_receive() -> Message:
            message = await inner_receive()
            if message.get("type") == "http.request":
                seen.body.extend(message.get("body", b""))
            return message

        fault = self._take_fault(seen)
        if fault is not None:
            await _answer(send, fault)
            return
        if seen.is_watch:
            await self._watch(scope, recording_receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, recording_receive, send)
        finally:
            self.in_flight -= 1

    def _take_fault(self, seen: RecordedRequest) -> HttpFault | None:
        for scripted in self._scripted:
            if scripted.left > 0 and scripted.fault.matches(seen):
                scripted.left -= 1
                return scripted.fault
        return None

    async def _watch(self, scope: Scope, receive: Receive, send: Send) -> None:
        stream = _Stream()
        self._streams.append(stream)

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                stream.started = True
            await send(message)

        async def cut_receive() -> Message:
            # Once the stream is cut, the server sees its client go away, as over a real socket.
            getter = asyncio.ensure_future(receive())
            either: set[asyncio.Future[Any]] = {getter, stream.cut}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                return getter.result()
            getter.cancel()
            await asyncio.gather(getter, return_exceptions=True)
            return {"type": "http.disconnect"}

        inner = asyncio.ensure_future(self.app(scope, cut_receive, tracking_send))
        try:
            either: set[asyncio.Future[Any]] = {inner, stream.cut}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if stream.cut.done():
                await asyncio.wait({inner})  # the server notices the disconnect and ends its handler
        finally:
            await _cancel(inner)
            self._streams.remove(stream)
        error = inner.exception()
        if error is not None:
            raise error
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


async def _answer(send: Send, fault: HttpFault) -> None:
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
