"""A watch the consumer stops early is closed at once: the generator's close returns and the connection
is dropped (a watch body never ends, so it cannot be drained for reuse)."""

from __future__ import annotations

import asyncio
import contextlib

import orjson

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.client import Client

CM: ResourceInfo = KindRegistry().by_kind("", "ConfigMap")  # type: ignore[assignment]


async def test_closing_a_watch_after_the_first_event_drops_the_connection() -> None:
    hung_up = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        line = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1"}}}) + b"\n"
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%b\r\n" % (len(line), line))
        await writer.drain()
        await reader.read()  # no more events: wait until the client hangs up
        hung_up.set()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with Client.from_url(f"http://127.0.0.1:{port}") as client:
            names = []
            async with contextlib.aclosing(client.watch(CM, namespace="x")) as events:
                async for event in events:
                    names.append(event.object["metadata"]["name"])
                    break
            assert names == ["a"]
            await hung_up.wait()
    finally:
        server.close()
        await server.wait_closed()
