"""An httpx transport that reaches an ASGI app in-process and *streams* its response.

httpx's own ``ASGITransport`` runs the app to completion and buffers the whole body before
returning, which cannot work for a watch (the body never ends). This transport runs the app as a
task and hands body chunks to the caller as the app sends them, so ``client.stream(...)`` sees each
watch event as soon as the server flushes it: the same code path as over a socket, minus the socket.

Guarantees:
* The response is returned as soon as the app sends ``http.response.start``.
* Closing the response (or cancelling the caller) tells the app ``http.disconnect`` and cancels
  its task; no task outlives the response.
* An app that fails before starting a response, or mid-body, surfaces as ``httpx.ReadError``
  (the client maps it to ``ConnectionFailed``), as a dropped connection would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx

__all__ = ["ASGIApp", "StreamingASGITransport"]

Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]

_END = object()


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, chunks: asyncio.Queue[object], task: asyncio.Task[None], disconnected: asyncio.Event) -> None:
        self._chunks = chunks
        self._task = task
        self._disconnected = disconnected

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            item = await self._chunks.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise httpx.ReadError(f"the ASGI app failed mid-response: {item!r}") from item
            assert isinstance(item, bytes)
            yield item

    async def aclose(self) -> None:
        self._disconnected.set()
        if not self._task.done():
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        self._chunks.put_nowait(_END)  # a task cancelled before it ran never reached its finally


class StreamingASGITransport(httpx.AsyncBaseTransport):
    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 50000)) -> None:
        self._app = app
        self._client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": request.url.scheme,
            "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "root_path": "",
            "server": (request.url.host, request.url.port or (443 if request.url.scheme == "https" else 80)),
            "client": self._client,
            "state": {},
        }
        body_iter = request.stream.__aiter__()
        body_done = False
        disconnected = asyncio.Event()
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = asyncio.get_running_loop().create_future()
        chunks: asyncio.Queue[object] = asyncio.Queue()

        async def receive() -> Message:
            nonlocal body_done
            if not body_done:
                try:
                    chunk = await body_iter.__anext__()
                except StopAsyncIteration:
                    body_done = True
                    return {"type": "http.request", "body": b"", "more_body": False}
                return {"type": "http.request", "body": bytes(chunk), "more_body": True}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if disconnected.is_set():
                raise OSError("client disconnected")
            if message["type"] == "http.response.start":
                if not started.done():
                    started.set_result((int(message["status"]), list(message.get("headers", []))))
            elif message["type"] == "http.response.body":
                body = message.get("body", b"")
                if body:
                    chunks.put_nowait(bytes(body))
                if not message.get("more_body", False):
                    chunks.put_nowait(_END)

        async def run() -> None:
            try:
                await self._app(scope, receive, send)
            except BaseException as exc:
                if not started.done():
                    started.set_exception(httpx.ReadError(f"the ASGI app failed: {exc!r}"))
                else:
                    chunks.put_nowait(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
            finally:
                if not started.done():
                    started.set_exception(httpx.ReadError("the ASGI app returned without a response"))
                chunks.put_nowait(_END)

        task = asyncio.create_task(run(), name=f"asgi {request.method} {request.url.path}")
        try:
            status, headers = await started
        except BaseException:
            disconnected.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise
        return httpx.Response(status, headers=headers, stream=_ResponseStream(chunks, task, disconnected))
