"""CronJob controller on a fake clock: schedules firing, concurrency policies, history limits, suspend, missed
schedules, time zones. The test finishes Jobs by writing their status through the API (no Job controller).

Upstream: k/k ``pkg/controller/cronjob/cronjob_controllerv2.go`` (release 1.32: ``sync``, ``syncCronJob``,
``cleanupFinishedJobs``, ``removeOldestJobs``, ``updateCronJob``) and ``utils.go`` (``mostRecentScheduleTime``,
``nextScheduleTimeDuration``, ``getJobFromTemplate2``, ``getTimeHashInMinutes``).

The fake clock starts at 1_700_000_000 (2023-11-14T22:13:20Z), so an every-minute schedule first fires at
22:14:00, Unix minute 28333334.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import format_time
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.controllers._workload_kinds import CRONJOBS, JOBS

from ._workload_world import NS, World, open_world

EVENTS = builtin("", "events")
MINUTE0 = 28333334  # 2023-11-14T22:14:00Z, in minutes since the epoch


def cronjob(name: str = "hello", schedule: str = "*/1 * * * *", **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "hello"}, "annotations": {"team": "a"}},
                "spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                                               "containers": [{"name": "c", "image": "busybox"}]}}}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedule": schedule, "jobTemplate": template, **spec}}


async def jobs(world: World) -> list[dict[str, Any]]:
    items = (await world.client.list(JOBS, namespace=NS))["items"]
    return sorted((j for j in items if not j["metadata"].get("deletionTimestamp")), key=lambda j: j["metadata"]["name"])


async def job_names(world: World) -> list[str]:
    return [j["metadata"]["name"] for j in await jobs(world)]


async def until_jobs(world: World, *expected: str) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]]:
        found = await jobs(world)
        assert [j["metadata"]["name"] for j in found] == list(expected), [j["metadata"]["name"] for j in found]
        return found

    result: list[dict[str, Any]] = await world.eventually(check)
    return result


async def until_status(world: World, check: Any, name: str = "hello") -> dict[str, Any]:
    async def probe() -> dict[str, Any]:
        current = await world.get(CRONJOBS, name)
        assert check(current.get("status") or {}), current.get("status")
        return current

    result: dict[str, Any] = await world.eventually(probe)
    return result


async def reasons(world: World, name: str = "hello") -> list[str]:
    events = (await world.client.list(EVENTS, namespace=NS))["items"]
    mine = [e for e in events if e["involvedObject"].get("kind") == "CronJob" and e["involvedObject"]["name"] == name]
    return [e["reason"] for e in sorted(mine, key=lambda e: e.get("firstTimestamp") or "")]


async def until_event(world: World, reason: str, name: str = "hello") -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]]:
        events = (await world.client.list(EVENTS, namespace=NS))["items"]
        found = [e for e in events if e["reason"] == reason and e["involvedObject"]["name"] == name]
        assert found, await reasons(world, name)
        return found

    result: list[dict[str, Any]] = await world.eventually(check)
    return result


async def finish(world: World, name: str, kind: str = "Complete") -> None:
    now = format_time(world.clock.now())
    if kind == "Complete":
        conditions = [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]
        status = {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": conditions}
    else:
        conditions = [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]
        status = {"startTime": now, "failed": 1, "conditions": conditions}
    await world.client.patch(JOBS, name, {"status": status}, namespace=NS, subresource="status")


def active_names(status: dict[str, Any]) -> list[str]:
    return [r["name"] for r in status.get("active") or ()]


async def test_a_schedule_firing_creates_a_job_named_for_its_minute(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        cj = await world.create(CRONJOBS, cronjob())
        await world.advance(39)
        assert await job_names(world) == []
        await world.advance(1.2)  # 22:14:00 plus upstream's 100 ms
        (job,) = await until_jobs(world, f"hello-{MINUTE0}")
        meta = job["metadata"]
        assert meta["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "hello",
                                            "uid": cj["metadata"]["uid"], "controller": True,
                                            "blockOwnerDeletion": True}]
        assert meta["annotations"] == {"team": "a", "batch.kubernetes.io/cronjob-scheduled-timestamp":
                                       "2023-11-14T22:14:00Z"}
        assert meta["labels"]["app"] == "hello"
        assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
        status = (await until_status(world, lambda s: s.get("lastScheduleTime")))["status"]
        assert status["lastScheduleTime"] == "2023-11-14T22:14:00Z"
        assert status["active"] == [{"kind": "Job", "namespace": NS, "name": f"hello-{MINUTE0}",
                                     "uid": meta["uid"], "apiVersion": "batch/v1",
                                     "resourceVersion": meta["resourceVersion"]}]
        await until_event(world, "SuccessfulCreate")
        # Allow: the next minute runs beside the first.
        await world.advance(60)
        await until_jobs(world, f"hello-{MINUTE0}", f"hello-{MINUTE0 + 1}")
        await until_status(world, lambda s: len(s.get("active") or ()) == 2)


async def test_forbid_skips_runs_while_one_is_active(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(concurrencyPolicy="Forbid"))
        await world.advance(40.2)
        await until_jobs(world, f"hello-{MINUTE0}")
        await until_status(world, lambda s: len(s.get("active") or ()) == 1)
        await world.advance(60)
        await until_event(world, "JobAlreadyActive")
        await world.advance(60)
        assert await job_names(world) == [f"hello-{MINUTE0}"]
        # 22:15 was skipped; once the Job finishes, the most recent time (22:16) still runs.
        await finish(world, f"hello-{MINUTE0}")
        await until_event(world, "SawCompletedJob")
        await until_jobs(world, f"hello-{MINUTE0}", f"hello-{MINUTE0 + 2}")
        status = (await until_status(world, lambda s: active_names(s) == [f"hello-{MINUTE0 + 2}"]))["status"]
        assert status["lastScheduleTime"] == "2023-11-14T22:16:00Z"


async def test_replace_deletes_the_active_job_and_starts_a_new_one(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(concurrencyPolicy="Replace"))
        await world.advance(40.2)
        await until_jobs(world, f"hello-{MINUTE0}")
        await until_status(world, lambda s: len(s.get("active") or ()) == 1)
        await world.advance(60)
        await until_jobs(world, f"hello-{MINUTE0 + 1}")
        status = (await until_status(world, lambda s: active_names(s) == [f"hello-{MINUTE0 + 1}"]))["status"]
        assert status["lastScheduleTime"] == "2023-11-14T22:15:00Z"
        await until_event(world, "SuccessfulDelete")


async def test_history_limits_delete_the_oldest_finished_jobs(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1))
        await world.advance(40.2)
        for minute in range(4):
            await until_status(world, lambda s, m=minute: f"hello-{MINUTE0 + m}" in active_names(s))
            await world.advance(5)
            await finish(world, f"hello-{MINUTE0 + minute}")
            await until_status(world, lambda s: not s.get("active"))
            await world.advance(55)
        # Four succeeded; the two oldest went (by startTime), the newest two stay beside the running one.
        await until_jobs(world, f"hello-{MINUTE0 + 2}", f"hello-{MINUTE0 + 3}", f"hello-{MINUTE0 + 4}")
        await finish(world, f"hello-{MINUTE0 + 4}", "Failed")
        await world.advance(60)
        # advance() only lets a few loop turns pass: on a loaded machine the 22:19 Job may not exist yet.
        await until_status(world, lambda s: f"hello-{MINUTE0 + 5}" in active_names(s))
        await finish(world, f"hello-{MINUTE0 + 5}", "Failed")
        # One failed Job kept: the newer.
        await until_jobs(world, f"hello-{MINUTE0 + 2}", f"hello-{MINUTE0 + 3}", f"hello-{MINUTE0 + 5}")
        status = (await world.get(CRONJOBS, "hello"))["status"]
        assert status["lastSuccessfulTime"] == format_time(1_700_000_040 + 3 * 60 + 5)

        async def three_deleted() -> bool:
            assert (await reasons(world)).count("SuccessfulDelete") == 3
            return True

        await world.eventually(three_deleted)


async def test_suspend_stops_new_runs_and_resuming_runs_the_latest_missed_one(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(suspend=True))
        await world.advance(40.2)
        await world.advance(120)
        assert await job_names(world) == []
        await world.client.patch(CRONJOBS, "hello", {"spec": {"suspend": False}}, namespace=NS)
        # Three times were missed (22:14, 22:15, 22:16); only the most recent runs.
        await until_jobs(world, f"hello-{MINUTE0 + 2}")
        await until_status(world, lambda s: s.get("lastScheduleTime") == "2023-11-14T22:16:00Z")


async def test_a_starting_deadline_leaves_a_missed_run_out(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(schedule="*/5 * * * *", suspend=True, startingDeadlineSeconds=30))
        await world.advance(100 + 45)  # 22:15:45: the 22:15 run is 45 s late, past its 30 s deadline
        await world.client.patch(CRONJOBS, "hello", {"spec": {"suspend": False}}, namespace=NS)
        await world.settle(40)
        assert await job_names(world) == []
        await world.advance(5 * 60)  # 22:20:00 (+100 ms) runs on time
        await until_jobs(world, f"hello-{MINUTE0 + 6}")


async def test_too_many_missed_times_are_reported_and_the_latest_runs(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(suspend=True))
        await world.advance(200 * 60)
        await world.client.patch(CRONJOBS, "hello", {"spec": {"suspend": False}}, namespace=NS)
        (event,) = await until_event(world, "TooManyMissedTimes")
        assert event["type"] == "Warning"
        assert event["message"] == ("too many missed start times. Set or decrease .spec.startingDeadlineSeconds or "
                                    "check clock skew")
        await until_jobs(world, f"hello-{MINUTE0 + 199}")


async def test_a_time_zone_schedules_in_that_zone(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        # 2023-11-15 07:13:20 in Tokyo: the next 09:00 there is 2023-11-15T00:00:00Z.
        await world.create(CRONJOBS, cronjob("morning", "0 9 * * *", timeZone="Asia/Tokyo"))
        await world.advance(6400 - 1)
        assert await job_names(world) == []
        await world.advance(1.2)
        (job,) = await until_jobs(world, f"morning-{1_700_006_400 // 60}")
        assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == \
            "2023-11-15T09:00:00+09:00"


async def test_a_new_schedule_waits_for_its_own_next_time(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(schedule="0 * * * *"))
        await world.advance(30 * 60)  # 22:43:20; under the new schedule 22:14..22:43 were all "missed"
        await world.client.patch(CRONJOBS, "hello", {"spec": {"schedule": "*/1 * * * *"}}, namespace=NS)
        await world.settle(40)
        assert await job_names(world) == []  # updateCronJob queued it for 22:44, not now
        await world.advance(40.2)
        await until_jobs(world, f"hello-{MINUTE0 + 30}")


async def test_a_job_deleted_behind_its_back_leaves_the_active_list(tmp_path: Path) -> None:
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob(schedule="0 * * * *"))
        await world.advance(47 * 60)  # 23:00:20
        await until_jobs(world, f"hello-{1_700_002_800 // 60}")
        await until_status(world, lambda s: len(s.get("active") or ()) == 1)
        await world.client.delete(JOBS, f"hello-{1_700_002_800 // 60}", namespace=NS)
        # An empty list is left out of the status (Go's omitempty).
        await until_status(world, lambda s: "active" not in s and s.get("lastScheduleTime"))
        await until_event(world, "MissingJob")


SKEW = "cronjob_controller_job_creation_skew_duration_seconds"


async def test_each_created_job_observes_its_creation_skew(tmp_path: Path) -> None:
    # pkg/controller/cronjob/metrics/metrics.go CronJobCreationSkew (buckets 1, 2, 4 ... 512 s), observed in
    # syncCronJob with the Job's creationTimestamp minus its scheduled time.
    async with open_world(tmp_path, "cronjob") as world:
        metrics = world.manager.metrics
        assert metrics.sample(f"{SKEW}_count") == 0
        await world.create(CRONJOBS, cronjob())
        await world.advance(40.2)  # 22:14:00 plus upstream's 100 ms; creationTimestamp has whole seconds
        await until_jobs(world, f"hello-{MINUTE0}")
        await until_status(world, lambda s: s.get("lastScheduleTime"))
        assert metrics.sample(f"{SKEW}_count") == 1
        assert metrics.sample(f"{SKEW}_bucket", {"le": "1.0"}) == 1
        # A run started late is observed with its lateness: suspended over 22:15 and 22:16, resumed at
        # 22:16:30, the most recent time (22:16:00) runs 30 s late.
        await world.client.patch(CRONJOBS, "hello", {"spec": {"suspend": True}}, namespace=NS)
        await world.advance(150)
        assert await job_names(world) == [f"hello-{MINUTE0}"]
        await world.client.patch(CRONJOBS, "hello", {"spec": {"suspend": False}}, namespace=NS)
        await until_jobs(world, f"hello-{MINUTE0}", f"hello-{MINUTE0 + 2}")
        await until_status(world, lambda s: len(s.get("active") or ()) == 2)
        assert metrics.sample(f"{SKEW}_count") == 2
        assert metrics.sample(f"{SKEW}_bucket", {"le": "16.0"}) == 1
        assert metrics.sample(f"{SKEW}_bucket", {"le": "32.0"}) == 2
        assert 30 <= (metrics.sample(f"{SKEW}_sum") or 0) <= 31
