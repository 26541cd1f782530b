"""A namespace holding running pods finishes after their grace period, with the simulated kubelet.

Upstream behaviour kept on purpose: the namespace controller deletes a pod on a node gracefully, the
pod stays Terminating for ``terminationGracePeriodSeconds`` (default 30) until its kubelet removes
it, and the namespace stays Terminating, saying that pods remain, until then
(namespaced_resources_deleter.go estimates from the pods' grace periods).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubeloop.controllers import NamespaceController, SimulationOptions

from ._sim_world import NAMESPACES, NS, PODS, World, condition, open_world, pod


async def _until(world: World, check: Any, *, step: float = 0.5) -> Any:
    return await world.eventually(check, step=step, tries=400)


async def test_namespace_with_running_pods_waits_for_their_grace_period_then_goes(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        controller = NamespaceController(world.client, clock=world.clock, workers=2)
        world.tasks.append(asyncio.create_task(controller.run()))
        await world.create(PODS, pod("web"))  # no terminationGracePeriodSeconds: the default 30 s

        async def running() -> bool:
            got = await world.maybe(PODS, "web")
            return bool(got and condition(got, "Ready").get("status") == "True")

        await _until(world, running)
        assert (await world.get(PODS, "web"))["spec"]["terminationGracePeriodSeconds"] == 30
        deleted_at = world.clock.now()
        await world.client.delete(NAMESPACES, NS)

        async def pod_terminating() -> bool:
            got = await world.maybe(PODS, "web")
            return bool(got and got["metadata"].get("deletionTimestamp"))

        await _until(world, pod_terminating)
        started = world.clock.now()

        async def says_pods_remain() -> bool:
            ns = await world.get(NAMESPACES, NS, None)
            remaining = condition(ns, "NamespaceContentRemaining")
            return remaining.get("message") == "Some resources are remaining: pods. has 1 resource instances"

        await _until(world, says_pods_remain, step=0.1)
        assert world.clock.now() - started < 30
        assert (await world.get(NAMESPACES, NS, None))["status"]["phase"] == "Terminating"

        async def namespace_gone() -> bool:
            return await world.maybe(NAMESPACES, NS, None) is None

        await _until(world, namespace_gone)
        assert world.clock.now() - started >= 30  # the pod waited out its grace period
        assert world.clock.now() - deleted_at < 120  # and the controller did not give up or stall
