"""Server write-path benchmark: ``python benchmarks/write_path.py`` prints server CPU per Deployment.

Replays, in-process (the ASGI app over a real SQLite store, no socket, no TLS, no auth), the API
writes that the workload controllers make for one Deployment of 3 replicas in
``benchmarks/controllers.py``: the Deployment create, its ReplicaSet, 2 Events, 3 pod creates, 3
bindings, 3 pod status writes (GET, then PUT of the whole pod as the simulated kubelet does), 3
ReplicaSet and 3 Deployment status writes and one unchanged status write: 19 writes and 3 reads.
Bodies are compact JSON, as kubeloop's client sends them. Reported: process CPU per Deployment over
``--deployments`` Deployments, 16 at a time; ``--profile`` prints the top functions instead.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import random
import tempfile
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import orjson

from kubeloop.server import App, create_app
from kubeloop.store import SqliteStore

T = "2026-01-01T00:00:00Z"


async def call(app: App, method: str, path: str, body: Any = None, *, agent: str = "kube-controller-manager/v1.32") -> Any:
    chunks: list[bytes] = []
    status = [0]
    data = orjson.dumps(body) if body is not None else b""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "headers": [(b"content-type", b"application/json"), (b"user-agent", agent.encode()),
                    (b"accept", b"application/json")],
    }  # fmt: skip
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        elif message.get("body"):
            chunks.append(message["body"])

    await app(scope, receive, send)
    out = b"".join(chunks)
    if status[0] >= 300:
        raise SystemExit(f"{method} {path}: {status[0]} {out[:300]!r}")
    return orjson.loads(out) if out else None


async def one_deployment(app: App, index: int) -> None:
    ns, name = "bench", f"web-{index:04d}"
    apps, core = f"/apis/apps/v1/namespaces/{ns}", f"/api/v1/namespaces/{ns}"
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}
    d = await call(app, "POST", f"{apps}/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}}, "template": template}}, agent="kubectl/v1.32")
    labels = {"app": name, "pod-template-hash": "abc"}
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": d["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    rs = await call(app, "POST", f"{apps}/replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"{name}-abc", "labels": labels, "ownerReferences": [owner],
                     "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": d["spec"]["template"]["spec"]}}})
    for n in range(2):
        await call(app, "POST", f"{core}/events", {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.{n}"},
            "involvedObject": {"kind": "Deployment", "namespace": ns, "name": name, "uid": owner["uid"],
                               "apiVersion": "apps/v1"},
            "reason": "ScalingReplicaSet", "message": f"Scaled up replica set {name}-abc to 3", "type": "Normal",
            "source": {"component": "deployment-controller"}, "firstTimestamp": T, "lastTimestamp": T, "count": 1})
    rs_owner = {**owner, "kind": "ReplicaSet", "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"]}
    pods = [await call(app, "POST", f"{core}/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": f"{name}-abc-", "labels": labels, "ownerReferences": [rs_owner]},
        "spec": rs["spec"]["template"]["spec"]}) for _ in range(3)]
    for pod in pods:
        pod_name = pod["metadata"]["name"]
        await call(app, "POST", f"{core}/pods/{pod_name}/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod_name},
            "target": {"kind": "Node", "name": "node-1"}}, agent="kube-scheduler/v1.32")
    for pod in pods:
        current = await call(app, "GET", f"{core}/pods/{pod['metadata']['name']}")
        current["status"] = {
            "phase": "Running", "podIP": "10.0.0.1", "hostIP": "192.168.0.1", "startTime": T,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": T}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "nginx:1.25",
                                   "imageID": "x", "containerID": "c://1", "started": True,
                                   "state": {"running": {"startedAt": T}}}]}
        await call(app, "PUT", f"{core}/pods/{pod['metadata']['name']}/status", current, agent="kubelet/v1.32")
    for ready in range(1, 4):
        rs["status"] = {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": ready,
                        "availableReplicas": ready, "observedGeneration": 1}
        rs = await call(app, "PUT", f"{apps}/replicasets/{rs['metadata']['name']}/status", rs)
    for ready in range(1, 4):
        d["status"] = {
            "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": ready,
            "availableReplicas": ready, "unavailableReplicas": 3 - ready,
            "conditions": [{"type": "Available", "status": str(ready == 3), "lastUpdateTime": T,
                            "lastTransitionTime": T, "reason": "MinimumReplicasAvailable"}]}
        d = await call(app, "PUT", f"{apps}/deployments/{name}/status", d)
    await call(app, "PUT", f"{apps}/deployments/{name}/status", d)  # unchanged: no new revision


async def run(count: int, profile: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = await SqliteStore.open(Path(tmp) / "db")
        app = create_app(store=store, rng=random.Random(1))
        await app.startup()
        try:
            await call(app, "POST", "/api/v1/namespaces",
                       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
            # The namespace's ``default`` ServiceAccount, as the controller manager's ServiceAccount controller
            # creates it: the ServiceAccount admission plugin (on by default, as upstream's) refuses pods
            # without it, and admits them with its token volume.
            await call(app, "POST", "/api/v1/namespaces/bench/serviceaccounts",
                       {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
            await asyncio.gather(*(one_deployment(app, i) for i in range(10)))  # warm up
            gate = asyncio.Semaphore(16)

            async def gated(index: int) -> None:
                async with gate:
                    await one_deployment(app, index)

            profiler = cProfile.Profile() if profile else None
            start = time.process_time()
            if profiler is not None:
                profiler.enable()
            await asyncio.gather(*(gated(i) for i in range(10, 10 + count)))
            if profiler is not None:
                profiler.disable()
            cpu = time.process_time() - start
            if profiler is not None:
                pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
            print(f"{count} Deployments: {cpu / count * 1000:.2f} ms of CPU each (19 writes, 3 reads)")
        finally:
            await app.shutdown()
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=300)
    parser.add_argument("--profile", action="store_true", help="print the top functions (cProfile)")
    args = parser.parse_args()
    asyncio.run(run(args.deployments, args.profile))


if __name__ == "__main__":
    main()
