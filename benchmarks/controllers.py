"""Controllers benchmark: ``python benchmarks/controllers.py`` prints one table.

1,000 Deployments of 3 replicas are created at once on ``kubeloop up`` (API server and controller
manager as their own processes, the simulated nodes, scheduler and kubelet included) and the run
waits until every Deployment is Available. Reported (method in docs/performance.md):

- convergence time, and objects per second: Deployments + ReplicaSets + Pods created over the
  convergence time;
- pods per second through the scheduler and the simulated kubelet: pods seen Ready (on a watch) over
  the time from the first pod created to the last one Ready; bound (``spec.nodeName``) likewise;
- peak resident memory (``VmHWM``) of the API server and of the controller-manager process;
- raw store write throughput in the same run: ``SqliteStore.create`` calls per second with 64
  concurrent writers (group commit), the ceiling for any write path through the server.

Goal (issue 6): converge in under 60 s on the 2-core machine, with total peak memory under 1 GiB.
``--deployments`` and ``--replicas`` scale the run down for a quick look.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kubeloop.api import BUILTIN_RESOURCES, ResourceInfo
from kubeloop.client import Client
from kubeloop.store import SqliteStore

READY = re.compile(r"kubeloop is ready at (https://\S+)")
CONCURRENCY = 64
STORE_WRITES = 5000
TIMEOUT = 600.0


def _resource(group: str, kind: str) -> ResourceInfo:
    return next(r for r in BUILTIN_RESOURCES if r.group == group and r.kind == kind)


DEPLOYMENTS = _resource("apps", "Deployment")
PODS = _resource("", "Pod")
NAMESPACES = _resource("", "Namespace")


# ------------------------------------------------------------------------------------------- processes


class Up:
    """``kubeloop up --port 0`` in a temporary directory; its output is pumped into ``lines``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.lines: list[str] = []
        self.url = ""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubeloop.cli", "up", "--port", "0", "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self._found = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            match = READY.search(line)
            if match and not self.url:
                self.url = match.group(1)
                self._found.set()
        self._found.set()

    def wait_url(self, timeout: float = 120) -> None:
        if not self._found.wait(timeout) or not self.url:
            raise SystemExit("kubeloop up did not start:\n" + "\n".join(self.lines[-30:]))

    def processes(self) -> dict[str, int]:
        """``{"api server": pid, "controller manager": pid}`` (the manager is a child of ``up``)."""
        found = {"api server": self.proc.pid}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == self.proc.pid and "python" in cmdline:
                found["controller manager"] = int(entry.name)
        return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# ------------------------------------------------------------------------------------------- workloads


def deployment(index: int, replicas: int) -> dict[str, Any]:
    name = f"web-{index:04d}"
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}},
    }  # fmt: skip


def available(d: dict[str, Any]) -> bool:
    status = d.get("status") or {}
    want = (d.get("spec") or {}).get("replicas", 1)
    return bool(
        status.get("observedGeneration") == d["metadata"].get("generation")
        and status.get("availableReplicas", 0) == want == status.get("updatedReplicas", 0) == status.get("replicas", 0)
    )


class PodClock:
    """Watches pods: when each was first seen, first bound, first Ready."""

    def __init__(self) -> None:
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.ready: dict[str, float] = {}

    async def run(self, client: Client, namespace: str) -> None:
        while True:
            async for event in client.watch(PODS, namespace=namespace, timeout_seconds=600):
                if event.type not in ("ADDED", "MODIFIED"):
                    continue
                pod, now = event.object, time.monotonic()
                uid = pod["metadata"]["uid"]
                self.created.setdefault(uid, now)
                if (pod.get("spec") or {}).get("nodeName"):
                    self.bound.setdefault(uid, now)
                conditions = (pod.get("status") or {}).get("conditions") or ()
                if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                    self.ready.setdefault(uid, now)


async def converge(url: str, data_dir: Path, count: int, replicas: int) -> dict[str, float]:
    client = Client.from_kubeconfig(str(data_dir / "kubeconfig"))
    namespace = "bench"
    try:
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        pods = PodClock()
        watcher = asyncio.create_task(pods.run(client, namespace))
        gate = asyncio.Semaphore(CONCURRENCY)

        async def create(index: int) -> None:
            async with gate:
                await client.create(DEPLOYMENTS, deployment(index, replicas), namespace=namespace)

        start = time.monotonic()
        await asyncio.gather(*(create(i) for i in range(count)))
        created = time.monotonic()
        done = 0
        while time.monotonic() - start < TIMEOUT:
            items = (await client.list(DEPLOYMENTS, namespace=namespace)).get("items") or []
            done = sum(available(d) for d in items)
            if done == count:
                break
            await asyncio.sleep(0.5)
        end = time.monotonic()
        await asyncio.sleep(0.2)  # the last Ready events reach the watch
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        if done != count:
            raise SystemExit(f"only {done}/{count} Deployments Available after {TIMEOUT:.0f}s")
        first = min(pods.created.values())
        return {
            "create_seconds": created - start,
            "converge_seconds": end - start,
            "objects": float(count * (2 + replicas)),
            "pods_ready": float(len(pods.ready)),
            "pods_bound": float(len(pods.bound)),
            "ready_span": max(pods.ready.values()) - first,
            "bound_span": max(pods.bound.values()) - first,
        }
    finally:
        await client.close()


async def store_creates_per_second(path: Path, writes: int = STORE_WRITES) -> float:
    store = await SqliteStore.open(path)
    try:
        body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":"v"}}'
        gate = asyncio.Semaphore(CONCURRENCY)

        async def create(i: int) -> None:
            async with gate:
                await store.create(f"/registry/configmaps/bench/cm-{i}", lambda _rev: body)

        start = time.monotonic()
        await asyncio.gather(*(create(i) for i in range(writes)))
        return writes / (time.monotonic() - start)
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kubeloop-bench-") as tmp:
        up = Up(Path(tmp) / "cluster")
        try:
            up.wait_url()
            print(f"kubeloop up at {up.url}; creating {args.deployments} Deployments x {args.replicas} ...",
                  file=sys.stderr, flush=True)  # fmt: skip
            result = asyncio.run(converge(up.url, up.data_dir, args.deployments, args.replicas))
            memory = {role: peak_rss_mib(pid) for role, pid in up.processes().items()}
        finally:
            up.stop()
        store_rate = asyncio.run(store_creates_per_second(Path(tmp) / "store.db"))
    objects_rate = result["objects"] / result["converge_seconds"]
    total_mib = sum(memory.values())
    rows = [
        ("Deployments x replicas", f"{args.deployments} x {args.replicas}"),
        ("creates sent (s)", f"{result['create_seconds']:.1f}"),
        ("all Available (s)", f"{result['converge_seconds']:.1f}  (goal < 60)"),
        ("objects/s (Deployments+RS+Pods)", f"{objects_rate:,.0f}"),
        ("raw SqliteStore creates/s", f"{store_rate:,.0f}"),
        ("objects/s / store creates/s", f"{objects_rate / store_rate:.3f}"),
        ("pods bound/s (scheduler)", f"{result['pods_bound'] / result['bound_span']:,.0f}"),
        ("pods Ready/s (scheduler+kubelet)", f"{result['pods_ready'] / result['ready_span']:,.0f}"),
        *((f"peak RSS {role} (MiB)", f"{mib:,.0f}") for role, mib in memory.items()),
        ("peak RSS total (MiB)", f"{total_mib:,.0f}  (goal < 1024)"),
        ("cpu count", str(os.cpu_count())),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"{'measure'.ljust(width)}  value")
    print(f"{'-' * width}  {'-' * 20}")
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
