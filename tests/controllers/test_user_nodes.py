"""Nodes a user creates: with ``kubeloop.dev/simulated: "true"`` a simulated kubelet posts their status,
machine info included; without it nothing does, as for a Node whose kubelet never runs.

Upstream: the kubelet fills capacity, allocatable, addresses, daemon endpoints and node info on every status
post (k/k ``pkg/kubelet/nodestatus/setters.go`` ``MachineInfo``, ``NodeAddress``, ``VersionInfo``); kwok's
``node-initialize`` stage, which the simulator follows, keeps values the Node was created with. A Node with
no kubelet gets no status from anyone but the node lifecycle controller, which judges every node
(``monitorNodeHealth``; :mod:`.test_node_lifecycle_any_node`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import LEASES

from ..server._uvicorn import Kubectl, serve, write_kubeconfig
from ._sim_world import NODES, PODS, condition, open_world, pod

SIMULATED = {"kubeloop.dev/simulated": "true"}


def user_node(name: str, *, annotations: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": name}}}
    if annotations:
        body["metadata"]["annotations"] = annotations
    if status:
        body["status"] = status
    return body


async def test_a_user_created_simulated_node_gets_a_kubelets_machine_info_and_runs_pods(tmp_path: Path) -> None:
    options = SimulationOptions(nodes=1, node_cpu="8", node_memory="16Gi", node_pods="50")
    async with open_world(tmp_path, options) as world:
        await world.client.create(NODES, user_node("mine", annotations=SIMULATED))

        async def posted() -> dict[str, Any] | None:
            node = await world.get(NODES, "mine", None)
            return node if condition(node, "Ready").get("status") == "True" else None

        node = await world.eventually(posted)
        status = node["status"]
        room = {"cpu": "8", "memory": "16Gi", "pods": "50", "ephemeral-storage": "100Gi"}
        assert status["capacity"] == room and status["allocatable"] == room
        assert {a["type"] for a in status["addresses"]} == {"InternalIP", "Hostname"}
        assert status["nodeInfo"]["kubeletVersion"] == "v1.32.0"
        assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
        await world.create(PODS, pod("web", nodeSelector={"pool": "mine"}))

        async def running() -> dict[str, Any] | None:
            found = await world.get(PODS, "web")
            return found if found["status"].get("phase") == "Running" else None

        placed = await world.eventually(running, step=0.5)
        assert placed["spec"]["nodeName"] == "mine"
        assert placed["status"]["hostIP"] == next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP")


async def test_the_capacity_a_user_gave_is_kept_and_allocatable_follows_it(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        given = {"cpu": "2", "memory": "4Gi", "pods": "10"}
        await world.client.create(NODES, user_node("small", annotations=SIMULATED, capacity=given))

        async def posted() -> dict[str, Any] | None:
            node = await world.get(NODES, "small", None)
            return node if condition(node, "Ready").get("status") == "True" else None

        node = await world.eventually(posted)
        assert node["status"]["capacity"] == given and node["status"]["allocatable"] == given


async def test_a_node_without_the_annotation_has_no_kubelet_and_gets_no_status(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        created = await world.client.create(NODES, user_node("bare"))
        await world.create(PODS, pod("web", nodeSelector={"pool": "bare"}))
        await world.advance(59)  # within the node startup grace period: nobody writes it
        await world.settle()
        node = await world.get(NODES, "bare", None)
        assert node["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"], "nobody wrote it"
        await world.advance(61)  # past the node startup grace period and many heartbeat intervals
        await world.settle()
        node = await world.get(NODES, "bare", None)
        status = node.get("status") or {}
        # Only the node lifecycle controller wrote: Unknown conditions (upstream's tryUpdateNodeHealth judges
        # every node; this test asserted no conditions at all while kubeloop judged simulated nodes only).
        assert {c["reason"] for c in status["conditions"]} == {"NodeStatusNeverUpdated"}
        assert not {"capacity", "allocatable", "addresses"} & set(status), status
        assert not status["nodeInfo"]["kubeletVersion"]  # the API server's Go zero value: no kubelet said one
        assert await world.cluster.get_or_none(LEASES, "bare", "kube-node-lease") is None
        web = await world.get(PODS, "web")
        assert not web["spec"].get("nodeName") and condition(web, "PodScheduled").get("status") == "False"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_creates_a_simulated_node_and_sees_its_capacity(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1, node_cpu="6")) as world:
        manifest = tmp_path / "node.json"
        manifest.write_text(json.dumps(user_node("from-kubectl", annotations=SIMULATED)))
        async with serve(world.cluster.app) as url:
            kubeconfig = tmp_path / "kubeconfig"
            write_kubeconfig(kubeconfig, url)
            kubectl = Kubectl(kubeconfig)
            _, out, _ = await kubectl.run("create", "-f", str(manifest))
            assert out.strip() == "node/from-kubectl created"

            async def posted() -> str | None:
                _, shown, _ = await kubectl.run("get", "node", "from-kubectl", "-o",
                                                "jsonpath={.status.allocatable.cpu}/{.status.conditions[?(@.type=='Ready')].status}")
                return shown if shown == "6/True" else None

            assert await world.eventually(posted) == "6/True"
