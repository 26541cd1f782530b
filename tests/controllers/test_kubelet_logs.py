"""pods/log against the statuses the simulated kubelet really writes: the server's kubelet-side checks read
the same fields, and the node annotations it dials by are the controllers' own."""

from __future__ import annotations

from pathlib import Path

import httpx

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._nodes import FAULT_ANNOTATION, KUBELET_STOPPED, SIMULATED_ANNOTATION
from kubeloop.server._kubelet_access import FAULT_ANNOTATION as SERVER_FAULT
from kubeloop.server._kubelet_access import KUBELET_STOPPED as SERVER_STOPPED
from kubeloop.server._kubelet_access import SIMULATED_ANNOTATION as SERVER_SIMULATED

from ._sim_world import NODES, NS, PODS, World, open_world, pod

FAULT = "kubeloop.dev/fault"
AFTER = "kubeloop.dev/fault-after-seconds"


def test_the_server_dials_by_the_controllers_node_annotations() -> None:
    assert (SERVER_SIMULATED, SERVER_FAULT, SERVER_STOPPED) == (SIMULATED_ANNOTATION, FAULT_ANNOTATION, KUBELET_STOPPED)


async def log(world: World, name: str, **params: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=world.cluster.app), base_url="http://k") as http:
        return await http.get(f"/api/v1/namespaces/{NS}/pods/{name}/log", params=params)


async def test_a_slow_start_is_waiting_then_an_empty_log(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("slow", annotations={FAULT: "slow-start", AFTER: "60"}))

        async def creating() -> httpx.Response | None:
            r = await log(world, "slow")
            return r if r.status_code == 400 and "waiting to start" in r.json()["message"] else None

        r = await world.eventually(creating)
        assert r.json()["message"] == 'container "app" in pod "slow" is waiting to start: ContainerCreating'
        await world.advance(60)

        async def started() -> httpx.Response | None:
            r = await log(world, "slow")
            return r if r.status_code == 200 else None

        assert (await world.eventually(started)).content == b""


async def test_a_crash_loop_has_a_previous_log(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("crash", annotations={FAULT: "crash-loop"}))

        async def restarted() -> httpx.Response | None:
            r = await log(world, "crash", previous="true")
            return r if r.status_code == 200 else None

        assert (await world.eventually(restarted)).content == b""


async def test_a_stopped_kubelet_cannot_be_dialled(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web"))

        async def running() -> bool:
            return (await log(world, "web")).status_code == 200

        await world.eventually(running)
        node = (await world.client.list(NODES))["items"][0]
        await world.client.patch(NODES, node["metadata"]["name"],
                                 {"metadata": {"annotations": {FAULT_ANNOTATION: KUBELET_STOPPED}}})
        r = await log(world, "web")
        assert r.status_code == 500 and r.json()["message"].endswith("connect: connection refused")
