"""Nodes and pods for the kubelet-facing subresource tests, written as the simulated kubelet writes them."""

from __future__ import annotations

from typing import Any

import httpx

PODS = "/api/v1/namespaces/default/pods"
SIMULATED = {"kubeloop.dev/simulated": "true"}


async def node(client: httpx.AsyncClient, name: str = "n1", *, annotations: dict[str, str] | None = None,
               address: str | None = "172.18.0.2") -> dict[str, Any]:
    meta = {"name": name, "annotations": SIMULATED if annotations is None else annotations}
    r = await client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": meta})
    assert r.status_code == 201, r.text
    status: dict[str, Any] = {"daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}
    if address:
        status["addresses"] = [{"type": "InternalIP", "address": address}]
    r = await client.put(f"/api/v1/nodes/{name}/status", json={**r.json(), "status": status})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def pod(client: httpx.AsyncClient, name: str = "p", *, containers: tuple[str, ...] = ("app",),
              init: tuple[str, ...] = (), node_name: str | None = "n1", labels: dict[str, str] | None = None,
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": c, "image": "nginx"} for c in containers]}
    if init:
        spec["initContainers"] = [{"name": c, "image": "busybox"} for c in init]
    if node_name:
        spec["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    r = await client.post(PODS, json={"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def running(name: str, container_id: str, *, restarts: int = 0, last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "image": "nginx", "imageID": "", "ready": True, "started": True, "restartCount": restarts,
            "containerID": container_id, "state": {"running": {"startedAt": "2026-12-01T00:00:00Z"}},
            "lastState": {"terminated": last} if last else {}}


def waiting(name: str, reason: str) -> dict[str, Any]:
    return {"name": name, "image": "nginx", "imageID": "", "ready": False, "started": False, "restartCount": 0,
            "state": {"waiting": {"reason": reason}}, "lastState": {}}


def terminated(name: str, container_id: str, *, exit_code: int = 0) -> dict[str, Any]:
    return {"name": name, "image": "nginx", "imageID": "", "ready": False, "started": False, "restartCount": 0,
            "containerID": container_id, "lastState": {},
            "state": {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                     "startedAt": "2026-12-01T00:00:00Z", "finishedAt": "2026-12-01T00:01:00Z",
                                     "containerID": container_id}}}


async def set_status(client: httpx.AsyncClient, name: str, *statuses: dict[str, Any], phase: str = "Running",
                     init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    current = (await client.get(f"{PODS}/{name}")).json()
    current["status"] = {"phase": phase, "containerStatuses": list(statuses), "podIP": "10.244.0.5",
                         "podIPs": [{"ip": "10.244.0.5"}]}
    if init:
        current["status"]["initContainerStatuses"] = list(init)
    r = await client.put(f"{PODS}/{name}/status", json=current)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body
