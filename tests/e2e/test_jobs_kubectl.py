"""kubectl against ``kubeloop up``: ``kubectl create job``, ``kubectl get jobs`` and ``kubectl wait
--for=condition=complete`` on a Job whose pods the simulated kubelet runs to completion.

A pod without a fault profile runs forever in the simulation, so a Job made by ``kubectl create job``
stays Running; a Job whose pod template carries ``kubeloop.dev/fault: succeed-after`` completes
(docs/simulation.md).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._kubectl import table

pytestmark = pytest.mark.slow

def simulated_job(name: str, *, outcome: str = "succeed-after", completions: int = 2, parallelism: int = 2,
                  **spec: Any) -> str:
    """A Job manifest whose pods the simulated kubelet ends 1 s after they start: ``succeed-after`` (exit
    0) or ``fail-after`` (exit 1), the pod fault profiles of docs/simulation.md. ``spec`` adds Job fields."""
    code = 0 if outcome == "succeed-after" else 1
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
        "completions": completions, "parallelism": parallelism, **spec, "template": {
            "metadata": {"annotations": {"kubeloop.dev/fault": outcome, "kubeloop.dev/fault-after-seconds": "1"}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", f"exit {code}"]}]}}}})


def _simulated(kubectl: Any) -> bool:
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return any(n["metadata"]["name"] == "kubeloop-node-1" for n in nodes)


def test_kubectl_create_job_gets_a_generated_selector_and_shows_in_get_jobs(kubectl: Any, namespace: str,
                                                                             tmp_path: Any) -> None:
    kubectl("create", "job", "pi", "-n", namespace, "--image=busybox", "--", "sh", "-c", "exit 0")
    job = json.loads(kubectl("get", "job", "pi", "-n", namespace, "-o", "json").stdout)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["job-name"] == "pi"
    assert (job["spec"]["completions"], job["spec"]["backoffLimit"], job["spec"]["completionMode"]) == (1, 6, "NonIndexed")
    rows = table(kubectl("get", "jobs", "-n", namespace).stdout)
    assert rows[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert rows[1][:3] == ["pi", "Running", "0/1"]
    wide = table(kubectl("get", "jobs", "-n", namespace, "-o", "wide").stdout)
    assert wide[0][-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1][-1] == f"batch.kubernetes.io/controller-uid={uid}"
    always = tmp_path / "always.json"
    always.write_text(json.dumps({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "always"},
        "spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "busybox"}]}}}}))
    refused = kubectl("create", "-n", namespace, "-f", str(always), check=False)
    assert refused.returncode != 0
    assert ('The Job "always" is invalid: spec.template.spec.restartPolicy: Required value: '
            'valid values: "OnFailure", "Never"') in refused.stderr


def test_a_job_whose_pods_succeed_completes_and_kubectl_wait_sees_it(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    if not _simulated(kubectl):
        pytest.skip("this build's controller manager does not run the node simulator")
    manifest = tmp_path / "job.json"
    manifest.write_text(simulated_job("done"))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    kubectl("wait", "-n", namespace, "--for=condition=complete", "job/done", "--timeout=60s", timeout=90)
    # Applying the same manifest again changes nothing: the generated selector and labels are the
    # server's, not the manifest's, so neither apply removes them nor trips over the immutable template.
    again = kubectl("apply", "-n", namespace, "-f", str(manifest)).stdout
    assert "job.batch/done unchanged" in again
    kubectl("apply", "--server-side", "-n", namespace, "-f", str(manifest))
    rows = table(kubectl("get", "jobs", "-n", namespace).stdout)
    assert rows[1][:3] == ["done", "Complete", "2/2"]
    job = json.loads(kubectl("get", "job", "done", "-n", namespace, "-o", "json").stdout)
    types = [(c["type"], c["reason"]) for c in job["status"]["conditions"]]
    assert types == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
    assert job["status"]["succeeded"] == 2 and job["status"]["uncountedTerminatedPods"] == {}
    pods = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "job-name=done", "-o", "json").stdout)["items"]
    assert len(pods) == 2 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all(not p["metadata"].get("finalizers") for p in pods)
    described = kubectl("describe", "job", "done", "-n", namespace).stdout
    assert "Completion Mode:  NonIndexed" in described
    assert "0 Active (0 Ready) / 2 Succeeded / 0 Failed" in described
    assert "job-controller" in described and "Job completed" in described
    # Deleting the Job cascades to its pods (ownerReferences, foreground propagation).
    kubectl("delete", "job", "done", "-n", namespace, "--cascade=foreground", "--timeout=60s", timeout=90)
    remaining = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "job-name=done", "-o", "json").stdout)["items"]
    assert remaining == []


def test_ttl_seconds_after_finished_deletes_the_finished_job_and_its_pods(kubectl: Any, namespace: str,
                                                                          tmp_path: Any) -> None:
    if not _simulated(kubectl):
        pytest.skip("this build's controller manager does not run the node simulator")
    manifest = tmp_path / "ttl.json"
    manifest.write_text(simulated_job("brief", ttlSecondsAfterFinished=0))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    kubectl("wait", "-n", namespace, "--for=delete", "job/brief", "--timeout=60s", timeout=90)
    remaining = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "job-name=brief", "-o", "json").stdout)["items"]
    assert remaining == []


def test_an_indexed_job_with_backoff_limit_per_index_retries_each_index_then_fails(kubectl: Any, namespace: str,
                                                                                  tmp_path: Any) -> None:
    """k/k 1.32 pkg/controller/job (indexed_job_utils.go, backoff_utils.go): each index runs twice
    (backoffLimitPerIndex 1, its retry after 10 s), then both are failed indexes: reason FailedIndexes."""
    if not _simulated(kubectl):
        pytest.skip("this build's controller manager does not run the node simulator")
    manifest = tmp_path / "retries.json"
    manifest.write_text(simulated_job("retries", outcome="fail-after", completionMode="Indexed", backoffLimitPerIndex=1))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    kubectl("wait", "-n", namespace, "--for=condition=failed", "job/retries", "--timeout=120s", timeout=150)
    job = json.loads(kubectl("get", "job", "retries", "-n", namespace, "-o", "json").stdout)
    assert job["spec"]["backoffLimit"] == 2147483647
    status = job["status"]
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("FailureTarget", "FailedIndexes", "Job has failed indexes"), ("Failed", "FailedIndexes", "Job has failed indexes")]
    assert (status["failedIndexes"], status["failed"], status["uncountedTerminatedPods"]) == ("0,1", 4, {})
    pods = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "job-name=retries", "-o", "json").stdout)["items"]
    counts = sorted((p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
                     p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"]) for p in pods)
    assert counts == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    assert all(p["status"]["phase"] == "Failed" and not p["metadata"].get("finalizers") for p in pods)
    described = kubectl("describe", "job", "retries", "-n", namespace).stdout
    assert "FailedIndexes" in described and "Job has failed indexes" in described


def test_a_success_policy_completes_an_indexed_job_and_kubectl_wait_sees_it(kubectl: Any, namespace: str,
                                                                           tmp_path: Any) -> None:
    """k/k 1.32 pkg/controller/job/success_policy.go: one succeeded index meets the rule."""
    if not _simulated(kubectl):
        pytest.skip("this build's controller manager does not run the node simulator")
    manifest = tmp_path / "leader.json"
    manifest.write_text(simulated_job("leader", completions=3, parallelism=3, completionMode="Indexed",
                                      successPolicy={"rules": [{"succeededCount": 1}]}))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    kubectl("wait", "-n", namespace, "--for=condition=complete", "job/leader", "--timeout=60s", timeout=90)
    job = json.loads(kubectl("get", "job", "leader", "-n", namespace, "-o", "json").stdout)
    status = job["status"]
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0"),
        ("Complete", "SuccessPolicy", "Matched rules at index 0")]
    # A pod the success policy stops is not counted when the sync that records SuccessCriteriaMet releases
    # it, but upstream counts it failed when a retried sync (the first one's status write refused because
    # its cached Job was stale) finds it already deleted (job_controller.go isPodFailed: a deleted pod that
    # did not succeed counts as failed). What holds: every pod counted once at most, failures only among
    # the pods stopped.
    assert status["succeeded"] >= 1 and status["uncountedTerminatedPods"] == {}
    assert status["succeeded"] + status.get("failed", 0) <= 3, status
    assert status["completionTime"] and status.get("active") is None
    rows = table(kubectl("get", "jobs", "-n", namespace).stdout)
    assert rows[1][:2] == ["leader", "Complete"]
