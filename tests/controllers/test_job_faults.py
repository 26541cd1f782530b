"""The Job controller under injected write failures: every pod is counted exactly once.

A seeded share of the controller's writes (pod creates, finalizer patches, pod deletes, status
updates) fails with 409 or 500. Upstream's design (k/k ``pkg/controller/job/job_controller.go``: a
finished pod's UID is recorded in ``status.uncountedTerminatedPods`` before its finalizer comes off,
and counted only once it has) keeps ``succeeded`` exact whatever fails in between; the test checks it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.controllers._workload_kinds import JOBS
from kubeloop.testing import RandomFaults

from ._workload_world import open_world
from .test_job import conditions, finish, job, job_pods


async def test_failing_writes_never_lose_or_double_count_a_pod(tmp_path: Path) -> None:
    faults = RandomFaults(0.3, rng=random.Random(11))
    async with open_world(tmp_path, "job", faults=faults) as world:
        await world.create(JOBS, job(completions=5, parallelism=2))

        async def complete() -> dict[str, Any]:
            for pod in await job_pods(world):
                meta = pod["metadata"]
                if not meta.get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
                        "Succeeded", "Failed"):
                    await finish(world, pod, "Succeeded")
            current = await world.get(JOBS, "pi")
            assert ("Complete", "True", "CompletionsReached") in conditions(current.get("status") or {})
            return current

        done = await world.eventually(complete, step=0.05, tries=3000)
        faults.enabled = False
        assert done["status"]["succeeded"] >= 5
        assert done["status"]["uncountedTerminatedPods"] == {}
        pods = await job_pods(world)
        succeeded = [p for p in pods if p["status"].get("phase") == "Succeeded"]
        # Every succeeded pod counted once: the counter is the number of succeeded pods.
        assert done["status"]["succeeded"] == len(succeeded)
        assert faults.rate and world.ctl.count(ok_only=False) > world.ctl.count()  # faults did happen

        async def released() -> bool:
            for pod in await job_pods(world):
                assert not pod["metadata"].get("finalizers"), pod["metadata"]["name"]
            return True

        await world.eventually(released, step=0.05)
