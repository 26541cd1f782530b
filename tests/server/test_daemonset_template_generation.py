"""A DaemonSet's ``deprecated.daemonset.template.generation`` annotation that is no integer, on every write path.

Upstream (release 1.32): k/k ``pkg/apis/apps/v1/conversion.go`` ``Convert_v1_DaemonSet_To_apps_DaemonSet``
parses it with ``strconv.ParseInt(value, 10, 64)`` and fails the conversion otherwise: a create or
update body is 400 (``handlers/rest.go`` ``transformDecodeError``), a JSON or merge patch 422 on field
``patch`` (``jsonPatcher``), a strategic merge patch 500 with the bare error (``smpPatcher``'s
``ConvertToVersion``), a server-side apply 500 ``failed to convert to unversioned`` (``structuredmerge.go``).
A signed integer is taken as the internal ``spec.templateGeneration`` (at least 1 on create).
"""

from __future__ import annotations

from typing import Any

import httpx

from .test_daemonset_api import DS, GEN, created, daemonset

SYNTAX = 'strconv.ParseInt: parsing "abc": invalid syntax'


def annotated(value: str, name: str = "agent") -> dict[str, Any]:
    body = daemonset(name)
    body["metadata"]["annotations"] = {GEN: value}
    return body


def status_of(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    return r.status_code, body.get("reason", ""), body["message"]


async def test_a_create_with_a_generation_that_is_no_integer_is_a_bad_request(client: httpx.AsyncClient) -> None:
    r = await client.post(DS, json=annotated("abc"))
    assert status_of(r) == (400, "BadRequest", f'DaemonSet in version "v1" cannot be handled as a DaemonSet: {SYNTAX}')
    r = await client.post(DS, json=annotated("99999999999999999999"))
    assert status_of(r)[2].endswith('strconv.ParseInt: parsing "99999999999999999999": value out of range')
    r = await client.post(DS, json=annotated('1"\n'))
    assert status_of(r)[2].endswith('strconv.ParseInt: parsing "1\\"\\n": invalid syntax')
    assert (await client.get(f"{DS}/agent")).status_code == 404


async def test_a_signed_integer_is_taken_at_least_one(client: httpx.AsyncClient) -> None:
    assert (await created(client, annotated("+7")))["metadata"]["annotations"][GEN] == "7"
    assert (await created(client, annotated("-3", "other")))["metadata"]["annotations"][GEN] == "1"


async def test_an_update_to_a_generation_that_is_no_integer_changes_nothing(client: httpx.AsyncClient) -> None:
    stored = await created(client, daemonset())
    body = {**stored, "metadata": {**stored["metadata"], "annotations": {GEN: "abc"}}}
    r = await client.put(f"{DS}/agent", json=body)
    assert status_of(r) == (400, "BadRequest", f'DaemonSet in version "v1" cannot be handled as a DaemonSet: {SYNTAX}')
    r = await client.put(f"{DS}/agent/status", json=body)
    assert status_of(r)[:2] == (400, "BadRequest")
    after = (await client.get(f"{DS}/agent")).json()
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert after["metadata"]["annotations"] == {GEN: "1"}


async def test_patches_to_a_generation_that_is_no_integer_fail_as_each_patcher_does(client: httpx.AsyncClient) -> None:
    stored = await created(client, daemonset())
    patch = {"metadata": {"annotations": {GEN: "abc"}}}
    r = await client.patch(f"{DS}/agent", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    code, reason, _ = status_of(r)
    cause = r.json()["details"]["causes"][0]
    assert (code, reason, cause["field"], cause["reason"]) == (422, "Invalid", "patch", "FieldValueInvalid")
    assert cause["message"].endswith(f": {SYNTAX}") and '"abc"' in cause["message"]
    json_patch = [{"op": "replace", "path": f"/metadata/annotations/{GEN.replace('/', '~1')}", "value": "abc"}]
    r = await client.patch(f"{DS}/agent", json=json_patch, headers={"Content-Type": "application/json-patch+json"})
    assert status_of(r)[:2] == (422, "Invalid")
    r = await client.patch(f"{DS}/agent", json=patch, headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert status_of(r) == (500, "", SYNTAX)
    applied = annotated("abc")
    r = await client.patch(f"{DS}/agent?fieldManager=applier&force=true", json=applied,
                           headers={"Content-Type": "application/apply-patch+yaml"})  # fmt: skip
    assert status_of(r) == (
        500, "", f"failed to convert to unversioned (/agent; apps/v1, Kind=DaemonSet): {SYNTAX}")
    after = (await client.get(f"{DS}/agent")).json()
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
