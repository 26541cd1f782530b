"""Indexed Jobs with ``successPolicy``: the first rule met gives SuccessCriteriaMet (reason SuccessPolicy),
the pods still running are deleted without counting as failures, then Complete once they are gone
(fake clock; the test plays the kubelet).

Upstream: k/k ``pkg/controller/job/success_policy.go`` (``matchSuccessPolicy``,
``matchSucceededIndexesRule``) and ``job_controller.go`` (``syncJob``, ``trackJobStatusAndRemoveFinalizers``:
pods are counted as failed only for FailureTarget), release 1.32.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.controllers._workload_kinds import JOBS

from ._workload_world import NS, PODS, World, open_world
from .test_job import EVENTS, active_pods, conditions, finish, job, job_pods, wait_job
from .test_job_backoff_per_index import indexed, of_index


async def _gone(world: World, pods: list[dict[str, Any]]) -> bool:
    for pod in pods:
        assert await world.maybe(PODS, pod["metadata"]["name"]) is None, pod["metadata"]["name"]
    return True


async def test_meeting_a_succeeded_indexes_rule_stops_the_other_pods_and_completes(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        policy = {"rules": [{"succeededIndexes": "0"}]}
        await world.create(JOBS, indexed(completions=3, parallelism=3, successPolicy=policy))
        pods = await active_pods(world, 3)
        await finish(world, of_index(pods, 0), "Succeeded")
        done = await wait_job(world, lambda s: ("Complete", "True", "SuccessPolicy") in conditions(s))
        status = done["status"]
        assert conditions(status) == [("SuccessCriteriaMet", "True", "SuccessPolicy"), ("Complete", "True", "SuccessPolicy")]
        assert [c["message"] for c in status["conditions"]] == ["Matched rules at index 0"] * 2
        assert (status["completedIndexes"], status["succeeded"]) == ("0", 1)
        # The stopped pods are neither failures nor active; Complete waited until none was terminating.
        # Checked against upstream 1.32 (job_controller.go): the sync that sets SuccessCriteriaMet deletes
        # them (deleteActivePods) and, in the same trackJobStatusAndRemoveFinalizers pass, takes their
        # finalizers off (canRemoveFinalizer: a finished condition) without counting them: a pod not yet
        # terminated counts failed only when that condition is not SuccessCriteriaMet.
        assert "failed" not in status and status.get("active") is None and status["terminating"] == 0
        assert status["uncountedTerminatedPods"] == {} and status.get("completionTime")
        await world.eventually(lambda: _gone(world, [of_index(pods, 1), of_index(pods, 2)]), step=0.01)
        assert not (await world.get(PODS, of_index(pods, 0)["metadata"]["name"]))["metadata"].get("finalizers")

        async def recorded() -> bool:
            events = (await world.client.list(EVENTS, namespace=NS))["items"]
            mine = [(e["reason"], e["message"]) for e in events if e["involvedObject"].get("kind") == "Job"]
            assert ("Completed", "Job completed") in mine and all(r != "FailedIndexes" for r, _ in mine), mine
            return True

        await world.eventually(recorded)


async def test_rules_are_read_in_order_and_a_count_rule_counts_succeeded_indexes(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        policy = {"rules": [{"succeededIndexes": "3"}, {"succeededIndexes": "0-2", "succeededCount": 2},
                            {"succeededCount": 1}]}
        await world.create(JOBS, indexed(completions=4, parallelism=2, successPolicy=policy))
        pods = await active_pods(world, 2)
        await finish(world, of_index(pods, 0), "Succeeded")
        # Rule 2 (one succeeded index) is met already, but rule 1 is read first and is not: the first
        # met rule decides, and here that is rule 2.
        done = await wait_job(world, lambda s: ("Complete", "True", "SuccessPolicy") in conditions(s))
        assert done["status"]["conditions"][0]["message"] == "Matched rules at index 2"


async def test_a_count_within_named_indexes_is_met_by_any_of_them(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        policy = {"rules": [{"succeededIndexes": "3"}, {"succeededIndexes": "0-2", "succeededCount": 2}]}
        await world.create(JOBS, indexed(completions=4, parallelism=4, successPolicy=policy))
        pods = await active_pods(world, 4)
        await finish(world, of_index(pods, 0), "Succeeded")
        await wait_job(world, lambda s: s.get("completedIndexes") == "0")
        await world.settle()
        assert len(await active_pods(world, 3)) == 3 and not conditions((await world.get(JOBS, "pi"))["status"])
        await finish(world, of_index(pods, 2), "Succeeded")
        done = await wait_job(world, lambda s: ("Complete", "True", "SuccessPolicy") in conditions(s))
        assert done["status"]["conditions"][0]["message"] == "Matched rules at index 1"
        assert (done["status"]["completedIndexes"], done["status"]["succeeded"]) == ("0,2", 2)
        assert "failed" not in done["status"]


async def test_without_a_success_policy_an_indexed_job_still_needs_every_index(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(completionMode="Indexed", completions=2, parallelism=2))
        pods = await active_pods(world, 2)
        await finish(world, of_index(pods, 0), "Succeeded")
        await wait_job(world, lambda s: s.get("completedIndexes") == "0")
        await world.settle()
        assert not conditions((await world.get(JOBS, "pi"))["status"]) and len(await job_pods(world)) == 2
