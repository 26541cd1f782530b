"""``kubeloop delete`` and deletion protection with real kubectl against ``kubeloop up`` (issue 5 point 5).

The preview of each seed scenario is compared with what the real delete then removed (the GC and the
namespace controller run in ``kubeloop up``'s controller manager). Objects get ownerReferences by hand.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
READY = re.compile(r"kubeloop is ready at (https://\S+)")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    data = tmp_path_factory.mktemp("up")
    proc = subprocess.Popen([sys.executable, "-m", "kubeloop.cli", "up", "--port", "0", "--data-dir", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if READY.search(line):
                break
        else:
            raise AssertionError("kubeloop up did not become ready:\n" + "".join(lines))
        home = tmp_path_factory.mktemp("home")
        environ = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        environ.update(HOME=str(home), KUBECONFIG=str(data / "kubeconfig"), KUBELOOP_PLAN_DIR=str(home / "plans"))
        yield environ
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


def run(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["kubectl", *args[1:]] if args[0] == "kubectl" else [sys.executable, "-m", "kubeloop.cli", *args[1:]]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def apply(env: dict[str, str], *objects: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for obj in objects:
        result = subprocess.run(["kubectl", "create", "-o", "json", "-f", "-"], input=json.dumps(obj), env=env,
                                capture_output=True, text=True, timeout=60, check=True)
        out.append(json.loads(result.stdout))
    return out


def ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "nginx"}]}}


def chain(env: dict[str, str], ns: str) -> None:
    """web -> web-1 -> web-1-0, web-1-1 (ConfigMaps, so no workload controller interferes)."""
    (top,) = apply(env, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": ns}})
    (mid,) = apply(env, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "web-1", "namespace": ns, "ownerReferences": [ref(top)]}})
    apply(env, *({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": f"web-1-{i}", "namespace": ns, "ownerReferences": [ref(mid)]}}
                 for i in range(2)))


def uids(env: dict[str, str], ns: str) -> set[str]:
    got = json.loads(run(env, "kubectl", "get", "cm,ns", "-A", "-o", "json").stdout)
    return {i["metadata"]["uid"] for i in got["items"] if i["metadata"].get("namespace", ns) == ns}


def new_namespace(env: dict[str, str], **annotations: str) -> str:
    ns = f"g-{uuid.uuid4().hex[:8]}"
    apply(env, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "annotations": annotations}})
    return ns


def test_deployment_preview_equals_what_kubectl_delete_removed(env: dict[str, str]) -> None:
    ns = new_namespace(env)
    apply(env, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}})
    deadline = time.monotonic() + 60
    while True:  # the Deployment and ReplicaSet controllers make the chain
        pods = json.loads(run(env, "kubectl", "get", "pods", "-n", ns, "-o", "json").stdout)["items"]
        if len(pods) == 2 and all(p["metadata"].get("ownerReferences") for p in pods):
            break
        assert time.monotonic() < deadline, pods
        time.sleep(0.2)
    preview = json.loads(run(env, "kubeloop", "delete", "deploy/web", "-n", ns, "-o", "json").stdout)
    predicted = {e["ref"]["uid"] for e in preview["deleted"]}
    assert sorted(e["ref"]["kind"] for e in preview["deleted"]) == ["Deployment", "Pod", "Pod", "ReplicaSet"]
    before = everything(env, ns)
    dry = run(env, "kubectl", "delete", "deployment", "web", "-n", ns, "--dry-run=server")
    assert "(server dry run)" in dry.stdout and everything(env, ns) == before
    run(env, "kubectl", "delete", "deployment", "web", "-n", ns)
    deadline = time.monotonic() + 60
    while everything(env, ns) & predicted:
        assert time.monotonic() < deadline, everything(env, ns) & predicted
        time.sleep(0.2)
    assert before - everything(env, ns) == predicted


def everything(env: dict[str, str], ns: str) -> set[str]:
    got = json.loads(run(env, "kubectl", "get", "deploy,rs,pods,cm", "-n", ns, "-o", "json").stdout)
    return {i["metadata"]["uid"] for i in got["items"]}


def test_protected_namespace_needs_a_confirmed_plan(env: dict[str, str]) -> None:
    ns = new_namespace(env, **{"kubeloop.dev/protect": "true"})
    chain(env, ns)
    refused = run(env, "kubectl", "delete", "namespace", ns, "--wait=false", check=False)
    assert refused.returncode != 0
    assert f"kubeloop delete namespace/{ns}" in refused.stderr and "--confirm PLAN" in refused.stderr
    assert "Forbidden" in refused.stderr
    preview = run(env, "kubeloop", "delete", f"namespace/{ns}")
    plan = re.search(r"Plan ([0-9a-f]{16})", preview.stdout)
    assert plan is not None, preview.stdout
    assert "configmap/web-1-0" in preview.stdout and "PROTECTED" in preview.stdout
    predicted = {e["ref"]["uid"] for e in json.loads(
        run(env, "kubeloop", "delete", f"ns/{ns}", "-o", "json").stdout)["deleted"]}
    done = run(env, "kubeloop", "delete", f"ns/{ns}", "--confirm", plan.group(1), "--wait", "--timeout", "90")
    assert f"deleted namespace/{ns}" in done.stdout and "are gone" in done.stdout
    assert not uids(env, ns) & predicted


def test_a_changed_impact_refuses_the_plan_and_shows_what_changed(env: dict[str, str]) -> None:
    ns = new_namespace(env)
    chain(env, ns)
    preview = run(env, "kubeloop", "delete", "configmaps", "web", "-n", ns)
    plan = re.search(r"Plan ([0-9a-f]{16})", preview.stdout)
    assert plan is not None
    rs = json.loads(run(env, "kubectl", "get", "configmap", "web-1", "-n", ns, "-o", "json").stdout)
    apply(env, {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "late", "namespace": ns, "ownerReferences": [ref(rs)]}})
    refused = run(env, "kubeloop", "delete", "cm", "web", "-n", ns, "--confirm", plan.group(1),
                  check=False)
    assert refused.returncode == 1
    assert f"+ deleted: configmap/late -n {ns} (added)" in refused.stdout
    run(env, "kubectl", "get", "configmap", "web", "-n", ns)


def test_unknown_kind_and_bad_target_fail_with_one_line(env: dict[str, str], tmp_path: Path) -> None:
    bad = run(env, "kubeloop", "delete", "gizmo/x", check=False)
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0
    assert 'doesn\'t have a resource type "gizmo"' in bad.stderr
    assert run(env, "kubeloop", "delete", "no-slash", check=False).returncode == 2
