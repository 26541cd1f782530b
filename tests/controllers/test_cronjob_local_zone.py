"""A CronJob without ``spec.timeZone`` runs in the controller manager's local zone, as upstream's.

Upstream 1.32: ``pkg/controller/cronjob/cronjob_controllerv2.go`` parses ``formatSchedule(cj)`` with
robfig/cron's ``ParseStandard``, which leaves a schedule without ``TZ=`` in ``time.Local``; its
``SpecSchedule.Next`` then steps in the location of the time it is given, and the controller's times
are local (``time.Now()``; ``metav1.Time`` decodes to ``.Local()``). Go's ``time.Local`` is ``TZ``, else
``/etc/localtime``, else UTC (``initLocal``, zoneinfo_unix.go). The scheduled-timestamp annotation is
``scheduledTime.In(time.LoadLocation(""))``: UTC whatever the local zone (``getJobFromTemplate2``).

The fake clock starts at 1_700_000_000: 2023-11-14T22:13:20Z, 2023-11-15 07:13:20 in Tokyo (UTC+9).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import uvicorn

from kubeloop.api import load_location, local_location
from kubeloop.controllers._cronjob_times import cronjob_schedule
from kubeloop.controllers._workload_kinds import CRONJOBS

from ._workload_world import open_world
from .test_cronjob import cronjob, job_names, until_jobs

TOKYO_NINE = 1_700_006_400  # 2023-11-15T09:00:00+09:00 = 2023-11-15T00:00:00Z


@pytest.mark.parametrize(("environ", "zone"), [
    ({"TZ": "Asia/Tokyo"}, "Asia/Tokyo"),
    ({"TZ": ":Asia/Tokyo"}, "Asia/Tokyo"),
    ({"TZ": "/usr/share/zoneinfo/Asia/Tokyo"}, "Asia/Tokyo"),
    ({"TZ": ""}, "UTC"),
    ({"TZ": "UTC"}, "UTC"),
    ({"TZ": "Not/AZone"}, "UTC"),  # Go falls back to UTC
])
def test_local_location_follows_gos_time_local(environ: dict[str, str], zone: str) -> None:
    if environ["TZ"].startswith("/") and not Path(environ["TZ"]).exists():
        pytest.skip("no system zoneinfo")
    local = local_location(environ)
    expected = UTC if zone == "UTC" else ZoneInfo(zone)
    for moment in (datetime(2024, 1, 15, 12), datetime(2024, 7, 15, 12)):
        assert local.utcoffset(moment) == expected.utcoffset(moment)


def test_without_tz_the_local_zone_is_etc_localtime() -> None:
    if not Path("/etc/localtime").exists():
        pytest.skip("no /etc/localtime")
    with open("/etc/localtime", "rb") as f:
        system = ZoneInfo.from_file(f)
    winter, summer = datetime(2024, 1, 15, 12), datetime(2024, 7, 15, 12)
    local = local_location({})
    assert (local.utcoffset(winter), local.utcoffset(summer)) == (system.utcoffset(winter), system.utcoffset(summer))


def test_a_schedule_without_a_zone_steps_in_the_local_zone_and_keeps_daylight_saving() -> None:
    cj = {"spec": {"schedule": "0 9 * * *"}}
    _, in_tokyo = cronjob_schedule(cj, local_zone=load_location("Asia/Tokyo"))
    assert in_tokyo.next(1_700_000_000) == TOKYO_NINE
    _, in_new_york = cronjob_schedule(cj, local_zone=load_location("America/New_York"))
    assert in_new_york.next(1_700_000_000) == 1_700_056_800  # 2023-11-15 09:00 EST = 14:00Z
    assert in_new_york.next(1_720_000_000) == 1_720_011_600  # 2024-07-03 09:00 EDT = 13:00Z
    _, own_zone = cronjob_schedule({"spec": {"schedule": "0 9 * * *", "timeZone": "UTC"}},
                                   local_zone=load_location("Asia/Tokyo"))
    assert own_zone.next(1_700_000_000) == 1_700_038_800  # spec.timeZone wins: 09:00Z


@contextlib.asynccontextmanager
async def serve(app: object) -> AsyncIterator[str]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_level="warning",  # type: ignore[arg-type]
                            loop="asyncio", http="h11", ws="none")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


def kubectl_json(url: str, home: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(["kubectl", "--server", url, *args, "-o", "json"], capture_output=True, text=True,
                          env={"HOME": str(home), "KUBECONFIG": str(home / "none"), "PATH": "/usr/bin:/bin:/usr/local/bin"},
                          check=True, timeout=120)
    result: dict[str, object] = json.loads(done.stdout)
    return result


async def test_with_tz_set_a_cronjob_without_time_zone_runs_at_nine_local_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # the controller manager's zone: UTC+9
    async with open_world(tmp_path, "cronjob") as world:
        await world.create(CRONJOBS, cronjob("morning", "0 9 * * *"))
        await world.advance(6400 - 1)  # 08:59:59 in Tokyo (in UTC it is 23:59:59, nowhere near 09:00)
        assert await job_names(world) == []
        await world.advance(1.2)
        (job,) = await until_jobs(world, f"morning-{TOKYO_NINE // 60}")
        # LoadLocation("") is UTC: the annotation is in UTC, not in the local zone.
        assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2023-11-15T00:00:00Z"
        if shutil.which("kubectl") is None:
            return
        async with serve(world.cluster.app) as url:  # what a real client reads back
            seen = await asyncio.to_thread(kubectl_json, url, tmp_path, "get", "cronjob", "morning", "-n", "ns")
        status = seen["status"]
        assert isinstance(status, dict) and status["lastScheduleTime"] == "2023-11-15T00:00:00Z"


async def test_the_local_zone_is_found_on_first_use_as_gos_time_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Go's time.Local is initialised once, on first use (time/zoneinfo.go: localLoc.get runs initLocal under
    # localOnce), not when the controller is built: kubeloop's controller manager builds its controllers
    # before its first request without loading the zone database. The zone in force at the first schedule
    # counts (the autouse fixture's UTC was the zone when the controller was built).
    async with open_world(tmp_path, "cronjob") as world:
        monkeypatch.setenv("TZ", "Asia/Tokyo")
        await world.create(CRONJOBS, cronjob("morning", "0 9 * * *"))
        await world.advance(6400 - 1)
        assert await job_names(world) == []
        await world.advance(1.2)
        await until_jobs(world, f"morning-{TOKYO_NINE // 60}")
