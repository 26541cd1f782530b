"""Which requests reach a webhook, and at which version: custom resources, Namespaces, deletes, review versions.

Upstream: k8s.io/apiserver ``pkg/admission/plugin/webhook/generic/webhook.go`` (ShouldCallHook, matchPolicy
Equivalent), ``predicates/namespace/matcher.go`` (a Namespace is judged on its own labels on CREATE/UPDATE),
``predicates/rules/rules.go`` (scope), ``mutating/dispatcher.go`` (a patch on DELETE is a 500),
``validating/dispatcher.go`` and ``webhook/errors/statuserror.go`` (NewDryRunUnsupportedErr).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import orjson

from kubeloop.server import App
from kubeloop.server._rest import storage_form
from kubeloop.server._state import renderer

from ._webhooks import configuration, patch_response, webhook, webhook_server
from .test_field_validation import establish

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gizmos", "kind": "Gizmo"},
             "versions": [{"name": v, "served": True, "storage": v == "v1",
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                          for v in ("v1", "v2")]},
}  # fmt: skip


async def _install(client: httpx.AsyncClient, path: str, kind: str, *hooks: dict[str, Any], name: str = "cfg") -> None:
    r = await client.post(path, json=configuration(kind, name, *hooks))
    assert r.status_code == 201, r.text


async def test_equivalent_match_policy_sends_a_custom_resource_at_the_version_the_rule_names(
        app: App, client: httpx.AsyncClient, tmp_path: Path) -> None:
    await establish(app, client, copy.deepcopy(CRD))
    answer = lambda request: patch_response([{"op": "add", "path": "/spec", "value": {"seen": True}}])  # noqa: E731
    async with webhook_server(tmp_path, answer) as served:
        v1_only = webhook("v1.gizmos.example.com", served.client_config("/v1"), groups=("example.com",),
                          versions=("v1",), resources=("gizmos",))
        exact = webhook("exact.gizmos.example.com", served.client_config("/exact"), groups=("example.com",),
                        versions=("v1",), resources=("gizmos",), matchPolicy="Exact")
        await _install(client, MWC, "MutatingWebhookConfiguration", v1_only, exact)
        r = await client.post("/apis/example.com/v2/namespaces/default/gizmos",
                              json={"apiVersion": "example.com/v2", "kind": "Gizmo", "metadata": {"name": "g"}})
        assert r.status_code == 201, r.text
        assert r.json()["apiVersion"] == "example.com/v2"
        assert r.json()["spec"] == {"seen": True}
        (request,) = served.hook.requests  # the Exact webhook did not match a v2 request
        assert served.hook.paths[0].startswith("/v1?")
        assert request["kind"] == {"group": "example.com", "version": "v1", "kind": "Gizmo"}
        assert request["resource"] == {"group": "example.com", "version": "v1", "resource": "gizmos"}
        assert request["requestKind"] == {"group": "example.com", "version": "v2", "kind": "Gizmo"}
        assert request["requestResource"] == {"group": "example.com", "version": "v2", "resource": "gizmos"}
        assert request["object"]["apiVersion"] == "example.com/v1"


async def test_a_namespaces_own_labels_decide_its_create_and_cluster_scope_rules(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    def deny(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": False, "status": {"code": 403, "message": f"no {request['name']}"}}
    async with webhook_server(tmp_path, deny) as served:
        hook = webhook("ns.example.com", served.client_config(), resources=("namespaces",),
                       namespaceSelector={"matchLabels": {"guarded": "yes"}},
                       rules=[{"operations": ["CREATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                               "resources": ["namespaces"], "scope": "Cluster"}])
        await _install(client, VWC, "ValidatingWebhookConfiguration", hook)
        assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "free"}})).status_code == 201
        r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "kept", "labels": {"guarded": "yes"}}})
        assert r.status_code == 403
        assert r.json()["message"] == 'admission webhook "ns.example.com" denied the request: no kept'
        assert (await client.delete("/api/v1/namespaces/free")).status_code == 200
        # A namespaced rule never matches a Namespace (a cluster-scoped object).
        namespaced = webhook("nsd.example.com", served.client_config(), resources=("namespaces",),
                             rules=[{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["namespaces"], "scope": "Namespaced"}])
        await _install(client, VWC, "ValidatingWebhookConfiguration", namespaced, name="namespaced")
        assert (await client.delete(f"{VWC}/cfg")).status_code == 200
        assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "other"}})).status_code == 201
    assert [(q["operation"], q.get("name")) for q in served.hook.requests] == [("CREATE", "kept")]


async def test_a_patch_answered_to_a_delete_is_a_500_and_delete_warnings_reach_the_client(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    cm = "/api/v1/namespaces/default/configmaps"
    assert (await client.post(cm, json={"metadata": {"name": "a"}})).status_code == 201
    assert (await client.post(cm, json={"metadata": {"name": "b"}})).status_code == 201

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request["name"] == "a":
            return patch_response([{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}])
        return {"allowed": True, "warnings": ["b goes away"]}
    async with webhook_server(tmp_path, answer) as served:
        await _install(client, MWC, "MutatingWebhookConfiguration",
                       webhook("del.example.com", served.client_config(), operations=("DELETE",)))
        r = await client.delete(f"{cm}/a")
        assert r.status_code == 500
        assert r.json()["message"] == ('Internal error occurred: admission webhook "del.example.com" attempted to modify '
                                       "the object, which is not supported for this operation")
        r = await client.delete(f"{cm}/b")
        assert r.status_code == 200
        assert r.headers.get_list("warning") == ['299 - "b goes away"']
    assert (await client.get(f"{cm}/a")).status_code == 200
    assert (await client.get(f"{cm}/b")).status_code == 404


async def test_a_v1beta1_only_webhook_gets_a_v1beta1_review(client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path) as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration",
                       webhook("beta.example.com", served.client_config(), admissionReviewVersions=["v1beta1"]))
        assert (await client.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}})).status_code == 201
    assert served.hook.reviews[0]["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_a_match_condition_error_fails_closed_or_open_by_failure_policy(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    cm = "/api/v1/namespaces/default/configmaps"
    broken = [{"name": "reads-missing", "expression": "object.data.missing == 'x'"}]
    async with webhook_server(tmp_path) as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration",
                       webhook("cond.example.com", served.client_config(), matchConditions=broken), name="fail")
        r = await client.post(cm, json={"metadata": {"name": "c"}, "data": {"a": "1"}})
        assert r.status_code == 500
        assert r.json()["message"].startswith('Internal error occurred: failed calling webhook "cond.example.com": ')
        assert (await client.delete(f"{VWC}/fail")).status_code == 200
        await _install(client, VWC, "ValidatingWebhookConfiguration",
                       webhook("cond.example.com", served.client_config(), matchConditions=broken,
                               failurePolicy="Ignore"), name="ignore")
        assert (await client.post(cm, json={"metadata": {"name": "c"}, "data": {"a": "1"}})).status_code == 201
    assert served.hook.reviews == []


async def test_a_dry_run_is_refused_by_a_webhook_with_side_effects(app: App, client: httpx.AsyncClient,
                                                                   tmp_path: Path) -> None:
    # v1 accepts only None/NoneOnDryRun on create; a configuration kept from older versions (v1beta1's
    # Unknown default) can still have side effects: written to the store as such.
    async with webhook_server(tmp_path) as served:
        old = configuration("ValidatingWebhookConfiguration", "legacy",
                            webhook("legacy.example.com", served.client_config(), sideEffects="Unknown"))
        old["metadata"]["uid"] = "0"
        await app.state.store.create("/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/legacy",
                                     renderer(storage_form(app.kinds.by_kind("admissionregistration.k8s.io",
                                                                             "ValidatingWebhookConfiguration"), old)))  # type: ignore[arg-type]
        r = await client.post("/api/v1/namespaces/default/configmaps?dryRun=All", json={"metadata": {"name": "d"}})
        assert r.status_code == 400
        assert r.json()["message"] == 'admission webhook "legacy.example.com" does not support dry run'
        assert (await client.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "d"}})).status_code == 201
    assert len(served.hook.reviews) == 1 and orjson.dumps(served.hook.requests[0]["dryRun"]) == b"false"


async def test_resource_wildcards_tell_main_resources_from_subresources(client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path) as served:
        status_only = webhook("status.example.com", served.client_config("/status"), operations=("*",),
                              resources=("*/status",), groups=("*",), versions=("*",))
        main_only = webhook("main.example.com", served.client_config("/main"), operations=("*",),
                            resources=("*",), groups=("",), versions=("v1",))
        await _install(client, VWC, "ValidatingWebhookConfiguration", status_only, main_only)
        r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "wild"}})
        assert r.status_code == 201
        r = await client.patch("/api/v1/namespaces/wild/status", json={"metadata": {"labels": {"a": "b"}}},
                               headers={"content-type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text
    seen = [(p.split("?")[0], q["operation"], q.get("subResource", "")) for p, q in
            zip(served.hook.paths, served.hook.requests, strict=True)]
    assert seen == [("/main", "CREATE", ""), ("/status", "UPDATE", "status")]
