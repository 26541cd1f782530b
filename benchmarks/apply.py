"""Server-side apply benchmark: ``python benchmarks/apply.py`` prints applies/s divided by PUTs/s.

Issue 3 point 9: server-side apply of one Deployment, repeated, against plain PUTs of the same object
in the same run on the same machine (goal: ratio >= 0.5). Each of 16 keep-alive HTTPS clients owns one
Deployment and rewrites it back to back, changing one annotation per request so that every request is
a real, durable write (an unchanged apply or PUT is a no-op upstream and here). The apply side sends
``PATCH ?fieldManager=bench&force=true`` with ``application/apply-patch+yaml`` (the body kubectl sends:
JSON); the PUT side sends the same manifest as an unconditional update. Rounds alternate (3 x 2 s each)
and the medians are reported, as in ``benchmarks/apiserver.py``, whose server and client plumbing
(pinned ``kubeloop apiserver`` subprocess, raw asyncio TLS connections) this reuses.

``--profile`` instead runs the apply path in-process under cProfile and prints the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

_spec = importlib.util.spec_from_file_location("kubeloop_bench_apiserver", Path(__file__).with_name("apiserver.py"))
assert _spec is not None and _spec.loader is not None
base = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = base
_spec.loader.exec_module(base)

CLIENTS = 16
ROUNDS = 3
SECONDS = 2.0
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = "application/apply-patch+yaml"
JSON = "application/json"


def manifest(name: str, serial: int) -> bytes:
    labels = {"app": name}
    return orjson.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels, "annotations": {"bench/serial": str(serial)}},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [
                                  {"name": "web", "image": "nginx:1.27",
                                   "ports": [{"containerPort": 80, "name": "http"}],
                                   "env": [{"name": f"E{i}", "value": str(i)} for i in range(4)],
                                   "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                                  {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "infinity"]}]}}},
    })  # fmt: skip


async def request(conn: Any, method: str, path: str, body: bytes, content_type: str) -> tuple[int, bytes]:
    head = (f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n").encode() + conn.auth
    conn.writer.write(head + b"\r\n" + body)
    status, headers = await conn.head()
    if b"content-length" in headers:
        return status, await conn.reader.readexactly(int(headers[b"content-length"]))
    data = b""
    while chunk := await conn.chunk():
        data += chunk
    return status, data


async def bench(tmp: Path) -> dict[str, float]:
    server = base.Server.kubeloop(tmp / "apply")
    try:
        ctx = await base.kubeloop_ready(server)
        token = server.token()
        setup = await base.Conn.open(server.port, ctx, token)
        for n in range(CLIENTS):
            for kind in ("apply", "put"):
                status, body = await request(setup, "POST", DEPLOYMENTS, manifest(f"{kind}-{n}", 0), JSON)
                assert status == 201, body
        setup.close()

        async def apply(conn: Any, serial: int) -> None:
            name = f"apply-{serial // 10_000_000}"
            status, body = await request(conn, "PATCH", f"{DEPLOYMENTS}/{name}?fieldManager=bench&force=true",
                                         manifest(name, serial), APPLY)
            assert status == 200, body

        async def put(conn: Any, serial: int) -> None:
            name = f"put-{serial // 10_000_000}"
            status, body = await request(conn, "PUT", f"{DEPLOYMENTS}/{name}", manifest(name, serial), JSON)
            assert status == 200, body

        pairs = []
        for round_ in range(ROUNDS):
            # closed_loop numbers requests index * 10_000_000 + i: the client index picks its Deployment.
            offset = round_ * 100_000
            applies = await base.closed_loop(server.port, ctx, token, CLIENTS, SECONDS,
                                             lambda c, i, o=offset: apply(c, i + o))
            puts = await base.closed_loop(server.port, ctx, token, CLIENTS, SECONDS,
                                          lambda c, i, o=offset: put(c, i + o))
            pairs.append((applies, puts))
    finally:
        server.stop()
    return {
        "applies": statistics.median(p[0] for p in pairs),
        "puts": statistics.median(p[1] for p in pairs),
        "ratio": statistics.median(p[0] / p[1] for p in pairs),
    }


def profile() -> None:
    """The apply path in-process (ASGI, no socket), under cProfile: where the time goes."""
    import cProfile
    import pstats
    import random

    import httpx

    from kubeloop.server import create_app
    from kubeloop.store import SqliteStore

    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            store = await SqliteStore.open(Path(tmp) / "db")
            app = create_app(store=store, rng=random.Random(1))
            await app.startup()
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://k") as client:
                await client.post(DEPLOYMENTS, content=manifest("p", 0), headers={"content-type": JSON})
                prof = cProfile.Profile()
                prof.enable()
                for i in range(1, 400):
                    r = await client.patch(f"{DEPLOYMENTS}/p?fieldManager=bench&force=true", content=manifest("p", i),
                                           headers={"content-type": APPLY})
                    assert r.status_code == 200, r.text
                prof.disable()
            await app.shutdown()
            await store.close()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="profile the apply path in-process instead")
    args = parser.parse_args()
    if args.profile:
        profile()
        return
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    if base.PIN:
        import os

        os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(bench(Path(tmp)))
    print("| benchmark | server-side apply | PUT | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| one Deployment per client, {CLIENTS} clients | {result['applies']:,.0f} applies/s | "
          f"{result['puts']:,.0f} PUTs/s | **{result['ratio']:.2f}** | >= 0.5 |")


if __name__ == "__main__":
    main()
