"""Creates refused because the namespace is being deleted: not retried, no ``FailedCreate`` Event.

Upstream (1.32): ``RealPodControl.createPods`` (pkg/controller/controller_utils.go) records no
``FailedCreate`` when ``apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause)``, and the ReplicaSet
(``manageReplicas``), Job (``manageJob``) and CronJob (``syncCronJob``) controllers end the sync without
an error: every later create would fail the same way. The cause is the ``reason`` of a Status cause
(NamespaceLifecycle's 403). The namespace stays Terminating here: no namespace controller runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.controllers._workload_kinds import CRONJOBS, JOBS

from ._workload_world import DEPLOYMENTS, NS, REPLICASETS, World, open_world, template

NAMESPACES = builtin("", "namespaces")


async def _terminate_namespace(world: World) -> None:
    await world.client.delete(NAMESPACES, NS)
    assert (await world.client.get(NAMESPACES, NS))["status"]["phase"] == "Terminating"
    world.ctl.reset()


async def _refused_creates(world: World, resource: str, count: int) -> list[str]:
    async def seen() -> list[str]:
        outcomes = [w.outcome for w in world.ctl.writes if w.verb == "create" and w.resource == resource]
        assert len(outcomes) >= count and world.manager.idle(), outcomes
        return outcomes

    outcomes: list[str] = await world.eventually(seen)
    await world.advance(60)  # a retry with backoff would have run by now (expectations expire after 300 s)
    return outcomes


async def test_a_replicaset_scaled_up_in_a_terminating_namespace_neither_retries_nor_reports(tmp_path: Path) -> None:
    async with open_world(tmp_path, "replicaset") as world:
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template()}}
        await world.create(REPLICASETS, rs)
        await world.eventually(lambda: _pods_are(world, 1))
        await _terminate_namespace(world)
        await world.client.patch(REPLICASETS, "web", {"spec": {"replicas": 3}}, namespace=NS)
        outcomes = await _refused_creates(world, "pods", 2)
        # Both creates of the batch were tried once (manageReplicas keeps going: each returns nil), never again
        # (a status write's 409 may still retry the sync: the expectations hold the creates back).
        assert [w.outcome for w in world.ctl.writes if w.resource == "pods"] == outcomes == ["error:403"] * 2
        assert [w for w in world.ctl.writes if w.resource == "events"] == []
        status = (await world.get(REPLICASETS, "web")).get("status") or {}
        assert not [c for c in status.get("conditions") or () if c.get("type") == "ReplicaFailure"]


async def test_a_deployment_rolled_out_in_a_terminating_namespace_is_not_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # deployment_controller.go handleErr: an error with the NamespaceTerminating cause forgets the key.
    async with open_world(tmp_path, "deployment") as world:
        d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template()}}
        await world.create(DEPLOYMENTS, d)
        await world.eventually(lambda: _replicasets_are(world, 1))
        await _terminate_namespace(world)
        new_template = template(image="nginx:1.27")
        await world.client.patch(DEPLOYMENTS, "web", {"spec": {"template": new_template}}, namespace=NS)
        await _refused_creates(world, "replicasets", 1)

        def tried() -> list[str]:
            return [w.outcome for w in world.ctl.writes if w.verb == "create" and w.resource == "replicasets"]

        # Every sync an event brings tries the create again, as upstream's getNewReplicaSet does; none is a
        # retry of a failed sync: once the events have settled, five more minutes try nothing (a rate-limited
        # retry would come back at 82 s, 164 s, 328 s ... of backoff).
        settled = tried()
        await world.advance(300)
        assert tried() == settled and set(settled) == {"error:403"}
        assert "reconcile of ns/web failed" not in caplog.text


async def test_a_job_resumed_in_a_terminating_namespace_neither_retries_nor_reports(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_world(tmp_path, "job") as world:
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"},
               "spec": {"suspend": True, "parallelism": 2, "completions": 2,
                        "template": {"spec": {"restartPolicy": "Never",
                                              "containers": [{"name": "c", "image": "busybox"}]}}}}
        await world.create(JOBS, job)
        await world.eventually(lambda: _job_synced(world))
        await _terminate_namespace(world)
        await world.client.patch(JOBS, "work", {"spec": {"suspend": False}}, namespace=NS)
        outcomes = await _refused_creates(world, "pods", 2)
        assert outcomes == ["error:403"] * 2
        # One Event was tried (and refused in the namespace): Resumed; none for the refused creates.
        assert len([w for w in world.ctl.writes if w.resource == "events"]) == 1
        assert "event Resumed on ns/work not recorded" in caplog.text
        assert "FailedCreate" not in caplog.text


async def test_a_cronjob_in_a_terminating_namespace_records_no_failed_create(tmp_path: Path) -> None:
    # syncCronJob returns the error (the CronJob is retried), but pod control's rule holds for Jobs too:
    # no FailedCreate Event (which could not be written in the namespace anyway).
    async with open_world(tmp_path, "cronjob") as world:
        cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
              "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                  "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
        await world.create(CRONJOBS, cj)
        await _terminate_namespace(world)
        await world.advance(40.2)  # the fake clock starts at 22:13:20: the first run is 22:14:00
        await _refused_creates(world, "jobs", 1)
        assert {w.outcome for w in world.ctl.writes if w.resource == "jobs"} == {"error:403"}
        assert [w for w in world.ctl.writes if w.resource == "events"] == []


async def _pods_are(world: World, count: int) -> bool:
    return len(await world.pods()) == count


async def _replicasets_are(world: World, count: int) -> bool:
    return len((await world.client.list(REPLICASETS, namespace=NS))["items"]) == count


async def _job_synced(world: World) -> bool:
    job = await world.get(JOBS, "work")
    return bool(world.manager.idle() and job.get("status"))
