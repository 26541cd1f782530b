"""Indexed Jobs with ``backoffLimitPerIndex``: failures counted per index through the pods' annotations,
each index backing off alone, failed indexes in ``status.failedIndexes``, ``maxFailedIndexes`` and the
pod failure policy's FailIndex action (fake clock; the test plays the kubelet).

Upstream: k/k ``pkg/controller/job/indexed_job_utils.go`` (``isIndexFailed``,
``getPodsWithDelayedDeletionPerIndex``, ``addIndexFailureCountAnnotation``), ``backoff_utils.go``
(``getRemainingTimePerIndex``) and ``job_controller.go`` (``syncJob``: MaxFailedIndexesExceeded and
FailedIndexes; ``canRemoveFinalizer``), release 1.32.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers._workload_kinds import JOBS

from ._workload_world import NS, PODS, World, open_world
from .test_job import EVENTS, FINALIZER, active_pods, conditions, fail_with, finish, job, job_pods, wait_job

INDEX = "batch.kubernetes.io/job-completion-index"
FAILURES = "batch.kubernetes.io/job-index-failure-count"
IGNORED = "batch.kubernetes.io/job-index-ignored-failure-count"


def indexed(**spec: Any) -> dict[str, Any]:
    return job(completionMode="Indexed", **spec)


def of_index(pods: list[dict[str, Any]], ix: int) -> dict[str, Any]:
    (pod,) = [p for p in pods if p["metadata"]["annotations"][INDEX] == str(ix)]
    return pod


async def current(world: World, pod: dict[str, Any]) -> dict[str, Any]:
    return await world.get(PODS, pod["metadata"]["name"])


async def test_an_index_retries_up_to_its_limit_alone_then_the_job_fails_with_failed_indexes(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        created = await world.create(JOBS, indexed(completions=3, parallelism=3, backoffLimitPerIndex=1))
        # defaults.go: backoffLimit is MaxInt32 when backoffLimitPerIndex is set.
        assert created["spec"]["backoffLimit"] == 2**31 - 1
        first = await active_pods(world, 3)
        assert [p["metadata"]["annotations"][FAILURES] for p in first] == ["0", "0", "0"]
        assert all(IGNORED not in p["metadata"]["annotations"] for p in first)
        running = await wait_job(world, lambda s: s.get("active") == 3)
        assert running["status"]["failedIndexes"] == ""  # written (empty) for such a Job
        zero = of_index(first, 0)
        failed_at = world.clock.now()
        await finish(world, zero, "Failed")
        await world.advance(1)  # syncJobBatchPeriod: the pod event's sync
        # Index 0 backs off 10 s; its failed pod keeps the finalizer (uncounted) until the replacement
        # carries its failure count.
        assert len(await job_pods(world)) == 3
        assert (await current(world, zero))["metadata"]["finalizers"] == [FINALIZER]
        status = (await world.get(JOBS, "pi"))["status"]
        assert "failed" not in status and status["active"] == 2 and status["failedIndexes"] == ""
        await world.advance(failed_at + 9 - world.clock.now())
        assert len(await job_pods(world)) == 3
        await world.advance(2)
        retry = of_index(await active_pods(world, 3), 0)
        assert retry["metadata"]["uid"] != zero["metadata"]["uid"]
        assert retry["metadata"]["annotations"][FAILURES] == "1"
        counted = await wait_job(world, lambda s: s.get("failed") == 1)
        assert counted["status"]["failedIndexes"] == "" and counted["status"]["uncountedTerminatedPods"] == {}
        assert not (await current(world, zero))["metadata"].get("finalizers")
        # The second failure of index 0 reaches backoffLimitPerIndex 1: the index fails, no retry.
        await finish(world, retry, "Failed")
        failed_index = await wait_job(world, lambda s: s.get("failedIndexes") == "0" and s.get("failed") == 2)
        assert not conditions(failed_index["status"])
        await world.advance(700)
        assert len(await active_pods(world, 2)) == 2  # indexes 1 and 2 only
        for ix in (1, 2):
            await finish(world, of_index(first, ix), "Succeeded")
        done = await wait_job(world, lambda s: ("Failed", "True", "FailedIndexes") in conditions(s))
        status = done["status"]
        assert conditions(status) == [("FailureTarget", "True", "FailedIndexes"), ("Failed", "True", "FailedIndexes")]
        assert status["conditions"][1]["message"] == "Job has failed indexes"
        assert (status["completedIndexes"], status["failedIndexes"]) == ("1,2", "0")
        assert (status["succeeded"], status["failed"]) == (2, 2) and "completionTime" not in status
        assert all(not p["metadata"].get("finalizers") for p in await job_pods(world))

        async def recorded() -> bool:
            events = (await world.client.list(EVENTS, namespace=NS))["items"]
            warnings = [(e["reason"], e["message"]) for e in events
                        if e["involvedObject"].get("kind") == "Job" and e["type"] == "Warning"]
            assert warnings == [("FailedIndexes", "Job has failed indexes")], warnings
            return True

        await world.eventually(recorded)


async def test_each_further_failure_of_an_index_doubles_its_own_backoff(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, indexed(completions=2, parallelism=2, backoffLimitPerIndex=3))
        pods = await active_pods(world, 2)
        await finish(world, of_index(pods, 0), "Failed")
        await world.advance(11)
        second = of_index(await active_pods(world, 2), 0)
        assert second["metadata"]["annotations"][FAILURES] == "1"
        await wait_job(world, lambda s: s.get("failed") == 1)
        await finish(world, second, "Failed")
        await world.settle()
        # One earlier failure: 20 s now, counted from this pod's finish.
        await world.advance(19)
        assert len(await active_pods(world, 1)) == 1
        await world.advance(2)
        third = of_index(await active_pods(world, 2), 0)
        assert third["metadata"]["annotations"][FAILURES] == "2"
        # Index 1 never failed: its pod is the first one, untouched by index 0's backoff.
        assert of_index(await active_pods(world, 2), 1)["metadata"]["uid"] == of_index(pods, 1)["metadata"]["uid"]


async def test_more_failed_indexes_than_max_failed_indexes_fails_the_job_at_once(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, indexed(completions=4, parallelism=2, backoffLimitPerIndex=0, maxFailedIndexes=0))
        pods = await active_pods(world, 2)
        await finish(world, of_index(pods, 0), "Failed")
        failed = await wait_job(world, lambda s: ("Failed", "True", "MaxFailedIndexesExceeded") in conditions(s))
        status = failed["status"]
        assert conditions(status) == [("FailureTarget", "True", "MaxFailedIndexesExceeded"),
                                      ("Failed", "True", "MaxFailedIndexesExceeded")]
        assert status["conditions"][1]["message"] == "Job has exceeded the specified maximal number of failed indexes"
        # Index 1's running pod was deleted and counts as failed; indexes 2 and 3 never ran.
        assert status["failedIndexes"] == "0" and status["failed"] == 2 and status.get("active") is None
        assert status["terminating"] == 0 and status["uncountedTerminatedPods"] == {}
        assert await world.maybe(PODS, of_index(pods, 1)["metadata"]["name"]) is None
        await world.advance(60)
        assert len(await job_pods(world)) == 1


POLICY = {"rules": [
    {"action": "FailIndex", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}},
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
]}


async def test_fail_index_fails_the_index_at_once_and_ignored_failures_are_counted_apart(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, indexed(completions=2, parallelism=2, backoffLimitPerIndex=3, podFailurePolicy=POLICY))
        pods = await active_pods(world, 2)
        await fail_with(world, of_index(pods, 0), code=42)
        marked = await wait_job(world, lambda s: s.get("failedIndexes") == "0" and s.get("failed") == 1)
        assert not conditions(marked["status"]) and marked["status"]["uncountedTerminatedPods"] == {}
        # An ignored failure of index 1: not counted, its replacement records it apart (10 s later).
        await fail_with(world, of_index(pods, 1), code=137, condition="DisruptionTarget")
        await world.settle()
        await world.advance(11)
        (retry,) = await active_pods(world, 1)
        assert retry["metadata"]["annotations"][INDEX] == "1"
        assert (retry["metadata"]["annotations"][FAILURES], retry["metadata"]["annotations"][IGNORED]) == ("0", "1")
        ignored = await world.eventually(lambda: _released(world, of_index(pods, 1)), step=0.01)
        assert ignored["status"]["phase"] == "Failed"
        await world.settle()
        assert (await world.get(JOBS, "pi"))["status"]["failed"] == 1
        await finish(world, retry, "Succeeded")
        done = await wait_job(world, lambda s: ("Failed", "True", "FailedIndexes") in conditions(s))
        assert (done["status"]["completedIndexes"], done["status"]["failedIndexes"]) == ("1", "0")


async def _released(world: World, pod: dict[str, Any]) -> dict[str, Any]:
    now = await current(world, pod)
    assert not now["metadata"].get("finalizers"), now["metadata"]
    return now
