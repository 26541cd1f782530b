"""Serve an app with uvicorn on 127.0.0.1, a free port, inside the test's event loop; and kubectl against it
(:class:`Kubectl`, :func:`write_kubeconfig`, or both at once with :func:`kubectl_for`)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
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


class Kubectl:
    """The kubectl binary with one kubeconfig (and the caller's HOME: tests that need empty discovery caches
    use ``tests/e2e/_kubectl.py``)."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    async def run(self, *args: str, stdin: bytes | None = None, ok: bool = True) -> tuple[int, str, str]:
        """Exit code, standard output and standard error; ``ok``: assert kubectl succeeded."""
        process = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(self.kubeconfig), *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await process.communicate(stdin)
        if ok:
            assert process.returncode == 0, err
        return process.returncode or 0, out.decode(), err.decode()

    async def __call__(self, *args: str, stdin: bytes | None = None, fails: bool = False) -> str:
        """Standard output of a kubectl that must succeed (``fails``: standard error of one that must fail)."""
        code, out, err = await self.run(*args, stdin=stdin, ok=not fails)
        if fails:
            assert code != 0, out
            return err
        return out


def write_kubeconfig(path: Path, url: str, *, ca_pem: bytes | None = None) -> None:
    """A kubeconfig for ``url`` with the token ``t`` (``real_app``'s admin) and the ``default`` namespace;
    ``ca_pem``: the CA that signed an HTTPS server's certificate."""
    cluster: dict[str, str] = {"server": url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "k",
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "k", "context": {"cluster": "k", "user": "u", "namespace": "default"}}]}))


@contextlib.asynccontextmanager
async def kubectl_for(app: App, directory: Path, *, tls: TlsMaterial | None = None) -> AsyncIterator[Kubectl]:
    """``app`` served over plain HTTP (or HTTPS with ``tls``: kubectl sends a bearer token only over TLS)
    and a :class:`Kubectl` against it (its kubeconfig in ``directory``)."""
    kubeconfig = directory / "kubeconfig"
    async with serve(app, tls=tls) as url:
        write_kubeconfig(kubeconfig, url, ca_pem=tls.ca_pem if tls is not None else None)
        yield Kubectl(kubeconfig)
