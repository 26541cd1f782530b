"""Job controller: pods up to parallelism with the tracking finalizer, exact counting through
``uncountedTerminatedPods``, delayed terminal conditions, backoff, deadline, suspend (fake clock).

Upstream: k/k ``pkg/controller/job/job_controller.go`` (release 1.32: ``manageJob``,
``trackJobStatusAndRemoveFinalizers``, ``enactJobFinished``; SuccessCriteriaMet and FailureTarget before
Complete and Failed since JobPodReplacementPolicy is on) and ``backoff_utils.go``. The test plays the
kubelet, writing pod phases through the API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import format_time, parse_time
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.controllers._workload_kinds import JOBS

from ._workload_world import NS, PODS, World, open_world

FINALIZER = "batch.kubernetes.io/job-tracking"
EVENTS = builtin("", "events")


def job(name: str = "pi", **spec: Any) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"template": template, **spec}}


async def job_pods(world: World, name: str = "pi") -> list[dict[str, Any]]:
    pods = await world.items(PODS, {"matchLabels": {"batch.kubernetes.io/job-name": name}})
    return sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"] + p["metadata"]["name"])


async def finish(world: World, pod: dict[str, Any], phase: str) -> None:
    now = format_time(world.clock.now())
    code = 0 if phase == "Succeeded" else 1
    status = {"phase": phase, "containerStatuses": [{
        "name": "c", "ready": False, "restartCount": 0, "image": "busybox", "imageID": "", "started": False,
        "state": {"terminated": {"exitCode": code, "startedAt": now, "finishedAt": now,
                                 "reason": "Completed" if code == 0 else "Error"}}}]}
    await world.client.patch(PODS, pod["metadata"]["name"], {"status": status}, namespace=NS, subresource="status")


async def wait_job(world: World, check: Any, name: str = "pi", *, step: float = 0.01) -> dict[str, Any]:
    """Poll the Job until ``check(status)``; fake time moves by ``step`` a try, so a sync retried after
    a conflict (the informer's copy of the Job behind our own write) runs again."""
    async def probe() -> dict[str, Any]:
        current = await world.get(JOBS, name)
        assert check(current.get("status") or {}), current.get("status")
        return current

    result: dict[str, Any] = await world.eventually(probe, step=step)
    return result


def conditions(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", "")) for c in status.get("conditions") or ()]


async def active_pods(world: World, count: int, name: str = "pi") -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]]:
        pods = [p for p in await job_pods(world, name) if not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        assert len(pods) == count, len(pods)
        return pods

    result: list[dict[str, Any]] = await world.eventually(check, step=0.01)
    return result


def seconds(stamp: str) -> float:
    return parse_time(stamp)


async def test_a_job_runs_its_pod_to_completion(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        created = await world.create(JOBS, job())
        (pod,) = await active_pods(world, 1)
        assert pod["metadata"]["finalizers"] == [FINALIZER]
        assert pod["metadata"]["generateName"] == "pi-"
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": created["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        assert pod["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == created["metadata"]["uid"]
        running = await wait_job(world, lambda s: s.get("active") == 1)
        assert seconds(created["metadata"]["creationTimestamp"]) <= seconds(running["status"]["startTime"])
        assert seconds(running["status"]["startTime"]) <= world.clock.now()
        assert (running["status"]["ready"], running["status"]["terminating"]) == (0, 0)
        assert running["status"]["uncountedTerminatedPods"] == {}
        await world.advance(5)
        await finish(world, pod, "Succeeded")
        done = await wait_job(world, lambda s: any(c["type"] == "Complete" for c in s.get("conditions") or ()))
        status = done["status"]
        assert conditions(status) == [("SuccessCriteriaMet", "True", "CompletionsReached"),
                                      ("Complete", "True", "CompletionsReached")]
        assert status["conditions"][1]["message"] == "Reached expected number of succeeded pods"
        assert status["succeeded"] == 1 and "active" not in status and "failed" not in status
        assert status["uncountedTerminatedPods"] == {}
        assert seconds(status["startTime"]) + 5 <= seconds(status["completionTime"]) <= world.clock.now()
        (after,) = await job_pods(world)
        assert not after["metadata"].get("finalizers")  # counted, so the finalizer is off

        async def recorded() -> bool:
            events = await world.client.list(EVENTS, namespace=NS)
            reasons = {e["reason"] for e in events["items"] if e["involvedObject"].get("kind") == "Job"}
            assert {"SuccessfulCreate", "Completed"} <= reasons, reasons
            return True

        await world.eventually(recorded)


async def test_parallel_pods_up_to_completions_and_never_more(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(completions=3, parallelism=2))
        first = await active_pods(world, 2)
        await finish(world, first[0], "Succeeded")
        second = await active_pods(world, 2)  # one more to reach three completions
        await wait_job(world, lambda s: s.get("succeeded") == 1 and s.get("active") == 2)
        for pod in second:
            await finish(world, pod, "Succeeded")
        done = await wait_job(world, lambda s: ("Complete", "True", "CompletionsReached") in conditions(s))
        assert done["status"]["succeeded"] == 3
        assert len(await job_pods(world)) == 3


async def test_failures_back_off_and_exceeding_the_limit_fails_the_job(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(backoffLimit=1))
        (first,) = await active_pods(world, 1)
        failed_at = world.clock.now()
        await finish(world, first, "Failed")
        await wait_job(world, lambda s: s.get("failed") == 1)  # synced syncJobBatchPeriod (1 s) after the event
        await world.settle()
        # 10 s backoff after the first failure (from the pod's finish time): no replacement yet.
        assert len(await job_pods(world)) == 1
        await world.advance(failed_at + 9 - world.clock.now())
        assert len(await job_pods(world)) == 1
        await world.advance(2)
        (second,) = await active_pods(world, 1)
        await finish(world, second, "Failed")
        failed = await wait_job(world, lambda s: any(c["type"] == "Failed" for c in s.get("conditions") or ()))
        status = failed["status"]
        assert conditions(status) == [("FailureTarget", "True", "BackoffLimitExceeded"),
                                      ("Failed", "True", "BackoffLimitExceeded")]
        assert status["conditions"][1]["message"] == "Job has reached the specified backoff limit"
        assert status["failed"] == 2 and "completionTime" not in status
        await world.advance(60)
        assert len(await job_pods(world)) == 2  # a failed Job creates nothing more


async def test_active_deadline_deletes_pods_and_counts_them_failed(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(activeDeadlineSeconds=30, parallelism=2, completions=4))
        pods = await active_pods(world, 2)
        await world.advance(31)
        target = await wait_job(world, lambda s: ("FailureTarget", "True", "DeadlineExceeded") in conditions(s))
        assert target["status"]["conditions"][0]["message"] == "Job was active longer than specified deadline"
        deleted = [await world.maybe(PODS, p["metadata"]["name"]) for p in pods]
        # Deleted with their finalizer kept (still terminating): the Job is not Failed until they are gone.
        assert all(d is None or d["metadata"].get("deletionTimestamp") for d in deleted)
        failed = await wait_job(world, lambda s: ("Failed", "True", "DeadlineExceeded") in conditions(s), step=1.0)
        assert failed["status"]["failed"] == 2
        assert failed["status"].get("active") is None and failed["status"]["terminating"] == 0


async def test_suspend_deletes_active_pods_and_resume_restarts_them(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(suspend=True))
        suspended = await wait_job(world, lambda s: ("Suspended", "True", "JobSuspended") in conditions(s))
        assert "startTime" not in suspended["status"]
        assert await job_pods(world) == []
        await world.client.patch(JOBS, "pi", {"spec": {"suspend": False}}, namespace=NS)
        await active_pods(world, 1)
        resumed = await wait_job(world, lambda s: ("Suspended", "False", "JobResumed") in conditions(s))
        assert seconds(resumed["status"]["startTime"]) <= world.clock.now()
        await world.client.patch(JOBS, "pi", {"spec": {"suspend": True}}, namespace=NS)
        await wait_job(world, lambda s: ("Suspended", "True", "JobSuspended") in conditions(s) and not s.get("active"))
        await world.eventually(lambda: _none_active(world))


async def _none_active(world: World) -> bool:
    pods = [p for p in await job_pods(world) if not p["metadata"].get("deletionTimestamp")]
    assert pods == [], pods
    return True


async def test_a_deleted_pod_counts_as_failed_and_is_replaced(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job())
        (pod,) = await active_pods(world, 1)
        await world.client.delete(PODS, pod["metadata"]["name"], namespace=NS)
        status = (await wait_job(world, lambda s: s.get("failed") == 1))["status"]
        assert status["uncountedTerminatedPods"] == {}
        # Its finalizer came off once it was counted, so the delete could finish.
        await world.eventually(lambda: _gone(world, pod["metadata"]["name"]))
        await world.advance(11)
        await active_pods(world, 1)


async def _gone(world: World, name: str) -> bool:
    return await world.maybe(PODS, name) is None


async def test_steady_state_makes_no_writes(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(parallelism=2, completions=2))
        await active_pods(world, 2)
        await wait_job(world, lambda s: s.get("active") == 2)
        assert await world.quiet_writes() == 0


async def test_an_indexed_job_runs_each_index_once_lowest_first(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(completionMode="Indexed", completions=3, parallelism=2))
        first = await active_pods(world, 2)
        index = "batch.kubernetes.io/job-completion-index"
        assert sorted(p["metadata"]["annotations"][index] for p in first) == ["0", "1"]
        zero = next(p for p in first if p["metadata"]["annotations"][index] == "0")
        assert zero["metadata"]["labels"][index] == "0"
        assert zero["metadata"]["generateName"] == "pi-0-"
        assert zero["spec"]["hostname"] == "pi-0"
        (env,) = zero["spec"]["containers"][0]["env"]
        assert env["name"] == "JOB_COMPLETION_INDEX"
        assert env["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.annotations['{index}']"
        await finish(world, zero, "Succeeded")
        pods = await active_pods(world, 2)
        assert sorted(p["metadata"]["annotations"][index] for p in pods) == ["1", "2"]
        await wait_job(world, lambda s: s.get("completedIndexes") == "0" and s.get("succeeded") == 1)
        for pod in pods:
            await finish(world, pod, "Succeeded")
        done = await wait_job(world, lambda s: ("Complete", "True", "CompletionsReached") in conditions(s))
        assert done["status"]["completedIndexes"] == "0-2" and done["status"]["succeeded"] == 3
        assert done["status"]["uncountedTerminatedPods"] == {}
        assert all(not p["metadata"].get("finalizers") for p in await job_pods(world))


async def test_pods_of_a_deleted_job_lose_the_tracking_finalizer(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(parallelism=2, completions=2))
        pods = await active_pods(world, 2)
        await world.client.delete(JOBS, "pi", namespace=NS)  # no garbage collector here: the pods stay

        async def released() -> bool:
            for pod in pods:
                current = await world.get(PODS, pod["metadata"]["name"])
                assert not current["metadata"].get("finalizers"), current["metadata"]
            return True

        await world.eventually(released, step=0.01)


async def test_a_job_managed_by_another_controller_is_left_alone(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job("theirs", managedBy="example.com/queue"))
        await world.create(JOBS, job("ours", managedBy="kubernetes.io/job-controller"))
        await active_pods(world, 1, "ours")
        await world.settle()
        assert await job_pods(world, "theirs") == []
        assert (await world.get(JOBS, "theirs"))["status"] == {}


async def fail_with(world: World, pod: dict[str, Any], *, code: int = 1,
                    condition: str | None = None) -> None:
    now = format_time(world.clock.now())
    status: dict[str, Any] = {"phase": "Failed", "containerStatuses": [{
        "name": "c", "ready": False, "restartCount": 0, "image": "busybox", "imageID": "", "started": False,
        "state": {"terminated": {"exitCode": code, "startedAt": now, "finishedAt": now, "reason": "Error"}}}]}
    if condition:
        status["conditions"] = [{"type": condition, "status": "True", "lastTransitionTime": now}]
    await world.client.patch(PODS, pod["metadata"]["name"], {"status": status}, namespace=NS, subresource="status")


POLICY = {"rules": [
    {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}},
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
]}


async def test_pod_failure_policy_fail_job_fails_at_once(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(podFailurePolicy=POLICY, parallelism=2, completions=2))
        first, second = await active_pods(world, 2)
        await fail_with(world, first, code=42)
        failed = await wait_job(world, lambda s: ("Failed", "True", "PodFailurePolicy") in conditions(s))
        status = failed["status"]
        assert conditions(status) == [("FailureTarget", "True", "PodFailurePolicy"), ("Failed", "True", "PodFailurePolicy")]
        assert status["conditions"][1]["message"] == (
            f"Container c for pod {NS}/{first['metadata']['name']} failed with exit code 42 matching FailJob rule at index 0")
        # The other pod was running: deleted, and counted as failed although it never reached phase Failed
        # (podReplacementPolicy is Failed with a pod failure policy).
        assert status["failed"] == 2 and status["terminating"] == 0 and status.get("active") is None
        assert await world.maybe(PODS, second["metadata"]["name"]) is None


async def test_pod_failure_policy_ignore_does_not_count_and_replaces(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        await world.create(JOBS, job(podFailurePolicy=POLICY, backoffLimit=0))
        (pod,) = await active_pods(world, 1)
        await fail_with(world, pod, code=137, condition="DisruptionTarget")
        replacement = await world.eventually(lambda: _replaced(world, pod), step=0.01)
        assert replacement["metadata"]["finalizers"] == [FINALIZER]
        status = (await world.get(JOBS, "pi"))["status"]
        assert "failed" not in status and not conditions(status)  # backoffLimit 0, yet not failed

        async def released() -> bool:
            current = await world.get(PODS, pod["metadata"]["name"])
            assert not current["metadata"].get("finalizers")
            return True

        await world.eventually(released, step=0.01)


async def _replaced(world: World, old: dict[str, Any]) -> dict[str, Any]:
    (pod,) = await active_pods(world, 1)
    assert pod["metadata"]["uid"] != old["metadata"]["uid"]
    return pod
