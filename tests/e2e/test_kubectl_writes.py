"""kubectl 1.32 write commands against ``kubeloop up`` (issue 3): create -f, apply (client-side and
server-side), diff, replace, edit, patch, rollout restart, fieldValidation. Each test asserts on what
kubectl printed and on the object the server stored; each uses a fresh kubectl HOME and cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, configmap, crd, deployment, eventually, unique

pytestmark = pytest.mark.slow
GROUP = "writes.issue3.kubeloop.test"


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


@pytest.fixture(scope="module")
def widgets(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The test CRD, created once with ``kubectl create -f`` and established."""
    kc = Kubectl(cluster, tmp_path_factory.mktemp("crd-home"))
    out = kc("create", "-f", kc.write("crd.yaml", crd(GROUP))).stdout
    assert out.strip() == f"customresourcedefinition.apiextensions.k8s.io/widgets.{GROUP} created"
    kc("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=30s")
    yield GROUP


def test_create_from_a_file_stores_builtin_and_custom_objects(kc: Kubectl, namespace: str, widgets: str) -> None:
    path = kc.write("objs.yaml", configmap("from-file", namespace, a="1"),
                    {"apiVersion": f"{widgets}/v1", "kind": "Widget",
                     "metadata": {"name": "w1", "namespace": namespace}, "spec": {"size": "big", "replicas": 2}})
    out = kc("create", "-f", path).stdout.splitlines()
    assert out == ["configmap/from-file created", f"widget.{widgets}/w1 created"]
    stored = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/from-file")
    assert stored["data"] == {"a": "1"}
    assert stored["metadata"]["managedFields"][0]["manager"] == "kubectl-create"
    assert kc.api(f"/apis/{widgets}/v1/namespaces/{namespace}/widgets/w1")["spec"] == {"size": "big", "replicas": 2}


def test_field_validation_strict_refuses_unknown_fields_and_warn_prints_them(
    kc: Kubectl, namespace: str, widgets: str
) -> None:
    bad = configmap("strict", namespace, a="1")
    bad["spec"] = {"foo": 1}
    path = kc.write("bad.yaml", bad)
    strict = kc("create", "-f", path, check=False)
    assert strict.returncode == 1
    assert ('Error from server (BadRequest): error when creating "' + path + '": ConfigMap in version "v1" cannot '
            'be handled as a ConfigMap: strict decoding error: unknown field "spec"') in strict.stderr
    assert kc.api_status(f"/api/v1/namespaces/{namespace}/configmaps/strict") == 404
    warn = kc("create", "-f", path, "--validate=warn")
    assert 'Warning: unknown field "spec"' in warn.stderr
    assert "spec" not in kc.api(f"/api/v1/namespaces/{namespace}/configmaps/strict")
    cr = {"apiVersion": f"{widgets}/v1", "kind": "Widget", "metadata": {"name": "odd", "namespace": namespace},
          "spec": {"size": "s", "shape": "round"}}
    refused = kc("apply", "-f", kc.write("cr.yaml", cr), check=False)
    assert refused.returncode == 1 and 'strict decoding error: unknown field "spec.shape"' in refused.stderr


def test_client_side_apply_creates_updates_and_removes_fields(kc: Kubectl, namespace: str) -> None:
    path = kc.write("cm.yaml", configmap("csa", namespace, a="1", b="2"))
    assert kc("apply", "-f", path).stdout.strip() == "configmap/csa created"
    stored = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/csa")
    last = json.loads(stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["data"] == {"a": "1", "b": "2"}
    kc.write("cm.yaml", configmap("csa", namespace, a="9"))
    assert kc("apply", "-f", path).stdout.strip() == "configmap/csa configured"
    stored = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/csa")
    assert stored["data"] == {"a": "9"}  # b was in last-applied and is gone from the file: removed
    managers = {m["manager"]: m["operation"] for m in stored["metadata"]["managedFields"]}
    assert managers["kubectl-client-side-apply"] == "Update"
    assert kc("apply", "-f", path).stdout.strip() == "configmap/csa unchanged"


def test_client_side_apply_merges_containers_by_name(kc: Kubectl, namespace: str) -> None:
    name = unique("csa-deploy")
    path = kc.write("d.yaml", deployment(name, namespace))
    kc("apply", "-f", path)
    # Someone else adds a sidecar; re-applying a new image must keep it (strategic merge by name).
    kc("patch", "deployment", name, "-n", namespace, "-p",
       '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}')
    kc.write("d.yaml", deployment(name, namespace, image="nginx:1.27"))
    assert kc("apply", "-f", path).stdout.strip() == f"deployment.apps/{name} configured"
    containers = kc.api(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")["spec"]["template"]["spec"]["containers"]
    assert sorted((c["name"], c["image"]) for c in containers) == [("main", "nginx:1.27"), ("side", "busybox")]


def test_server_side_apply_conflicts_force_and_field_managers(kc: Kubectl, namespace: str) -> None:
    name = unique("ssa")
    path = kc.write("d.yaml", deployment(name, namespace, replicas=2))
    assert kc("apply", "--server-side", "-f", path).stdout.strip() == f"deployment.apps/{name} serverside-applied"
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    entry = kc.api(url)["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"]) == ("kubectl", "Apply")
    assert "f:replicas" in entry["fieldsV1"]["f:spec"]

    other = deployment(name, namespace, replicas=5)
    other_path = kc.write("other.yaml", other)
    clash = kc("apply", "--server-side", "--field-manager=ops", "-f", other_path, check=False)
    assert clash.returncode == 1
    assert 'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in clash.stderr
    assert "--force-conflicts" in clash.stderr
    assert kc.api(url)["spec"]["replicas"] == 2

    forced = kc("apply", "--server-side", "--field-manager=ops", "--force-conflicts", "-f", other_path)
    assert forced.stdout.strip() == f"deployment.apps/{name} serverside-applied"
    stored = kc.api(url)
    assert stored["spec"]["replicas"] == 5
    owners = {m["manager"]: m["fieldsV1"] for m in stored["metadata"]["managedFields"]}
    assert "f:replicas" in owners["ops"]["f:spec"]
    assert "f:replicas" not in owners["kubectl"]["f:spec"]  # ownership moved by force


def test_server_side_apply_removes_fields_the_manager_stops_applying(kc: Kubectl, namespace: str) -> None:
    cm = configmap("ssa-prune", namespace, keep="1", drop="2")
    path = kc.write("cm.yaml", cm)
    kc("apply", "--server-side", "-f", path)
    kc.write("cm.yaml", configmap("ssa-prune", namespace, keep="1"))
    kc("apply", "--server-side", "-f", path)
    assert kc.api(f"/api/v1/namespaces/{namespace}/configmaps/ssa-prune")["data"] == {"keep": "1"}


def test_diff_server_side_and_client_side_show_the_change_and_store_nothing(kc: Kubectl, namespace: str) -> None:
    name = unique("diff")
    path = kc.write("d.yaml", deployment(name, namespace))
    kc("apply", "--server-side", "-f", path)
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    before = kc.api(url)["metadata"]["generation"]  # the Deployment controller writes status meanwhile
    same = kc("diff", "--server-side", "-f", path, check=False)
    assert (same.returncode, same.stdout) == (0, "")
    kc.write("d.yaml", deployment(name, namespace, image="nginx:1.27"))
    for args in (("diff", "--server-side", "-f", path), ("diff", "-f", path)):
        changed = kc(*args, check=False)
        assert changed.returncode == 1, changed.stderr
        assert "-      - image: nginx:1.25" in changed.stdout
        assert "+      - image: nginx:1.27" in changed.stdout
    stored = kc.api(url)
    assert stored["metadata"]["generation"] == before
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"


def test_replace_puts_the_whole_object_and_refuses_a_stale_one(kc: Kubectl, namespace: str) -> None:
    kc.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap("rep", namespace, a="1"))
    live = json.loads(kc("get", "configmap", "rep", "-n", namespace, "-o", "json").stdout)
    live["data"] = {"b": "2"}
    path = kc.home / "rep.json"
    path.write_text(json.dumps(live))
    assert kc("replace", "-f", str(path)).stdout.strip() == "configmap/rep replaced"
    stored = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/rep")
    assert stored["data"] == {"b": "2"}
    assert any(m["manager"] == "kubectl-replace" for m in stored["metadata"]["managedFields"])
    stale = kc("replace", "-f", str(path), check=False)  # still carries the old resourceVersion
    assert stale.returncode == 1
    assert ('Operation cannot be fulfilled on configmaps "rep": the object has been modified; please apply your '
            "changes to the latest version and try again") in stale.stderr


def test_replace_with_the_manifest_that_created_a_replicaset_keeps_its_generation(kc: Kubectl, namespace: str) -> None:
    # The body is defaulted as upstream decodes it, before the specs are compared: same spec, same
    # generation. (A ReplicaSet: a Deployment's generation also counts annotations, and its controller
    # adds one the manifest lacks.)
    name = unique("rgen")
    manifest = {**deployment(name, namespace, replicas=0), "kind": "ReplicaSet"}
    path = kc.write("rgen.yaml", manifest)
    kc("create", "-f", path)
    assert kc("replace", "-f", path).stdout.strip() == f"replicaset.apps/{name} replaced"
    stored = kc.api(f"/apis/apps/v1/namespaces/{namespace}/replicasets/{name}")
    assert stored["metadata"]["generation"] == 1
    assert stored["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_edit_applies_what_the_editor_changed(kc: Kubectl, namespace: str, widgets: str) -> None:
    kc.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap("ed", namespace, a="before"))
    editor = kc.home / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/before/after/; s/size: small/size: large/' \"$1\"\n")
    editor.chmod(0o755)
    out = kc("edit", "configmap", "ed", "-n", namespace, env={"EDITOR": str(editor)}).stdout
    assert out.strip() == "configmap/ed edited"
    stored = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/ed")
    assert stored["data"] == {"a": "after"}
    assert any(m["manager"] == "kubectl-edit" for m in stored["metadata"]["managedFields"])
    # Custom resources are edited with a JSON merge patch.
    kc.post(f"/apis/{widgets}/v1/namespaces/{namespace}/widgets",
            {"apiVersion": f"{widgets}/v1", "kind": "Widget", "metadata": {"name": "ew"}, "spec": {"size": "small"}})
    out = kc("edit", f"widgets.{widgets}", "ew", "-n", namespace, env={"EDITOR": str(editor)}).stdout
    assert out.strip() == f"widget.{widgets}/ew edited"
    assert kc.api(f"/apis/{widgets}/v1/namespaces/{namespace}/widgets/ew")["spec"]["size"] == "large"


def test_patch_strategic_merge_json_and_directives(kc: Kubectl, namespace: str) -> None:
    name = unique("patch")
    kc.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment(name, namespace))
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    ns = ["-n", namespace]

    def containers() -> list[tuple[str, str]]:
        return [(c["name"], c["image"]) for c in kc.api(url)["spec"]["template"]["spec"]["containers"]]

    out = kc("patch", "deployment", name, *ns, "-p",
             '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"},'
             '{"name":"main","image":"nginx:2"}]}}}}').stdout
    assert out.strip() == f"deployment.apps/{name} patched"
    assert sorted(containers()) == [("main", "nginx:2"), ("side", "busybox")]
    kc("patch", "deployment", name, *ns, "-p",
       '{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}')
    assert containers() == [("main", "nginx:2")]

    # kubectl says "(no change)" only when the PATCH answer equals its GET; the live Deployment
    # controller writes status until the rollout settles, so wait for steady state (no writes) first.
    def settled() -> bool:
        d = kc.api(url)
        status = d.get("status", {})
        return bool(status.get("observedGeneration") == d["metadata"]["generation"]
                    and status.get("updatedReplicas") == status.get("availableReplicas") == d["spec"]["replicas"]
                    and status.get("replicas") == d["spec"]["replicas"])

    eventually(settled)
    again = kc("patch", "deployment", name, *ns, "-p",
               '{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx:2"}]}}}}')
    assert again.stdout.strip() == f"deployment.apps/{name} patched (no change)"
    kc("patch", "deployment", name, *ns, "--type=merge", "-p", '{"spec":{"replicas":3}}')
    kc("patch", "deployment", name, *ns, "--type=json", "-p",
       '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:3"}]')
    stored = kc.api(url)
    assert stored["spec"]["replicas"] == 3
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:3"
    assert any(m["manager"] == "kubectl-patch" for m in stored["metadata"]["managedFields"])


def test_rollout_restart_stamps_the_pod_template(kc: Kubectl, namespace: str) -> None:
    name = unique("restart")
    kc.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment(name, namespace))
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    generation = kc.api(url)["metadata"]["generation"]
    out = kc("rollout", "restart", f"deployment/{name}", "-n", namespace).stdout
    assert out.strip() == f"deployment.apps/{name} restarted"
    stored = eventually(lambda: kc.api(url))
    assert "kubectl.kubernetes.io/restartedAt" in stored["spec"]["template"]["metadata"]["annotations"]
    assert stored["metadata"]["generation"] == generation + 1
    assert any(m["manager"] == "kubectl-rollout" for m in stored["metadata"]["managedFields"])
