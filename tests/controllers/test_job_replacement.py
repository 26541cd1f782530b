"""podReplacementPolicy Failed (the default with a podFailurePolicy): a terminating pod is replaced only
once it has failed, for NonIndexed and Indexed Jobs (fake clock; the test plays the kubelet).

Upstream: k/k ``pkg/controller/job/job_controller.go`` (release 1.32): ``manageJob`` subtracts the
terminating pods from the pods to create when ``onlyReplaceFailedPods``; ``indexed_job_utils.go``
``firstPendingIndexes`` skips the indexes of terminating pods.
"""

from __future__ import annotations

from pathlib import Path

from kubeloop.controllers._workload_kinds import JOBS

from ._workload_world import NS, PODS, open_world
from .test_job import FINALIZER, active_pods, finish, job, job_pods, wait_job
from .test_job_backoff_per_index import INDEX, indexed, of_index


async def test_a_terminating_pod_is_replaced_only_once_it_failed(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(podReplacementPolicy="Failed"))
        (pod,) = await active_pods(world, 1)
        await world.client.delete(PODS, pod["metadata"]["name"], namespace=NS)
        waiting = await wait_job(world, lambda s: s.get("terminating") == 1)
        assert "failed" not in waiting["status"] and waiting["status"].get("active") is None
        await world.settle()
        await world.advance(60)
        # Not failed yet: not counted, its finalizer kept, and no replacement.
        assert [p["metadata"]["uid"] for p in await job_pods(world)] == [pod["metadata"]["uid"]]
        assert (await world.get(PODS, pod["metadata"]["name"]))["metadata"]["finalizers"] == [FINALIZER]
        await finish(world, pod, "Failed")
        counted = await wait_job(world, lambda s: s.get("failed") == 1 and s.get("terminating") == 0)
        assert counted["status"]["uncountedTerminatedPods"] == {}
        await world.advance(11)
        (replacement,) = await active_pods(world, 1)
        assert replacement["metadata"]["uid"] != pod["metadata"]["uid"]


async def test_an_index_whose_pod_is_terminating_is_not_started_again(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
        await world.create(JOBS, indexed(completions=3, parallelism=2, podFailurePolicy=policy))
        pods = await active_pods(world, 2)
        await world.client.delete(PODS, of_index(pods, 0)["metadata"]["name"], namespace=NS)
        await wait_job(world, lambda s: s.get("terminating") == 1)
        await world.settle()
        await world.advance(60)
        # Index 0 waits for its terminating pod; index 2 is not started in its place either (the
        # terminating pod still takes one of the two parallel slots).
        running = await active_pods(world, 1)
        assert [p["metadata"]["annotations"][INDEX] for p in running] == ["1"]
        await finish(world, of_index(pods, 0), "Failed")
        await world.advance(11)
        again = await active_pods(world, 2)
        assert sorted(p["metadata"]["annotations"][INDEX] for p in again) == ["0", "1"]
