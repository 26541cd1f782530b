"""Namespace-delete benchmark: ``python benchmarks/delete.py [--runs N]`` prints one table (method in docs/performance.md).

1. Starts ``kubeloop up`` (API server + controller manager with the GC and the namespace controller)
   on a fresh data dir and fills namespace ``bench`` with OBJECTS objects in owner chains: per group a
   ConfigMap that owns a Secret that owns three ConfigMaps (blockOwnerDeletion set), created over
   HTTPS by 64 concurrent clients. ConfigMaps and Secrets, so no workload controller adds or removes
   anything during the measurement.
2. Times ``kubeloop.guard.preview_delete`` of the namespace (discovery, cluster-wide lists, graph).
3. Deletes the namespace and times until the namespace itself is gone (GET 404): every object is
   then removed; objects removed per second = (OBJECTS + 1) / that time. That time includes the
   namespace controller's fixed 5 s wait before it starts (upstream ``namespaceDeletionGracePeriod``),
   so the rate is also given from the first object removed (seen by a watch opened before the
   delete) to the namespace gone: the speed of the removal itself.
4. Raw store deletes per second in the same run: a fresh ``SqliteStore`` in this process holding
   OBJECTS keys of the same size, deleted by 64 concurrent tasks (group commit, durable).
   The figure is (3) divided by (4); goal >= 0.3.

``--runs N`` repeats 1-4 on a fresh server each time, one table row per run, then the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from kubeloop.api import KindRegistry, NotFound, ResourceInfo

KINDS = KindRegistry()
NAMESPACES: ResourceInfo = KINDS.by_kind("", "Namespace")  # type: ignore[assignment]
CONFIGMAPS: ResourceInfo = KINDS.by_kind("", "ConfigMap")  # type: ignore[assignment]
SECRETS: ResourceInfo = KINDS.by_kind("", "Secret")  # type: ignore[assignment]
READY = re.compile(r"kubeloop is ready at (https://\S+)")
CONCURRENCY = 64
PAYLOAD = {"data": {"k": "v" * 200}}


def ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


async def fill(client: Any, groups: int) -> int:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def group(i: int) -> int:
        async with gate:
            root = await client.create(CONFIGMAPS, {"metadata": {"name": f"app-{i}"}, **PAYLOAD}, namespace="bench")
            root["kind"] = "ConfigMap"
            mid = await client.create(SECRETS, {"metadata": {"name": f"app-{i}", "ownerReferences": [ref(root)]},
                                                "stringData": {"k": "v" * 200}}, namespace="bench")
            mid["kind"] = "Secret"
            await asyncio.gather(*(client.create(CONFIGMAPS, {
                "metadata": {"name": f"app-{i}-{j}", "ownerReferences": [ref(mid)]}, **PAYLOAD}, namespace="bench")
                for j in range(3)))
            return 5

    return sum(await asyncio.gather(*(group(i) for i in range(groups))))


async def raw_store_deletes(n: int) -> float:
    from kubeloop.store import SqliteStore

    with tempfile.TemporaryDirectory() as tmp:
        store = await SqliteStore.open(Path(tmp) / "raw.db")
        try:
            body = orjson.dumps({"metadata": {"name": "x", "namespace": "bench"}, **PAYLOAD})
            gate = asyncio.Semaphore(CONCURRENCY)

            async def put(i: int) -> None:
                async with gate:
                    await store.create(f"/registry/core/configmaps/bench/k{i}", lambda _rev: body)

            await asyncio.gather(*(put(i) for i in range(n)))

            async def drop(i: int) -> None:
                async with gate:
                    await store.delete(f"/registry/core/configmaps/bench/k{i}", expected_revision=None)

            start = time.perf_counter()
            await asyncio.gather(*(drop(i) for i in range(n)))
            return n / (time.perf_counter() - start)
        finally:
            await store.close()


async def measure(url_kubeconfig: Path, objects: int) -> dict[str, float]:
    from kubeloop.client import Client
    from kubeloop.guard import preview_delete

    async with Client.from_kubeconfig(str(url_kubeconfig)) as client:
        await client.create(NAMESPACES, {"metadata": {"name": "bench"}})
        start = time.perf_counter()
        made = await fill(client, objects // 5)
        fill_s = time.perf_counter() - start
        start = time.perf_counter()
        impact = await preview_delete(client, "namespaces", "bench")
        preview_s = time.perf_counter() - start
        predicted = len(impact.deleted)
        rv = (await client.list(CONFIGMAPS, namespace="bench", limit=1))["metadata"]["resourceVersion"]
        first_removal = asyncio.create_task(first_deleted(client, rv))
        start = time.perf_counter()
        await client.delete(NAMESPACES, "bench", propagation_policy="Background")
        while True:
            try:
                await client.get(NAMESPACES, "bench")
            except NotFound:
                break
            await asyncio.sleep(0.05)
        end = time.perf_counter()
        removing_s = end - await first_removal
        delete_s = end - start
    raw = await raw_store_deletes(made)
    removed_per_s = (made + 1) / delete_s
    removing_per_s = (made + 1) / removing_s
    return {"objects": made, "fill_s": fill_s, "preview_s": preview_s, "predicted": predicted,
            "delete_s": delete_s, "removed_per_s": removed_per_s, "raw_per_s": raw, "ratio": removed_per_s / raw,
            "removing_s": removing_s, "removing_per_s": removing_per_s, "removing_ratio": removing_per_s / raw}


async def first_deleted(client: Any, resource_version: str) -> float:
    """When the first object of the namespace disappears (a watch from before the delete)."""
    async with contextlib.aclosing(client.watch(CONFIGMAPS, namespace="bench", resource_version=resource_version)) as events:
        async for event in events:
            if event.type == "DELETED":
                return time.perf_counter()
    raise RuntimeError("the watch ended before any object was deleted")


def one_run(objects: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "kubeloop.cli", "up", "--port", "0", "--data-dir", tmp],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if READY.search(line):
                    break
            else:
                raise SystemExit("kubeloop up did not start")
            return asyncio.run(measure(Path(tmp) / "kubeconfig", objects))
        finally:
            proc.terminate()
            proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1, help="repeat on a fresh server; the last line is the median")
    args = parser.parse_args()
    print("| run | load | end to end | from the first object removed | raw store deletes/s | ratio end to end "
          "| ratio from first removal | preview |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    results = []
    for run in range(1, args.runs + 1):
        load = os.getloadavg()[0]
        r = one_run(args.objects)
        results.append(r)
        print(f"| {run} | {load:.1f} | {r['removed_per_s']:,.0f}/s ({r['delete_s']:.1f} s) "
              f"| {r['removing_per_s']:,.0f}/s ({r['removing_s']:.1f} s) | {r['raw_per_s']:,.0f} "
              f"| {r['ratio']:.2f} | **{r['removing_ratio']:.2f}** | {r['preview_s']:.2f} s ({r['predicted']:,.0f}) |",
              flush=True)
    if len(results) > 1:
        med = {k: statistics.median(r[k] for r in results) for k in results[0]}
        print(f"| median | | {med['removed_per_s']:,.0f}/s | {med['removing_per_s']:,.0f}/s | {med['raw_per_s']:,.0f} "
              f"| {med['ratio']:.2f} | **{med['removing_ratio']:.2f}** | {med['preview_s']:.2f} s |")
    print(f"namespace of {args.objects:,} objects; goal: ratio >= 0.3 (objects removed per second / raw store "
          "deletes per second in the same run)")


if __name__ == "__main__":
    main()
