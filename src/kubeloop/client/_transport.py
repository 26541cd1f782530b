"""A lean HTTP/1.1 transport for httpx: asyncio protocols, ``ssl``, httptools' parser, a keep-alive pool.

:class:`HTTP11Transport` is an ``httpx.AsyncBaseTransport``, so the client keeps its one seam (a URL
or an in-process ASGI app behind ``handle_async_request``) while a request costs a fraction of
httpcore + anyio + h11: one ``transport.write`` for head and body, the response parsed in C
(llhttp via httptools, already the server's parser), body chunks handed on as they arrive.

Guarantees:

* **TLS** uses the ``ssl.SSLContext`` it is given (from the kubeconfig: CA, client certificate),
  with the URL's host as the server name; verification is whatever that context says (on by default).
  Every connection shares that one context (without one, a default context made on first use): making
  a context and loading its CAs costs milliseconds, and a controller manager opens some forty
  connections, one per watch, as it starts. A new connection resumes the TLS session of the last
  connection to the same server name that received a whole response (:mod:`._tls_sessions`): the
  server's chain is verified by that connection's full handshake, not again by every one.
* **Keep-alive**: a connection goes back to the pool only after its response body was read to the
  end and both sides allow reuse; idle connections older than ``keepalive_expiry`` or closed by the
  server are never reused. At most ``max_connections`` are open at once; more requests wait for one
  (``pool`` timeout) and take a kept-alive connection released to their host before opening any.
* **Bodies**: requests with a known length are sent with ``Content-Length`` in one write; streamed
  ones as ``Transfer-Encoding: chunked``. Responses may be ``Content-Length``, chunked, or (rarely)
  delimited by the server closing the connection.
* **Streaming**: the response is returned once its head is parsed; the body streams chunk by chunk
  (a watch never ends), with back-pressure: reading pauses while more than ``HIGH_WATER`` bytes wait.
* **Reads** land in one ``READ_BUFFER`` per transport (asyncio's buffered-protocol path: the socket,
  or TLS's decryption, writes straight into it) and are parsed from there; the parser copies out
  each body piece once. Sharing it is safe: a loop fills a protocol's buffer and hands it over in one
  synchronous step, and a transport belongs to one loop.
* **Whole bodies read in place**: a caller that wants a whole body of known length (at least
  ``IN_PLACE_BODY`` bytes, ``Content-Length`` framing) gets it from :meth:`ResponseBody.read_whole`:
  the rest of the body is received (or decrypted) straight into one buffer of that length, with no
  parser, chunk or join copies. The connection is kept alive as after any complete response.
* **Retry of a stale connection**: an idempotent request (GET, HEAD, OPTIONS) that fails on a
  *reused* connection before any response byte is retried once on a new connection, as Go's
  ``net/http`` does; nothing else is ever retried here.
* **Errors** are httpx's (``ConnectError``, ``ConnectTimeout``, ``ReadError``, ``ReadTimeout``,
  ``WriteError``, ``PoolTimeout``, ``RemoteProtocolError``), which the client maps to
  ``ConnectionFailed``; cancelling a request closes its connection.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
from collections.abc import AsyncIterator
from typing import Any, cast

import httptools
import httpx

from kubeloop.client._tls_sessions import TlsSessions, tls_sessions

__all__ = ["HTTP11Transport", "ResponseBody"]

HIGH_WATER = 1 << 20
READ_BUFFER = 1 << 18
IN_PLACE_BODY = 1 << 20
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})


class _StaleConnection(Exception):
    """A reused connection failed before any response byte arrived (safe to retry idempotent requests)."""


class _Connection(asyncio.BufferedProtocol):
    """One HTTP/1.1 connection; one request/response at a time."""

    def __init__(self, pool: HTTP11Transport, key: tuple[str, str, int]) -> None:
        self._pool = pool
        self.key = key
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        self._can_write: asyncio.Future[None] | None = None
        # The exchange in progress.
        self._head: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] | None = None
        self._headers: list[tuple[bytes, bytes]] = []
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._complete = False
        self._error: BaseException | None = None
        self._got_bytes = False
        self._paused = False
        self._eof_body = False
        self._exchange = 0
        self.keep_alive = False
        self.tls_session_unread = False  # a TLS connection whose session the pool has not remembered yet
        # Content-Length of the response in progress (None: chunked or close-delimited), body bytes
        # the parser has handed on, and the whole body's buffer while it is read in place.
        self._length: int | None = None
        self._parsed = 0
        self._in_place: memoryview | None = None
        self._in_place_at = 0

    # -- asyncio.Protocol -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports (TCP and SSL) are not asyncio.Transport subclasses, but have its methods.
        self._transport = cast(asyncio.Transport, transport)

    def ssl_object(self) -> Any:
        """The connection's ``ssl.SSLObject`` (``None`` without TLS)."""
        return None if self._transport is None else self._transport.get_extra_info("ssl_object")

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._in_place is not None:
            return self._in_place[self._in_place_at :]  # never more than the body: no over-read
        return self._pool._read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._in_place is None:
            self.data_received(self._pool._read_buffer()[:nbytes])
            return
        self._got_bytes = True
        self._in_place_at += nbytes
        if self._in_place_at == len(self._in_place):
            self._in_place = None
            self._complete = True
            # The parser saw only the start of this body: the next exchange needs a fresh one.
            self._parser = httptools.HttpResponseParser(self)
            self._wake()

    def data_received(self, data: bytes | memoryview) -> None:
        self._got_bytes = True
        if self._head is None:  # bytes while idle: the server broke the protocol; never reuse this
            self.close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed HTTP response: {exc}"))
            self.close()

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._pool._forget_idle(self)
        if self._head is not None and not self._complete:
            if self._eof_body and self._head.done() and exc is None:
                self._complete = True  # a body delimited by the end of the connection
                self._wake()
            elif not self._got_bytes and self.reused:
                self._fail(_StaleConnection("the server closed a kept-alive connection"))
            else:
                reason = f": {exc}" if exc else ""
                self._fail(httpx.ReadError(f"the server closed the connection mid-response{reason}"))
        if self._can_write is not None and not self._can_write.done():
            self._can_write.set_exception(httpx.WriteError("connection lost while writing"))

    def pause_writing(self) -> None:
        if self._can_write is None or self._can_write.done():
            self._can_write = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._can_write is not None and not self._can_write.done():
            self._can_write.set_result(None)

    # -- httptools callbacks ----------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 200:
            self._headers = []  # an interim 1xx answer: the real one follows
            return
        self.keep_alive = self._parser.should_keep_alive()
        names = {n.lower(): v for n, v in self._headers}
        self._eof_body = (
            b"content-length" not in names and b"transfer-encoding" not in names and status not in (204, 304)
        )
        length = names.get(b"content-length")
        self._length = int(length) if length is not None and b"transfer-encoding" not in names else None
        if self._head is not None and not self._head.done():
            self._head.set_result((status, self._headers))

    def on_body(self, body: bytes) -> None:
        self._parsed += len(body)
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > HIGH_WATER and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._head is not None and self._head.done():
            self._complete = True
            self._wake()

    # -- exchange ---------------------------------------------------------------------------------

    async def send(self, head: bytes, body: bytes | AsyncIterator[bytes], timeout: float | None) -> None:
        """Write the request and start waiting for its answer."""
        assert self._transport is not None
        if self.closed:
            raise _StaleConnection("the connection was closed") if self.reused else httpx.WriteError("closed")
        self._exchange += 1
        self._head = self._loop.create_future()
        self._headers, self._complete, self._error, self._got_bytes = [], False, None, False
        self._chunks.clear()
        self._buffered = 0
        self._length, self._parsed = None, 0
        if isinstance(body, bytes):
            self._transport.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                self._transport.write(body)
            await self._drain(timeout)
            return
        self._transport.write(head)
        async for chunk in body:
            if chunk:
                self._transport.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                await self._drain(timeout)
        self._transport.write(b"0\r\n\r\n")
        await self._drain(timeout)

    async def _drain(self, timeout: float | None) -> None:
        if self.closed:
            raise httpx.WriteError("the connection is closed")
        if self._can_write is not None and not self._can_write.done():
            try:
                async with asyncio.timeout(timeout):
                    await self._can_write
            except TimeoutError:
                raise httpx.WriteTimeout("timed out writing the request") from None

    async def response_head(self, timeout: float | None) -> tuple[int, list[tuple[bytes, bytes]]]:
        assert self._head is not None
        try:
            async with asyncio.timeout(timeout):
                return await self._head
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response") from None

    async def body(self, timeout: float | None) -> AsyncIterator[bytes]:
        chunks, exchange = self._chunks, self._exchange
        while self._exchange == exchange:
            while chunks and self._exchange == exchange:
                chunk = chunks.popleft()
                self._buffered -= len(chunk)
                if self._paused and self._buffered <= HIGH_WATER // 4 and self._transport is not None:
                    self._paused = False
                    self._transport.resume_reading()
                yield chunk
            if self._complete or self._exchange != exchange:
                return  # done, or the exchange was finished (closed) while the consumer held a chunk
            if self._error is not None:
                raise self._error
            self._waiter = self._loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter
            except TimeoutError:
                raise httpx.ReadTimeout("timed out reading the response body") from None
            finally:
                self._waiter = None

    async def read_whole(self, timeout: float | None) -> bytearray | None:
        """The whole body in one buffer, the rest of it received in place; None when this response's
        body cannot be read so (no Content-Length, under ``IN_PLACE_BODY``, already complete, or
        partly taken by :meth:`body`): the caller then reads the chunks."""
        length = self._length
        if (length is None or length < IN_PLACE_BODY or self._complete or self._error is not None
                or self._head is None or self._buffered != self._parsed):
            return None
        whole = bytearray(length)
        view = memoryview(whole)
        at = 0
        for chunk in self._chunks:
            view[at : at + len(chunk)] = chunk
            at += len(chunk)
        self._chunks.clear()
        self._buffered = 0
        self._in_place, self._in_place_at = view, at
        if self._paused and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        while not self._complete:
            if self._error is not None:
                self._in_place = None
                raise self._error
            progress = self._in_place_at
            self._waiter = self._loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter  # woken when the body is complete or the connection failed
            except TimeoutError:
                if self._in_place_at == progress:  # no byte for ``timeout`` seconds, as in body()
                    self._in_place = None
                    raise httpx.ReadTimeout("timed out reading the response body") from None
            finally:
                self._waiter = None
        return whole

    @property
    def complete(self) -> bool:
        return self._complete

    def finish(self) -> None:
        """The exchange is over: keep the connection only if it can carry another one."""
        self._head = None
        self._in_place = None
        self._exchange += 1  # a body iterator of this exchange that is still suspended ends
        self._wake()
        self.reused = True
        if not (self._complete and self.keep_alive and not self.closed and not self._chunks):
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._transport is not None:
                self._transport.close()

    def _fail(self, exc: BaseException) -> None:
        self._error = exc
        if self._head is not None and not self._head.done():
            self._head.set_exception(exc)
            self._head.exception()  # retrieved here; the caller awaiting it sees it too
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class ResponseBody(httpx.AsyncByteStream):
    def __init__(self, pool: HTTP11Transport, conn: _Connection, read_timeout: float | None) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        async for chunk in conn.body(self._read_timeout):
            yield chunk
        await self.aclose()

    async def read_whole(self) -> bytearray | None:
        """The whole body read in place (see the module docstring), or None: then iterate."""
        conn = self._conn
        if conn is None:
            return None
        whole = await conn.read_whole(self._read_timeout)
        if whole is not None:
            await self.aclose()
        return whole

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool._release(conn)


class HTTP11Transport(httpx.AsyncBaseTransport):
    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 128,
        keepalive_expiry: float = 30.0,
    ) -> None:
        self._ssl = ssl_context
        self._max = max_connections
        self._expiry = keepalive_expiry
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False
        self._buffer: memoryview | None = None
        self._sessions: TlsSessions | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}")
        key = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        head = _request_head(request)
        stream = request.stream
        body: bytes | AsyncIterator[bytes]
        if isinstance(stream, httpx.ByteStream):
            body = b"".join([c async for c in stream])
        else:
            assert isinstance(stream, httpx.AsyncByteStream)
            body = stream.__aiter__()
        for attempt in (0, 1):
            conn = await self._acquire(key, timeouts)
            try:
                await conn.send(head, body, timeouts.get("write"))
                status, headers = await conn.response_head(timeouts.get("read"))
            except _StaleConnection as exc:
                self._release(conn)
                if attempt == 0 and request.method in IDEMPOTENT and isinstance(body, bytes):
                    continue
                raise httpx.ReadError(str(exc)) from None
            except BaseException:
                conn.close()
                self._release(conn)
                raise
            if request.method == "HEAD":
                conn.close()  # httptools cannot be told that this answer has no body
                self._release(conn)
                return httpx.Response(status, headers=headers, extensions={"http_version": b"HTTP/1.1"})
            return httpx.Response(
                status, headers=headers, stream=ResponseBody(self, conn, timeouts.get("read")),
                extensions={"http_version": b"HTTP/1.1"},
            )
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        self._closed = True
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()

    def _read_buffer(self) -> memoryview:
        buffer = self._buffer
        if buffer is None:
            buffer = self._buffer = memoryview(bytearray(READ_BUFFER))
        return buffer

    # -- pool -------------------------------------------------------------------------------------

    async def _acquire(self, key: tuple[str, str, int], timeouts: dict[str, Any]) -> _Connection:
        if self._closed:
            raise httpx.ConnectError("the transport is closed")
        while True:
            # Checked again after every wait: the connection just released is usually this key's.
            conn = self._take_idle(key)
            if conn is not None:
                return conn
            if self._open < self._max:
                break
            if not self._close_one_idle():
                await self._wait_for_slot(timeouts.get("pool"))
        self._open += 1
        try:
            return await self._connect(key, timeouts.get("connect"))
        except BaseException:
            self._open -= 1
            self._wake_one()
            raise

    def _take_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        """The most recently idle connection to ``key`` still usable (expired ones are closed)."""
        idle = self._idle.get(key)
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self._expiry:
                return conn
            conn.close()
            self._open -= 1
        return None

    async def _connect(self, key: tuple[str, str, int], timeout: float | None) -> _Connection:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        conn = _Connection(self, key)
        context = self._tls_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                await loop.create_connection(
                    lambda: conn, host, port, ssl=context, server_hostname=host if context else None
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"timed out connecting to {host}:{port}") from None
        except ssl.SSLError as exc:
            raise httpx.ConnectError(f"TLS failure: {exc}") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        conn.tls_session_unread = context is not None
        return conn

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        if self._sessions is None:
            self._sessions = tls_sessions(self._ssl)
        return self._ssl

    def _release(self, conn: _Connection) -> None:
        conn.finish()
        if conn.closed or self._closed:
            conn.close()
            self._open -= 1
        else:
            if conn.tls_session_unread and self._sessions is not None:
                # A whole response came after the handshake, so a TLS 1.3 server's tickets have too.
                conn.tls_session_unread = False
                self._sessions.remember(conn.ssl_object())
            conn.idle_since = asyncio.get_running_loop().time()
            self._idle.setdefault(conn.key, []).append(conn)
        self._wake_one()

    def _forget_idle(self, conn: _Connection) -> None:
        """The server closed an idle connection: drop it from the pool now."""
        idle = self._idle.get(conn.key)
        if idle and conn in idle:
            idle.remove(conn)
            self._open -= 1
            self._wake_one()

    def _close_one_idle(self) -> bool:
        for conns in self._idle.values():
            if conns:
                conns.pop(0).close()
                self._open -= 1
                return True
        return False

    async def _wait_for_slot(self, timeout: float | None) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except BaseException as exc:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            if waiter.done() and not waiter.cancelled():
                self._wake_one()  # woken, but leaving (cancelled or timed out): hand the free slot on
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout("timed out waiting for a free connection") from None
            raise

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


def _request_head(request: httpx.Request) -> bytes:
    lines = [b"%b %b HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    for name, value in request.headers.raw:
        line = b"%b: %b" % (name, value)
        # find(), not `in`: bytes `in` first tries its operand as an int, raising and clearing a TypeError.
        if line.find(b"\n") >= 0 or line.find(b"\r") >= 0:
            raise httpx.LocalProtocolError(f"invalid header {name!r}")
        lines.append(line)
    lines.append(b"\r\n")
    return b"\r\n".join(lines)
