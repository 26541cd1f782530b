"""A failed pod of an Indexed Job whose completion index is not below ``completions`` is not counted as a
failure; its tracking finalizer still comes off (fake clock; the test plays the kubelet).

Upstream: k/k ``pkg/controller/job/job_controller.go`` (release 1.32): ``getNewFinishedPods`` keeps only
pods with a valid index (``getValidPodsWithFilter``), and ``trackJobStatusAndRemoveFinalizers`` counts a
failed pod of an Indexed Job only with a valid index while ``canRemoveFinalizer`` lets any failed pod go.
"""

from __future__ import annotations

from pathlib import Path

from kubeloop.api import format_time
from kubeloop.controllers._workload_kinds import JOBS

from ._workload_world import NS, PODS, open_world
from .test_job import FINALIZER, active_pods, wait_job
from .test_job_backoff_per_index import INDEX, indexed


async def test_a_failed_pod_of_an_unknown_index_is_released_but_not_counted(tmp_path: Path) -> None:
    async with open_world(tmp_path, "job") as world:
        created = await world.create(JOBS, indexed(completions=2, parallelism=2))
        await active_pods(world, 2)
        uid = created["metadata"]["uid"]
        # Made Failed before it joins the Job (labels and owner added afterwards), so the controller never
        # sees it active (an active pod of an unknown index would be deleted).
        stray = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "stray", "namespace": NS, "finalizers": [FINALIZER], "annotations": {INDEX: "9"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
        await world.client.create(PODS, stray, namespace=NS)
        now = format_time(world.clock.now())
        await world.client.patch(PODS, "stray", {"status": {"phase": "Failed", "containerStatuses": [{
            "name": "c", "ready": False, "restartCount": 0, "image": "busybox", "imageID": "", "started": False,
            "state": {"terminated": {"exitCode": 1, "startedAt": now, "finishedAt": now, "reason": "Error"}}}]}},
            namespace=NS, subresource="status")
        await world.client.patch(PODS, "stray", {"metadata": {
            "labels": {**created["spec"]["template"]["metadata"]["labels"], INDEX: "9"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": uid,
                                 "controller": True, "blockOwnerDeletion": True}]}}, namespace=NS)

        async def released() -> bool:
            pod = await world.get(PODS, "stray")
            assert not pod["metadata"].get("finalizers"), pod["metadata"]
            return True

        await world.eventually(released, step=0.01)
        await world.settle()
        status = (await wait_job(world, lambda s: s.get("active") == 2))["status"]
        assert "failed" not in status and status["uncountedTerminatedPods"] == {}
