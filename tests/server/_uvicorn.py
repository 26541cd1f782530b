"""Serve an app with uvicorn on 127.0.0.1, a free port, inside the test's event loop; and kubectl against it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

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


@contextlib.asynccontextmanager
async def kubectl_for(app: App, directory: Path) -> AsyncIterator[Callable[..., Awaitable[str]]]:
    """``app`` served over plain HTTP and a ``kubectl(*args)`` against it (a kubeconfig in ``directory`` with
    the token ``t``, ``real_app``'s admin, and the ``default`` namespace) that asserts kubectl succeeded and
    answers its standard output (with ``fails=True``: asserts it failed and answers its standard error)."""
    kubeconfig = directory / "kubeconfig"

    async def kubectl(*args: str, fails: bool = False) -> str:
        process = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(kubeconfig), *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate()
        if fails:
            assert process.returncode != 0, out
            return err.decode()
        assert process.returncode == 0, err
        return out.decode()

    async with serve(app) as url:
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "k",
            "clusters": [{"name": "k", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "k", "context": {"cluster": "k", "user": "u", "namespace": "default"}}]}))
        yield kubectl
