"""The Job controller's orphan pod worker and its batched syncs, on the fake clock.

Upstream (k/k ``pkg/controller/job/job_controller.go``, release 1.32):

- ``syncOrphanPod``, fed by ``enqueueOrphanPod`` from ``addPod``/``updatePod`` (a pod without a
  controller reference that carries ``batch.kubernetes.io/job-tracking``), ``deletePod`` (a pod being
  deleted whose Job is gone or finished) and ``cleanupPodFinalizers`` (a deleted Job's pods): the
  finalizer comes off unless the pod is controlled by something other than a ``batch/v1`` Job, or by
  a live unfinished Job.
- ``enqueueSyncJobBatched``: pod events and Job updates that leave the generation alone sync the Job
  ``syncJobBatchPeriod`` (1 s) later, so the events of that second share one sync;
  ``enqueueSyncJobImmediately`` for a Job created, deleted or with a new spec.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kubeloop.controllers._workload_kinds import JOBS

from ..server._uvicorn import Kubectl, serve, write_kubeconfig
from ._workload_world import NS, PODS, World, open_world
from .test_job import FINALIZER, active_pods, finish, job, job_pods, wait_job


def _job_syncs(world: World) -> float:
    """How many times the Job controller has reconciled, whatever the result."""
    total = 0.0
    for metric in world.manager.metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == "controller_runtime_reconcile_total" and sample.labels.get("controller") == "job":
                total += sample.value
    return total


async def _finalizers_when(world: World, name: str, check: Any) -> list[str]:
    async def probe() -> tuple[list[str]]:
        finalizers = list((await world.get(PODS, name))["metadata"].get("finalizers") or [])
        assert check(finalizers), finalizers
        return (finalizers,)  # truthy even when empty

    result: tuple[list[str]] = await world.eventually(probe)
    return result[0]


def _loose_pod(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "loose"}, "finalizers": [FINALIZER], **meta},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_a_pod_its_job_no_longer_controls_loses_the_tracking_finalizer(tmp_path: Path) -> None:
    # updatePod: no controller reference any more, finalizer still on -> enqueueOrphanPod -> syncOrphanPod.
    async with open_world(tmp_path, "job") as world:
        created = await world.create(JOBS, job(parallelism=1, completions=1))
        (pod,) = await active_pods(world, 1)
        uid = created["metadata"]["uid"]
        await world.client.patch(PODS, pod["metadata"]["name"], {"metadata": {
            "ownerReferences": None, "labels": {"batch.kubernetes.io/controller-uid": None, "controller-uid": None,
                                                "batch.kubernetes.io/job-name": None, "job-name": None}}},
            namespace=NS, patch_type="merge")  # fmt: skip
        assert await _finalizers_when(world, pod["metadata"]["name"], lambda f: f == []) == []
        current = await world.get(PODS, pod["metadata"]["name"])
        assert not current["metadata"].get("ownerReferences")
        # The Job runs a replacement of its own, with the finalizer.
        (replacement,) = await active_pods(world, 1)
        assert replacement["metadata"]["uid"] != pod["metadata"]["uid"]
        assert replacement["metadata"]["finalizers"] == [FINALIZER]
        assert replacement["metadata"]["ownerReferences"][0]["uid"] == uid


async def test_an_orphan_pod_created_with_the_tracking_finalizer_loses_it(tmp_path: Path) -> None:
    # addPod: an orphan carrying the finalizer goes to the orphan worker at once.
    async with open_world(tmp_path, "job") as world:
        await world.create(PODS, _loose_pod("loose"))
        assert await _finalizers_when(world, "loose", lambda f: f == []) == []


async def test_a_pod_controlled_by_another_kind_or_a_live_job_keeps_the_tracking_finalizer(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        other = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "3f8d4c9e-0000-4000-8000-000000000001",
                 "controller": True}
        await world.create(PODS, _loose_pod("theirs", ownerReferences=[other]))
        # Deleting it runs deletePod (its controller is no Job: enqueueOrphanPod); syncOrphanPod leaves it.
        await world.client.delete(PODS, "theirs", namespace=NS)
        await world.advance(5)
        current = await world.get(PODS, "theirs")
        assert current["metadata"].get("deletionTimestamp") and current["metadata"]["finalizers"] == [FINALIZER]
        # A live Job's pod that is being deleted keeps it until the Job counts it.
        await world.create(JOBS, job(parallelism=1, completions=1))
        (pod,) = await active_pods(world, 1)
        await world.client.delete(PODS, pod["metadata"]["name"], namespace=NS)
        await world.settle()
        deleting = await world.get(PODS, pod["metadata"]["name"])
        assert deleting["metadata"]["finalizers"] == [FINALIZER]
        # The Job counts it failed (deleted before it finished), then the finalizer goes.
        await wait_job(world, lambda s: s.get("failed") == 1)
        assert await world.maybe(PODS, pod["metadata"]["name"]) is None


async def test_pod_events_within_the_batch_period_share_one_sync(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(parallelism=3, completions=3))
        first, second, third = await active_pods(world, 3)
        await wait_job(world, lambda s: s.get("active") == 3)
        await world.advance(5)  # every sync the creations asked for has run
        before = _job_syncs(world)
        await finish(world, first, "Succeeded")
        await world.settle()  # the controller sees the event now, before the clock moves
        await world.advance(0.5)
        await finish(world, second, "Succeeded")
        await world.settle()
        await world.advance(0.49)
        # No sync yet: the first event's sync is due 1 s after it, and the second joins it.
        assert _job_syncs(world) == before
        assert "succeeded" not in (await world.get(JOBS, "pi"))["status"]
        await world.advance(0.01)
        counted = await wait_job(world, lambda s: s.get("succeeded") == 2, step=0)
        assert _job_syncs(world) == before + 1
        assert counted["status"]["active"] == 1
        # A spec change is synced at once (enqueueSyncJobImmediately): parallelism 0 deletes the last pod.
        await world.client.patch(JOBS, "pi", {"spec": {"parallelism": 0}}, namespace=NS, patch_type="merge")

        async def stopped() -> bool:  # deleted (an unscheduled pod goes at once), with no clock moved
            current = await world.maybe(PODS, third["metadata"]["name"])
            return current is None or bool(current["metadata"].get("deletionTimestamp"))

        await world.eventually(stopped)
        assert len([p for p in await job_pods(world) if not p["metadata"].get("deletionTimestamp")]) == 2


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_sees_a_job_count_its_pods_a_batch_period_after_they_finish(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        manifest = tmp_path / "job.json"
        manifest.write_text(json.dumps({**job(parallelism=2, completions=2), "metadata": {"name": "pi"}}))
        async with serve(world.cluster.app) as url:
            kubeconfig = tmp_path / "kubeconfig"
            write_kubeconfig(kubeconfig, url)
            kubectl = Kubectl(kubeconfig)
            await kubectl.run("apply", "-n", NS, "-f", str(manifest))
            pods = await active_pods(world, 2)
            await world.advance(5)
            for pod in pods:
                status = {"phase": "Succeeded"}
                await kubectl.run("patch", "pod", "-n", NS, pod["metadata"]["name"], "--subresource=status",
                                  "--type=merge", "-p", json.dumps({"status": status}))
            await world.settle()
            _, shown, _ = await kubectl.run("get", "job", "-n", NS, "pi", "-o", "jsonpath={.status.succeeded}")
            assert shown == ""  # within syncJobBatchPeriod: not counted yet
            await world.advance(1)

            async def counted() -> str | None:
                _, out, _ = await kubectl.run("get", "job", "-n", NS, "pi", "-o", "jsonpath={.status.succeeded}")
                return out if out == "2" else None

            assert await world.eventually(counted) == "2"
            # A pod kubectl strips of its owner keeps no tracking finalizer (syncOrphanPod).
            await kubectl.run("apply", "-n", NS, "-f", "-", stdin=json.dumps(_loose_pod("stray")).encode())

            async def released() -> str | None:
                _, out, _ = await kubectl.run("get", "pod", "-n", NS, "stray", "-o", "jsonpath={.metadata.finalizers}")
                return "released" if out == "" else None

            assert await world.eventually(released) == "released"
