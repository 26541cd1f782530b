"""Client and runtime benchmark: ``python benchmarks/runtime.py`` prints one table of ratios.

Every figure compares kubeloop with another Python tool measured in the same run, against the same
server (``kubeloop apiserver`` in a subprocess on 127.0.0.1, HTTPS, durable SQLite), so the ratios
travel between machines better than absolute rates do (method in docs/performance.md):

1. **List and decode 5,000 pods** in one namespace, one request each way, best of ``LIST_RUNS``:
   kubeloop's ``Client.list`` (JSON to dicts) against the official ``kubernetes`` client
   (``CoreV1Api.list_namespaced_pod``, decoded into ``V1Pod`` models) and lightkube
   (``AsyncClient.list``, decoded into its dataclass models). Goals: kubeloop fastest, >= 10x official.
2. **Reconcile 2,000 labelled ConfigMaps** into owned Secrets: the sample controller
   (``examples/configmap_mirror.py``) against an equivalent kopf operator (same work: build the Secret,
   adopt it, create it with the official client), each in its own process watching its own namespace,
   each with ``CONCURRENCY`` reconciles in flight (workers; kopf's handler threads) and each on uvloop
   (kopf's CLI picks it when installed; the example does the same). Time runs from process start until
   the last Secret appears (seen through a watch); peak RSS is the process's ``VmHWM``. Goals: >= 5x
   kopf's throughput, and less memory.

Each part is bounded (``KOPF_TIMEOUT``): a tool that does not finish is reported with the rate it reached.
``--list-only`` runs part 1 alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PODS = 5000
LIST_RUNS = 5
OBJECTS = 2000
# Reconciles in flight at once, the same for both operators: the kubeloop controller's workers and
# kopf's handler threads (settings.execution.max_workers). Each create waits for the server's durable
# commit, so throughput needs requests in flight; the server groups them into one commit.
CONCURRENCY = 32
KOPF_TIMEOUT = 180.0
SEED_CONCURRENCY = 64

KOPF_OPERATOR = '''
import base64
import kopf
import kubernetes

kubernetes.config.load_kube_config()
CONFIG = kubernetes.client.Configuration.get_default_copy()
CONFIG.connection_pool_maxsize = CONCURRENCY  # a kept-alive connection per handler thread, no re-handshakes
API = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(CONFIG))


@kopf.on.startup()
def configure(settings, **_):
    settings.posting.enabled = False  # the kubeloop controller posts no Events either
    settings.execution.max_workers = CONCURRENCY  # as many handlers in flight as kubeloop's workers


@kopf.on.create("", "v1", "configmaps", labels={"kubeloop.dev/mirror": "true"})
@kopf.on.update("", "v1", "configmaps", labels={"kubeloop.dev/mirror": "true"})
@kopf.on.resume("", "v1", "configmaps", labels={"kubeloop.dev/mirror": "true"})
def mirror(body, name, namespace, **_):
    data = {k: base64.b64encode(v.encode()).decode() for k, v in (body.get("data") or {}).items()}
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": name, "namespace": namespace}, "data": data}
    kopf.adopt(secret, owner=body)
    try:
        API.create_namespaced_secret(namespace, secret)
    except kubernetes.client.ApiException as err:
        if err.status != 409:
            raise
        API.replace_namespaced_secret(name, namespace, secret)
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (``VmHWM``, Linux), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far (Linux ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start a process with no console I/O (starting one does not block the event loop noticeably)."""
    return subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def start_server(data_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    from kubeloop.client import Client

    port = free_port()
    proc = spawn([sys.executable, "-m", "kubeloop.cli", "apiserver", "--port", str(port), "--data-dir", str(data_dir)])
    kubeconfig = data_dir / "kubeconfig"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("kubeloop apiserver did not start")
        if kubeconfig.exists():
            with contextlib.suppress(Exception):
                async with Client.from_kubeconfig(str(kubeconfig)) as client:
                    await client.list(_kind("", "Namespace"))
                    return proc, kubeconfig
        await asyncio.sleep(0.05)


def _kind(group: str, kind: str) -> Any:
    from kubeloop.api import KindRegistry

    return KindRegistry().by_kind(group, kind)


async def seed(kubeconfig: Path, namespace: str, resource: Any, objects: list[dict[str, Any]]) -> None:
    from kubeloop.client import Client

    async with Client.from_kubeconfig(str(kubeconfig)) as client:
        await client.create(_kind("", "Namespace"), {"metadata": {"name": namespace}})
        queue = list(objects)

        async def worker() -> None:
            while queue:
                await client.create(resource, queue.pop(), namespace=namespace)

        await asyncio.gather(*(worker() for _ in range(SEED_CONCURRENCY)))


def pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"web-{i:05d}", "labels": {"app": "web", "tier": "frontend", "shard": str(i % 16)},
                     "annotations": {"example.com/build": f"2024.{i}"}},
        "spec": {
            "containers": [{
                "name": "web", "image": "registry.example.com/web:1.2.3",
                "ports": [{"containerPort": 8080, "name": "http"}],
                "env": [{"name": f"VAR_{k}", "value": f"value-{k}"} for k in range(6)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5},
            }],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
        },
    }  # fmt: skip


# -------------------------------------------------------------------------------------- 1. list pods


async def bench_list(kubeconfig: Path) -> dict[str, float]:
    import kubernetes
    import lightkube
    from lightkube.config.kubeconfig import KubeConfig
    from lightkube.resources.core_v1 import Pod

    from kubeloop.client import Client

    pods = _kind("", "Pod")
    await seed(kubeconfig, "bench-list", pods, [pod(i) for i in range(PODS)])

    ours = Client.from_kubeconfig(str(kubeconfig))

    async def kubeloop_list() -> int:
        return len((await ours.list(pods, namespace="bench-list"))["items"])

    api_client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    core = kubernetes.client.CoreV1Api(api_client)

    def official_list() -> int:
        return len(core.list_namespaced_pod("bench-list").items)

    light = lightkube.AsyncClient(config=KubeConfig.from_file(str(kubeconfig)))

    async def lightkube_list() -> int:
        return len([p async for p in light.list(Pod, namespace="bench-list")])

    async def best(fn: Any) -> float:
        times = []
        for _ in range(LIST_RUNS):
            started = time.perf_counter()
            n = await fn() if asyncio.iscoroutinefunction(fn) else fn()
            times.append(time.perf_counter() - started)
            assert n == PODS, n
        return min(times)

    try:
        results = {
            "kubeloop": await best(kubeloop_list),
            "kubernetes": await best(official_list),
            "lightkube": await best(lightkube_list),
        }
    finally:
        await ours.close()
        await light.close()
        api_client.close()
    return results


# ------------------------------------------------------------------------------ 2. reconcile 2,000


async def run_operator(kubeconfig: Path, namespace: str, args: list[str], server_pid: int) -> dict[str, float]:
    """Seed the labelled ConfigMaps, start the operator, time it until every Secret exists."""
    from kubeloop.client import Client

    configmaps, secrets = _kind("", "ConfigMap"), _kind("", "Secret")
    objects = [
        {"metadata": {"name": f"cfg-{i:05d}", "labels": {"kubeloop.dev/mirror": "true"}},
         "data": {"mode": "fast", "replicas": str(i), "endpoint": f"https://svc-{i}.example.com"}}
        for i in range(OBJECTS)
    ]  # fmt: skip
    await seed(kubeconfig, namespace, configmaps, objects)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    async with Client.from_kubeconfig(str(kubeconfig)) as client:
        rv = (await client.list(secrets, namespace=namespace))["metadata"]["resourceVersion"]
        server_cpu = cpu_seconds(server_pid)
        started = time.perf_counter()
        proc = spawn(args, env)
        seen: set[str] = set()
        done_at = first_at = None
        try:
            while done_at is None and time.perf_counter() - started < KOPF_TIMEOUT and proc.poll() is None:
                with contextlib.suppress(asyncio.TimeoutError, Exception):
                    async with asyncio.timeout(max(1.0, KOPF_TIMEOUT - (time.perf_counter() - started))):
                        async for event in client.watch(secrets, namespace=namespace, resource_version=rv):
                            rv = event.resource_version or rv
                            if event.type == "ADDED":
                                seen.add(event.object["metadata"]["name"])
                                first_at = first_at or time.perf_counter()
                            if len(seen) >= OBJECTS:
                                done_at = time.perf_counter()
                                break
            elapsed = (done_at or time.perf_counter()) - started
            alive = proc.poll() is None
            rss = peak_rss_mib(proc.pid) if alive else float("nan")
            cpu = cpu_seconds(proc.pid) if alive else float("nan")
            server_cpu = cpu_seconds(server_pid) - server_cpu
        finally:
            stop(proc)
    return {
        "seconds": elapsed, "per_second": len(seen) / elapsed, "done": float(len(seen)), "rss_mib": rss,
        "first_seconds": (first_at - started) if first_at else float("nan"),
        "cpu_ms_per_object": 1000 * cpu / OBJECTS, "server_cpu_ms_per_object": 1000 * server_cpu / OBJECTS,
    }  # fmt: skip


async def bench_reconcile(kubeconfig: Path, tmp: Path, server_pid: int) -> dict[str, dict[str, float]]:
    operator = tmp / "kopf_mirror.py"
    operator.write_text(KOPF_OPERATOR.replace("CONCURRENCY", str(CONCURRENCY)))
    example = str(ROOT / "examples" / "configmap_mirror.py")
    kubeloop_args = [sys.executable, example, "--kubeconfig", str(kubeconfig), "--no-leader-election",
                     "--namespace", "bench-kubeloop", "--workers", str(CONCURRENCY)]  # fmt: skip
    kopf_args = [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", "bench-kopf", str(operator)]
    return {
        "kubeloop": await run_operator(kubeconfig, "bench-kubeloop", kubeloop_args, server_pid),
        "kopf": await run_operator(kubeconfig, "bench-kopf", kopf_args, server_pid),
    }


# ------------------------------------------------------------------------------------------- main


def ratio_row(what: str, value: float, goal: str, ok: bool) -> str:
    return f"| {what:<58} | {value:>8.1f}x | {goal:<8} | {'yes' if ok else 'NO':<3} |"


async def amain(*, list_only: bool = False) -> None:
    load_before = os.getloadavg()[0]
    runs: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="kubeloop-bench-") as tmp_name:
        tmp = Path(tmp_name)
        server, kubeconfig = await start_server(tmp / "data")
        try:
            print(f"seeding {PODS} pods, listing each way {LIST_RUNS} times ...", flush=True)
            lists = await bench_list(kubeconfig)
            if not list_only:
                print(f"reconciling {OBJECTS} ConfigMaps with kubeloop, then kopf ...", flush=True)
                runs = await bench_reconcile(kubeconfig, tmp, server.pid)
        finally:
            stop(server)
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print("| measure (same server, same run)                            |    ratio | goal     | met |")
    print("| ---------------------------------------------------------- | -------: | -------- | --- |")
    r_official = lists["kubernetes"] / lists["kubeloop"]
    r_light = lists["lightkube"] / lists["kubeloop"]
    print(ratio_row(f"list+decode {PODS} pods: kubernetes time / kubeloop time", r_official, ">= 10", r_official >= 10))
    print(ratio_row(f"list+decode {PODS} pods: lightkube time / kubeloop time", r_light, "> 1", r_light > 1))
    list_line = (
        f"list {PODS} pods (best of {LIST_RUNS}): kubeloop {lists['kubeloop'] * 1000:.0f} ms, "
        f"kubernetes {lists['kubernetes'] * 1000:.0f} ms, lightkube {lists['lightkube'] * 1000:.0f} ms"
    )
    if list_only:
        print(f"\n{list_line}")
        return
    k, o = runs["kubeloop"], runs["kopf"]
    r_rate = k["per_second"] / o["per_second"]
    r_mem = o["rss_mib"] / k["rss_mib"]
    print(ratio_row(f"reconcile {OBJECTS} objects: kubeloop rate / kopf rate", r_rate, ">= 5", r_rate >= 5))
    print(ratio_row("reconcile: kopf peak RSS / kubeloop peak RSS", r_mem, "> 1", r_mem > 1))
    print(f"\n{list_line}")
    for name, run in runs.items():
        print(
            f"reconcile {name}: {run['done']:.0f}/{OBJECTS} in {run['seconds']:.2f} s "
            f"({run['per_second']:.0f}/s, from process start; first Secret after {run['first_seconds']:.2f} s), "
            f"peak RSS {run['rss_mib']:.0f} MiB, "
            f"CPU per object {run['cpu_ms_per_object']:.2f} ms (server {run['server_cpu_ms_per_object']:.2f} ms)"
        )


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list-only", action="store_true", help="run only part 1 (list and decode the pods)")
    asyncio.run(amain(list_only=parser.parse_args().list_only))
