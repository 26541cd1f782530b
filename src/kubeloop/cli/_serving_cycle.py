"""One HTTP request and its response under :class:`~kubeloop.cli._serving.HttpProtocol`: the ASGI
``receive`` and ``send`` an app gets, with uvicorn's behaviour and fewer steps.

:class:`RequestCycle` answers exactly as uvicorn's ``httptools_impl.RequestResponseCycle`` does: the same
messages to the app, the same bytes written (status line, default headers, the app's headers lowercased
and checked, ``connection: close`` and ``transfer-encoding: chunked`` added by the same rules, chunk
framing, ``100 Continue``), the same errors for an app that breaks the ASGI rules, the same flow control.
What it leaves out is work, not behaviour:

- **No ``asyncio.Event`` per request.** A request's body usually arrives with its head, before the app
  first calls ``receive``; the cycle keeps a flag, and a future only while the app waits for more.
- **The body is handed over as received**: one chunk as it is, several joined once (uvicorn copies into
  a ``bytearray`` and copies again into ``bytes``).
- **Each header is checked and rendered once.** uvicorn runs two regular expressions per header of
  every response, then lowers and joins it. Apps send the same headers response after response, so a
  bounded table (:func:`header_line`) keeps the line, checked, of each ``(name, value)`` tuple seen
  before; a header new to it, or refused, goes through uvicorn's own checks and raises uvicorn's
  error. The server's default headers (``date``) are rendered and checked once per value. A whole head
  seen before (the same header list, in order) is one lookup (``_HEADS``): its lines joined and how they
  frame the response, as uvicorn's per-header framing left them.

One addition to what the app sees: ``scope[STATUS_KEY]`` (:data:`kubeloop.server._metrics.STATUS_KEY`), 0 in
every request's scope and the status once the head is written, which the API server's request metrics read
instead of wrapping ``send`` (a call less per message).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HEADER_RE, HEADER_VALUE_RE, STATUS_LINE
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from kubeloop.server._metrics import STATUS_KEY

__all__ = ["RequestCycle", "default_head", "header_line", "run_requests"]

_DISCONNECT = {"type": "http.disconnect"}
# Header names whose value changes how the response is framed or whether the connection stays open.
_FRAMING = (b"content-length", b"transfer-encoding", b"connection")

_default_heads: dict[int, tuple[list[tuple[bytes, bytes]], bytes, list[tuple[bytes, bytes]]]] = {}


def default_head(defaults: list[tuple[bytes, bytes]]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The server's default headers (uvicorn's ``server_state.default_headers``) as header lines,
    checked as uvicorn checks them, and those of them that frame the response (lowered). Remembered
    per list: uvicorn builds a new list when the date changes. Raises uvicorn's ``RuntimeError`` for a
    header it would refuse."""
    known = _default_heads.get(id(defaults))
    if known is not None and known[0] is defaults:
        return known[1], known[2]
    head = b"".join([_render(name, value) for name, value in defaults])
    framing = [(name.lower(), value) for name, value in defaults if name.lower() in _FRAMING]
    _default_heads.clear()  # one date at a time; the list it was built from is kept alive with it
    _default_heads[id(defaults)] = (defaults, head, framing)
    return head, framing


def _render(name: Any, value: Any) -> bytes:
    """``name: value\r\n`` with the name lowered, after uvicorn's checks (raising its errors). Typed
    ``Any``: an app may send any bytes-like object (a compiled build would refuse a bytearray for
    ``bytes``)."""
    if HEADER_RE.search(name):
        raise RuntimeError("Invalid HTTP header name.")
    if HEADER_VALUE_RE.search(value):
        raise RuntimeError("Invalid HTTP header value.")
    # bytes(): a compiled build formats only bytes with %s (a no-op for bytes, a copy for the others)
    return b"%s: %s\r\n" % (bytes(name.lower()), bytes(value))


# The lines of headers seen before, by header: apps send the same headers response after response (a
# content type, a cache control, lengths that repeat), so most are checked and rendered once rather
# than once per response (two regular expressions, a lowering and a formatting: most of a response
# head's cost). Only ``(bytes, bytes)`` tuples are remembered, and only short ones; the table is
# emptied when full. Its key is typed ``Any``: an app may look one up with bytearrays or a list, which a
# compiled build would refuse for a narrower key type.
_LINES: dict[Any, tuple[bytes, bytes | None, Any]] = {}
_LINES_LIMIT = 1024
_LINE_BYTES_KEPT = 256


def header_line(header: Any) -> tuple[bytes, bytes | None, Any]:
    """An app's header ``(name, value)`` as its line (after uvicorn's checks, raising its errors), its
    lowered name if it frames the response (else None), and its value."""
    try:
        known = _LINES.get(header)
    except TypeError:  # not hashable (a list, a bytearray): not remembered
        known = None
    if known is not None:
        return known
    name, value = header
    line = _render(name, value)
    lowered = name.lower()
    known = (line, bytes(lowered) if lowered in _FRAMING else None, value)  # bytes: a name may be a bytearray
    if type(header) is tuple and type(name) is bytes and type(value) is bytes and len(line) <= _LINE_BYTES_KEPT:
        if len(_LINES) >= _LINES_LIMIT:
            _LINES.clear()
        _LINES[header] = known
    return known


# Response heads seen before, by the app's header list as a tuple: the headers' lines joined and how they
# frame a response from uvicorn's fresh state (the transfer encoding decided or not, the content length
# expected, ``connection: close``). Apps answer with a few heads over and over (a content type, a cache
# control, a handful of lengths), so most responses skip the per-header loop. Only lists of
# ``(bytes, bytes)`` tuples whose lines are in _LINES are kept (every one checked as uvicorn checks it);
# the table is emptied when full.
_HEADS: dict[tuple[Any, ...], tuple[bytes, bool | None, int, bool]] = {}
_HEADS_LIMIT = 1024


def _remember_head(key: tuple[Any, ...], head: list[bytes], chunked_encoding: bool | None, content_length: int,
                   has_connection_close: bool) -> None:
    """Keep a head just rendered from uvicorn's fresh state (``head`` is the status line, the default
    headers' lines, then one line per header of ``key``)."""
    for header in key:
        if type(header) is not tuple or header not in _LINES:  # not a kept (bytes, bytes) header
            return
    if len(_HEADS) >= _HEADS_LIMIT:
        _HEADS.clear()
    _HEADS[key] = (b"".join(head[2:]), chunked_encoding, content_length, has_connection_close)


class RequestCycle:
    """One request's ASGI ``receive``/``send`` (see the module docstring)."""

    __slots__ = (
        "body_size",
        "chunked_encoding",
        "chunks",
        "disconnected",
        "expected_content_length",
        "keep_alive",
        "more_body",
        "on_response",
        "protocol",
        "ready",
        "response_complete",
        "response_started",
        "scope",
        "transport",
        "waiter",
        "waiting_for_100_continue",
    )

    def __init__(self, protocol: Any, scope: dict[str, Any], keep_alive: bool, expect_100_continue: bool) -> None:
        self.protocol = protocol
        self.scope = scope
        # The protocol's CorkedTransport (write_last: a response's last bytes go out with those before).
        self.transport: Any = protocol.transport
        self.on_response: Callable[[], None] | None = protocol.on_response_complete
        # Connection state
        self.disconnected = False
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = expect_100_continue
        # Request state: the body received and not yet handed to the app
        self.chunks: list[bytes] = []
        self.body_size = 0
        self.more_body = True
        # uvicorn's message_event: set when there is something new for receive() to report, and the future
        # receive() waits on while it is not (the protocol sets ``ready`` itself, and calls notify() only if
        # there is a waiter: most bodies arrive before the app asks)
        self.ready = False
        self.waiter: asyncio.Future[None] | None = None
        # Response state
        self.response_started = False
        self.response_complete = False
        self.chunked_encoding: bool | None = None
        self.expected_content_length = 0

    def notify(self) -> None:
        """uvicorn's ``message_event.set()``: wake a waiting ``receive``."""
        self.ready = True
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def send_500_response(self) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": 500,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", b"21"),
                    (b"connection", b"close"),
                ],
            }
        )
        await self.send({"type": "http.response.body", "body": b"Internal Server Error", "more_body": False})

    async def send(self, message: Any) -> None:
        # One function for the whole response (the head, then the body): a call less per message.
        flow: FlowControl = self.protocol.flow
        if flow.write_paused and not self.disconnected:
            await flow.drain()
        if self.disconnected:
            return
        if self.response_started:
            if self.response_complete:
                raise RuntimeError(f"Unexpected ASGI message '{message['type']}' sent, after response already completed.")
            if message["type"] != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', but got '{message['type']}'.")
            body = message.get("body", b"")
            more_body = message.get("more_body", False)
            if self.scope["method"] == "HEAD":
                self.expected_content_length = 0
            elif self.chunked_encoding:
                content = [b"%x\r\n" % len(body), body, b"\r\n"] if body else []
                if more_body:
                    self.transport.write(b"".join(content))
                else:
                    content.append(b"0\r\n\r\n")
                    self.transport.write_last(b"".join(content))
            else:
                if len(body) > self.expected_content_length:
                    raise RuntimeError("Response content longer than Content-Length")
                self.expected_content_length -= len(body)
                if more_body or self.expected_content_length:
                    self.transport.write(body)
                else:  # the response's last bytes: out with the head corked before them, in one write
                    self.transport.write_last(body)
            if not more_body:
                if self.expected_content_length != 0:
                    raise RuntimeError("Response content shorter than Content-Length")
                self.response_complete = True
                self.ready = True  # notify(), called only when receive() waits
                if self.waiter is not None:
                    self.notify()
                if not self.keep_alive:
                    self.transport.close()
                if self.on_response is not None:
                    self.on_response()
            return
        if message["type"] != "http.response.start":
            raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{message['type']}'.")
        self.response_started = True
        self.waiting_for_100_continue = False
        status_code = message["status"]
        self.scope[STATUS_KEY] = status_code  # for the app's metrics, instead of a wrapper around send
        protocol = self.protocol
        if protocol.access_log:
            scope = self.scope
            protocol.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(scope),  # type: ignore[arg-type]
                scope["method"],
                get_path_with_query_string(scope),  # type: ignore[arg-type]
                scope["http_version"],
                status_code,
            )
        default_headers = protocol.server_state.default_headers
        known_defaults = _default_heads.get(id(default_headers))  # default_head's table, looked up here first
        if known_defaults is not None and known_defaults[0] is default_headers:
            defaults, default_framing = known_defaults[1], known_defaults[2]
        else:
            defaults, default_framing = default_head(default_headers)
        headers = message.get("headers", ())
        # A response head seen before (the same headers, in order, from uvicorn's fresh framing state)
        # costs one lookup: its lines and how they frame the response, kept by _remember_head.
        key: tuple[Any, ...] | None = None
        known_head = None
        if not default_framing and type(headers) is list:
            try:
                key = tuple(headers)
                known_head = _HEADS.get(key)
            except TypeError:  # a header that is not hashable: rendered one by one
                key = None
        if known_head is not None:
            lines, chunked_encoding, content_length, has_connection_close = known_head
            self.chunked_encoding = chunked_encoding
            self.expected_content_length = content_length
            if has_connection_close:
                self.keep_alive = False
            head = [STATUS_LINE[status_code], defaults, lines]
        else:
            head = [STATUS_LINE[status_code], defaults]
            has_connection_close = False
            # uvicorn's order: the default headers, then the app's, each checked and then framing.
            for name, value in default_framing:
                has_connection_close = self._frame(name, value) or has_connection_close
            for header in headers:
                # header_line's table looked up here first: a header seen before costs no call.
                try:
                    known = _LINES.get(header)
                except TypeError:  # not hashable: header_line renders it
                    known = None
                # Not ``value``: the loop above types that bytes, which a compiled build would check.
                line, framing, header_value = known if known is not None else header_line(header)
                head.append(line)
                if framing is not None:
                    has_connection_close = self._frame(framing, header_value) or has_connection_close
            if key is not None:
                _remember_head(key, head, self.chunked_encoding, self.expected_content_length, has_connection_close)
        if not self.keep_alive and not has_connection_close:
            head.append(b"connection: close\r\n")
        if self.chunked_encoding is None and self.scope["method"] != "HEAD" and status_code not in (204, 304):
            self.chunked_encoding = True
            head.append(b"transfer-encoding: chunked\r\n")
        head.append(b"\r\n")
        self.transport.write(b"".join(head))

    def _frame(self, name: bytes, value: Any) -> bool:
        """uvicorn's handling of a header that frames the response; True for ``connection: close``."""
        if name == b"content-length":
            if self.chunked_encoding is None:
                self.expected_content_length = int(value.decode())
                self.chunked_encoding = False
        elif name == b"transfer-encoding":
            if value.lower() == b"chunked":
                self.expected_content_length = 0
                self.chunked_encoding = True
        elif b"close" in [token.lower().strip() for token in value.split(b",")]:
            self.keep_alive = False
            return True
        return False

    async def receive(self) -> dict[str, Any]:
        if self.waiting_for_100_continue and not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiting_for_100_continue = False
        if not self.disconnected and not self.response_complete:
            flow: FlowControl = self.protocol.flow
            if flow.read_paused:
                flow.resume_reading()
            if not self.ready:
                waiter = self.waiter
                if waiter is None or waiter.done():
                    waiter = self.waiter = self.protocol.loop.create_future()
                await waiter
            self.ready = False
        if self.disconnected or self.response_complete:
            return dict(_DISCONNECT)
        chunks = self.chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self.chunks = []
        self.body_size = 0
        return {"type": "http.request", "body": body, "more_body": self.more_body}


async def run_requests(protocol: Any, cycle: RequestCycle, app: Any) -> None:
    """Run ``app`` for ``cycle``, then for each next request of the connection that ``protocol`` hands
    this task (``protocol.next_request(task)``: a future of the next ``(cycle, app)``, resolved with
    None if the connection is lost first; or None when this task is to end). Each request as uvicorn's
    ``run_asgi`` runs it: the same errors logged, a 500 if the app fails before answering, the
    connection closed if it fails or stops part-way. The task is one of the server's tasks while an
    app runs (the protocol adds it when it hands it a request): it leaves them as the app returns."""
    task = asyncio.current_task()
    logger: logging.Logger = protocol.logger
    tasks: set[Any] = protocol.tasks
    while True:
        try:
            result = await app(cycle.scope, cycle.receive, cycle.send)
        except BaseException as exc:
            logger.error("Exception in ASGI application\n", exc_info=exc)
            if not cycle.response_started:
                await cycle.send_500_response()
            else:
                cycle.transport.close()
        else:
            if result is not None:
                logger.error("ASGI callable should return None, but returned '%s'.", result)
                cycle.transport.close()
            elif not cycle.response_started and not cycle.disconnected:
                logger.error("ASGI callable returned without starting response.")
                await cycle.send_500_response()
            elif not cycle.response_complete and not cycle.disconnected:
                logger.error("ASGI callable returned without completing response.")
                cycle.transport.close()
        finally:
            cycle.on_response = None
            tasks.discard(task)
        waiting = protocol.next_request(task)
        if waiting is None:
            return
        request = await waiting
        if request is None:  # the connection is lost
            return
        cycle, app = request
