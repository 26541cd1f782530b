"""The ValidatingAdmissionPolicy status controller, run as kube-controller-manager runs it.

Upstream: k/k ``pkg/controller/validatingadmissionpolicystatus/controller.go`` (1.32): a policy whose
generation is ahead of ``status.observedGeneration`` gets ``{observedGeneration, typeChecking}`` applied to
its status by the field manager ``validatingadmissionpolicy-status-controller``, once per generation.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kubeloop.client import Client
from kubeloop.controllers import BUILTIN_CONTROLLERS, add_builtin_controllers
from kubeloop.runtime import Manager
from kubeloop.testing import FakeClock, InProcessCluster, eventually, resource

POLICIES = resource("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")
NAME = "validatingadmissionpolicy-status-controller"


def policy(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"}, "spec": {
                "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                        "operations": ["CREATE"], "resources": ["deployments"]}]},
                "validations": [{"expression": f"object.spec.replicas <= {replicas}"}]}}


@contextlib.asynccontextmanager
async def status_controller(cluster: InProcessCluster) -> AsyncIterator[Manager]:
    manager = Manager(cluster.new_client(Client), clock=cluster.clock, graceful_shutdown_timeout=0)
    add_builtin_controllers(manager, names=[NAME])
    task = asyncio.create_task(manager.run())
    try:
        yield manager
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def observed(cluster: InProcessCluster, generation: int) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        found = await cluster.client.get(POLICIES, "p")
        status = found.get("status") or {}
        return found if status.get("observedGeneration") == generation else None

    result: dict[str, Any] = await cluster.eventually(check)
    return result


async def test_the_controller_is_a_builtin_and_observes_each_generation(cluster: InProcessCluster) -> None:
    assert NAME in BUILTIN_CONTROLLERS
    await cluster.client.create(POLICIES, policy(5))
    async with status_controller(cluster) as manager:
        first = await observed(cluster, 1)
        assert first["status"] == {"observedGeneration": 1, "typeChecking": {}}
        managers = {(e["manager"], e.get("subresource", "")) for e in first["metadata"]["managedFields"]}
        assert (NAME, "status") in managers
        await cluster.client.patch(POLICIES, "p", {"spec": {"validations": [
            {"expression": "object.spec.replicas <= 3"}]}})
        second = await observed(cluster, 2)
        assert second["metadata"]["generation"] == 2

        async def idle() -> bool:
            return manager.idle()

        assert isinstance(cluster.clock, FakeClock)
        await eventually(idle, clock=cluster.clock)
        # Observed: a status write does not move the generation, and nothing more is written.
        settled = await cluster.client.get(POLICIES, "p")
        assert settled["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]
