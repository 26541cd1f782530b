"""A value scalar with ``omitempty`` at its zero is gone after upstream's Go round trip, and owned by no manager.

kube-apiserver decodes a built-in body into its Go struct: ``hostNetwork: false`` (``HostNetwork bool
`json:"hostNetwork,omitempty"```) is then the struct's zero, which ``encoding/json`` omits and the field
manager's conversion leaves out (apimachinery ``runtime/converter.go`` ``isZero``). A pointer field
(``AllowPrivilegeEscalation *bool``, ``Replicas *int32``) holds an explicit zero as a non-nil pointer: kept, and
owned by its writer. Custom resources decode into unstructured maps and keep what was sent. Each case names its
k8s.io/api ``types.go`` field (table: ``kubeloop/api/_go_pointers.py``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson

NS = "/api/v1/namespaces/default"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def _paths(fields: dict[str, Any], prefix: str = "") -> set[str]:
    """The dotted paths of a fieldsV1 tree (``spec.containers.k:{"name":"c"}.stdin``)."""
    out: set[str] = set()
    for key, sub in fields.items():
        if key == ".":
            continue
        path = f"{prefix}.{key[2:] if key[:2] in ('f:', 'k:') else key}" if prefix else key[2:]
        out.add(path)
        if isinstance(sub, dict):
            out |= _paths(sub, path)
    return out


def _owned(obj: dict[str, Any], manager: str | None = None) -> set[str]:
    return {path for entry in obj["metadata"].get("managedFields") or ()
            if manager is None or entry["manager"] == manager for path in _paths(entry["fieldsV1"])}


def _pod(**spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "stdin": False, "tty": False, "workingDir": "",
                 "terminationMessagePath": "",
                 "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": False, "subPath": ""}],
                 "ports": [{"containerPort": 80, "hostPort": 0, "name": ""}],
                 "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": False, "privileged": False}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "generateName": ""},
            "spec": {"containers": [container], "volumes": [{"name": "v", "emptyDir": {"medium": ""}}],
                     "hostNetwork": False, "hostPID": False, "nodeName": "", "restartPolicy": "",
                     "enableServiceLinks": False, "terminationGracePeriodSeconds": 0, **spec}}


async def test_a_pods_value_zeros_are_gone_and_unowned_and_its_pointer_zeros_kept_and_owned(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post(f"{NS}/pods?fieldManager=writer", json=_pod())
    assert r.status_code == 201, r.text
    pod = r.json()
    spec, container = pod["spec"], pod["spec"]["containers"][0]
    # PodSpec HostNetwork, HostPID bool; NodeName string: values with omitempty.
    assert not {"hostNetwork", "hostPID", "nodeName"} & spec.keys(), spec
    # Container Stdin, TTY bool; WorkingDir string; VolumeMount ReadOnly bool, SubPath string; ContainerPort
    # HostPort int32, Name string; EmptyDirVolumeSource Medium StorageMedium.
    assert not {"stdin", "tty", "workingDir"} & container.keys(), container
    assert container["volumeMounts"] == [{"name": "v", "mountPath": "/v"}]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert spec["volumes"] == [{"name": "v", "emptyDir": {}}]
    assert "generateName" not in pod["metadata"]  # meta/v1 ObjectMeta GenerateName string
    # Pointers keep their zero: SecurityContext *bool, PodSpec EnableServiceLinks *bool,
    # TerminationGracePeriodSeconds *int64.
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "runAsNonRoot": False,
                                            "privileged": False}
    assert spec["enableServiceLinks"] is False and spec["terminationGracePeriodSeconds"] == 0
    # A dropped "" is defaulted as an absent field (SetDefaults_Container: TerminationMessagePath == "";
    # SetDefaults_PodSpec: RestartPolicy == "").
    assert container["terminationMessagePath"] == "/dev/termination-log" and spec["restartPolicy"] == "Always"
    owned = _owned(pod, "writer")
    ctr = 'spec.containers.{"name":"c"}'
    for gone in ("spec.hostNetwork", "spec.hostPID", "spec.nodeName", f"{ctr}.stdin", f"{ctr}.workingDir",
                 'spec.volumes.{"name":"v"}.emptyDir.medium', f'{ctr}.volumeMounts.{{"mountPath":"/v"}}.readOnly',
                 f'{ctr}.volumeMounts.{{"mountPath":"/v"}}.subPath', "metadata.generateName"):
        assert gone not in owned, (gone, sorted(owned))
    # A defaulted field is the writer's (decoding defaults the body before the field manager runs).
    assert {"spec.restartPolicy", f"{ctr}.terminationMessagePath"} <= owned
    for kept in (f"{ctr}.securityContext.allowPrivilegeEscalation", f"{ctr}.securityContext.runAsNonRoot",
                 "spec.enableServiceLinks", "spec.terminationGracePeriodSeconds"):
        assert kept in owned, (kept, sorted(owned))
    assert (await client.get(f"{NS}/pods/p")).json() == pod


def _deployment(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}, **spec}}


async def test_a_deployments_paused_false_and_min_ready_zero_are_gone_and_its_replicas_zero_kept(
    client: httpx.AsyncClient,
) -> None:
    # apps/v1 DeploymentSpec: Paused bool, MinReadySeconds int32 (values, omitempty); Replicas,
    # RevisionHistoryLimit *int32 (pointers).
    body = _deployment(paused=False, minReadySeconds=0, replicas=0, revisionHistoryLimit=0)
    r = await client.post(f"{DEPLOYMENTS}?fieldManager=writer", json=body)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert "paused" not in spec and "minReadySeconds" not in spec, spec
    assert spec["replicas"] == 0 and spec["revisionHistoryLimit"] == 0
    owned = _owned(r.json(), "writer")
    assert "spec.paused" not in owned and "spec.minReadySeconds" not in owned
    assert {"spec.replicas", "spec.revisionHistoryLimit"} <= owned


async def test_an_update_that_sets_a_value_field_to_its_zero_removes_it_and_its_ownership(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post(f"{DEPLOYMENTS}?fieldManager=creator", json=_deployment(paused=True, minReadySeconds=5))
    assert r.status_code == 201, r.text
    live = r.json()
    assert live["spec"]["paused"] is True and "spec.paused" in _owned(live, "creator")
    live["spec"]["paused"] = False
    live["spec"]["minReadySeconds"] = 0
    r = await client.put(f"{DEPLOYMENTS}/d?fieldManager=updater", json=live)
    assert r.status_code == 200, r.text
    updated = r.json()
    assert "paused" not in updated["spec"] and "minReadySeconds" not in updated["spec"], updated["spec"]
    assert not {"spec.paused", "spec.minReadySeconds"} & _owned(updated)
    assert (await client.get(f"{DEPLOYMENTS}/d")).json() == updated


async def test_merge_and_strategic_patches_to_a_value_zero_remove_the_field(client: httpx.AsyncClient) -> None:
    r = await client.post(DEPLOYMENTS, json=_deployment(paused=True))
    assert r.status_code == 201, r.text
    r = await client.patch(f"{DEPLOYMENTS}/d", content=b'{"spec":{"paused":false}}', headers=MERGE)
    assert r.status_code == 200, r.text
    assert "paused" not in r.json()["spec"]
    r = await client.patch(f"{DEPLOYMENTS}/d", content=b'{"spec":{"paused":true}}', headers=STRATEGIC)
    assert r.json()["spec"]["paused"] is True
    patch = b'{"spec":{"paused":false,"template":{"spec":{"containers":[{"name":"c","stdin":false}]}}}}'
    r = await client.patch(f"{DEPLOYMENTS}/d", content=patch, headers=STRATEGIC)
    assert r.status_code == 200, r.text
    assert "paused" not in r.json()["spec"]
    assert r.json()["spec"]["template"]["spec"]["containers"][0].keys() == {
        "name", "image", "resources", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"}
    r = await client.patch(f"{DEPLOYMENTS}/d", content=b'[{"op":"add","path":"/spec/paused","value":false}]',
                           headers={"Content-Type": "application/json-patch+json"})
    assert r.status_code == 200, r.text
    assert "paused" not in r.json()["spec"]


async def test_server_side_apply_of_paused_false_stores_no_paused_and_the_applier_owns_it(
    client: httpx.AsyncClient,
) -> None:
    # The applied configuration's field set is what the applier owns (structured-merge-diff: the
    # config's fields, zeros included); the merged object is then converted into the Go struct, so the
    # stored and returned object has no paused.
    r = await client.patch(f"{DEPLOYMENTS}/d?fieldManager=applier", content=orjson.dumps(_deployment(paused=False)),
                           headers=APPLY)
    assert r.status_code == 201, r.text
    applied = r.json()
    assert "paused" not in applied["spec"], applied["spec"]
    assert "spec.paused" in _owned(applied, "applier")
    assert (await client.get(f"{DEPLOYMENTS}/d")).json() == applied
    # Applying it again is no change; another manager setting it conflicts with the applier, who owns it.
    again = await client.patch(f"{DEPLOYMENTS}/d?fieldManager=applier",
                               content=orjson.dumps(_deployment(paused=False)), headers=APPLY)
    assert again.json()["metadata"]["resourceVersion"] == applied["metadata"]["resourceVersion"]
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"paused": True}}
    r = await client.patch(f"{DEPLOYMENTS}/d?fieldManager=other", content=orjson.dumps(other), headers=APPLY)
    assert r.status_code == 409, r.text
    assert '"applier"' in r.json()["message"] and ".spec.paused" in r.json()["message"], r.json()["message"]


async def test_a_configmaps_immutable_false_is_a_pointer_and_stays(client: httpx.AsyncClient) -> None:
    # core/v1 ConfigMap: Immutable *bool.
    r = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "cm"}, "immutable": False, "data": {}})
    assert r.status_code == 201, r.text
    assert r.json()["immutable"] is False


async def test_a_status_update_drops_zero_counts(client: httpx.AsyncClient) -> None:
    # apps/v1 DeploymentStatus: Replicas, ReadyReplicas ... int32 with omitempty; CollisionCount *int32.
    r = await client.post(DEPLOYMENTS, json=_deployment(replicas=0))
    assert r.status_code == 201, r.text
    live = r.json()
    live["status"] = {"observedGeneration": 1, "replicas": 0, "readyReplicas": 0, "collisionCount": 0}
    r = await client.put(f"{DEPLOYMENTS}/d/status", json=live)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == {"observedGeneration": 1, "collisionCount": 0}


CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "paused": {"type": "boolean"}, "count": {"type": "integer"},
                                   "note": {"type": "string"}}}}}}}]},
}  # fmt: skip


async def test_a_custom_resource_keeps_its_zeros(app: Any, client: httpx.AsyncClient) -> None:
    r = await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRD)
    assert r.status_code == 201, r.text
    for _ in range(10_000):  # the CRD controller serves the kind on its next turns of the loop
        if app.kinds.get("example.com", "v1", "widgets"):
            break
        await asyncio.sleep(0)
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"paused": False, "count": 0, "note": ""}}
    r = await client.post("/apis/example.com/v1/namespaces/default/widgets", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["spec"] == {"paused": False, "count": 0, "note": ""}
