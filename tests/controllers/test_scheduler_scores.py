"""The scheduler's scores as kube-scheduler 1.32 adds them: integer plugin scores times the default
profile's weights (``default_plugins.go``), NodeResourcesBalancedAllocation and ImageLocality among them,
and ``selectHost``'s random pick among equal totals from the scheduler's seeded random source."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._kubelet_images import image_entry, simulated_image_size
from kubeloop.controllers._scheduler_cache import PlacedPods
from kubeloop.controllers._scheduler_interpod import InterPodAffinity
from kubeloop.controllers._scheduler_score import select_host

from ._sim_world import NODES, PODS, World, open_world

NODE1, NODE2 = "kubeloop-node-1", "kubeloop-node-2"
MIB = 1024 * 1024


def requesting(name: str, *, cpu: str, memory: str, node: str | None = None, image: str = "nginx:1.25") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": image,
                                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}}, "spec": spec}


async def bound(world: World, name: str) -> str:
    async def check() -> str:
        return str((await world.get(PODS, name))["spec"].get("nodeName") or "")

    return str(await world.eventually(check))


async def running(world: World, *names: str) -> None:
    async def check() -> bool:
        pods = [await world.get(PODS, n) for n in names]
        return all(p.get("status", {}).get("startTime") for p in pods)

    await world.eventually(check)


async def test_balanced_allocation_decides_between_nodes_least_allocated_scores_the_same(tmp_path: Path) -> None:
    # node-1: cpu 2/4, memory 2/8 Gi; node-2: cpu 1.5/4, memory 3/8 Gi. With the new pod (1 cpu, 2 Gi),
    # LeastAllocated gives both (25 + 50) / 2 = 37 and 37; BalancedAllocation gives node-1
    # int((1 - |0.75 - 0.5| / 2) * 100) = 87 and node-2 (0.625 both) 100.
    async with open_world(tmp_path, SimulationOptions(nodes=2, node_cpu="4", node_memory="8Gi")) as world:
        await world.create(PODS, requesting("a", cpu="2", memory="2Gi", node=NODE1))
        await world.create(PODS, requesting("c", cpu="1500m", memory="3Gi", node=NODE2))
        await running(world, "a", "c")
        await world.create(PODS, requesting("b", cpu="1", memory="2Gi"))
        assert await bound(world, "b") == NODE2


async def test_a_container_without_requests_counts_the_default_requests_in_least_allocated(tmp_path: Path) -> None:
    # LeastAllocated counts a container that requests no cpu or memory as 100m and 200 MiB (schedutil's
    # non-zero defaults), but one that requests 0 explicitly as 0: node-1's one pod without requests
    # weighs more than node-2's two pods requesting 0.
    async with open_world(tmp_path, SimulationOptions(nodes=2, node_cpu="1", node_memory="1Gi")) as world:
        body = requesting("x", cpu="0", memory="0", node=NODE1)
        del body["spec"]["containers"][0]["resources"]
        await world.create(PODS, body)
        for name in ("y1", "y2"):
            await world.create(PODS, requesting(name, cpu="0", memory="0", node=NODE2))
        await running(world, "x", "y1", "y2")
        body = requesting("z", cpu="0", memory="0")
        del body["spec"]["containers"][0]["resources"]
        await world.create(PODS, body)
        assert await bound(world, "z") == NODE2


async def _images(world: World, node: str) -> list[dict[str, Any]]:
    return list((await world.get(NODES, node, None)).get("status", {}).get("images") or [])


async def test_kubelet_reports_the_images_of_pods_it_ran_and_image_locality_prefers_that_node(tmp_path: Path) -> None:
    image = "registry.example/app:6"
    size = simulated_image_size(image)
    assert 200 * MIB < size <= 250 * MIB
    async with open_world(tmp_path, SimulationOptions(nodes=2)) as world:
        await world.create(PODS, requesting("warm", cpu="0", memory="0", node=NODE2, image=image))

        async def listed() -> list[dict[str, Any]]:
            images = await _images(world, NODE2)
            return [i for i in images if image in i["names"]]

        [entry] = await world.eventually(listed)
        assert entry == image_entry(image)
        assert entry["names"][0].startswith("registry.example/app@sha256:") and entry["sizeBytes"] == size
        assert all(image not in i["names"] for i in await _images(world, NODE1))
        # ImageLocality on node-2: the image on 1 of 2 nodes counts half its size, (size / 2 - 23 MiB)
        # scaled over 977 MiB: 9 points; the other scores are even.
        await world.create(PODS, requesting("cold", cpu="0", memory="0", image=image))
        assert await bound(world, "cold") == NODE2


async def test_node_status_lists_at_most_fifty_images_largest_first(tmp_path: Path) -> None:
    images = [f"registry.example/tool:{i}" for i in range(53)]
    async with open_world(tmp_path, SimulationOptions(nodes=1)) as world:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "toolbox"},
                "spec": {"nodeName": NODE1, "containers": [{"name": f"c{i}", "image": image}
                                                           for i, image in enumerate(images)]}}
        await world.create(PODS, body)

        async def listed() -> list[dict[str, Any]] | None:
            found = [i for i in await _images(world, NODE1) if i["names"][-1].startswith("registry.example/tool:")]
            return found if len(found) == 50 else None

        found = await world.eventually(listed)
        sizes = [i["sizeBytes"] for i in found]
        assert sizes == sorted(sizes, reverse=True)
        largest = sorted((simulated_image_size(i) for i in images), reverse=True)[:50]
        assert sizes == largest


def test_select_host_picks_the_highest_total() -> None:
    assert select_host([("a", 300), ("b", 412), ("c", 411)], random.Random(1)) == "b"


def test_select_host_picks_each_tie_with_equal_chance_reproducibly() -> None:
    totals = [("a", 500), ("b", 500), ("c", 500), ("d", 499)]
    picks = Counter(select_host(totals, rng) for rng in [random.Random(7)] * 3000)
    assert set(picks) == {"a", "b", "c"}
    assert all(900 < count < 1100 for count in picks.values()), picks
    first = [select_host(totals, random.Random(seed)) for seed in range(20)]
    assert first == [select_host(totals, random.Random(seed)) for seed in range(20)]
    assert len(set(first)) > 1  # not always the first name


def test_inter_pod_affinity_normalises_with_the_ratio_first_as_upstream() -> None:
    # InterPodAffinity's NormalizeScore computes 100 * ((s - min) / (max - min)) in float64: with raw
    # scores 0 (node-1), 29 (node-2) and 100 (node-3) node-2 gets int(28.999...) = 28, not 29.
    nodes = [{"metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}}} for i in (1, 2, 3)]
    placed = PlacedPods()
    for i in (2, 3):
        placed.place(("ns", f"peer-{i}"), f"n{i}", {"metadata": {"namespace": "ns", "name": f"peer-{i}",
                                                                 "labels": {"peer": str(i)}}})
    terms = [{"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": {"peer": peer}},
                                                    "topologyKey": "kubernetes.io/hostname"}}
             for peer, weight in (("2", 29), ("3", 100))]
    pod = {"metadata": {"namespace": "ns", "name": "chooser"},
           "spec": {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}}
    state = InterPodAffinity(pod, nodes, placed, lambda _namespace: {})
    assert state.scores(nodes) == [0, 28, 100]
