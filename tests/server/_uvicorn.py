"""Serve an app with uvicorn on 127.0.0.1, a free port, inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn

from kubeloop.server import App, TlsMaterial


@contextlib.asynccontextmanager
async def serve(app: App, *, tls: TlsMaterial | None = None) -> AsyncIterator[str]:
    """``tls``: serve HTTPS with that material (kubectl sends a bearer token only over TLS)."""
    files = {"ssl_certfile": str(tls.cert), "ssl_keyfile": str(tls.key)} if tls is not None else {}
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning",
                            loop="asyncio", http="h11", ws="none", **files)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"{'https' if tls is not None else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
