"""CronJobs on the simulated cluster: the CronJob controller creates Jobs on schedule, the Job controller runs
their pods, the simulated kubelet finishes them (``kubeloop.dev/fault: succeed-after``, docs/simulation.md),
and the CronJob keeps only its history limit of finished Jobs (FakeClock).

Upstream: k/k ``pkg/controller/cronjob/cronjob_controllerv2.go`` (1.32) ``cleanupFinishedJobs`` and the
``lastSuccessfulTime`` it records from a Complete Job's ``completionTime``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import parse_time
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import NS, open_world

CRONJOBS = builtin("batch", "cronjobs")
JOBS = builtin("batch", "jobs")
EVENTS = builtin("", "events")


def _complete(job: dict[str, Any]) -> bool:
    return any(c.get("type") == "Complete" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or ())


async def test_jobs_run_on_schedule_complete_and_only_the_newest_is_kept(tmp_path: Path) -> None:
    annotations = {"kubeloop.dev/fault": "succeed-after", "kubeloop.dev/fault-after-seconds": "3"}
    body = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
            "spec": {"schedule": "*/1 * * * *", "successfulJobsHistoryLimit": 1, "jobTemplate": {"spec": {
                "template": {"metadata": {"annotations": annotations},
                             "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    async with open_world(tmp_path, SimulationOptions(nodes=1), workloads=True, controllers=("cronjob",)) as world:
        await world.create(CRONJOBS, body)

        async def trimmed() -> dict[str, Any]:
            events = (await world.client.list(EVENTS, namespace=NS))["items"]
            deleted = [e for e in events if e["reason"] == "SuccessfulDelete" and e["involvedObject"]["kind"] == "CronJob"]
            assert len(deleted) >= 2, len(deleted)
            jobs = [j for j in (await world.client.list(JOBS, namespace=NS))["items"]
                    if not j["metadata"].get("deletionTimestamp")]
            assert len([j for j in jobs if _complete(j)]) <= 1, [j["metadata"]["name"] for j in jobs]
            return await world.get(CRONJOBS, "tick")

        cj = await world.eventually(trimmed, step=1.0)
        status = cj["status"]
        assert parse_time(status["lastSuccessfulTime"]) > parse_time(status["lastScheduleTime"]) - 60
        jobs = (await world.client.list(JOBS, namespace=NS))["items"]
        assert all(j["metadata"]["name"].startswith("tick-") for j in jobs)
        assert all(j["metadata"]["ownerReferences"][0]["kind"] == "CronJob" for j in jobs)
