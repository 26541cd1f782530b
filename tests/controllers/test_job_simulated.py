"""Jobs on the simulated cluster: the scheduler and simulated kubelet run the pods, the template's fault
profile decides how they end (docs/simulation.md), the Job controller counts them (FakeClock).

Upstream: k/k ``pkg/controller/job/job_controller.go`` (1.32); the profiles are kubeloop's
(``kubeloop/controllers/_kubelet_profiles.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import parse_time
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import NS, PODS, World, open_world

JOBS = builtin("batch", "jobs")


def job(name: str, fault: str, *, restart: str = "Never", **spec: Any) -> dict[str, Any]:
    annotations = {"kubeloop.dev/fault": fault, "kubeloop.dev/fault-after-seconds": "3"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"annotations": annotations},
                                  "spec": {"restartPolicy": restart,
                                           "containers": [{"name": "app", "image": "busybox"}]}}, **spec}}


def conditions(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c.get("reason", "")) for c in (obj.get("status") or {}).get("conditions") or ()]


async def finished(world: World, name: str, kind: str) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        current = await world.get(JOBS, name)
        assert any(t == kind for t, _ in conditions(current)), current.get("status")
        return current

    result: dict[str, Any] = await world.eventually(check, step=0.5)
    return result


async def test_pods_that_succeed_complete_the_job(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), workloads=True) as world:
        await world.create(JOBS, job("ok", "succeed-after", completions=3, parallelism=2))
        done = await finished(world, "ok", "Complete")
        assert conditions(done) == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
        assert done["status"]["succeeded"] == 3 and "failed" not in done["status"]
        pods = (await world.client.list(PODS, namespace=NS, label_selector="job-name=ok"))["items"]
        assert sorted(p["status"]["phase"] for p in pods) == ["Succeeded"] * 3
        assert all(p["spec"]["nodeName"] for p in pods)


async def test_pods_that_fail_exhaust_the_backoff_limit(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), workloads=True) as world:
        await world.create(JOBS, job("bad", "fail-after", backoffLimit=2))
        failed = await finished(world, "bad", "Failed")
        assert conditions(failed) == [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
        assert failed["status"]["failed"] == 3
        pods = (await world.client.list(PODS, namespace=NS, label_selector="job-name=bad"))["items"]
        assert len(pods) == 3 and all(p["status"]["phase"] == "Failed" for p in pods)
        # 10 s, then 20 s of backoff between the three pods (each ran 3 s).
        starts = sorted(parse_time(p["metadata"]["creationTimestamp"]) for p in pods)
        assert starts[1] - starts[0] >= 3 + 10 and starts[2] - starts[1] >= 3 + 20


async def test_on_failure_restarts_count_against_the_backoff_limit(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), workloads=True) as world:
        await world.create(JOBS, job("loop", "fail-after", restart="OnFailure", backoffLimit=2))
        failed = await finished(world, "loop", "Failed")
        assert conditions(failed)[-1] == ("Failed", "BackoffLimitExceeded")
        assert failed["status"]["failed"] == 1  # the one pod, deleted once the limit was reached


async def test_a_finished_job_is_deleted_once_its_ttl_has_passed(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), workloads=True) as world:
        await world.create(JOBS, job("short", "succeed-after", ttlSecondsAfterFinished=30))
        done = await finished(world, "short", "Complete")
        finished_at = parse_time(done["status"]["conditions"][-1]["lastTransitionTime"])
        await world.clock.advance(max(0.0, finished_at + 29 - world.clock.now()))
        await world.settle()
        assert not (await world.get(JOBS, "short"))["metadata"].get("deletionTimestamp")

        async def deleted() -> dict[str, Any]:
            current = await world.get(JOBS, "short")
            # Deleted in the foreground (this world runs no garbage collector to finish it).
            assert current["metadata"].get("deletionTimestamp"), current["metadata"]
            return current

        current = await world.eventually(deleted, step=0.5)
        assert current["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert parse_time(current["metadata"]["deletionTimestamp"]) >= finished_at + 30


async def test_an_indexed_job_completes_every_index(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=2), workloads=True) as world:
        await world.create(JOBS, job("idx", "succeed-after", completionMode="Indexed", completions=4, parallelism=2))
        done = await finished(world, "idx", "Complete")
        assert done["status"]["completedIndexes"] == "0-3" and done["status"]["succeeded"] == 4
        pods = (await world.client.list(PODS, namespace=NS, label_selector="job-name=idx"))["items"]
        assert sorted(p["spec"]["hostname"] for p in pods) == ["idx-0", "idx-1", "idx-2", "idx-3"]


async def test_a_pod_failure_policy_sees_the_simulated_exit_code(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), workloads=True) as world:
        body = job("exit42", "fail-after", podFailurePolicy={"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]})
        body["spec"]["template"]["metadata"]["annotations"]["kubeloop.dev/exit-code"] = "42"
        await world.create(JOBS, body)
        failed = await finished(world, "exit42", "Failed")
        assert conditions(failed)[-1] == ("Failed", "PodFailurePolicy")
        assert "failed with exit code 42 matching FailJob rule at index 0" in failed["status"]["conditions"][-1]["message"]
        assert failed["status"]["failed"] == 1  # one pod, no retry despite backoffLimit 6
