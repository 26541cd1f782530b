"""``kubectl debug`` against the simulated cluster: an ephemeral container added through pods/ephemeralcontainers
(kubectl 1.32 ``pkg/cmd/debug``: a strategic merge patch of the pod to the subresource), which the simulated
kubelet then runs; ``--copy-to`` a copy of the pod with a debugging container, which is scheduled and runs.
Attaching to a container gets the simulation's clear 400, as ``kubectl attach`` would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubeloop.controllers import SimulationOptions

from ..server._uvicorn import serve
from ..server.test_quota_kubectl import Kubectl, write_kubeconfig
from ._sim_world import NS, PODS, World, open_world, pod

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")


async def running(world: World, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        found = await world.get(PODS, name, NS)
        return found if (found.get("status") or {}).get("phase") == "Running" else None

    found: dict[str, Any] = await world.eventually(check, step=0.5)
    return found


async def test_kubectl_debug_adds_an_ephemeral_container_that_runs(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web"))
        await running(world, "web")
        async with serve(world.cluster.app) as url:
            write_kubeconfig(tmp_path / "kubeconfig", url)
            kubectl = Kubectl(tmp_path / "kubeconfig")
            code, out, err = await kubectl.run("debug", "-n", NS, "pod/web", "--image=busybox", "--target=app",
                                               "-c", "debugger")
            assert code == 0 and out.startswith('Targeting container "app".')

            async def reported() -> list[dict[str, Any]] | None:
                found = await world.get(PODS, "web", NS)
                statuses = (found.get("status") or {}).get("ephemeralContainerStatuses")
                return list(statuses) if statuses else None

            statuses = await world.eventually(reported, step=0.5)
            found = await world.get(PODS, "web", NS)
            [container] = found["spec"]["ephemeralContainers"]
            assert (container["name"], container["image"], container["targetContainerName"]) == (
                "debugger", "busybox", "app")
            assert [(s["name"], list(s["state"])) for s in statuses] == [("debugger", ["running"])]
            manager = next(e for e in found["metadata"]["managedFields"] if e.get("subresource"))
            assert (manager["manager"], manager["subresource"]) == ("kubectl", "ephemeralcontainers")
            # A second debug container, without a name, gets kubectl's generated one, next to the first.
            await kubectl.run("debug", "-n", NS, "web", "--image=busybox")
            names = [c["name"] for c in (await world.get(PODS, "web", NS))["spec"]["ephemeralContainers"]]
            assert len(names) == 2 and names[0] == "debugger" and names[1].startswith("debugger-")
            code, out, _ = await kubectl.run("logs", "-n", NS, "web", "-c", "debugger")
            assert (code, out) == (0, "")
            code, _, err = await kubectl.run("attach", "-n", NS, "web", "-c", "debugger", ok=False)
            assert code == 1 and err.strip().endswith(
                'kubeloop\'s simulated kubelet cannot attach to container "debugger" of pod "web": simulated '
                "containers run no process")
            # kubectl debug -i waits for the container to run, then attaches: the same clear 400, which kubectl
            # reports before it falls back to the container's (empty) log.
            code, out, err = await kubectl.run("debug", "-n", NS, "web", "-i", "--image=busybox", "-c", "third",
                                               stdin=b"")
            assert (code, out) == (0, "")
            assert ("warning: couldn't attach to pod/web, falling back to streaming logs: kubeloop's simulated "
                    'kubelet cannot attach to container "third" of pod "web": simulated containers run no process'
                    ) in err
            assert [c["name"] for c in (await world.get(PODS, "web", NS))["spec"]["ephemeralContainers"]][-1] == "third"


async def test_kubectl_debug_copy_to_runs_a_copy_with_a_debugging_container(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        await world.create(PODS, pod("web"))
        await running(world, "web")
        async with serve(world.cluster.app) as url:
            write_kubeconfig(tmp_path / "kubeconfig", url)
            kubectl = Kubectl(tmp_path / "kubeconfig")
            await kubectl.run("debug", "-n", NS, "web", "--copy-to=web-debug", "--image=busybox", "-c", "debugger",
                              "--share-processes")
            copy = await running(world, "web-debug")
            assert [c["name"] for c in copy["spec"]["containers"]] == ["app", "debugger"]
            assert copy["spec"]["shareProcessNamespace"] is True
            assert [s["name"] for s in copy["status"]["containerStatuses"]] == ["app", "debugger"]
            _, out, _ = await kubectl.run("get", "-n", NS, "pod", "web", "-o", "json")
            assert "ephemeralContainers" not in json.loads(out)["spec"]  # the original is left alone
