"""How ``kubeloop up`` and ``kubeloop apiserver`` serve HTTPS: uvicorn's settings and protocol class.

:func:`uvicorn_config` is the one place the uvicorn settings are written; the server and the benchmark's
bare baseline both use it, so the two serve under exactly the same settings and protocol class.

:class:`HttpProtocol` is uvicorn's own httptools protocol with these changes to how it meets the transport,
the loop and the app, passed through uvicorn's ``http`` setting; what it parses, what it hands the app and
every byte it writes are uvicorn's (a test sends the same requests through both and compares):

- **A leaner request cycle.** The per-request callbacks and the app's ``receive``/``send``
  (:class:`~kubeloop.cli._serving_cycle.RequestCycle`) do uvicorn's work in fewer steps: the scope is
  built once the head is parsed (no ``on_message_begin`` callback), no ``asyncio.Event`` per request,
  the body handed over as received, each response header checked and rendered once, the origin-form
  target split without ``httptools.parse_url`` (:func:`split_target`), the scope copied from a
  per-connection template of what is the same for all its requests (uvicorn's keys, order and values;
  a dict of its own per request). WebSockets are not served (``ws="none"``), so no upgrade checks.
- **Writes are corked for one event-loop turn** (:class:`CorkedTransport`). uvicorn writes a response's
  head and its body with two ``transport.write`` calls, and a streamed response one call per chunk; over
  TLS each call is a TLS record and a ``send``. The writes made while the loop runs one turn are joined
  and handed to the transport once, by one callback per turn for all of a server's connections
  (:class:`TurnFlush`, scheduled with the turn's first write: ``call_soon`` runs it on the loop's next
  turn, before any timer and without waiting for I/O). Guarantees: bytes go out
  in the order written; everything written before ``close()`` or ``write_eof()`` goes out before it;
  a turn that writes more than :data:`FLUSH_BYTES` hands its writes over at once, so the transport's
  flow control (``pause_writing``, which uvicorn's ``send`` waits on) sees them as it did uncorked;
  after the connection is lost, corked bytes are dropped (the transport would drop them too).
- **Responses completed flush at once**: a response's last bytes go to the transport with the writes
  corked before them, as one write (:meth:`CorkedTransport.write_last`), without waiting for the end of
  the turn.
- **TLS without Python wrappers** (:class:`DirectSSLObject`): the server's TLS context makes connection
  objects whose ``read``, ``write`` and ``pending`` are the ``_ssl`` C methods, which the loop's TLS
  protocol calls for every record (the same calls, the same records).
- **Keep-alive without a timer per response.** uvicorn arms a ``call_later`` timer when a response
  completes and cancels it when the next request arrives: a libuv timer set up and torn down for every
  request. Here a completed response records the loop time instead, and one check per server, every
  :data:`IDLE_CHECK_SECONDS` (at most; a quarter of the timeout if that is shorter) while it has
  connections, closes those idle for ``timeout_keep_alive`` seconds: the same rule, a connection
  closing up to one check interval later. A timeout of 0 keeps uvicorn's own timer.
- **One task per connection, not per request.** uvicorn starts a task for every request; creating one
  (a context copy, asyncio's registry of tasks, its removal as the task is freed) costs more than
  waking a task that waits. Here the task that ran a connection's request waits for the next one and
  runs it (:func:`~kubeloop.cli._serving_cycle.run_requests`). Each request still starts as under
  uvicorn: in a context equal to the one uvicorn would give it (a copy of the connection's context, or
  an empty one with ``reset_contextvars``; a task whose app changed its context ends, and the next
  request gets a new task), at once even if the app before is still running after its response (such
  a request gets a task of its own, which then serves the connection), with uvicorn's errors and 500.
  A task is one of the server's tasks (which uvicorn's shutdown waits for and ``limit_concurrency``
  counts) from the moment it is handed a request until that request's app returns, as uvicorn's
  request tasks are; it leaves them as its app returns, without a done callback per request, and
  through a done callback (one per task) if it ends otherwise (cancelled before its first step). A
  waiting task ends when the connection is lost, when uvicorn's shutdown closes it, or if cancelled.
"""

from __future__ import annotations

import asyncio
import contextvars
import ssl
import weakref
from contextvars import copy_context
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httptools
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, service_unavailable
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from kubeloop.cli._serving_cycle import RequestCycle, run_requests
from kubeloop.server._metrics import STATUS_KEY

__all__ = ["FLUSH_BYTES", "CorkedTransport", "DirectSSLObject", "HttpProtocol", "TurnFlush", "uvicorn_config"]

# Corked bytes handed to the transport at once, whatever the turn: well below the TLS transport's write
# high-water mark (512 KiB), so its flow control still engages as the bytes are written.
FLUSH_BYTES = 64 * 1024
# A write this large is not copied to join it to the ones before (TLS splits it into 16 KiB records anyway).
JOIN_BYTES = 16 * 1024
# How often (at most) idle keep-alive connections are looked for.
IDLE_CHECK_SECONDS = 1.0
# The request headers on_header notes: ``expect`` (100-continue, as uvicorn) and the two that may set
# llhttp's keep-alive flag (see on_headers_complete).
_NOTED_HEADERS = frozenset((b"expect", b"connection", b"proxy-connection"))


class CorkedTransport(asyncio.Transport):
    """A transport that hands the writes of one event-loop turn to ``transport`` as one write."""

    def __init__(self, transport: asyncio.Transport, turn: TurnFlush) -> None:
        super().__init__()
        self._transport = transport
        # Asked on every request: the transport's own methods, without a call through this one.
        self.is_closing = transport.is_closing  # type: ignore[method-assign]
        self.get_extra_info = transport.get_extra_info  # type: ignore[method-assign]
        self._turn = turn
        self.pending: list[bytes] = []
        self._pending_bytes = 0
        # In the turn's list of corked transports (flushed by the turn, or earlier by flush()).
        self.scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if type(data) is not bytes:
            if not isinstance(data, (bytearray, memoryview)):
                raise TypeError(f"data: expecting a bytes-like instance, got {type(data).__name__}")
            data = bytes(data)  # the caller may reuse its buffer once write() returns
        if not data:
            return
        self.pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()
        elif not self.scheduled:
            self.scheduled = True
            turn = self._turn  # turn.add(self), without the call
            if not turn.corked:
                turn.loop.call_soon(turn.flush)
            turn.corked.append(self)

    def write_last(self, data: bytes) -> None:
        """Write a response's last bytes: ``data`` and every write corked before it go to the transport
        now, as one write (what write() and then flush() do, in one step)."""
        pending = self.pending
        if type(data) is not bytes or not data:
            self.write(data)
            self.flush()
        elif not pending:
            self._transport.write(data)
        else:  # flush()'s usual case, without the call: a small head, then this
            self.pending = []
            self._pending_bytes = 0
            if len(data) < JOIN_BYTES:
                pending.append(data)
                self._transport.write(b"".join(pending))
            else:
                self._transport.writelines([b"".join(pending), data])

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Hand every corked write to the transport now, as one write."""
        pending = self.pending
        if not pending:
            return
        self.pending = []
        self._pending_bytes = 0
        if len(pending) == 1:
            self._transport.write(pending[0])
        elif len(last := pending[-1]) < JOIN_BYTES:
            self._transport.write(b"".join(pending))
        else:
            # A large last write (a big body after its head) is not copied; the writes before it (less
            # than FLUSH_BYTES together) are. Still one send.
            self._transport.writelines([b"".join(pending[:-1]), last])

    def discard(self) -> None:
        """Drop corked writes: the connection is gone."""
        self.pending = []
        self._pending_bytes = 0

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self.discard()
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._pending_bytes


class TurnFlush:
    """Flushes, at the end of an event-loop turn, every :class:`CorkedTransport` written to in it: one
    loop callback per turn for all of a server's connections, not one per response."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # The transports corked in this turn (CorkedTransport.write adds them, and schedules flush()
        # with the first).
        self.corked: list[CorkedTransport] = []

    def add(self, transport: CorkedTransport) -> None:
        if not self.corked:
            self.loop.call_soon(self.flush)
        self.corked.append(transport)

    def flush(self) -> None:
        corked = self.corked
        self.corked = []
        for transport in corked:
            transport.scheduled = False
            if not transport.pending:  # flushed already, as a response completed
                continue
            try:
                transport.flush()
            except Exception as exc:  # as the loop reports a failed callback; the other flushes still run
                self.loop.call_exception_handler(
                    {"message": "Exception in callback CorkedTransport.flush", "exception": exc}
                )


class _IdleConnections:
    """Closes a server's keep-alive connections idle for ``timeout`` seconds, checking every
    :data:`IDLE_CHECK_SECONDS` (at most) while the server has connections."""

    def __init__(self, server_state: Any, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self._connections: set[Any] = server_state.connections
        self.loop = loop
        self._timeout = timeout
        self._interval = min(IDLE_CHECK_SECONDS, timeout / 4)
        self.running = False

    def start(self) -> None:
        self.running = True
        self.loop.call_later(self._interval, self._check)

    def _check(self) -> None:
        now = self.loop.time()
        for connection in list(self._connections):
            idle_since = getattr(connection, "idle_since", None)
            if idle_since is not None and now - idle_since >= self._timeout:
                connection.timeout_keep_alive_handler()
        if self._connections:
            self.loop.call_later(self._interval, self._check)
        else:
            self.running = False


class _Shared:
    """What the connections of one server (on one loop) share."""

    def __init__(self, server_state: Any, loop: asyncio.AbstractEventLoop, timeout_keep_alive: float) -> None:
        self.loop = loop
        self.turn = TurnFlush(loop)
        self.idle = _IdleConnections(server_state, loop, timeout_keep_alive) if timeout_keep_alive > 0 else None


_shared: weakref.WeakKeyDictionary[Any, _Shared] = weakref.WeakKeyDictionary()


class HttpProtocol(HttpToolsProtocol):
    """The protocol class for uvicorn's ``http`` setting: uvicorn's httptools protocol, corked, with one
    keep-alive check per server instead of a timer per response (see the module docstring)."""

    transport: CorkedTransport

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        # The request target as httptools hands it over, in pieces: its ``on_url`` callback is this list's
        # own ``append`` (a C call, where uvicorn's ``on_url`` is a Python frame per request), joined by
        # on_headers_complete. Set before uvicorn's __init__ makes the parser, which looks the callback up.
        self._url_parts: list[bytes] = []
        self.on_url = self._url_parts.append  # type: ignore[method-assign,assignment]
        super().__init__(config, server_state, app_state, _loop)
        # When the last response on this connection completed (loop time), while waiting for the next
        # request; None while a request is in flight, as uvicorn's keep-alive timer is unarmed then.
        self.idle_since: float | None = None
        shared = _shared.get(server_state)
        if shared is None or shared.loop is not self.loop:
            shared = _shared[server_state] = _Shared(server_state, self.loop, self.timeout_keep_alive)
        self._turn = shared.turn
        self._idle = shared.idle
        if self.ws_protocol_class is not None:
            raise ValueError("HttpProtocol serves no WebSockets: use it with ws='none'")
        self._fresh_context = bool(config.reset_contextvars)
        # The request being parsed: what uvicorn's on_message_begin resets, reset here and by
        # on_headers_complete (the headers by on_message_complete) as it hands them over.
        self.headers = []
        # Whether a header of the request being parsed may set llhttp's keep-alive flag (see on_headers_complete).
        self._connection_header = False
        # The task that runs the connection's requests one after another (see the module docstring),
        # and the future it waits on for the next one.
        self._runner: asyncio.Task[None] | None = None
        self._next_request: asyncio.Future[tuple[RequestCycle, Any] | None] | None = None
        # What the context of a request's task holds as its app starts.
        self._request_context = contextvars.Context()

    # ---------------------------------------------------------------- one request (uvicorn's callbacks)

    # No on_message_begin callback (httptools looks for it once, as the parser is made; a callback into
    # Python costs about as much as the rest of a header's handling): on_headers_complete resets what
    # uvicorn's resets.
    on_message_begin = None  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        # uvicorn's, with its _unset_keepalive_if_required (a call per request) reduced to what it does here.
        self.idle_since = None
        if self.timeout_keep_alive_task is not None:
            self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
            return
        except httptools.HttpParserUpgrade:
            # No upgrade is ever taken (ws="none"): the request is served as plain HTTP, and kubeloop answers
            # the upgrades clients ask for (kubectl exec, attach, port-forward: SPDY/3.1 or WebSocket) with a
            # Status itself. uvicorn's "Unsupported upgrade request." warning and its advice to install a
            # WebSocket library would only mislead on the console; nothing is logged.
            pass

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        self.headers.append((name, value))
        # One set lookup for the usual header (uvicorn's two comparisons, and a third for ours).
        if name in _NOTED_HEADERS:
            if name == b"expect":
                if value.lower() == b"100-continue":
                    self.expect_100_continue = True
            else:
                self._connection_header = True

    def on_headers_complete(self) -> None:
        parser = self.parser
        should_keep_alive = parser.should_keep_alive()
        # The request's HTTP version without get_http_version() when the answer is certain (it formats the
        # version anew each time: about 3% of a request's protocol work). llhttp accepts the versions 0.9,
        # 1.0, 1.1 and 2.0 (uvicorn asks for no version leniency) and keeps the connection alive for 1.1
        # without ``Connection: close``, or for another version whose ``Connection`` (or
        # ``Proxy-Connection``) header says ``keep-alive`` (``llhttp_should_keep_alive``): a request that
        # keeps it alive without either header is 1.1. A table test compares this with get_http_version().
        if should_keep_alive and not self._connection_header:
            http_version = "1.1"
        else:
            http_version = parser.get_http_version()
        self._connection_header = False
        method = parser.get_method().decode("ascii")
        url_parts = self._url_parts
        url = url_parts[0] if len(url_parts) == 1 else b"".join(url_parts)
        url_parts.clear()
        if url[:1] == b"/" and url.find(b"#") < 0:  # split_target's common case, without the call
            raw_path, _, query = url.partition(b"?")
        else:
            raw_path, query = split_target(url)
        path = raw_path.decode("ascii")
        if "%" in path:
            path = unquote(path)
        root_path = self.root_path
        if root_path:
            path = root_path + path
            raw_path = root_path.encode("ascii") + raw_path
        # The connection's scope template copied (a dict's copy clones its table), then the request's own.
        scope = self._scope.copy()
        scope["asgi"] = {"version": self.asgi_version, "spec_version": "2.3"}
        scope["http_version"] = http_version
        scope["headers"] = self.headers
        scope["state"] = self.app_state.copy()
        scope["method"] = method
        scope["path"] = path
        scope["raw_path"] = raw_path
        scope["query_string"] = query
        self.scope = scope  # type: ignore[assignment]
        expect_100_continue = self.expect_100_continue
        self.expect_100_continue = False
        limit = self.limit_concurrency
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            app = service_unavailable
            self.logger.warning("Exceeded concurrency limit.")
        else:
            app = self.app
        existing = self.cycle
        # Positional: a class called with keywords builds a dict of them per request.
        cycle = self.cycle = RequestCycle(  # type: ignore[assignment]
            self,
            scope,
            http_version != "1.0" and should_keep_alive,
            expect_100_continue,
        )
        if existing is None or existing.response_complete:
            waiting = self._next_request
            if waiting is not None and not waiting.done():  # _start_asgi_task's common case, without the call
                waiting.set_result((cycle, app))
                self.tasks.add(self._runner)  # type: ignore[arg-type]
            else:
                self._start_asgi_task(cycle, app)
        else:  # a pipelined request waits for the one before it
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))  # type: ignore[arg-type]

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        waiting = self._next_request
        if waiting is not None and not waiting.done():
            # The connection's runner waits for its next request: hand this one over, no new task.
            waiting.set_result((cycle, app))
            self.tasks.add(self._runner)  # type: ignore[arg-type]
            return
        # No task waits: the connection's first request, one after a task that ended, or one that came
        # while the app before still runs (pipelined, or as that app finished). A task of its own, as
        # uvicorn's, which then runs the connection's next requests.
        if self._fresh_context:
            runner = self.loop.create_task(run_requests(self, cycle, app), context=contextvars.Context())
        else:
            runner = self.loop.create_task(run_requests(self, cycle, app))
        # Out of the server's tasks once done, even if cancelled before its first step.
        runner.add_done_callback(self.tasks.discard)
        self._runner = runner
        self.tasks.add(runner)

    def next_request(self, runner: asyncio.Task[None]) -> asyncio.Future[tuple[RequestCycle, Any] | None] | None:
        """For ``runner``, whose app just returned: a future of the connection's next request (None if
        the connection is lost first), or None when the runner is to end: another task has taken over
        the connection, the connection closes, the runner was cancelled, or its app left the context
        other than a new request starts in (uvicorn's: a copy of the connection's context, or an empty
        one with ``reset_contextvars``)."""
        if (
            runner is not self._runner
            or self.transport.is_closing()
            or runner.cancelling()
            or copy_context() != self._request_context
        ):
            return None
        waiting: asyncio.Future[tuple[RequestCycle, Any] | None] = self.loop.create_future()
        self._next_request = waiting
        return waiting

    def on_body(self, body: bytes) -> None:
        cycle: RequestCycle = self.cycle  # type: ignore[assignment]
        if cycle.response_complete:
            return
        cycle.chunks.append(body)
        cycle.body_size += len(body)
        if cycle.body_size > HIGH_WATER_LIMIT:
            self.flow.pause_reading()
        cycle.ready = True  # cycle.notify(), called only when receive() waits
        if cycle.waiter is not None:
            cycle.notify()

    def on_message_complete(self) -> None:
        # The next request's headers go to a list of their own. Not at on_headers_complete: a chunked
        # body's trailers come as headers after it, and under uvicorn they join the request's own
        # ``scope["headers"]`` (its list until the next request begins).
        self.headers = []
        cycle: RequestCycle = self.cycle  # type: ignore[assignment]
        if cycle.response_complete:
            return
        cycle.more_body = False
        cycle.ready = True  # cycle.notify(), called only when receive() waits
        if cycle.waiter is not None:
            cycle.notify()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CorkedTransport(transport, self._turn))
        # uvicorn's scope, in its order, with what is the same for every request on the connection.
        self._scope: dict[str, Any] = {
            "type": "http",
            "asgi": None,
            "http_version": None,
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,
            "root_path": self.root_path,
            "headers": None,
            "state": None,
            "method": None,
            "path": None,
            "raw_path": None,
            "query_string": None,
            # The app reads the response status here (kubeloop.server's metrics), set when the head is written.
            STATUS_KEY: 0,
        }
        if not self._fresh_context:  # uvicorn's request tasks start with a copy of the connection's
            self._request_context = copy_context()

    def _release_runner(self) -> None:
        """The connection will have no next request: a runner waiting for one ends."""
        waiting = self._next_request
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    def shutdown(self) -> None:
        super().shutdown()
        # Not at connection_lost, which a client that does not read can hold off past the server's end.
        self._release_runner()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport.discard()
        self.connections.discard(self)
        cycle: RequestCycle | None = self.cycle  # type: ignore[assignment]
        if cycle is not None:
            if not cycle.response_complete:
                cycle.disconnected = True
            cycle.notify()
        self._release_runner()
        if self.flow is not None:
            self.flow.resume_writing()
        if exc is None:
            self.transport.close()
            self._unset_keepalive_if_required()
        self.parser = None  # type: ignore[assignment]

    def _unset_keepalive_if_required(self) -> None:
        self.idle_since = None
        if self.timeout_keep_alive_task is not None:  # uvicorn's timer (a timeout of 0)
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None

    def on_response_complete(self) -> None:
        # The response is whole: send it now rather than at the end of the turn (the cycle's last write
        # usually did already: write_last).
        if self.transport.pending:
            self.transport.flush()
        idle = self._idle
        if idle is None:
            super().on_response_complete()
            return
        # uvicorn's on_response_complete, with the keep-alive deadline kept as a time the server's
        # check reads instead of a timer armed and cancelled for every response.
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        flow = self.flow
        if flow.read_paused:  # what flow.resume_reading() checks first, without the call
            flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
        else:
            self.idle_since = self.loop.time()
            if not idle.running:
                idle.start()


def split_target(url: bytes) -> tuple[bytes, bytes]:
    """A request target's path and query, as ``httptools.parse_url`` splits it: directly for the
    origin form (``/path?query``) without a fragment, which is what clients send; through
    ``parse_url`` otherwise (absolute form, a fragment)."""
    # find(), not ``b"#" not in url``: ``in`` on bytes first tries the operand as an int, and the
    # TypeError it raises and clears costs more than the whole split.
    if url[:1] == b"/" and url.find(b"#") < 0:
        path, _, query = url.partition(b"?")
        return path, query
    parsed = httptools.parse_url(url)
    return parsed.path, parsed.query or b""


class DirectSSLObject(ssl.SSLObject):
    """The TLS connection object of the server's TLS context: :class:`ssl.SSLObject` whose ``read``,
    ``write`` and ``pending`` are the C methods themselves rather than Python methods that call them.

    The loop's TLS protocol (uvloop's ``SSLProtocol``, or asyncio's) calls these three for every record it
    decrypts or encrypts, always with the size (and a buffer) positional: the same calls, the same
    bytes, without a Python frame each (three per request, about 1% of a create's instructions). A caller
    that relies on ``read()``'s default size or passes ``buffer=None`` would need the Python method;
    the loops do not."""

    @classmethod
    def _create(cls, *args: Any, **kwargs: Any) -> DirectSSLObject:
        self: DirectSSLObject = super()._create(*args, **kwargs)  # type: ignore[misc]
        sslobj = self._sslobj  # type: ignore[attr-defined]
        self.read = sslobj.read  # type: ignore[method-assign]
        self.write = sslobj.write  # type: ignore[method-assign]
        self.pending = sslobj.pending  # type: ignore[method-assign]
        return self


def _config_class() -> Any:
    import uvicorn

    class Config(uvicorn.Config):
        """uvicorn's Config, whose TLS context makes :class:`DirectSSLObject` connections."""

        def load(self) -> None:
            super().load()
            if self.ssl is not None:
                self.ssl.sslobject_class = DirectSSLObject

    return Config


def uvicorn_config(app: Any, *, cert: Path | str, key: Path | str) -> Any:
    """The ``uvicorn.Config`` kubeloop serves with (and the benchmark's bare baseline)."""
    return _config_class()(
        app,
        loop="none",
        http=HttpProtocol,
        ws="none",
        lifespan="off",
        log_level="warning",
        access_log=False,
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
        timeout_keep_alive=60,
        timeout_graceful_shutdown=2,
        server_header=False,
        date_header=True,
        # kube-apiserver serves the connection's peer; uvicorn's X-Forwarded-* rewriting (trusted from
        # 127.0.0.1 by default) would change scope["client"] and ["scheme"], which nothing reads,
        # at a cost on every request.
        proxy_headers=False,
    )
