"""fieldValidation Strict / Warn / Ignore for built-in kinds and custom resources, over HTTP.

Upstream (apimachinery meta/v1 CreateOptions.FieldValidation; apiserver handlers create.go,
update.go, patch.go, rest.go transformDecodeError): unknown fields are always dropped; Strict is a
400 on create/update and a 422 on field ``patch`` for JSON/merge/strategic patches; Warn (also the
default) adds one ``Warning: 299`` header per field; server-side apply rejects undeclared fields.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from kubeloop.server import App

CM = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
BODY = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"1"},"spec":{"foo":1},"data":{"y":"2"}}'


def deployment(name: str, **extra: Any) -> dict[str, Any]:
    labels = {"app": name}
    container: dict[str, Any] = {"name": "c", "image": "nginx", **extra}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}}


def warnings(r: httpx.Response) -> list[str]:
    return r.headers.get_list("warning")


async def test_strict_create_is_400_naming_unknown_and_duplicate_fields(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{CM}?fieldValidation=Strict", content=BODY)
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "BadRequest"
    assert r.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
                                   'duplicate field "data", unknown field "spec"')
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_warn_is_the_default_and_drops_the_unknown_fields(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, content=BODY)
    assert r.status_code == 201, r.text
    assert warnings(r) == ['299 - "duplicate field \\"data\\""', '299 - "unknown field \\"spec\\""']
    stored = (await client.get(f"{CM}/a")).json()
    assert "spec" not in stored
    assert stored["data"] == {"y": "2"}  # the last duplicate wins, as in Go


async def test_ignore_drops_silently(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{CM}?fieldValidation=Ignore", content=BODY)
    assert r.status_code == 201 and warnings(r) == []
    assert "spec" not in (await client.get(f"{CM}/a")).json()


async def test_nested_unknown_fields_are_reported_with_their_paths(client: httpx.AsyncClient) -> None:
    body = deployment("d", bogus=True)
    body["spec"]["surprise"] = {"x": 1}
    r = await client.post(f"{DEPLOY}?fieldValidation=Warn", json=body)
    assert r.status_code == 201, r.text
    assert warnings(r) == ['299 - "unknown field \\"spec.template.spec.containers[0].bogus\\""',
                           '299 - "unknown field \\"spec.surprise\\""']  # document order


async def test_strict_update_is_400(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"}})
    r = await client.put(f"{CM}/u?fieldValidation=Strict",
                         json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"}, "extra": 1})
    assert r.status_code == 400
    assert r.json()["message"].endswith('strict decoding error: unknown field "extra"')


async def test_strict_patch_is_422_on_field_patch(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}})
    for content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        r = await client.patch(f"{CM}/p?fieldValidation=Strict", content=b'{"extra":{"a":1}}',
                               headers={"content-type": content_type})
        assert r.status_code == 422, r.text
        status = r.json()
        cause = status["details"]["causes"][0]
        assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "patch")
        assert status["message"].startswith(' "" is invalid: patch: Invalid value: "{')
        assert status["message"].endswith('strict decoding error: unknown field "extra"')
    r = await client.patch(f"{CM}/p?fieldValidation=Warn", content=b'{"extra":1,"data":{"k":"v"}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200 and warnings(r) == ['299 - "unknown field \\"extra\\""']
    assert "extra" not in r.json() and r.json()["data"] == {"k": "v"}


async def test_server_side_apply_rejects_undeclared_fields(client: httpx.AsyncClient) -> None:
    body = deployment("ssa", bogus=1)
    r = await client.patch(f"{DEPLOY}/ssa?fieldManager=me", content=json.dumps(body),
                           headers={"content-type": "application/apply-patch+yaml"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ('failed to create typed patch object (apps/v1, Kind=Deployment): '
                                   '.spec.template.spec.containers[name="c"].bogus: field not declared in schema')
    assert (await client.get(f"{DEPLOY}/ssa")).status_code == 404


CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]},
}  # fmt: skip


async def establish(app: App, client: httpx.AsyncClient, crd: dict[str, Any] = CRD) -> None:
    r = await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert r.status_code == 201, r.text
    for _ in range(200):
        if app.kinds.get(crd["spec"]["group"], crd["spec"]["versions"][0]["name"], crd["spec"]["names"]["plural"]):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("CRD never served")


async def test_custom_resources_follow_the_same_directives(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "bogus": 1},
              "spec": {"size": 1, "foo": "bar"}}
    r = await client.post(f"{WIDGETS}?fieldValidation=Strict", json=widget)
    assert r.status_code == 400
    assert r.json()["message"] == ('Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
                                   'unknown field "metadata.bogus", unknown field "spec.foo"')
    r = await client.post(WIDGETS, json=widget)
    assert r.status_code == 201
    assert warnings(r) == ['299 - "unknown field \\"metadata.bogus\\""', '299 - "unknown field \\"spec.foo\\""']
    assert r.json()["spec"] == {"size": 1}
    r = await client.patch(f"{WIDGETS}/w?fieldValidation=Strict", content=b'{"spec":{"nope":1}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 422 and r.json()["message"].endswith('unknown field "spec.nope"')


async def test_apply_bodies_in_yaml_and_json_apply_the_same(client: httpx.AsyncClient) -> None:
    # YAML 1.1 (sigs.k8s.io/yaml, as PyYAML) reads the key `on` as a boolean; YAMLToJSON writes it "true".
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  port: '80'\n  on: 'yes'\n"
    json_body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"},"data":{"port":"80","true":"yes"}}'
    headers = {"content-type": "application/apply-patch+yaml"}
    assert (await client.patch(f"{CM}/y?fieldManager=m", content=yaml_body, headers=headers)).status_code == 201
    assert (await client.patch(f"{CM}/j?fieldManager=m", content=json_body, headers=headers)).status_code == 201
    y, j = (await client.get(f"{CM}/y")).json(), (await client.get(f"{CM}/j")).json()
    assert y["data"] == j["data"] == {"port": "80", "true": "yes"}
    assert y["metadata"]["managedFields"][0]["fieldsV1"] == j["metadata"]["managedFields"][0]["fieldsV1"]
    bad = await client.patch(f"{CM}/z?fieldManager=m", content=b"{not: [json", headers=headers)
    assert (bad.status_code, bad.json()["reason"]) == (400, "BadRequest")


async def test_a_compact_update_body_with_a_repeated_nested_key_still_warns(client: httpx.AsyncClient) -> None:
    # Bodies that re-encode to themselves skip the second parse; one with a repeated key never does.
    created = (await client.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}})).json()
    rv = created["metadata"]["resourceVersion"]
    body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","resourceVersion":"' + rv.encode()
            + b'","labels":{"a":"1","a":"1"}},"data":{"k":"v"}}')
    r = await client.put(f"{CM}/d", content=body)
    assert r.status_code == 200, r.text
    assert warnings(r) == ['299 - "duplicate field \\"metadata.labels.a\\""']
    clean = (await client.put(f"{CM}/d", content=json.dumps(r.json(), separators=(",", ":")).encode())).headers
    assert clean.get_list("warning") == []
