"""Serve an app with uvicorn on 127.0.0.1, a free port, inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn

from kubeloop.server import App


@contextlib.asynccontextmanager
async def serve(app: App) -> AsyncIterator[str]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning",
                            loop="asyncio", http="h11", ws="none")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
