"""A ``null`` value inside a Secret's ``data`` (or a ConfigMap's ``binaryData``) is read back as ``""``.

Upstream (release 1.32): the JSON decode of ``data: {a: null}`` into ``map[string][]byte`` leaves a nil
slice for ``a`` (``encoding/json`` ``literalStore``; ``sigs.k8s.io/json`` keeps it), which the
``encoding/json`` encoder would write as ``null``; but the object is stored as protobuf and read back from
storage for the answer (etcd3 ``store.go`` ``Create``/``GuaranteedUpdate`` decode what they wrote; a dry
run's ``DryRunnableStorage.copyInto`` encodes and decodes with the storage codec too), and gogo's
``Unmarshal`` of a ``map<string, bytes>`` entry starts its value at ``[]byte{}``: the key stays, its value
``""``. The entry counts for validation as an empty value and the field manager owns its key. Merge and
strategic merge patches read ``null`` as "remove the key"; a JSON patch can put a ``null`` there; a
server-side apply keeps it as the entry's value (structured-merge-diff's merge), which the conversion to
the Go struct makes nil.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx

SECRETS = "/api/v1/namespaces/default/secrets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
X = base64.b64encode(b"x").decode()


def secret(name: str = "s", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


async def test_a_create_with_a_null_data_value_stores_an_empty_value(client: httpx.AsyncClient) -> None:
    for query in ("?dryRun=All", ""):
        r = await client.post(SECRETS + query, json=secret(data={"a": None, "b": X}))
        assert r.status_code == 201, r.text
        assert r.json()["data"] == {"a": "", "b": X}, query
        assert r.json()["metadata"]["managedFields"][0]["fieldsV1"]["f:data"] == {".": {}, "f:a": {}, "f:b": {}}
    assert (await client.get(f"{SECRETS}/s")).json()["data"] == {"a": "", "b": X}
    listed = (await client.get(SECRETS)).json()["items"]
    assert [item["data"] for item in listed] == [{"a": "", "b": X}]


async def test_an_update_with_a_null_data_value_stores_an_empty_value(client: httpx.AsyncClient) -> None:
    stored = (await client.post(SECRETS, json=secret(data={"b": X}))).json()
    r = await client.put(f"{SECRETS}/s", json={**stored, "data": {"b": X, "c": None}})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"b": X, "c": ""}
    assert (await client.get(f"{SECRETS}/s")).json()["data"] == {"b": X, "c": ""}


async def test_each_patch_type_with_a_null_data_value(client: httpx.AsyncClient) -> None:
    await client.post(SECRETS, json=secret(data={"a": X, "b": X, "c": X}))
    # JSON patch: the patched object holds the null, decoded as a nil slice, read back empty.
    r = await client.patch(f"{SECRETS}/s", json=[{"op": "add", "path": "/data/d", "value": None}],
                           headers={"Content-Type": "application/json-patch+json"})
    assert r.status_code == 200 and r.json()["data"] == {"a": X, "b": X, "c": X, "d": ""}, r.text
    # Merge and strategic merge patches: null deletes the key (RFC 7386; strategicpatch).
    r = await client.patch(f"{SECRETS}/s", json={"data": {"a": None}},
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200 and r.json()["data"] == {"b": X, "c": X, "d": ""}, r.text
    r = await client.patch(f"{SECRETS}/s", json={"data": {"b": None}},
                           headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert r.status_code == 200 and r.json()["data"] == {"c": X, "d": ""}, r.text
    assert (await client.get(f"{SECRETS}/s")).json()["data"] == {"c": X, "d": ""}


async def test_a_server_side_apply_with_a_null_data_value_keeps_the_key_empty(client: httpx.AsyncClient) -> None:
    apply = {"Content-Type": "application/apply-patch+yaml"}
    r = await client.patch(f"{SECRETS}/s?fieldManager=applier", json=secret(data={"k": None, "v": X}), headers=apply)
    assert r.status_code == 201, r.text
    assert r.json()["data"] == {"k": "", "v": X}
    entry = r.json()["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"]) == ("applier", "Apply")
    assert entry["fieldsV1"] == {"f:data": {"f:k": {}, "f:v": {}}}
    # Applied again over a stored value: smd's merge takes the applied null, the conversion empties it.
    r = await client.patch(f"{SECRETS}/s?fieldManager=applier", json=secret(data={"k": None, "v": None}),
                           headers=apply)
    assert r.status_code == 200 and r.json()["data"] == {"k": "", "v": ""}, r.text
    assert (await client.get(f"{SECRETS}/s")).json()["data"] == {"k": "", "v": ""}


async def test_a_null_binary_data_value_of_a_configmap_is_read_back_empty(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "binaryData": {"bin": None}}
    r = await client.post(CONFIGMAPS, json=body)
    assert r.status_code == 201 and r.json()["binaryData"] == {"bin": ""}, r.text
    assert (await client.get(f"{CONFIGMAPS}/c")).json()["binaryData"] == {"bin": ""}


async def test_a_null_data_map_leaves_no_data(client: httpx.AsyncClient) -> None:
    r = await client.post(SECRETS, json=secret(data=None))
    assert r.status_code == 201 and "data" not in r.json(), r.text


async def test_an_applied_null_over_another_managers_key_is_a_conflict(client: httpx.AsyncClient) -> None:
    """The applied null stays in the merged object (smd ``ruleKeepRHS``), so it modifies the key: a conflict with
    the manager that owns it unless forced; forced, the key is emptied and changes owner."""
    await client.post(f"{SECRETS}?fieldManager=creator", json=secret(data={"k": X}))
    apply = {"Content-Type": "application/apply-patch+yaml"}
    r = await client.patch(f"{SECRETS}/s?fieldManager=applier", json=secret(data={"k": None}), headers=apply)
    assert r.status_code == 409, r.text
    assert r.json()["message"] == 'Apply failed with 1 conflict: conflict with "creator" using v1: .data.k'
    r = await client.patch(f"{SECRETS}/s?fieldManager=applier&force=true", json=secret(data={"k": None}), headers=apply)
    assert r.status_code == 200 and r.json()["data"] == {"k": ""}, r.text
    owners = {e["manager"]: e["fieldsV1"] for e in r.json()["metadata"]["managedFields"]}
    assert owners["applier"] == {"f:data": {"f:k": {}}} and "f:k" not in owners["creator"].get("f:data", {})
