"""Below metadata, a built-in object reads back as upstream 1.32's decode, protobuf storage and encode leave it.

An empty list or map decodes into an empty Go slice or map: a field tagged ``omitempty`` is then not
written, at any depth (a container's ``env: []``, a template's ``annotations: {}``, a ConfigMap's
``data: {}``). One without ``omitempty`` is seen by the field manager as sent, and stored as protobuf,
whose generated ``Marshal`` writes no element of an empty slice (``if len(m.Rules) > 0``), so it reads
back nil: ``null`` (a Role's ``rules``, an EndpointSlice's ``endpoints``). Value fields of types with their
own encoding are always written: a zero ``resource.Quantity`` as ``"0"``, a zero ``IntOrString`` as ``0``,
an EndpointSlice endpoint's ``conditions`` struct as ``{}``. On update the field manager diffs the live
object with the new one, so a field changed to its zero value is the writer's change.
Each test cites the k8s.io/api release-1.32 ``types.go`` field tags it relies on.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
DISCOVERY = "/apis/discovery.k8s.io/v1/namespaces/default"


def _entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    (entry,) = [e for e in obj["metadata"].get("managedFields") or [] if e["manager"] == manager]
    fields: dict[str, Any] = entry["fieldsV1"]
    return fields


def _pod(name: str, **container: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx:1", **container}]}}


async def test_empty_omitempty_lists_and_maps_of_a_pod_spec_are_dropped_and_owned_by_nobody(
    client: httpx.AsyncClient,
) -> None:
    # core/v1 Container: Command, Args []string, Ports []ContainerPort, Env []EnvVar, VolumeMounts []VolumeMount
    # all `json:"...,omitempty"`; PodSpec: Volumes, ImagePullSecrets, NodeSelector map[string]string omitempty;
    # ResourceRequirements: Limits, Requests ResourceList omitempty (Resources itself is a value struct).
    body = _pod("empties", command=[], args=[], ports=[], env=[], volumeMounts=[], resources={"limits": {}})
    body["spec"].update(volumes=[], nodeSelector={}, imagePullSecrets=[])
    created = await client.post(f"{NS}/pods", json=body, headers={"user-agent": "writer"})
    assert created.status_code == 201, created.text
    obj = created.json()
    container = obj["spec"]["containers"][0]
    assert not {"command", "args", "ports", "env", "volumeMounts"} & set(container)
    assert container["resources"] == {}
    assert not {"volumes", "nodeSelector", "imagePullSecrets"} & set(obj["spec"])
    owned = _entry(obj, "writer")["f:spec"]
    assert not {"f:volumes", "f:nodeSelector", "f:imagePullSecrets"} & set(owned)
    assert not {"f:command", "f:env", "f:ports"} & set(owned["f:containers"]['k:{"name":"c"}'])
    assert (await client.get(f"{NS}/pods/empties")).json() == obj


async def test_a_pod_template_drops_its_empty_metadata_maps_and_container_lists(client: httpx.AsyncClient) -> None:
    # meta/v1 ObjectMeta: Labels, Annotations map[string]string `json:"...,omitempty"` in a template's
    # ObjectMeta as at the root; core/v1 Container: Env `json:"env,omitempty"`.
    body = {"metadata": {"name": "tmpl"}, "spec": {
        "selector": {"matchLabels": {"app": "tmpl"}},
        "template": {"metadata": {"labels": {"app": "tmpl"}, "annotations": {}},
                     "spec": {"containers": [{"name": "c", "image": "nginx:1", "env": []}]}}}}
    created = await client.post(f"{APPS}/deployments", json=body)
    assert created.status_code == 201, created.text
    template = created.json()["spec"]["template"]
    assert template["metadata"] == {"labels": {"app": "tmpl"}, "creationTimestamp": None}
    assert "env" not in template["spec"]["containers"][0]
    # Sending back what was read, empty maps and all, changes nothing: the same resourceVersion.
    read = created.json()
    read["spec"]["template"]["spec"]["nodeSelector"] = {}
    put = await client.put(f"{APPS}/deployments/tmpl", json=read)
    assert put.status_code == 200, put.text
    assert put.json() == created.json()


async def test_a_configmap_with_empty_data_reads_back_without_it(client: httpx.AsyncClient) -> None:
    # core/v1 ConfigMap: Data map[string]string `json:"data,omitempty"`, BinaryData `json:"binaryData,omitempty"`.
    created = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "e"}, "data": {}, "binaryData": {}})
    assert created.status_code == 201, created.text
    assert not {"data", "binaryData"} & set(created.json())
    # The same with white space inside the braces, as a hand-written body may have it.
    spaced = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {\n }}'
    created = await client.post(f"{NS}/configmaps", content=spaced, headers={"content-type": "application/json"})
    assert created.status_code == 201, created.text
    assert "data" not in created.json()
    assert "data" not in (await client.get(f"{NS}/configmaps/s")).json()


async def test_an_empty_list_without_omitempty_is_owned_by_its_writer_and_reads_back_null(
    client: httpx.AsyncClient,
) -> None:
    # rbac/v1 Role: Rules []PolicyRule `json:"rules"`; discovery/v1 EndpointSlice: Endpoints []Endpoint
    # `json:"endpoints"`, Ports []EndpointPort `json:"ports"`. The field manager sees the decoded empty slice
    # (a change from the empty object's nil one); protobuf storage keeps no element, so it reads back null.
    role = await client.post(f"{RBAC}/roles", json={"metadata": {"name": "r"}, "rules": []},
                             headers={"user-agent": "writer"})
    assert role.status_code == 201, role.text
    assert role.json()["rules"] is None
    assert "f:rules" in _entry(role.json(), "writer")
    assert (await client.get(f"{RBAC}/roles/r")).json() == role.json()
    nulled = await client.post(f"{RBAC}/roles", json={"metadata": {"name": "n"}, "rules": None},
                               headers={"user-agent": "writer"})
    assert nulled.json()["rules"] is None and not nulled.json()["metadata"].get("managedFields")
    eps = await client.post(f"{DISCOVERY}/endpointslices", json={
        "metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": [], "ports": []})
    assert eps.status_code == 201, eps.text
    assert eps.json()["endpoints"] is None and eps.json()["ports"] is None


async def test_an_endpoint_without_conditions_reads_back_its_empty_conditions_struct(client: httpx.AsyncClient) -> None:
    # discovery/v1 Endpoint: Conditions EndpointConditions `json:"conditions,omitempty"` is a value struct
    # (omitempty never drops a struct); its Ready, Serving, Terminating are *bool omitempty.
    eps = await client.post(f"{DISCOVERY}/endpointslices", json={
        "metadata": {"name": "c"}, "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]})
    assert eps.status_code == 201, eps.text
    assert eps.json()["endpoints"] == [{"addresses": ["10.0.0.1"], "conditions": {}}]


async def test_a_resource_field_ref_without_divisor_reads_divisor_zero(client: httpx.AsyncClient) -> None:
    # core/v1 ResourceFieldSelector: Divisor resource.Quantity `json:"divisor,omitempty"`, a value whose zero
    # Quantity.MarshalJSON writes "0"; a null one decodes to that zero. ResourceList's null value is a zero
    # Quantity too.
    env = [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
           {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": None}}},
           {"name": "ONE", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}}]
    created = await client.post(f"{NS}/pods", json=_pod("div", env=env, resources={"limits": {"cpu": None}}))
    assert created.status_code == 201, created.text
    container = created.json()["spec"]["containers"][0]
    assert [e["valueFrom"]["resourceFieldRef"]["divisor"] for e in container["env"]] == ["0", "0", "1m"]
    assert container["resources"]["limits"] == {"cpu": "0"}
    assert (await client.get(f"{NS}/pods/div")).json() == created.json()


async def test_a_null_probe_port_is_the_zero_int_or_string(client: httpx.AsyncClient) -> None:
    # core/v1 HTTPGetAction: Port intstr.IntOrString `json:"port"`, a value: null leaves the zero (Type Int,
    # IntVal 0), which validation then refuses as upstream words it.
    probe = {"httpGet": {"path": "/", "port": None}}
    created = await client.post(f"{NS}/pods", json=_pod("probe", readinessProbe=probe))
    assert created.status_code == 422, created.text
    (cause,) = created.json()["details"]["causes"]
    assert cause == {"reason": "FieldValueInvalid", "field": "spec.containers[0].readinessProbe.httpGet.port",
                     "message": "Invalid value: 0: must be between 1 and 65535, inclusive"}
    assert (await client.get(f"{NS}/pods/probe")).status_code == 404


async def test_patches_that_leave_a_list_or_map_empty_store_none(client: httpx.AsyncClient) -> None:
    # A patched built-in object is decoded (JSON, merge) or converted (strategic) into its Go type: an emptied
    # omitempty map or list (ConfigMap Data, PodSpec NodeSelector, Container Env) is not written.
    await client.post(f"{NS}/configmaps", json={"metadata": {"name": "p"}, "data": {"a": "b"}})
    merge = await client.patch(f"{NS}/configmaps/p", json={"data": {"a": None}},
                               headers={"content-type": "application/merge-patch+json"})
    assert merge.status_code == 200, merge.text
    assert "data" not in merge.json()
    body = {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}},
                     "spec": {"nodeSelector": {"disk": "ssd"},
                              "containers": [{"name": "c", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]}]}}}}
    assert (await client.post(f"{APPS}/deployments", json=body)).status_code == 201
    smp = {"spec": {"template": {"spec": {"nodeSelector": {"disk": None},
                                          "containers": [{"name": "c", "env": [{"name": "A", "$patch": "delete"}]}]}}}}
    strategic = await client.patch(f"{APPS}/deployments/d", content=json.dumps(smp),
                                   headers={"content-type": "application/strategic-merge-patch+json"})
    assert strategic.status_code == 200, strategic.text
    spec = strategic.json()["spec"]["template"]["spec"]
    assert "nodeSelector" not in spec and "env" not in spec["containers"][0]
    ops = [{"op": "add", "path": "/spec/template/spec/tolerations", "value": []}]
    patched = await client.patch(f"{APPS}/deployments/d", content=json.dumps(ops),
                                 headers={"content-type": "application/json-patch+json"})
    assert patched.status_code == 200, patched.text
    assert "tolerations" not in patched.json()["spec"]["template"]["spec"]
    assert patched.json()["metadata"]["resourceVersion"] == strategic.json()["metadata"]["resourceVersion"]


async def test_an_applied_empty_list_or_map_is_not_stored(client: httpx.AsyncClient) -> None:
    # Server-side apply merges the configuration (structuredmerge.go Apply); the merged object is then
    # converted to core/v1 Pod and stored, and Container Env, PodSpec NodeSelector (omitempty) are not written.
    applied = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ssa"},
               "spec": {"containers": [{"name": "c", "image": "nginx:1", "env": []}], "nodeSelector": {}}}
    r = await client.patch(f"{NS}/pods/ssa?fieldManager=tool", content=json.dumps(applied),
                           headers={"content-type": "application/apply-patch+yaml"})
    assert r.status_code == 201, r.text
    obj = r.json()
    assert "env" not in obj["spec"]["containers"][0] and "nodeSelector" not in obj["spec"]
    assert (await client.get(f"{NS}/pods/ssa")).json() == obj


async def test_a_field_changed_to_its_zero_value_is_owned_by_the_writer_that_changed_it(
    client: httpx.AsyncClient,
) -> None:
    # core/v1 Event: ReportingInstance string `json:"reportingInstance"` (no omitempty, always written). The
    # field manager diffs live ("x") against new (""): a modification, the writer's (structured-merge-diff
    # merge/update.go Updater.Update); the first writer loses it.
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "R", "reportingInstance": "x"}
    first = await client.post(f"{NS}/events", json=event, headers={"user-agent": "one"})
    assert first.status_code == 201, first.text
    assert "f:reportingInstance" in _entry(first.json(), "one")
    changed = dict(first.json(), reportingInstance="")
    second = await client.put(f"{NS}/events/e", json=changed, headers={"user-agent": "two"})
    assert second.status_code == 200, second.text
    assert second.json()["reportingInstance"] == ""
    assert "f:reportingInstance" in _entry(second.json(), "two")
    assert "f:reportingInstance" not in _entry(second.json(), "one")
    # Left at its zero by a third writer: no change, the second keeps it and the third records nothing.
    third = await client.put(f"{NS}/events/e", json=dict(second.json(), message="m"), headers={"user-agent": "three"})
    assert third.status_code == 200, third.text
    assert "f:reportingInstance" in _entry(third.json(), "two")
    assert set(_entry(third.json(), "three")) == {"f:message"}


async def test_an_update_that_only_adds_empty_lists_to_an_immutable_template_is_no_change(
    client: httpx.AsyncClient,
) -> None:
    # batch/v1 JobSpec.Template is immutable, compared with apimachinery equality.Semantic.DeepEqual, for which
    # an empty slice or map equals a nil one; core/v1 Container Env, VolumeMounts `json:"...,omitempty"`.
    job = {"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1"}]}}}}
    created = await client.post("/apis/batch/v1/namespaces/default/jobs", json=job)
    assert created.status_code == 201, created.text
    sent = created.json()
    sent["spec"]["template"]["spec"]["containers"][0].update(env=[], volumeMounts=[])
    sent["spec"]["template"]["metadata"]["annotations"] = {}
    put = await client.put("/apis/batch/v1/namespaces/default/jobs/j", json=sent)
    assert put.status_code == 200, put.text
    assert put.json() == created.json()

