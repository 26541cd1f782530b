"""Warnings recorded before a write fails go out with its error, over HTTP.

Upstream: apiserver ``pkg/endpoints/filters/warning.go`` installs a recorder whose ``AddWarning`` adds the
``Warning`` header to the response writer's headers at once; an error answer (``handlers/responsewriters``
``ErrorNegotiated`` then ``WriteObjectNegotiated``) writes the status after them, so a 4xx or 5xx carries every
warning recorded before it (here: duplicate ownerReferences, fieldValidation=Warn's unknown fields).
"""

from __future__ import annotations

from typing import Any

import httpx

from kubeloop.api import ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, ValidatingPlugin

CM = "/api/v1/namespaces/default/configmaps"
ADVICE = ("API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; "
          "please fix your requests; duplicate UID(s) observed: ")
DUPLICATES = '299 - ".metadata.ownerReferences contains duplicate entries; ' + ADVICE + 'u1"'
UNKNOWN = '299 - "unknown field \\"spec\\""'
MERGE = {"content-type": "application/merge-patch+json"}


def ref(uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}


def configmap(name: str, *, label: str = "ok", refs: list[dict[str, Any]] | None = None,
              **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"tier": label}}
    if refs is not None:
        meta["ownerReferences"] = refs
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}, **extra}


async def test_a_create_refused_by_validation_keeps_its_duplicate_owner_reference_warning(
        client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json=configmap("a", label="not valid!", refs=[ref("u1"), ref("u1")]))
    assert r.status_code == 422, r.text
    assert r.json()["reason"] == "Invalid"
    assert r.headers.get_list("warning") == [DUPLICATES]
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_an_unknown_field_warning_comes_with_the_422(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{CM}?fieldValidation=Warn", json=configmap("a", label="not valid!", spec={}))
    assert r.status_code == 422, r.text
    assert r.headers.get_list("warning") == [UNKNOWN]


async def test_an_update_and_a_patch_refused_keep_their_warnings(client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=configmap("a"))).status_code == 201
    body = configmap("a", label="not valid!", refs=[ref("u1"), ref("u1")], spec={})
    r = await client.put(f"{CM}/a?fieldValidation=Warn", json=body)
    assert r.status_code == 422, r.text
    assert r.headers.get_list("warning") == [UNKNOWN, DUPLICATES]
    r = await client.patch(f"{CM}/a?fieldValidation=Warn", json={"spec": {}, "metadata": {"labels": {"tier": "not valid!"}}}, headers=MERGE)
    assert r.status_code == 422, r.text
    assert r.headers.get_list("warning") == [UNKNOWN]


class Refuse(ValidatingPlugin):
    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return resource.plural == "configmaps"

    def validate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        raise RuntimeError("the plugin broke")


async def test_a_conflict_and_an_internal_error_keep_them_too(app: App, client: httpx.AsyncClient) -> None:
    assert (await client.post(CM, json=configmap("a"))).status_code == 201
    stale = configmap("a", refs=[ref("u1"), ref("u1")])
    stale["metadata"]["resourceVersion"] = "1"
    r = await client.put(f"{CM}/a", json=stale)
    assert r.status_code == 409, r.text
    assert r.headers.get_list("warning") == [DUPLICATES]
    app.admission.append(Refuse())
    r = await client.post(CM, json=configmap("b", refs=[ref("u1"), ref("u1")]))
    assert r.status_code == 500, r.text
    assert r.headers.get_list("warning") == [DUPLICATES]


async def test_an_error_without_warnings_has_no_warning_header(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json=configmap("a", label="not valid!"))
    assert r.status_code == 422
    assert "warning" not in r.headers
