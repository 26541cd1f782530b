"""A built-in object reads back as upstream's Go round trip leaves it: decoded into its struct, encoded back.

A JSON ``null`` leaves a field at its Go zero value, which ``omitempty`` then drops (or which a field
without it shows: ``""``, ``0``, ``null``); a value struct is always written, so a pod template reads
``metadata: {creationTimestamp: null}`` in 1.32 (metav1 ``Time.MarshalJSON``: a zero time is
``null``; kubernetes/kubernetes#130989 stopped writing it in 1.33), a Node's status its ``nodeInfo``
strings and ``daemonEndpoints.kubeletEndpoint.Port: 0``. The field manager compares a create with the
kind's empty object, so along the struct fields from the root none of those values is owned.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from kubeloop.api import ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"


def _fields(obj: dict[str, Any]) -> dict[str, Any]:
    entries = obj["metadata"].get("managedFields") or []
    assert len(entries) <= 1, entries
    return entries[0]["fieldsV1"] if entries else {}


def _deployment(name: str, **container: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "nginx:1", **container}]}}}}


async def test_null_maps_of_a_configmap_are_dropped_and_owned_by_nobody(client: httpx.AsyncClient) -> None:
    # core/v1 ConfigMap: Data map[string]string `json:"data,omitempty"`; ObjectMeta Labels, Annotations omitempty.
    body = {"metadata": {"name": "nulls", "labels": None, "annotations": None, "finalizers": None},
            "data": None, "binaryData": None}
    created = await client.post(f"{NS}/configmaps", json=body)
    assert created.status_code == 201, created.text
    obj = created.json()
    for key in ("data", "binaryData"):
        assert key not in obj
    for key in ("labels", "annotations", "finalizers"):
        assert key not in obj["metadata"]
    assert _fields(obj) == {}
    assert (await client.get(f"{NS}/configmaps/nulls")).json() == obj


async def test_a_null_map_value_or_list_item_is_its_element_zero(client: httpx.AsyncClient) -> None:
    # encoding/json decodes a null map value or slice item into the element's zero value.
    body = _deployment("items", args=["a", None])
    body["metadata"]["labels"] = {"team": None}
    created = await client.post(f"{APPS}/deployments", json=body)
    assert created.status_code == 201, created.text
    obj = created.json()
    assert obj["metadata"]["labels"] == {"team": ""}
    assert obj["spec"]["template"]["spec"]["containers"][0]["args"] == ["a", ""]


async def test_null_fields_of_a_pod_template_are_dropped_before_the_field_manager(client: httpx.AsyncClient) -> None:
    body = _deployment("tmpl", env=None, ports=None, command=None, securityContext=None)
    body["spec"]["template"]["spec"]["volumes"] = None
    created = await client.post(f"{APPS}/deployments", json=body)
    assert created.status_code == 201, created.text
    obj = created.json()
    container = obj["spec"]["template"]["spec"]["containers"][0]
    for key in ("env", "ports", "command", "securityContext"):
        assert key not in container, key
    assert "volumes" not in obj["spec"]["template"]["spec"]
    owned = _fields(obj)["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert not {"f:env", "f:ports", "f:command", "f:securityContext"} & set(owned)


async def test_a_pod_template_reads_creation_timestamp_null_and_nobody_owns_it(client: httpx.AsyncClient) -> None:
    plain = await client.post(f"{APPS}/deployments", json=_deployment("plain"))
    echoed = _deployment("echoed")
    echoed["spec"]["template"]["metadata"]["creationTimestamp"] = None  # what `kubectl get -o yaml` shows
    sent = await client.post(f"{APPS}/deployments", json=echoed)
    for created in (plain, sent):
        assert created.status_code == 201, created.text
        obj = created.json()
        assert obj["spec"]["template"]["metadata"] == {"labels": {"app": obj["metadata"]["name"]},
                                                       "creationTimestamp": None}
        assert "f:creationTimestamp" not in _fields(obj)["f:spec"]["f:template"]["f:metadata"]


async def test_replicaset_and_statefulset_templates_and_claim_templates_carry_the_zero_metadata(
    client: httpx.AsyncClient,
) -> None:
    rs = _deployment("rs")
    created = await client.post(f"{APPS}/replicasets", json=rs)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["template"]["metadata"]["creationTimestamp"] is None
    sts = _deployment("sts")
    sts["spec"]["serviceName"] = "sts"
    sts["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    created = await client.post(f"{APPS}/statefulsets", json=sts)
    assert created.status_code == 201, created.text
    obj = created.json()
    assert obj["spec"]["template"]["metadata"]["creationTimestamp"] is None
    claim = obj["spec"]["volumeClaimTemplates"][0]
    # core/v1 PersistentVolumeClaim: ObjectMeta, Spec and Status are value structs.
    assert claim["metadata"] == {"name": "data", "creationTimestamp": None}
    assert claim["status"] == {"phase": "Pending"}
    assert obj["status"]["replicas"] == 0  # apps/v1 StatefulSetStatus: Replicas int32 `json:"replicas"`
    assert (await client.get(f"{APPS}/statefulsets/sts")).json() == obj


async def test_a_put_of_what_was_read_is_a_no_op(client: httpx.AsyncClient) -> None:
    created = (await client.post(f"{APPS}/deployments", json=_deployment("same"))).json()
    put = await client.put(f"{APPS}/deployments/same", json=created)
    assert put.status_code == 200, put.text
    assert put.json() == created  # same resourceVersion, same managedFields: nothing changed


async def test_a_node_shows_its_zero_node_info_and_daemon_endpoint(client: httpx.AsyncClient) -> None:
    # core/v1 NodeStatus: DaemonEndpoints NodeDaemonEndpoints and NodeInfo NodeSystemInfo are value
    # structs; NodeSystemInfo's strings and DaemonEndpoint.Port (`json:"Port"`) have no omitempty.
    created = await client.post("/api/v1/nodes", json={"metadata": {"name": "n0"}, "status": {"capacity": {"cpu": "1"}}})
    assert created.status_code == 201, created.text
    status = created.json()["status"]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert status["nodeInfo"] == dict.fromkeys(
        ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion", "kubeletVersion",
         "machineID", "operatingSystem", "osImage", "systemUUID"), "")
    assert "f:nodeInfo" not in _fields(created.json()).get("f:status", {})


async def test_a_null_field_without_omitempty_shows_its_zero(client: httpx.AsyncClient) -> None:
    # rbac/v1 Role: Rules `json:"rules"` (nil slice: null); scheduling/v1 PriorityClass: Value int32 `json:"value"`;
    # core/v1 Event: ReportingInstance `json:"reportingInstance"`, Source EventSource (a value struct).
    role = await client.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
                             json={"metadata": {"name": "r"}, "rules": None})
    assert role.status_code == 201, role.text
    assert role.json()["rules"] is None
    pc = await client.post("/apis/scheduling.k8s.io/v1/priorityclasses", json={"metadata": {"name": "pc"}, "value": None})
    assert pc.status_code == 201, pc.text
    assert pc.json()["value"] == 0
    event = await client.post(f"{NS}/events", json={
        "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R",
        "reportingInstance": None, "source": None, "count": None})
    assert event.status_code == 201, event.text
    obj = event.json()
    assert obj["reportingInstance"] == "" and obj["source"] == {} and "count" not in obj
    assert not {"f:reportingInstance", "f:source", "f:count"} & set(_fields(obj))


async def test_a_pod_condition_without_probe_time_reads_last_probe_time_null(client: httpx.AsyncClient) -> None:
    # core/v1 PodCondition: LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`, a value struct.
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    created = (await client.post(f"{NS}/pods", json=pod)).json()
    created["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    updated = await client.put(f"{NS}/pods/p/status", json=created)
    assert updated.status_code == 200, updated.text
    assert updated.json()["status"]["conditions"] == [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z", "lastProbeTime": None}]
    # Inside a list item the writer owns it: the kind's empty object, which the manager compares with,
    # has no conditions (as a kubelet's entry lists f:lastProbeTime for each condition on a real cluster).
    (entry,) = [e for e in updated.json()["metadata"]["managedFields"] if e.get("subresource") == "status"]
    assert "f:lastProbeTime" in entry["fieldsV1"]["f:status"]["f:conditions"]['k:{"type":"Ready"}']


async def test_a_json_patch_that_adds_null_leaves_the_field_out(client: httpx.AsyncClient) -> None:
    await client.post(f"{NS}/configmaps", json={"metadata": {"name": "jp"}, "data": {"a": "b"}})
    patched = await client.patch(f"{NS}/configmaps/jp", content=b'[{"op":"replace","path":"/data","value":null}]',
                                 headers={"content-type": "application/json-patch+json"})
    assert patched.status_code == 200, patched.text
    assert "data" not in patched.json()
    assert "f:data" not in _fields(patched.json())


async def test_a_resource_version_on_create_is_judged_by_the_storage_after_validation(
    client: httpx.AsyncClient,
) -> None:
    # etcd3 store.Create refuses it (storage.ErrResourceVersionSetOnCreate), after admission and validation:
    # an invalid object is a 422 first, and a dry run never reaches the storage.
    bad = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "Bad_Name", "resourceVersion": "12"}})
    assert bad.status_code == 422, bad.text
    dry = await client.post(f"{NS}/configmaps?dryRun=All", json={"metadata": {"name": "dry", "resourceVersion": "12"}})
    assert dry.status_code == 201, dry.text
    assert (await client.get(f"{NS}/configmaps/dry")).status_code == 404
    real = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "real", "resourceVersion": "12"}})
    assert real.status_code == 500 and real.json()["message"] == "resourceVersion should not be set on objects to be created"
    assert (await client.get(f"{NS}/configmaps/real")).status_code == 404
    zero = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "zero", "resourceVersion": "0"}})
    assert zero.status_code == 201, zero.text
    assert zero.json()["metadata"]["resourceVersion"] not in ("0", "12")


class _ResourceVersionClearer(MutatingPlugin):
    """Mutating: clears a ConfigMap's resourceVersion (what the storage would refuse)."""

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return operation == "CREATE" and resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        obj["metadata"].pop("resourceVersion", None)


async def test_mutating_admission_sees_the_resource_version_before_the_storage_does(
    app: App, client: httpx.AsyncClient,
) -> None:
    app.admission.append(_ResourceVersionClearer())
    created = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "cleared", "resourceVersion": "12"}})
    app.admission.pop()
    assert created.status_code == 201, created.text


@pytest.mark.parametrize("patch", [
    ("application/json-patch+json", [{"op": "remove", "path": "/metadata/finalizers/0"}]),
    ("application/merge-patch+json", {"metadata": {"finalizers": [], "labels": {}}}),
    ("application/strategic-merge-patch+json", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x.io/f"]}}),
])
async def test_a_write_that_leaves_a_metadata_collection_empty_stores_none(
        client: httpx.AsyncClient, patch: tuple[str, Any]) -> None:
    # ObjectMeta's finalizers, labels, annotations and ownerReferences are `json:",omitempty"`: the Go
    # round trip never writes an empty one, whichever way the write emptied it.
    body = {"metadata": {"name": "f", "finalizers": ["x.io/f"], "labels": {"a": "b"}}}
    assert (await client.post(f"{NS}/configmaps", json=body)).status_code == 201
    media, doc = patch
    r = await client.patch(f"{NS}/configmaps/f", content=json.dumps(doc), headers={"content-type": media})
    assert r.status_code == 200, r.text
    meta = (await client.get(f"{NS}/configmaps/f")).json()["metadata"]
    assert "finalizers" not in meta
    assert "f:finalizers" not in json.dumps(meta["managedFields"])
    put = {"metadata": {"name": "f", "finalizers": [], "labels": {}, "annotations": {}, "ownerReferences": [],
                        "resourceVersion": meta["resourceVersion"]}}
    r = await client.put(f"{NS}/configmaps/f", json=put)
    assert r.status_code == 200, r.text
    assert not {"finalizers", "labels", "annotations", "ownerReferences"} & set(r.json()["metadata"])
    created = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "g", "labels": {}, "finalizers": []}})
    assert not {"finalizers", "labels"} & set(created.json()["metadata"])
