"""A built-in kind's body is decoded into its Go struct: a JSON value of the wrong type for its field
is refused as Go's ``encoding/json`` refuses it, and nothing is written.

Upstream: ``sigs.k8s.io/json`` (a fork of ``encoding/json``; ``decode.go`` ``UnmarshalTypeError``:
``json: cannot unmarshal <value> into Go struct field <Struct>.<dotted path> of type <type>``, the first
mismatch kept, ``saveError``); apiserver ``handlers/rest.go`` ``transformDecodeError`` (create and
update: 400 ``<Kind> in version "v1" cannot be handled as a <Kind>: ...``); ``handlers/patch.go``
(the patched JSON decoded with the same decoder; any error but a strict one is 422 on field ``patch``).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(port: Any, *, replicas: Any = 1) -> dict[str, Any]:
    pod = {"metadata": {"labels": {"app": "a"}},
           "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": port}]}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}}, "template": pod}}


def _cannot(kind: str, err: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal {err}'


async def _refused(client: httpx.AsyncClient, url: str, body: dict[str, Any], message: str) -> None:
    r = await client.post(url, json=body)
    assert r.status_code == 400, r.text
    assert (r.json()["reason"], r.json()["message"]) == ("BadRequest", message)
    assert (await client.get(f"{url}/{body['metadata']['name']}")).status_code == 404


@pytest.mark.parametrize(("body", "err"), [
    ({"data": {"k": True}}, "bool into Go struct field ConfigMap.data of type string"),
    ({"data": {"k": 1}}, "number into Go struct field ConfigMap.data of type string"),
    ({"data": ["k"]}, "array into Go struct field ConfigMap.data of type map[string]string"),
    ({"immutable": "yes"}, "string into Go struct field ConfigMap.immutable of type bool"),
    ({"binaryData": {"k": 1}}, "number into Go struct field ConfigMap.binaryData of type []uint8"),
    ({"labels": {"app": True}}, "bool into Go struct field ObjectMeta.metadata.labels of type string"),
    ({"annotations": {"a": {}}}, "object into Go struct field ObjectMeta.metadata.annotations of type string"),
    ({"finalizers": "x"}, "string into Go struct field ObjectMeta.metadata.finalizers of type []string"),
    ({"finalizers": [1]}, "number into Go struct field ObjectMeta.metadata.finalizers of type string"),
    ({"generateName": 5}, "number into Go struct field ObjectMeta.metadata.generateName of type string"),
    ({"generation": "1"}, "string into Go struct field ObjectMeta.metadata.generation of type int64"),
    ({"ownerReferences": [{"controller": "yes"}]},
     "string into Go struct field OwnerReference.metadata.ownerReferences.controller of type bool"),
    ({"ownerReferences": {}},
     "object into Go struct field ObjectMeta.metadata.ownerReferences of type []v1.OwnerReference"),
])
async def test_a_configmap_field_of_the_wrong_type_is_400(client: httpx.AsyncClient, body: dict[str, Any],
                                                         err: str) -> None:
    meta: dict[str, Any] = {"name": "a"}
    if "data" not in body and "immutable" not in body and "binaryData" not in body:
        meta.update(body)
        body = {}
    await _refused(client, CM, {"metadata": meta, **body}, _cannot("ConfigMap", err))


async def test_a_string_port_names_the_innermost_struct_and_the_path_without_indices(
        client: httpx.AsyncClient) -> None:
    await _refused(client, DEPLOYMENTS, _deployment("80"), _cannot(
        "Deployment", "string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort "
        "of type int32"))


async def test_a_fraction_or_an_overflow_in_an_integer_field_names_the_number(client: httpx.AsyncClient) -> None:
    await _refused(client, DEPLOYMENTS, _deployment(1.5), _cannot(
        "Deployment", "number 1.5 into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort "
        "of type int32"))
    await _refused(client, DEPLOYMENTS, _deployment(80, replicas=2**31), _cannot(
        "Deployment", "number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32"))


async def test_a_struct_or_a_list_of_structs_of_the_wrong_shape_names_its_go_type(client: httpx.AsyncClient) -> None:
    body = _deployment(80)
    body["spec"]["template"]["spec"]["containers"] = {"name": "c"}
    await _refused(client, DEPLOYMENTS, body, _cannot(
        "Deployment", "object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"))
    body = _deployment(80)
    body["spec"]["template"] = "pod"
    await _refused(client, DEPLOYMENTS, body, _cannot(
        "Deployment", "string into Go struct field DeploymentSpec.spec.template of type v1.PodTemplateSpec"))


async def test_the_first_mismatch_in_document_order_is_reported(client: httpx.AsyncClient) -> None:
    body = {"data": {"k": True}, "metadata": {"name": "a", "labels": {"x": 1}}}
    await _refused(client, CM, body, _cannot("ConfigMap", "bool into Go struct field ConfigMap.data of type string"))
    body = {"metadata": {"name": "a", "labels": {"x": 1}}, "data": {"k": True}}
    await _refused(client, CM, body, _cannot(
        "ConfigMap", "number into Go struct field ObjectMeta.metadata.labels of type string"))


async def test_null_decodes_into_any_field(client: httpx.AsyncClient) -> None:
    body = {"metadata": {"name": "a", "labels": None, "finalizers": None}, "data": {"k": None}, "immutable": None}
    assert (await client.post(CM, json=body)).status_code == 201


async def test_int_or_string_and_quantities_keep_their_own_decoding(client: httpx.AsyncClient) -> None:
    body = _deployment("http")  # containerPort is an int32, whatever a named port would be elsewhere
    body["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}
    body["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 80
    assert (await client.post(DEPLOYMENTS, json=body)).status_code == 201, "IntOrString takes a string or an int"
    body["metadata"]["name"] = "e"
    body["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = True
    await _refused(client, DEPLOYMENTS, body, _cannot(
        "Deployment", "bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge "
        "of type int32"))


async def test_a_wrong_type_is_refused_before_strict_unknown_fields(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{CM}?fieldValidation=Strict", json={"metadata": {"name": "a"}, "bogus": 1,
                                                                 "data": {"k": False}})
    assert r.status_code == 400
    assert r.json()["message"] == _cannot("ConfigMap", "bool into Go struct field ConfigMap.data of type string")


async def test_an_update_with_a_wrong_type_is_400_and_changes_nothing(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "v"}})).json()
    created["data"] = {"k": 7}
    r = await client.put(f"{CM}/a", json=created)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot("ConfigMap", "number into Go struct field ConfigMap.data of type string")
    assert (await client.get(f"{CM}/a")).json()["data"] == {"k": "v"}


async def test_a_merge_patch_that_makes_a_wrong_type_is_422_on_field_patch(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "v"}})
    r = await client.patch(f"{CM}/a", content=b'{"data":{"k":true}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 422, r.text
    cause = r.json()["details"]["causes"][0]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(": json: cannot unmarshal bool into Go struct field ConfigMap.data of type string")
    assert (await client.get(f"{CM}/a")).json()["data"] == {"k": "v"}


@pytest.mark.parametrize(("patch", "err"), [
    # apimachinery runtime/converter.go fromUnstructured: the strategic merge patch's result is a map,
    # converted into the Go struct rather than decoded from JSON.
    (b'{"data":{"k":true}}', "unrecognized type: string"),
    (b'{"data":{"k":7}}', "cannot convert int64 to string"),
    (b'{"data":["k"]}', "cannot restore map from slice"),
    (b'{"metadata":{"finalizers":"x"}}', "cannot restore slice from string"),
    (b'{"immutable":"yes"}', "unrecognized type: bool"),
])
async def test_a_strategic_merge_patch_that_makes_a_wrong_type_is_422_with_the_converters_message(
        client: httpx.AsyncClient, patch: bytes, err: str) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "v"}})
    r = await client.patch(f"{CM}/a", content=patch, headers={"content-type": "application/strategic-merge-patch+json"})
    assert r.status_code == 422, r.text
    cause = r.json()["details"]["causes"][0]
    assert cause["field"] == "patch"
    assert cause["message"].startswith('Invalid value: "map[') and cause["message"].endswith(f": {err}")
    assert (await client.get(f"{CM}/a")).json()["data"] == {"k": "v"}


async def test_a_strategic_merge_patch_of_a_port_names_the_conversion(client: httpx.AsyncClient) -> None:
    assert (await client.post(DEPLOYMENTS, json=_deployment(80))).status_code == 201
    patch = b'{"spec":{"template":{"spec":{"containers":[{"name":"c","ports":[{"containerPort":"80"}]}]}}}}'
    r = await client.patch(f"{DEPLOYMENTS}/d", content=patch,
                           headers={"content-type": "application/strategic-merge-patch+json"})
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["message"].endswith(": unrecognized type: int32")
    patch = b'{"spec":{"replicas":1.5}}'
    r = await client.patch(f"{DEPLOYMENTS}/d", content=patch,
                           headers={"content-type": "application/strategic-merge-patch+json"})
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["message"].endswith(": cannot convert float64 to int32")


async def test_a_json_patch_shows_the_patched_object(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "v"}})
    r = await client.patch(f"{CM}/a", content=b'[{"op":"replace","path":"/data/k","value":1}]',
                           headers={"content-type": "application/json-patch+json"})
    assert r.status_code == 422, r.text
    message = r.json()["details"]["causes"][0]["message"]
    assert message.startswith('Invalid value: "{') and '\\"data\\":{\\"k\\":1}' in message
    assert message.endswith(": json: cannot unmarshal number into Go struct field ConfigMap.data of type string")


async def test_a_custom_resource_keeps_its_schema_validation(client: httpx.AsyncClient) -> None:
    # Custom resources decode into unstructured maps: ObjectMeta's types are checked as before (422).
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    assert (await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)).status_code == 201
    r = await client.post("/apis/example.com/v1/namespaces/default/widgets",
                          json={"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "w", "labels": {"a": True}}})
    assert r.status_code == 422, r.text
