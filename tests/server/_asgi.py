"""Drive the ASGI app directly for streaming responses (httpx's ASGITransport buffers them)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson

from kubeloop.server import App


class Stream:
    """A running request: status, headers and the body chunks as they arrive."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self.ended = asyncio.Event()
        self.started = asyncio.Event()
        self.disconnect = asyncio.Event()
        self._buffer = b""

    async def events(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The next ``n`` newline-terminated JSON events."""
        out: list[dict[str, Any]] = []
        async with asyncio.timeout(timeout):
            while len(out) < n:
                while b"\n" in self._buffer and len(out) < n:
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    out.append(orjson.loads(line))
                if len(out) < n:
                    self._buffer += await self.chunks.get()
        return out

    async def lines(self, n: int, timeout: float = 5.0) -> list[bytes]:
        """The next ``n`` events as sent: their lines, newline included, not decoded."""
        out: list[bytes] = []
        async with asyncio.timeout(timeout):
            while len(out) < n:
                while b"\n" in self._buffer and len(out) < n:
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    out.append(line + b"\n")
                if len(out) < n:
                    self._buffer += await self.chunks.get()
        return out

    async def rest(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Every remaining event, after the stream ends."""
        async with asyncio.timeout(timeout):
            await self.ended.wait()
        while not self.chunks.empty():
            self._buffer += self.chunks.get_nowait()
        lines = [line for line in self._buffer.split(b"\n") if line]
        assert self._buffer == b"" or self._buffer.endswith(b"\n"), "every event ends with a newline"
        self._buffer = b""
        return [orjson.loads(line) for line in lines]


@contextlib.asynccontextmanager
async def stream(app: App, path: str, query: str = "", headers: dict[str, str] | None = None) -> AsyncIterator[Stream]:
    s = Stream()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }
    sent_request = False

    async def receive() -> dict[str, Any]:
        nonlocal sent_request
        if not sent_request:
            sent_request = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await s.disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            s.status = message["status"]
            s.headers = {k.decode(): v.decode() for k, v in message.get("headers", [])}
            s.started.set()
        elif message["type"] == "http.response.body":
            if message.get("body"):
                s.chunks.put_nowait(message["body"])
            if not message.get("more_body", False):
                s.ended.set()

    task = asyncio.create_task(app(scope, receive, send))
    try:
        async with asyncio.timeout(5):
            await s.started.wait()
        yield s
    finally:
        s.disconnect.set()
        async with asyncio.timeout(5):
            await task
