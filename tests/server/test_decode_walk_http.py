"""One walk decodes a built-in body and finds its unknown fields (``kubeloop.api._go_decode.decode``);
what a client sees is what the two walks it replaced gave, over HTTP.

Upstream: ``sigs.k8s.io/json`` decodes the body into its Go struct and, strictly, reports the fields
it drops in the same pass; apiserver ``handlers/rest.go`` ``transformDecodeError`` (create and update:
400), ``handlers/patch.go`` (a type error of the patched object is 422 on field ``patch`` showing the
patched JSON; a strict error is 422 showing it too, its unknown fields still in). The metadata type
check of a request body (422 with a cause per field) still runs where the decode lets something
through that it refuses. A null map value or list item decodes to its element's zero value (a null
label value is ``""``, a null owner reference an empty one that validation refuses), and a null
``apiVersion`` or ``kind`` is the request's.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

CM = "/api/v1/namespaces/default/configmaps"
MERGE = {"content-type": "application/merge-patch+json"}


def _cm(**extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}, **extra}


async def test_a_create_with_unknown_fields_at_every_depth_stores_the_body_without_them(
        client: httpx.AsyncClient) -> None:
    body = _cm(bogus=1)
    body["metadata"]["extra"] = {"x": 1}
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u",
                                            "nope": True}]
    r = await client.post(CM, json=body)
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == [
        '299 - "unknown field \\"metadata.extra\\""',
        '299 - "unknown field \\"metadata.ownerReferences[0].nope\\""',
        '299 - "unknown field \\"bogus\\""',
    ]
    stored = (await client.get(f"{CM}/a")).json()
    assert "bogus" not in stored and "extra" not in stored["metadata"]
    assert stored["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o",
                                                      "uid": "u"}]


@pytest.mark.parametrize(("meta", "stored"), [
    ({"labels": {"app": None}}, {"labels": {"app": ""}}),
    ({"annotations": {"a": None}}, {"annotations": {"a": ""}}),
])
async def test_a_null_metadata_map_value_decodes_to_an_empty_string(
        client: httpx.AsyncClient, meta: dict[str, Any], stored: dict[str, Any]) -> None:
    # encoding/json (sigs.k8s.io/json) leaves a null map value at the element's zero value, "" for
    # map[string]string; an empty label or annotation value is valid (ValidateLabels, ValidateAnnotations).
    body = _cm()
    body["metadata"].update(meta)
    r = await client.post(CM, json=body)
    assert r.status_code == 201, r.text
    got = (await client.get(f"{CM}/a")).json()["metadata"]
    assert {key: got[key] for key in stored} == stored
    body["metadata"]["resourceVersion"] = got["resourceVersion"]
    r = await client.put(f"{CM}/a", json=body)
    assert r.status_code == 200, r.text
    assert {key: r.json()["metadata"][key] for key in stored} == stored


@pytest.mark.parametrize(("meta", "fields"), [
    # A null item is the zero string or struct, which validation then refuses on the list's own path:
    # ValidateFinalizers and validateOwnerReference are called with fldPath, not fldPath.Index(i)
    # (apimachinery pkg/api/validation/objectmeta.go).
    # IsQualifiedName("") reports an empty name part and the regexp it fails, both.
    ({"finalizers": [None]}, ["metadata.finalizers", "metadata.finalizers"]),
    ({"ownerReferences": [None]}, ["metadata.ownerReferences.apiVersion", "metadata.ownerReferences.kind",
                                   "metadata.ownerReferences.name", "metadata.ownerReferences.uid"]),
])
async def test_a_null_metadata_list_item_is_its_zero_and_validation_refuses_it(
        client: httpx.AsyncClient, meta: dict[str, Any], fields: list[str]) -> None:
    body = _cm()
    body["metadata"].update(meta)
    r = await client.post(CM, json=body)
    assert r.status_code == 422, r.text
    assert [c["field"] for c in r.json()["details"]["causes"]] == fields
    assert (await client.get(f"{CM}/a")).status_code == 404
    assert (await client.post(CM, json=_cm())).status_code == 201
    body["metadata"]["resourceVersion"] = (await client.get(f"{CM}/a")).json()["metadata"]["resourceVersion"]
    r = await client.put(f"{CM}/a", json=body)
    assert r.status_code == 422, r.text
    assert [c["field"] for c in r.json()["details"]["causes"]] == fields
    assert "finalizers" not in (await client.get(f"{CM}/a")).json()["metadata"]


@pytest.mark.parametrize("field", ["apiVersion", "kind"])
async def test_a_null_api_version_or_kind_is_the_urls(client: httpx.AsyncClient, field: str) -> None:
    # A null TypeMeta string decodes to "", which the serializer fills from the request's
    # group/version/kind (apimachinery runtime/serializer/json Decode: gvkWithDefaults).
    r = await client.post(CM, json=_cm(**{field: None}))
    assert r.status_code == 201, r.text
    got = (await client.get(f"{CM}/a")).json()
    assert (got["apiVersion"], got["kind"]) == ("v1", "ConfigMap")


async def test_a_strict_merge_patch_with_a_wrong_type_shows_the_patched_object_unknown_fields_and_all(
        client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=_cm())).status_code == 201
    r = await client.patch(f"{CM}/a?fieldValidation=Strict", content=b'{"bogus":1,"data":{"k":true}}', headers=MERGE)
    assert r.status_code == 422, r.text
    message = r.json()["details"]["causes"][0]["message"]
    shown = json.loads(message[len("Invalid value: "):message.index(": json: cannot unmarshal")])
    assert json.loads(shown)["bogus"] == 1
    assert message.endswith(": json: cannot unmarshal bool into Go struct field ConfigMap.data of type string")
    assert (await client.get(f"{CM}/a")).json()["data"] == {"k": "v"}


async def test_a_strict_merge_patch_with_an_unknown_field_shows_it_in_the_patched_object(
        client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=_cm())).status_code == 201
    r = await client.patch(f"{CM}/a?fieldValidation=Strict", content=b'{"bogus":{"x":1},"data":{"k":"w"}}',
                           headers=MERGE)
    assert r.status_code == 422, r.text
    cause = r.json()["details"]["causes"][0]
    assert cause["field"] == "patch"
    assert cause["message"].endswith('": strict decoding error: unknown field "bogus"')
    assert '\\"bogus\\":{\\"x\\":1}' in cause["message"]
    assert (await client.get(f"{CM}/a")).json()["data"] == {"k": "v"}


async def test_a_merge_patch_under_warn_drops_the_unknown_fields_and_names_them(client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=_cm())).status_code == 201
    r = await client.patch(f"{CM}/a", content=b'{"bogus":1,"metadata":{"nope":2},"data":{"k":"w"}}', headers=MERGE)
    assert r.status_code == 200, r.text
    # in the patched object's order: the merge patch adds ``bogus`` after the live object's fields
    assert r.headers.get_list("warning") == ['299 - "unknown field \\"metadata.nope\\""',
                                             '299 - "unknown field \\"bogus\\""']
    stored = (await client.get(f"{CM}/a")).json()
    assert stored["data"] == {"k": "w"} and "bogus" not in stored and "nope" not in stored["metadata"]
