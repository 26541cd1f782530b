"""Deployment rolling update over ReplicaSet statuses that lag their spec: never past maxSurge.

A ReplicaSet just scaled down keeps reporting the pods it is about to delete until the ReplicaSet
controller catches up, so ``status.availableReplicas`` may exceed ``spec.replicas`` for a while. The
Deployment controller must read that as "nothing unhealthy here", never as a negative number of
unhealthy replicas to remove (which would scale the old ReplicaSet back up, past ``maxSurge``: the
race behind a rare failure of the rolling update test under load). Only the Deployment controller
runs, so the statuses written here stay as they are: the lagging state is exact, not raced for.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubeloop.api import copy_json

from ._workload_world import DEPLOYMENTS, NS, REPLICASETS, World, open_world, template

STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}


def replicaset(name: str, *, image: str, replicas: int, revision: int, pod_hash: str) -> dict[str, Any]:
    pod_template = template(image=image, **{"pod-template-hash": pod_hash})
    annotations = {"deployment.kubernetes.io/revision": str(revision),
                   "deployment.kubernetes.io/desired-replicas": "4", "deployment.kubernetes.io/max-replicas": "5"}
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NS, "labels": dict(pod_template["metadata"]["labels"]),
                     "annotations": annotations},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": pod_hash}},
                 "template": pod_template},
    }  # fmt: skip


async def with_status(world: World, rs: dict[str, Any], *, replicas: int, available: int) -> dict[str, Any]:
    created = await world.create(REPLICASETS, rs)
    status = {"replicas": replicas, "readyReplicas": available, "availableReplicas": available,
              "fullyLabeledReplicas": replicas, "observedGeneration": created["metadata"]["generation"]}  # fmt: skip
    written: dict[str, Any] = await world.client.update(REPLICASETS, {**copy_json(created), "status": status},
                                                        namespace=NS, subresource="status")  # fmt: skip
    return written


async def test_an_old_replica_set_reporting_more_available_pods_than_it_wants_is_never_scaled_up(
    tmp_path: Path,
) -> None:
    async with open_world(tmp_path, "deployment") as world:
        # Mid-rollout of 4 replicas (maxSurge 1, maxUnavailable 1): the new RS is at 4 with 3 available;
        # the old RS was just scaled down to 1 and still reports the 2 pods it had.
        old = await with_status(world, replicaset("web-old", image="nginx:1.25", replicas=1, revision=1, pod_hash="old"),
                                replicas=2, available=2)  # fmt: skip
        new = await with_status(world, replicaset("web-new", image="nginx:1.26", replicas=4, revision=2, pod_hash="new"),
                                replicas=4, available=3)  # fmt: skip
        cache = world.controllers["deployment"].replicasets.cache

        async def cached() -> bool:
            versions = {rs["metadata"]["name"]: rs["metadata"]["resourceVersion"] for rs in cache.list(namespace=NS)}
            return versions == {"web-old": old["metadata"]["resourceVersion"],
                                "web-new": new["metadata"]["resourceVersion"]}  # fmt: skip

        await world.eventually(cached)
        sizes = {"web-old": 1, "web-new": 4}
        totals: list[int] = []

        async def record() -> None:
            async for event in world.client.watch(REPLICASETS, namespace=NS,
                                                  resource_version=new["metadata"]["resourceVersion"]):  # fmt: skip
                if event.type in ("ADDED", "MODIFIED"):
                    sizes[event.object["metadata"]["name"]] = event.object["spec"]["replicas"]
                    totals.append(sum(sizes.values()))

        world.tasks.append(asyncio.create_task(record()))
        await world.client.create(DEPLOYMENTS, {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}}, "strategy": STRATEGY,
                     "template": template(image="nginx:1.26")},
        })  # fmt: skip

        async def old_scaled_down() -> bool:
            return bool(sizes["web-old"] == 0 and totals and totals[-1] == 4)

        await world.eventually(old_scaled_down)
        await world.settle()
        assert max(totals) <= 4 + 1, totals
        rss = {rs["metadata"]["name"]: rs for rs in await world.items(REPLICASETS)}
        assert rss["web-old"]["spec"]["replicas"] == 0 and rss["web-new"]["spec"]["replicas"] == 4
        assert rss["web-old"]["metadata"]["generation"] == old["metadata"]["generation"] + 1  # one write: 1 -> 0
