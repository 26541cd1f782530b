"""A ``[]byte`` field's string that is no standard base64 fails the typed decode, on every write path.

Upstream (release 1.32): Go's ``encoding/json`` decodes a ``[]byte`` with ``base64.StdEncoding.Decode``
(``decode.go`` ``literalStore``), whose ``CorruptInputError`` reads ``illegal base64 data at input byte N``.
A create or update body is then 400 (``handlers/rest.go`` ``transformDecodeError``), a JSON or merge
patch 422 on field ``patch`` (``handlers/patch.go`` ``jsonPatcher``), a strategic merge patch 422 with the
unstructured converter's ``error decoding from json: ...`` (``runtime/converter.go``
``sliceFromUnstructured``), a server-side apply 500 (``structuredmerge.go``: ``failed to convert new
object ... to proper version``). Nothing is stored.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

SECRETS = "/api/v1/namespaces/default/secrets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def status_of(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    return r.status_code, body.get("reason", ""), body["message"]


@pytest.mark.parametrize(("value", "at"), [
    ("abc!", 3),             # outside the alphabet
    ("aGVsbG8", 4),          # padding missing: the short quantum's start
    ("aGVsbG8_", 7),         # the URL-safe alphabet is not the standard one
    ("YQ==YQ==", 4),         # anything after the padding
    ("YQ=", 3),              # one "=" of two
])
async def test_a_secret_whose_data_is_no_base64_is_a_bad_request_and_not_stored(
        client: httpx.AsyncClient, value: str, at: int) -> None:
    r = await client.post(SECRETS, json={"metadata": {"name": "s"}, "data": {"ok": "YQ==", "k": value}})
    assert status_of(r) == (400, "BadRequest",
                            f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte {at}')
    assert (await client.get(f"{SECRETS}/s")).status_code == 404


async def test_line_breaks_inside_base64_are_skipped_as_go_skips_them(client: httpx.AsyncClient) -> None:
    r = await client.post(SECRETS, json={"metadata": {"name": "s"}, "data": {"k": "aGVs\r\nbG8=\n"}})
    assert r.status_code == 201, r.text


async def test_a_configmaps_binary_data_and_a_webhooks_ca_bundle_are_checked_too(client: httpx.AsyncClient) -> None:
    r = await client.post(CONFIGMAPS, json={"metadata": {"name": "c"}, "data": {"t": "not base64 is fine here"},
                                            "binaryData": {"b": "%%%%"}})
    assert status_of(r) == (400, "BadRequest", 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                                               "illegal base64 data at input byte 0")
    assert (await client.get(f"{CONFIGMAPS}/c")).status_code == 404
    webhook = {"metadata": {"name": "w"}, "webhooks": [{
        "name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://example.com/hook", "caBundle": "Zm9v!"}}]}
    r = await client.post(WEBHOOKS, json=webhook)
    assert status_of(r)[:2] == (400, "BadRequest")
    assert status_of(r)[2].endswith("cannot be handled as a ValidatingWebhookConfiguration: "
                                    "illegal base64 data at input byte 4")


async def test_the_first_error_in_document_order_wins(client: httpx.AsyncClient) -> None:
    r = await client.post(SECRETS, json={"metadata": {"name": "s"}, "data": {"k": "!"}, "type": 7})
    assert status_of(r)[2].endswith("illegal base64 data at input byte 0")
    r = await client.post(SECRETS, json={"metadata": {"name": "s"}, "type": 7, "data": {"k": "!"}})
    assert status_of(r)[2].endswith("json: cannot unmarshal number into Go struct field Secret.type of type v1.SecretType")


async def created(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.post(SECRETS, json={"metadata": {"name": "s"}, "data": {"k": "YQ=="}})
    assert r.status_code == 201, r.text
    return dict(r.json())


async def test_an_update_to_bad_base64_changes_nothing(client: httpx.AsyncClient) -> None:
    stored = await created(client)
    r = await client.put(f"{SECRETS}/s", json={**stored, "data": {"k": "YQ"}})
    assert status_of(r) == (400, "BadRequest",
                            'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 0')
    after = (await client.get(f"{SECRETS}/s")).json()
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert after["data"] == {"k": "YQ=="}


async def test_patches_to_bad_base64_fail_as_each_patcher_does(client: httpx.AsyncClient) -> None:
    stored = await created(client)
    bad = "illegal base64 data at input byte 2"
    for media, patch in (("application/merge-patch+json", {"data": {"k": "YQ!="}}),
                         ("application/json-patch+json", [{"op": "replace", "path": "/data/k", "value": "YQ!="}])):
        r = await client.patch(f"{SECRETS}/s", json=patch, headers={"Content-Type": media})
        assert status_of(r)[:2] == (422, "Invalid"), media
        cause = r.json()["details"]["causes"][0]
        assert (cause["field"], cause["reason"]) == ("patch", "FieldValueInvalid")
        assert cause["message"].endswith(f": {bad}") and '\\"YQ!=\\"' in cause["message"]
    r = await client.patch(f"{SECRETS}/s", json={"data": {"k": "YQ!="}},
                           headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert status_of(r)[:2] == (422, "Invalid")
    assert r.json()["details"]["causes"][0]["message"] == (
        f"Invalid value: \"map[data:map[k:YQ!=]]\": error decoding from json: {bad}")
    applied = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
               "data": {"k": "YQ!="}}
    r = await client.patch(f"{SECRETS}/s?fieldManager=applier&force=true", json=applied,
                           headers={"Content-Type": "application/apply-patch+yaml"})  # fmt: skip
    assert status_of(r) == (500, "", "failed to convert new object (default/s; /v1, Kind=Secret) to proper version: "
                                     f"error decoding from json: {bad}")
    after = (await client.get(f"{SECRETS}/s")).json()
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert after["data"] == {"k": "YQ=="}
