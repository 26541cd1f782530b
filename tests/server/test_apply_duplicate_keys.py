"""Repeated keys in keyed lists under server-side apply, as kube-apiserver 1.32 (structured-merge-diff v4.4).

Upstream: apiserver ``managedfields/internal/structuredmerge.go`` Apply types the applied configuration
without ``typed.AllowDuplicates`` ("Don't allow duplicates in the applied object": ``failed to create
typed patch object (<ns>/<name>; <gvk>): <path>: duplicate entries for key [...]``, an error that is
no API status, so a 500) and the live object with it. For the live object's repeats, smd v4.4
(kubernetes-sigs/structured-merge-diff #249, #251, #253, #254; kubernetes/kubernetes #121575, whose
release note this file follows): a create or update may write them and its manager owns the key as
one atomic leaf; an apply that leaves the key alone keeps every copy as it is; one that applies the key
replaces them all with its single item (de-duplicating conflicts with the key's owner).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def deployment(name: str = "d", *, containers: list[dict[str, Any]] | None = None,
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"metadata": {"labels": {"app": name}}}
    if annotations:
        template["metadata"]["annotations"] = annotations
    if containers is not None:
        template["spec"] = {"containers": containers}
    spec: dict[str, Any] = {"template": template}
    if containers is not None:
        spec["selector"] = {"matchLabels": {"app": name}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def container(*, env: list[dict[str, Any]] | None = None, ports: list[dict[str, Any]] | None = None,
              name: str = "c") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "nginx"}
    if env is not None:
        out["env"] = env
    if ports is not None:
        out["ports"] = ports
    return out


def env(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value}


async def apply(client: httpx.AsyncClient, body: dict[str, Any], manager: str = "m", *,
                force: bool = False) -> httpx.Response:
    name = body["metadata"]["name"]
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    return await client.patch(f"{DEPLOYMENTS}/{name}{query}", content=orjson.dumps(body), headers=APPLY)


def env_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(obj["spec"]["template"]["spec"]["containers"][0]["env"])


def fields_of(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    entries = [e for e in obj["metadata"].get("managedFields", []) if e["manager"] == manager]
    assert len(entries) <= 1, entries
    return dict(entries[0]["fieldsV1"]) if entries else {}


def env_fields(fields: dict[str, Any]) -> dict[str, Any]:
    containers = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]
    return dict(containers['k:{"name":"c"}'].get("f:env", {}))


async def created_with_duplicates(client: httpx.AsyncClient) -> dict[str, Any]:
    body = deployment(containers=[container(env=[env("A", "1"), env("B", "x"), env("A", "2")])])
    r = await client.post(f"{DEPLOYMENTS}?fieldManager=creator", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


# -- the applied configuration ------------------------------------------------------------------------


async def test_an_applied_configuration_repeating_keys_is_refused_with_every_repeat(client: httpx.AsyncClient) -> None:
    # ports are keyed by containerPort and protocol, protocol taking its default (TCP) when absent.
    body = deployment("x", containers=[container(env=[env("A", "1"), env("A", "2"), env("A", "3")],
                                                 ports=[{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"},
                                                        {"containerPort": 80, "protocol": "UDP"}])])
    r = await apply(client, body)
    assert r.status_code == 500, r.text
    assert r.json()["message"] == (
        "failed to create typed patch object (default/x; apps/v1, Kind=Deployment): errors:\n"
        '  .spec.template.spec.containers[name="c"].env: duplicate entries for key [name="A"]\n'
        '  .spec.template.spec.containers[name="c"].env: duplicate entries for key [name="A"]\n'
        '  .spec.template.spec.containers[name="c"].ports: duplicate entries for key [containerPort=80,protocol="TCP"]')
    assert (await client.get(f"{DEPLOYMENTS}/x")).status_code == 404


async def test_repeated_keys_are_refused_in_every_keyed_list(client: httpx.AsyncClient) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"containers": [container(), container()]}, '.spec.containers: duplicate entries for key [name="c"]'),
        ({"containers": [container()], "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]},
         '.spec.volumes: duplicate entries for key [name="v"]'),
        ({"containers": [{**container(), "volumeMounts": [{"name": "v", "mountPath": "/a"},
                                                          {"name": "w", "mountPath": "/a"}]}]},
         '.spec.containers[name="c"].volumeMounts: duplicate entries for key [mountPath="/a"]'),
        ({"containers": [container()], "imagePullSecrets": [{"name": "s"}, {"name": "s"}]},
         '.spec.imagePullSecrets: duplicate entries for key [name="s"]'),
    ]
    for spec, text in cases:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}
        r = await client.patch(f"{PODS}/p?fieldManager=m", content=orjson.dumps(body), headers=APPLY)
        assert r.status_code == 500, (text, r.text)
        assert r.json()["message"] == f"failed to create typed patch object (default/p; /v1, Kind=Pod): {text}"
    # metadata.finalizers is a set: a repeated value is a repeated key.
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a/b", "a/b"]}}
    r = await client.patch("/api/v1/namespaces/default/configmaps/c?fieldManager=m", content=orjson.dumps(body),
                           headers=APPLY)
    assert r.status_code == 500, r.text
    assert r.json()["message"] == ("failed to create typed patch object (/c; /v1, Kind=ConfigMap): "
                                   '.metadata.finalizers: duplicate entries for key [="a/b"]')


async def test_repeats_in_atomic_lists_and_distinct_keys_are_applied(client: httpx.AsyncClient) -> None:
    # tolerations are an atomic list: no keys, no repeats to refuse. Ports differing by protocol are two keys.
    toleration = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    spec = {"containers": [container(ports=[{"containerPort": 53}, {"containerPort": 53, "protocol": "UDP"}])],
            "tolerations": [toleration, toleration]}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    r = await client.patch(f"{PODS}/p?fieldManager=m", content=orjson.dumps(body), headers=APPLY)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["tolerations"][:2] == [toleration, toleration]
    assert [p.get("protocol") for p in r.json()["spec"]["containers"][0]["ports"]] == ["TCP", "UDP"]


# -- repeats already in the live object ---------------------------------------------------------------


async def test_a_create_with_repeated_keys_owns_the_key_as_one_leaf(client: httpx.AsyncClient) -> None:
    out = await created_with_duplicates(client)
    assert env_of(out) == [env("A", "1"), env("B", "x"), env("A", "2")]
    assert env_fields(fields_of(out, "creator")) == {
        ".": {}, 'k:{"name":"A"}': {}, 'k:{"name":"B"}': {".": {}, "f:name": {}, "f:value": {}}}


async def test_an_apply_leaving_a_repeated_key_alone_keeps_every_copy(client: httpx.AsyncClient) -> None:
    await created_with_duplicates(client)
    r = await apply(client, deployment(annotations={"note": "x"}))
    assert r.status_code == 200, r.text
    assert env_of(r.json()) == [env("A", "1"), env("B", "x"), env("A", "2")]
    assert r.json()["spec"]["template"]["metadata"]["annotations"] == {"note": "x"}
    # Another key of the same list, applied, merges as usual; the copies stay where they were.
    r = await apply(client, deployment(containers=[container(env=[env("C", "y")])]), force=True)
    assert r.status_code == 200, r.text
    assert env_of(r.json()) == [env("A", "1"), env("B", "x"), env("A", "2"), env("C", "y")]


async def test_applying_a_repeated_key_conflicts_with_its_owner_then_replaces_every_copy(
        client: httpx.AsyncClient) -> None:
    await created_with_duplicates(client)
    applied = deployment(containers=[container(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}])])
    r = await apply(client, applied)
    assert r.status_code == 409, r.text
    assert r.json()["message"] == ('Apply failed with 1 conflict: conflict with "creator" using apps/v1: '
                                   '.spec.template.spec.containers[name="c"].env[name="A"]')
    r = await apply(client, applied, force=True)
    assert r.status_code == 200, r.text
    # One item, the applied one: not merged with either copy (no "value" left beside valueFrom).
    assert env_of(r.json()) == [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}, env("B", "x")]
    assert 'k:{"name":"A"}' not in env_fields(fields_of(r.json(), "creator"))
    assert env_fields(fields_of(r.json(), "m"))['k:{"name":"A"}'] == {
        ".": {}, "f:name": {}, "f:valueFrom": {"f:configMapKeyRef": {}}}  # an atomic struct: one leaf


async def test_an_update_adding_or_removing_a_repeat_moves_the_key(client: httpx.AsyncClient) -> None:
    r = await apply(client, deployment(containers=[container(env=[env("A", "1")])]))
    assert r.status_code == 201, r.text
    body = r.json()
    body["spec"]["template"]["spec"]["containers"][0]["env"].append(env("A", "2"))
    r = await client.put(f"{DEPLOYMENTS}/d?fieldManager=editor", json=body)
    assert r.status_code == 200, r.text
    # The key came to repeat: the single item the applier owned is gone, the editor owns the whole key.
    assert 'k:{"name":"A"}' not in env_fields(fields_of(r.json(), "m"))
    assert env_fields(fields_of(r.json(), "editor")) == {'k:{"name":"A"}': {}}
    body = r.json()
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [env("A", "3")]
    r = await client.put(f"{DEPLOYMENTS}/d?fieldManager=other", json=body)
    assert r.status_code == 200, r.text
    # And back to one item: owned field by field by whoever wrote it.
    assert "f:env" not in fields_of(r.json(), "editor").get("f:spec", {}).get("f:template", {}).get(
        "f:spec", {}).get("f:containers", {}).get('k:{"name":"c"}', {})
    assert env_fields(fields_of(r.json(), "other"))['k:{"name":"A"}'] == {".": {}, "f:name": {}, "f:value": {}}


GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"
GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"slots": {
                                   "type": "array", "x-kubernetes-list-type": "map",
                                   "x-kubernetes-list-map-keys": ["zone", "index"],
                                   "items": {"type": "object", "required": ["zone", "index"], "properties": {
                                       "zone": {"type": "string"}, "index": {"type": "integer"},
                                       "size": {"type": "integer"}}}}}}}}}}]},
}  # fmt: skip


async def test_a_custom_resource_list_map_refuses_repeated_keys(app: Any, client: httpx.AsyncClient) -> None:
    r = await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=GADGET_CRD)
    assert r.status_code == 201, r.text
    for _ in range(10_000):  # the CRD controller serves the kind on its next turns of the loop
        if app.kinds.get("example.com", "v1", "gadgets"):
            break
        await asyncio.sleep(0)
    slots = [{"zone": "a", "index": 1, "size": 1}, {"zone": "b", "index": 1}, {"index": 1, "zone": "a", "size": 2}]
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"},
            "spec": {"slots": slots}}
    r = await client.patch(f"{GADGETS}/g?fieldManager=m", content=orjson.dumps(body), headers=APPLY)
    assert r.status_code == 500, r.text
    assert r.json()["message"] == ("failed to create typed patch object (default/g; example.com/v1, Kind=Gadget): "
                                   '.spec.slots: duplicate entries for key [index=1,zone="a"]')
    body["spec"]["slots"] = slots[:2]
    r = await client.patch(f"{GADGETS}/g?fieldManager=m", content=orjson.dumps(body), headers=APPLY)
    assert r.status_code == 201, r.text
