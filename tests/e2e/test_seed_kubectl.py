"""The seed lesson's kubectl commands against ``kubeloop up``, with the simulated kubelet driving every pod.

Partial state during a scale from 5 to 10 shown truthfully (pitfall 2), crash-looping pods never
reported ready or available and ``kubectl rollout status`` never reporting success (pitfall 9),
``rollout restart`` / ``undo``, a StatefulSet's claims bound to provisioned volumes, ``kubectl get
pods`` showing CrashLoopBackOff and restarts, ``kubectl get pdb`` showing disruptions allowed from
real health, and ``kubectl describe`` showing the controllers' Events (a pod's ``Scheduled`` and
``Started`` from the simulated scheduler and kubelet). Waits are bounded (real clock:
a subprocess) and fail with what was last seen; assertions are on outcomes, never on durations.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

pytestmark = pytest.mark.slow

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], what: str, *, timeout: float = 60.0, every: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            result = probe()
        except AssertionError as err:
            result, last = None, err
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:.0f}s; last seen: {last!r}")
        time.sleep(every)


def get_json(kubectl: Any, namespace: str, *what: str) -> dict[str, Any]:
    return json.loads(kubectl("get", *what, "-n", namespace, "-o", "json").stdout)  # type: ignore[no-any-return]


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions") or ())


def create_deployment(kubectl: Any, namespace: str, name: str, replicas: int, tmp_path: Any,
                      annotations: dict[str, str] | None = None) -> None:  # fmt: skip
    if not annotations:
        # What users type first (kubectl sends it as protobuf).
        kubectl("create", "deployment", name, "--image=nginx", f"--replicas={replicas}", "-n", namespace)
        return
    manifest = json.loads(kubectl("create", "deployment", name, "--image=nginx", f"--replicas={replicas}",
                                  "-n", namespace, "--dry-run=client", "-o", "json").stdout)  # fmt: skip
    manifest["spec"]["template"]["metadata"]["annotations"] = annotations
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(manifest))
    kubectl("create", "-f", str(path), "-n", namespace)


def test_create_rollout_scale_restart_undo_with_the_simulated_kubelet(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    create_deployment(kubectl, namespace, "web", 5, tmp_path)
    done = kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in done.stdout
    d = get_json(kubectl, namespace, "deployment/web")
    assert (d["status"]["readyReplicas"], d["status"]["availableReplicas"]) == (5, 5)
    pods = get_json(kubectl, namespace, "pods", "-l", "app=web")["items"]
    assert len(pods) == 5 and all(ready(p) and p["spec"].get("nodeName") for p in pods)

    describe = kubectl("describe", "deployment/web", "-n", namespace).stdout
    wait_for(lambda: "ScalingReplicaSet" in kubectl("describe", "deployment/web", "-n", namespace).stdout,
             f"a ScalingReplicaSet Event on deployment/web:\n{describe}")  # fmt: skip
    # The scheduler's and the kubelet's Events, as upstream's describe lists them.
    pod = pods[0]["metadata"]["name"]

    def pod_events() -> str | None:
        text = str(kubectl("describe", "pod", pod, "-n", namespace).stdout)
        events = text.split("Events:", 1)[-1]
        return text if "Scheduled" in events and "Started" in events else None

    described = wait_for(pod_events, f"Scheduled and Started Events on pod/{pod}")
    assert f"Successfully assigned {namespace}/{pod} to {pods[0]['spec']['nodeName']}" in described
    assert "default-scheduler" in described and "Started container nginx" in described

    kubectl("rollout", "restart", "deployment/web", "-n", namespace)
    kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    d = get_json(kubectl, namespace, "deployment/web")
    assert "kubectl.kubernetes.io/restartedAt" in d["spec"]["template"]["metadata"]["annotations"]
    revisions = [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                 for rs in get_json(kubectl, namespace, "rs", "-l", "app=web")["items"]]  # fmt: skip
    assert sorted(revisions) == ["1", "2"]
    kubectl("rollout", "undo", "deployment/web", "-n", namespace)
    kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    d = get_json(kubectl, namespace, "deployment/web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert "kubectl.kubernetes.io/restartedAt" not in (d["spec"]["template"]["metadata"].get("annotations") or {})
    # Undo brings the first template back on its own ReplicaSet: no third one.
    assert len(get_json(kubectl, namespace, "rs", "-l", "app=web")["items"]) == 2
    history = kubectl("rollout", "history", "deployment/web", "-n", namespace).stdout
    assert "2" in history and "3" in history


def test_scale_from_5_to_10_shows_the_partial_state_truthfully(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    # Every pod takes 4 s to become ready, so the window between spec=10 and world=10 is observable.
    create_deployment(kubectl, namespace, "web", 5, tmp_path, {"kubeloop.dev/ready-delay-seconds": "4"})
    kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    kubectl("scale", "deployment/web", "--replicas=10", "-n", namespace)

    def partial() -> dict[str, Any] | None:
        d = get_json(kubectl, namespace, "deployment/web")
        pods = get_json(kubectl, namespace, "pods", "-l", "app=web")["items"]
        status = d["status"]
        # Honest at every moment: never more ready than the pods (read after the status) show.
        assert status.get("readyReplicas", 0) <= sum(ready(p) for p in pods), (status, len(pods))
        if status.get("observedGeneration") == d["metadata"]["generation"] and status.get("replicas") == 10:
            return d
        return None

    d = wait_for(partial, "status.replicas 10 observed")
    status = d["status"]
    if status.get("availableReplicas", 0) < 10:  # still inside the window: it must say so
        assert status.get("unavailableReplicas", 0) == 10 - status.get("availableReplicas", 0)
        waiting = kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=1s", check=False)
        if "successfully rolled out" in waiting.stdout:
            # Only acceptable if the pods did become available meanwhile.
            assert get_json(kubectl, namespace, "deployment/web")["status"].get("availableReplicas") == 10
    kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    final = get_json(kubectl, namespace, "deployment/web")["status"]
    assert (final["replicas"], final["readyReplicas"], final["availableReplicas"]) == (10, 10, 10)
    assert "unavailableReplicas" not in final


def test_crash_looping_pods_are_never_ready_and_rollout_status_never_succeeds(
    kubectl: Any, namespace: str, tmp_path: Any
) -> None:
    create_deployment(kubectl, namespace, "crash", 3, tmp_path, {"kubeloop.dev/fault": "crash-loop"})
    (tmp_path / "pdb.yaml").write_text(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: crash}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: crash}}}\n"
    )
    kubectl("apply", "-n", namespace, "-f", str(tmp_path / "pdb.yaml"))

    def crash_looping() -> str | None:
        table = kubectl("get", "pods", "-n", namespace, "-l", "app=crash", "--no-headers").stdout
        rows = [line.split() for line in table.splitlines() if line.strip()]
        # NAME READY STATUS RESTARTS AGE
        if len(rows) == 3 and all(r[1] == "0/1" for r in rows) and any(r[2] == "CrashLoopBackOff" for r in rows) \
                and all(int(r[3]) >= 1 for r in rows):  # fmt: skip
            return str(table)
        assert not any(r[1] == "1/1" for r in rows), table
        return None

    wait_for(crash_looping, "pods in CrashLoopBackOff with restarts")
    result = kubectl("rollout", "status", "deployment/crash", "-n", namespace, "--timeout=3s", check=False)
    assert result.returncode != 0 and "successfully rolled out" not in result.stdout, result.stdout
    status = get_json(kubectl, namespace, "deployment/crash")["status"]
    assert not status.get("readyReplicas") and not status.get("availableReplicas"), status
    assert status["unavailableReplicas"] == 3
    available = next(c for c in status["conditions"] if c["type"] == "Available")
    assert available["status"] == "False"

    def budget_row() -> list[str] | None:
        rows = kubectl("get", "pdb", "crash", "-n", namespace, "--no-headers").stdout.split()
        return rows if len(rows) >= 4 and rows[1] == "1" else None  # NAME MIN-AVAILABLE MAX-UNAVAILABLE ALLOWED

    row = wait_for(budget_row, "pdb/crash listed")
    assert row[3] == "0", row  # no pod is healthy: nothing may be disrupted
    pdb = get_json(kubectl, namespace, "pdb/crash")["status"]
    assert (pdb["currentHealthy"], pdb["expectedPods"], pdb["disruptionsAllowed"]) == (0, 3, 0)


def test_budget_allows_disruptions_from_real_health(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    create_deployment(kubectl, namespace, "web", 4, tmp_path)
    kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    # `kubectl create pdb` posts protobuf, which the server does not decode for policy/v1 yet: apply YAML.
    (tmp_path / "pdb.yaml").write_text(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\n"
        "spec: {minAvailable: 2, selector: {matchLabels: {app: web}}}\n"
    )
    kubectl("apply", "-n", namespace, "-f", str(tmp_path / "pdb.yaml"))

    def allowed() -> list[str] | None:
        rows = kubectl("get", "pdb", "web", "-n", namespace, "--no-headers").stdout.split()
        return rows if len(rows) >= 4 and rows[3] == "2" else None

    wait_for(allowed, "pdb/web ALLOWED DISRUPTIONS 2 (4 healthy, 2 required)")


def test_statefulset_claims_bind_to_provisioned_volumes(kubectl: Any, namespace: str, tmp_path: Any) -> None:
    (tmp_path / "db.yaml").write_text("""
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
""")
    kubectl("apply", "-n", namespace, "-f", str(tmp_path / "db.yaml"))
    kubectl("rollout", "status", "statefulset/db", "-n", namespace, "--timeout=60s")
    claims = get_json(kubectl, namespace, "pvc")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1"]
    for claim in claims:
        assert claim["status"]["phase"] == "Bound"
        volume = json.loads(kubectl("get", "pv", claim["spec"]["volumeName"], "-o", "json").stdout)
        assert volume["status"]["phase"] == "Bound"
        assert volume["spec"]["claimRef"]["name"] == claim["metadata"]["name"]
    wait_for(lambda: "create Claim data-db-1 Pod db-1 in StatefulSet db success"
             in kubectl("describe", "statefulset/db", "-n", namespace).stdout, "claim Events on statefulset/db")
