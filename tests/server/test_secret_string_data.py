"""A Secret's ``stringData`` is folded into ``data`` on every write path, and never stored or answered.

Upstream (release 1.32): k/k ``pkg/apis/core/v1/conversion.go`` ``Convert_v1_Secret_To_core_Secret`` copies
each ``stringData`` entry into ``data`` ("StringData overwrites Data"); the internal Secret has no
``stringData``. The create handler's field manager runs on the decoded (converted) object
(``handlers/create.go`` ``UpdateNoErrors``), so the entry owns ``f:data`` keys. Patches and server-side
apply decode or convert their result the same way (``handlers/patch.go``, ``structuredmerge.go``).
"""

from __future__ import annotations

import base64
from typing import Any

import httpx

SECRETS = "/api/v1/namespaces/default/secrets"
KUBECTL = {"user-agent": "kubectl/v1.32.0 (linux/amd64)"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(name: str = "s", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


async def test_a_create_with_string_data_stores_it_base64_in_data_and_string_data_wins(
        client: httpx.AsyncClient) -> None:
    body = secret(data={"b": b64("from data"), "a": b64("old")}, stringData={"a": "héllo", "c": ""}, type="Opaque")
    r = await client.post(SECRETS, json=body, headers=KUBECTL)
    assert r.status_code == 201, r.text
    for answered in (r.json(), (await client.get(f"{SECRETS}/s")).json()):
        assert "stringData" not in answered
        assert answered["data"] == {"a": b64("héllo"), "b": b64("from data"), "c": ""}
        assert list(answered["data"]) == ["a", "b", "c"], "Go writes a map's keys in order"
    entry = r.json()["metadata"]["managedFields"][0]
    assert entry["manager"] == "kubectl" and entry["operation"] == "Update"
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}, "f:c": {}}, "f:type": {}}


async def test_empty_or_null_string_data_is_dropped_and_a_null_value_is_empty(client: httpx.AsyncClient) -> None:
    r = await client.post(SECRETS, json=secret("e", data={"k": b64("v")}, stringData={}))
    assert r.status_code == 201 and r.json()["data"] == {"k": b64("v")} and "stringData" not in r.json()
    r = await client.post(SECRETS, json=secret("n", stringData={"k": None}))
    assert r.status_code == 201 and r.json()["data"] == {"k": ""}
    entry = r.json()["metadata"]["managedFields"][0]
    assert "f:stringData" not in entry["fieldsV1"] and entry["fieldsV1"]["f:data"] == {".": {}, "f:k": {}}


async def test_a_dry_run_create_answers_the_folded_secret_and_stores_nothing(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{SECRETS}?dryRun=All", json=secret(stringData={"k": "v"}))
    assert r.status_code == 201 and r.json()["data"] == {"k": b64("v")} and "stringData" not in r.json()
    assert (await client.get(f"{SECRETS}/s")).status_code == 404


async def test_an_update_with_string_data_folds_it(client: httpx.AsyncClient) -> None:
    stored = (await client.post(SECRETS, json=secret(data={"k": b64("v")}))).json()
    body = {**stored, "stringData": {"k": "new", "x": "y"}}
    r = await client.put(f"{SECRETS}/s", json=body)
    assert r.status_code == 200, r.text
    after = (await client.get(f"{SECRETS}/s")).json()
    assert after["data"] == {"k": b64("new"), "x": b64("y")} and "stringData" not in after
    assert r.json()["data"] == after["data"]


async def test_every_patch_type_folds_string_data(client: httpx.AsyncClient) -> None:
    await client.post(SECRETS, json=secret(data={"k": b64("v")}))
    patches = [
        ("application/merge-patch+json", {"stringData": {"m": "merge"}}, "m", "merge"),
        ("application/strategic-merge-patch+json", {"stringData": {"s": "strategic"}}, "s", "strategic"),
        ("application/json-patch+json", [{"op": "add", "path": "/stringData", "value": {"j": "json"}}], "j", "json"),
    ]
    for media, patch, key, value in patches:
        r = await client.patch(f"{SECRETS}/s", json=patch, headers={"Content-Type": media})
        assert r.status_code == 200, (media, r.text)
        assert "stringData" not in r.json() and r.json()["data"][key] == b64(value)
    after = (await client.get(f"{SECRETS}/s")).json()
    assert after["data"] == {"j": b64("json"), "k": b64("v"), "m": b64("merge"), "s": b64("strategic")}
    assert "stringData" not in after


async def test_a_server_side_apply_with_string_data_stores_data_only(client: httpx.AsyncClient) -> None:
    applied = secret("a", stringData={"password": "p4ss"})
    r = await client.patch(f"{SECRETS}/a?fieldManager=applier", json=applied,
                           headers={"Content-Type": "application/apply-patch+yaml"})
    assert r.status_code == 201, r.text
    after = (await client.get(f"{SECRETS}/a")).json()
    assert after["data"] == {"password": b64("p4ss")} and "stringData" not in after
    r = await client.patch(f"{SECRETS}/a?fieldManager=applier&dryRun=All", json=secret("a", stringData={"password": "x"}),
                           headers={"Content-Type": "application/apply-patch+yaml"})  # fmt: skip
    assert r.status_code == 200 and r.json()["data"] == {"password": b64("x")} and "stringData" not in r.json()
    assert (await client.get(f"{SECRETS}/a")).json()["data"] == {"password": b64("p4ss")}


async def test_a_server_side_apply_of_string_data_owns_f_string_data_not_f_data(client: httpx.AsyncClient) -> None:
    """The apply's field set is the applied configuration's (structured-merge-diff ``Updater.Apply``:
    ``configObject.ToFieldSet()``), computed before the merged object is converted to the internal Secret
    (managedfields ``structuredmerge.go`` ``Apply``: ``TypedToObject`` then ``toUnversioned``, where
    ``Convert_v1_Secret_To_core_Secret`` folds stringData): the applier owns ``f:stringData`` keys. So a key
    left out of a later apply is pruned from ``stringData`` (which holds nothing) and stays in ``data``
    (kubernetes/kubernetes#108008, a known upstream behaviour)."""
    apply = {"Content-Type": "application/apply-patch+yaml"}
    r = await client.patch(f"{SECRETS}/a?fieldManager=applier", headers=apply,
                           json=secret("a", stringData={"password": "p4ss", "user": "admin"}))
    assert r.status_code == 201, r.text
    entry = r.json()["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"]) == ("applier", "Apply")
    assert entry["fieldsV1"] == {"f:stringData": {"f:password": {}, "f:user": {}}}
    assert r.json()["data"] == {"password": b64("p4ss"), "user": b64("admin")}
    r = await client.patch(f"{SECRETS}/a?fieldManager=applier", headers=apply,
                           json=secret("a", stringData={"password": "p4ss"}))
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["managedFields"][0]["fieldsV1"] == {"f:stringData": {"f:password": {}}}
    after = (await client.get(f"{SECRETS}/a")).json()
    assert after["data"] == {"password": b64("p4ss"), "user": b64("admin")} and "stringData" not in after
    # Another manager's data key is no field of the applier's: overwriting it through stringData is no conflict.
    await client.patch(f"{SECRETS}/a?fieldManager=editor", json={"data": {"token": b64("t")}},
                       headers={"Content-Type": "application/merge-patch+json"})
    r = await client.patch(f"{SECRETS}/a?fieldManager=applier", headers=apply,
                           json=secret("a", stringData={"password": "p4ss", "token": "new"}))
    assert r.status_code == 200, r.text
    assert r.json()["data"]["token"] == b64("new")
    owners = {e["manager"]: e["fieldsV1"] for e in r.json()["metadata"]["managedFields"]}
    assert owners["editor"] == {"f:data": {"f:token": {}}}
    assert owners["applier"] == {"f:stringData": {"f:password": {}, "f:token": {}}}
