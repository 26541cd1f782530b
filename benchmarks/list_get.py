"""List benchmark: ``python benchmarks/list_get.py`` prints the time of one GET of 1,000 ConfigMaps.

In-process (the ASGI app over a real SQLite store, no socket, no TLS, no auth): ``--count``
ConfigMaps of ten ``--value-size``-byte values each are created as kubectl sends them (sorted keys)
or as kubeloop's client does (``--order client``), then the namespace is listed ``--gets`` times;
reported: the median and the 10th percentile per GET, and the body size. ``--gets 0`` after the
same set-up, run under callgrind against ``--gets 20``, gives instructions per GET.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import orjson

from kubeloop.server import create_app
from kubeloop.store import SqliteStore

PATH = "/api/v1/namespaces/default/configmaps"


async def run(*, count: int, value_size: int, gets: int, order: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = await SqliteStore.open(Path(directory) / "kubeloop.db")
        app = create_app(store=store, rng=random.Random(1))
        await app.startup()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kubeloop") as http:
            for i in range(count):
                data = {f"key{j}": "v" * value_size for j in range(10)}
                meta = {"name": f"cm-{i:04d}", "labels": {"app": "x"}}
                body: dict[str, Any] = (
                    {"apiVersion": "v1", "data": data, "kind": "ConfigMap", "metadata": meta} if order == "kubectl"
                    else {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
                )
                r = await http.post(PATH, content=orjson.dumps(body), headers={"content-type": "application/json"})
                assert r.status_code == 201, r.text
        scope = {
            "type": "http", "method": "GET", "path": PATH, "raw_path": PATH.encode(), "query_string": b"",
            "headers": [(b"accept", b"application/json")], "http_version": "1.1", "scheme": "http",
            "server": ("kubeloop", 80), "client": ("bench", 1), "root_path": "",
        }  # fmt: skip
        size = 0

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal size
            if message["type"] == "http.response.body":
                size += len(message.get("body", b""))

        for _ in range(3):
            await app(scope, receive, send)
        times = []
        for _ in range(gets):
            size = 0
            started = time.perf_counter()
            await app(scope, receive, send)
            times.append(time.perf_counter() - started)
        if times:
            times.sort()
            print(f"GET of {count} ConfigMaps ({order} order): median {statistics.median(times) * 1e3:.3f} ms, "
                  f"p10 {times[len(times) // 10] * 1e3:.3f} ms, body {size} bytes")
        await app.shutdown()
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--value-size", type=int, default=40)
    parser.add_argument("--gets", type=int, default=300)
    parser.add_argument("--order", choices=["kubectl", "client"], default="client")
    args = parser.parse_args()
    asyncio.run(run(count=args.count, value_size=args.value_size, gets=args.gets, order=args.order))


if __name__ == "__main__":
    main()
