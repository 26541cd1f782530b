"""Job status counters at the edges: ``ready`` less the ready pods a sync deletes, the TooManySucceededPods
warning, and ``succeeded`` going down when an Indexed Job is scaled down.

Upstream (release 1.32): k/k ``pkg/controller/job/job_controller.go`` (``syncJob`` and ``manageJob``:
``jobCtx.ready -= deletedReady`` / ``removedReady``; ``recordJobFinished``: TooManySucceededPods when
``status.succeeded > spec.completions``; ``calculateSucceededIndexes`` keeps only indexes below
completions) and ``pkg/registry/batch/job/strategy.go`` (``RejectDecreasingSucceededCounter`` is off for an
Indexed Job whose completions equal its parallelism).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubeloop.controllers import JobController
from kubeloop.controllers._workload_kinds import JOBS

from ._workload_world import NS, PODS, World, open_world
from ._world import managed_cluster
from .test_job import EVENTS, FINALIZER, active_pods, conditions, finish, job, job_pods, wait_job


async def _job_events(world: World) -> list[tuple[str, str, str]]:
    events = await world.client.list(EVENTS, namespace=NS)
    found = [e for e in events["items"] if e["involvedObject"].get("kind") == "Job"]
    found.sort(key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["creationTimestamp"], e["metadata"]["name"]))
    return [(e["type"], e["reason"], e["message"]) for e in found]


def _record_statuses(world: World, since: str, into: list[dict[str, Any]]) -> None:
    async def record() -> None:
        async for event in world.client.watch(JOBS, namespace=NS, resource_version=since):
            if event.type in ("ADDED", "MODIFIED"):
                into.append(event.object.get("status") or {})

    world.tasks.append(asyncio.create_task(record()))


async def test_ready_drops_by_the_ready_pods_a_sync_deletes(tmp_path: Path) -> None:
    # manageJob deletes the extra pods and takes their readiness off ``ready`` in the same status write.
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(parallelism=3, completions=3))
        for pod in await active_pods(world, 3):
            await world.set_ready(pod)
        three = await wait_job(world, lambda s: (s.get("active"), s.get("ready")) == (3, 3))
        statuses: list[dict[str, Any]] = []
        _record_statuses(world, three["metadata"]["resourceVersion"], statuses)
        await world.client.patch(JOBS, "pi", {"spec": {"parallelism": 1}}, namespace=NS)
        await wait_job(world, lambda s: (s.get("active"), s.get("ready")) == (1, 1))
        await world.settle()
        shrunk = [s for s in statuses if s.get("active") == 1]
        assert shrunk, statuses
        # The deleting sync's own write already says one ready pod (not the three it read).
        assert shrunk[0]["ready"] == 1 and shrunk[0]["terminating"] == 2, shrunk[0]
        assert all(s.get("ready", 0) <= s.get("active", 0) for s in statuses), statuses


@contextlib.asynccontextmanager
async def _world_started_later(tmp_path: Path) -> AsyncIterator[tuple[World, JobController]]:
    """A world whose Job controller starts only when the test says (``start``): the test sets up pods first,
    as a controller-manager that restarts finds them."""
    async with managed_cluster(tmp_path) as (cluster, ctl, manager):
        world = World(cluster=cluster, ctl=ctl, manager=manager)
        ctrl = JobController(ctl, manager.informers, clock=world.clock, metrics=manager.metrics)
        manager.add_controller(ctrl.controller)
        manager.add(ctrl.events, needs_leader_election=False)
        world.controllers["job"] = ctrl
        yield world, ctrl


async def test_more_successes_than_completions_warn_too_many_succeeded_pods(tmp_path: Path) -> None:
    async with _world_started_later(tmp_path) as (world, _):
        created = await world.create(JOBS, job(completions=2, parallelism=2))
        uid = created["metadata"]["uid"]
        labels = created["spec"]["template"]["metadata"]["labels"]
        # Three pods of the Job (its controller reference, its labels, the tracking finalizer), all
        # succeeded before the controller runs: one more success than completions.
        for i in range(3):
            await world.client.create(PODS, {
                "metadata": {"name": f"pi-{i}", "labels": labels, "finalizers": [FINALIZER], "ownerReferences": [{
                    "apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": uid, "controller": True,
                    "blockOwnerDeletion": True}]},
                "spec": created["spec"]["template"]["spec"]}, namespace=NS)
            await finish(world, await world.get(PODS, f"pi-{i}"), "Succeeded")
        async with world.started():
            await world.synced()
            done = await wait_job(world, lambda s: ("Complete", "True", "CompletionsReached") in conditions(s))
            assert done["status"]["succeeded"] == 3 and "active" not in done["status"]
            assert len(await job_pods(world)) == 3  # nothing created

            async def warned() -> bool:
                events = await _job_events(world)
                assert ("Warning", "TooManySucceededPods",
                        "Too many succeeded pods running after completion count reached") in events, events
                reasons = [reason for _, reason, _ in events]
                assert reasons.index("TooManySucceededPods") < reasons.index("Completed"), reasons
                return True

            await world.eventually(warned)


async def test_exactly_completions_successes_do_not_warn(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(completions=2, parallelism=2))
        for pod in await active_pods(world, 2):
            await finish(world, pod, "Succeeded")
        await wait_job(world, lambda s: ("Complete", "True", "CompletionsReached") in conditions(s))

        async def completed() -> bool:
            reasons = [reason for _, reason, _ in await _job_events(world)]
            assert "Completed" in reasons, reasons
            return True

        await world.eventually(completed)
        assert "TooManySucceededPods" not in [reason for _, reason, _ in await _job_events(world)]


async def test_an_indexed_job_scaled_down_counts_only_the_indexes_it_still_has(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(completionMode="Indexed", completions=3, parallelism=3))
        pods = await active_pods(world, 3)
        by_index = {int(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]): p for p in pods}
        await finish(world, by_index[1], "Succeeded")
        await finish(world, by_index[2], "Succeeded")
        await wait_job(world, lambda s: (s.get("succeeded"), s.get("completedIndexes")) == (2, "1,2"))
        # Scaled down in tandem (ElasticIndexedJob): indexes 1 and 2 are past the new completions.
        await world.client.patch(JOBS, "pi", {"spec": {"completions": 1, "parallelism": 1}}, namespace=NS)
        lowered = await wait_job(world, lambda s: not s.get("succeeded") and s.get("active") == 1)
        assert not lowered["status"].get("completedIndexes")
        await finish(world, by_index[0], "Succeeded")
        done = await wait_job(world, lambda s: ("Complete", "True", "CompletionsReached") in conditions(s))
        assert (done["status"]["succeeded"], done["status"]["completedIndexes"]) == (1, "0")


async def test_the_sync_that_counts_the_last_pod_completes_the_job_and_records_completed_once(tmp_path: Path) -> None:
    # trackJobStatusAndRemoveFinalizers: the pod goes into uncountedTerminatedPods (first write), its finalizer
    # comes off, then one more write moves it into ``succeeded`` and adds Complete; recordJobFinished records
    # the Completed Event once. A second write that resent the first one's status left the Job unfinished
    # while its Event was already recorded, so the next sync finished it and recorded Completed again.
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job())
        (pod,) = await active_pods(world, 1)
        running = await wait_job(world, lambda s: s.get("active") == 1)
        statuses: list[dict[str, Any]] = []
        _record_statuses(world, running["metadata"]["resourceVersion"], statuses)
        await finish(world, pod, "Succeeded")
        await wait_job(world, lambda s: ("Complete", "True", "CompletionsReached") in conditions(s))

        async def completed_once() -> bool:
            events = (await world.client.list(EVENTS, namespace=NS))["items"]
            counts = [e.get("count", 1) for e in events if e["reason"] == "Completed"
                      and e["involvedObject"].get("kind") == "Job"]
            assert counts == [1], counts
            return True

        await world.eventually(completed_once)
        await world.settle()
        await completed_once()
        # The status went from the pod uncounted straight to the pod counted and the Job Complete.
        uid = pod["metadata"]["uid"]
        uncounted = [s for s in statuses if (s.get("uncountedTerminatedPods") or {}).get("succeeded") == [uid]]
        assert uncounted, statuses
        after = statuses[statuses.index(uncounted[-1]) + 1:]
        assert after and after[0]["succeeded"] == 1 and ("Complete", "True", "CompletionsReached") in conditions(after[0])
