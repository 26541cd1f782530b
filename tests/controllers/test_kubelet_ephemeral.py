"""The simulated kubelet runs an ephemeral container once it is added (pods/ephemeralcontainers): its status in
``status.ephemeralContainerStatuses`` (running, never ready, never restarted; the kubelet's
``convertToAPIContainerStatuses`` for ephemeral containers), its log is readable (empty) and attach answers the
simulation's clear 400."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from kubeloop.controllers import SimulationOptions

from ._sim_world import NS, PODS, World, open_world, pod


async def http(world: World, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=world.cluster.app), base_url="http://k") as c:
        return await c.request(method, f"/api/v1/namespaces/{NS}/pods/{path}", **kwargs)


async def test_an_added_ephemeral_container_runs_and_has_an_empty_log(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web"))

        async def running() -> dict[str, Any] | None:
            current = await world.client.get(PODS, "web", namespace=NS)
            return current if (current.get("status") or {}).get("phase") == "Running" else None

        await world.eventually(running)
        patch = {"spec": {"ephemeralContainers": [{"name": "debugger", "image": "busybox",
                                                   "targetContainerName": "app"}]}}
        await world.client.patch(PODS, "web", patch, namespace=NS, patch_type="strategic",
                                 subresource="ephemeralcontainers")

        async def reported() -> list[dict[str, Any]] | None:
            current = await world.client.get(PODS, "web", namespace=NS)
            statuses = (current.get("status") or {}).get("ephemeralContainerStatuses")
            return list(statuses) if statuses else None

        statuses = await world.eventually(reported)
        assert [(s["name"], s["image"], s["ready"], s["restartCount"], list(s["state"]), "started" in s)
                for s in statuses] == [("debugger", "busybox", False, 0, ["running"], False)]
        assert statuses[0]["containerID"].startswith("kubeloop://")
        started = statuses[0]["state"]["running"]["startedAt"]
        # A later pass of the kubelet keeps the container as it started.
        await world.advance(30)
        await world.settle()
        again = (await world.client.get(PODS, "web", namespace=NS))["status"]["ephemeralContainerStatuses"]
        assert again[0]["state"] == {"running": {"startedAt": started}}
        r = await http(world, "GET", "web/log", params={"container": "debugger"})
        assert (r.status_code, r.content) == (200, b"")
        r = await http(world, "POST", "web/attach", params={"container": "debugger", "stdin": "true"})
        assert (r.status_code, r.json()["message"]) == (
            400, 'kubeloop\'s simulated kubelet cannot attach to container "debugger" of pod "web": simulated '
                 "containers run no process")
