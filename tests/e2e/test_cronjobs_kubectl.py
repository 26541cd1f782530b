"""kubectl against ``kubeloop up``: ``kubectl create cronjob`` (a protobuf body), ``kubectl get cronjobs``
(printCronJob's columns), ``kubectl create job --from=cronjob/...``, ``kubectl patch`` to suspend, and a
schedule the server refuses with robfig/cron's message. Nothing here waits for a schedule to fire: the
controller's timing is tested on a fake clock (tests/controllers/test_cronjob.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._kubectl import table

pytestmark = pytest.mark.slow


def test_kubectl_creates_lists_instantiates_and_suspends_a_cronjob(kubectl: Any, namespace: str) -> None:
    kubectl("create", "cronjob", "hello", "-n", namespace, "--image=busybox", "--schedule=*/1 * * * *",
            "--", "echo", "hi")
    cj = json.loads(kubectl("get", "cronjob", "hello", "-n", namespace, "-o", "json").stdout)
    spec = cj["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"], spec["suspend"]) == ("*/1 * * * *", "Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    container = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["command"]) == ("busybox", ["echo", "hi"])
    rows = table(kubectl("get", "cronjobs", "-n", namespace).stdout)
    assert rows[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    assert rows[1][:6] == ["hello", "*/1 * * * *", "<none>", "False", "0", "<none>"]
    assert table(kubectl("get", "cj", "-n", namespace, "-o", "name").stdout) == [["cronjob.batch/hello"]]

    kubectl("create", "job", "manual", "-n", namespace, "--from=cronjob/hello")
    job = json.loads(kubectl("get", "job", "manual", "-n", namespace, "-o", "json").stdout)
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    (owner,) = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "CronJob", "hello", cj["metadata"]["uid"], True)
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]

    described = kubectl("describe", "cronjob", "hello", "-n", namespace).stdout
    for line in ("Schedule:                      */1 * * * *", "Concurrency Policy:            Allow",
                 "Suspend:                       False", "Successful Job History Limit:  3"):
        assert line in described, described
    out = kubectl("patch", "cronjob", "hello", "-n", namespace, "-p", '{"spec":{"suspend":true}}').stdout
    assert "cronjob.batch/hello patched" in out
    suspended = json.loads(kubectl("get", "cronjob", "hello", "-n", namespace, "-o", "json").stdout)
    assert (suspended["spec"]["suspend"], suspended["metadata"]["generation"]) == (True, 2)
    rows = table(kubectl("get", "cronjobs", "-n", namespace).stdout)
    assert rows[1][3] == "True"


def test_kubectl_shows_the_schedule_and_time_zone_errors(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    refused = kubectl("create", "cronjob", "bad", "-n", namespace, "--image=busybox", "--schedule=61 * * * *",
                      check=False)
    assert refused.returncode != 0
    assert ('error: failed to create cronjob: CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above '
            "maximum (59): 61") in refused.stderr
    manifest = json.dumps({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tz"},
                           "spec": {"schedule": "0 3 * * *", "timeZone": "Europe/Pariss", "jobTemplate": {"spec": {
                               "template": {"spec": {"restartPolicy": "OnFailure",
                                                     "containers": [{"name": "c", "image": "busybox"}]}}}}}})
    path = tmp_path / "tz.json"
    path.write_text(manifest)
    refused = kubectl("create", "-n", namespace, "-f", str(path), check=False)
    assert refused.returncode != 0
    assert ('The CronJob "tz" is invalid: spec.timeZone: Invalid value: "Europe/Pariss": unknown time zone '
            "Europe/Pariss") in refused.stderr


def test_the_kubernetes_client_reads_and_writes_cronjobs(cluster: Any, namespace: str) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config
    from kubernetes.client.rest import ApiException

    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        batch = k8s.BatchV1Api(api_client)
        pod = k8s.V1PodSpec(restart_policy="Never", containers=[k8s.V1Container(name="c", image="busybox")])
        body = k8s.V1CronJob(metadata=k8s.V1ObjectMeta(name="nightly"), spec=k8s.V1CronJobSpec(
            schedule="@daily", time_zone="Europe/Paris", concurrency_policy="Forbid",
            job_template=k8s.V1JobTemplateSpec(spec=k8s.V1JobSpec(template=k8s.V1PodTemplateSpec(spec=pod)))))
        created = batch.create_namespaced_cron_job(namespace, body)
        assert (created.spec.time_zone, created.spec.suspend, created.spec.failed_jobs_history_limit) == (
            "Europe/Paris", False, 1)
        # The shared cluster's CronJob controller syncs on every update: with lastScheduleTime moved back to
        # January it would run the missed Paris midnight at once and set lastScheduleTime to it (upstream's
        # syncCronJob and mostRecentScheduleTime do the same). Suspended, it leaves the status alone.
        suspended = batch.patch_namespaced_cron_job("nightly", namespace, {"spec": {"suspend": True}})
        assert (suspended.spec.suspend, suspended.metadata.generation) == (True, 2)
        batch.patch_namespaced_cron_job_status("nightly", namespace, {"status": {
            "lastScheduleTime": "2026-01-01T00:00:00Z"}})
        read = batch.read_namespaced_cron_job("nightly", namespace)
        assert read.status.last_schedule_time.isoformat() == "2026-01-01T00:00:00+00:00"
        assert [c.metadata.name for c in batch.list_namespaced_cron_job(namespace).items] == ["nightly"]
        body.metadata.name = "broken"
        body.spec.schedule = "* * *"
        with pytest.raises(ApiException) as refused:
            batch.create_namespaced_cron_job(namespace, body)
        assert refused.value.status == 422
        assert "expected exactly 5 fields, found 3: [* * *]" in refused.value.body
    finally:
        api_client.close()
