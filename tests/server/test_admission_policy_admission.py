"""ValidatingAdmissionPolicy at admission, through the HTTP API: matching, params, variables, actions, errors.

Upstream: k8s.io/apiserver ``pkg/admission/plugin/policy/validating/dispatcher.go`` (the refusal's text,
reason and code, ``Warn``'s header, configuration errors), ``validator.go`` (messages, reasons,
failurePolicy), ``pkg/admission/plugin/policy/generic/matching.go`` and
``pkg/admission/plugin/webhook/predicates/rules/rules.go`` (matching), ``policy_dispatcher.go``
``CollectParams`` (params), ``pkg/admission/plugin/cel/filter.go`` (``expression '...' resulted in error``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import httpx

from kubeloop.server import create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

BASE = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{BASE}/validatingadmissionpolicies"
BINDINGS = f"{BASE}/validatingadmissionpolicybindings"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENT_RULE = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                   "resources": ["deployments"]}
CONFIGMAP_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["configmaps"]}


def policy(name: str = "p", rule: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"matchConstraints": {"resourceRules": [dict(rule or DEPLOYMENT_RULE)]},
                            "validations": [{"expression": "object.spec.replicas <= 5"}]}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": body}


def binding(name: str = "b", policy_name: str = "p", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"policyName": policy_name, "validationActions": ["Deny"]}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": body}


def deployment(name: str = "web", replicas: int = 7, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def install(client: httpx.AsyncClient, *objects: dict[str, Any]) -> None:
    for obj in objects:
        url = POLICIES if obj["kind"] == "ValidatingAdmissionPolicy" else BINDINGS
        if obj["kind"] == "ConfigMap":
            url = f"/api/v1/namespaces/{obj['metadata'].get('namespace', 'default')}/configmaps"
        created = await client.post(url, json=obj)
        assert created.status_code == 201, created.text


def configmap(name: str, data: dict[str, str], namespace: str = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def refused_message(response: httpx.Response, code: int = 422) -> str:
    assert response.status_code == code, response.text
    status = response.json()
    message = status["message"]
    prefix = 'deployments.apps "web" is forbidden: '
    assert message.startswith(prefix), message
    assert status["details"]["causes"] == [{"message": message[len(prefix):]}]
    return str(message[len(prefix):])


async def test_a_denied_request_is_422_invalid_with_upstreams_message_and_nothing_is_stored(
    client: httpx.AsyncClient,
) -> None:
    await install(client, policy(), binding())
    refused = await client.post(DEPLOYMENTS, json=deployment())
    assert refused_message(refused) == ("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
                                        "failed expression: object.spec.replicas <= 5")
    status = refused.json()
    assert (status["reason"], status["code"]) == ("Invalid", 422)
    assert (status["details"]["name"], status["details"]["group"], status["details"]["kind"]) == (
        "web", "apps", "deployments")
    assert (await client.get(f"{DEPLOYMENTS}/web")).status_code == 404
    assert (await client.post(DEPLOYMENTS, json=deployment(replicas=5))).status_code == 201
    # UPDATE matches too; a dry run is judged as a real request.
    scaled = await client.patch(f"{DEPLOYMENTS}/web?dryRun=All", json={"spec": {"replicas": 9}},
                                headers={"content-type": "application/merge-patch+json"})
    assert "denied request" in refused_message(scaled)


async def test_the_validations_reason_picks_the_status_code(client: httpx.AsyncClient) -> None:
    await install(client, policy(validations=[
        {"expression": "object.spec.replicas <= 5", "reason": "Forbidden", "message": "too many replicas"},
        {"expression": "object.spec.replicas <= 9", "reason": "RequestEntityTooLarge"}]), binding())
    forbidden = await client.post(DEPLOYMENTS, json=deployment(replicas=7))
    assert refused_message(forbidden, 403) == ("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
                                               "too many replicas")
    assert forbidden.json()["reason"] == "Forbidden"
    # Every failed validation is a decision; the first one denied is the answer.
    large = await client.post(DEPLOYMENTS, json=deployment(replicas=10))
    assert large.status_code == 403 and "too many replicas" in large.json()["message"]
    await client.patch(f"{POLICIES}/p", headers={"content-type": "application/merge-patch+json"},
                       json={"spec": {"validations": [{"expression": "false", "reason": "RequestEntityTooLarge"}]}})
    too_large = await client.post(DEPLOYMENTS, json=deployment(replicas=1))
    assert (too_large.status_code, too_large.json()["reason"]) == (413, "RequestEntityTooLarge")


async def test_message_expression_wins_then_message_then_the_expression(client: httpx.AsyncClient) -> None:
    await install(client, policy(validations=[{
        "expression": "object.spec.replicas <= 5", "message": "static",
        "messageExpression": "object.spec.replicas > 8 ? 'replicas ' + string(object.spec.replicas) + ' > 5' : "
                             "(object.spec.replicas == 7 ? 'two\\nlines' : '   ')"}]), binding())
    text = refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=9)))
    assert text.endswith("denied request: replicas 9 > 5")
    # A multi-line or blank result falls back to the message.
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=7))).endswith(": static")
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=6))).endswith(": static")


async def test_a_policy_takes_effect_at_once_and_stops_with_its_binding(client: httpx.AsyncClient) -> None:
    assert (await client.post(DEPLOYMENTS, json=deployment("a"))).status_code == 201
    await install(client, policy())
    # A policy without a binding does nothing.
    assert (await client.post(DEPLOYMENTS, json=deployment("b"))).status_code == 201
    await install(client, binding())
    assert (await client.post(DEPLOYMENTS, json=deployment("web"))).status_code == 422
    assert (await client.delete(f"{BINDINGS}/b")).status_code == 200
    assert (await client.post(DEPLOYMENTS, json=deployment("web"))).status_code == 201


async def test_a_binding_of_a_missing_policy_does_nothing_and_policy_objects_are_never_judged(
    client: httpx.AsyncClient,
) -> None:
    await install(client, binding(policy_name="absent"))
    assert (await client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    everything = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}
    await install(client, policy("deny-all", everything, validations=[{"expression": "false"}]),
                  binding("all", "deny-all"))
    assert (await client.post(CONFIGMAPS, json=configmap("c", {}))).status_code == 422
    # isPolicyResource: the policy and its binding stay editable (and deletable) under a policy denying all.
    assert (await client.delete(f"{BINDINGS}/all")).status_code == 200
    assert (await client.post(CONFIGMAPS, json=configmap("c", {}))).status_code == 201


async def test_resource_rules_operations_names_and_exclusions(client: httpx.AsyncClient) -> None:
    rule = {**CONFIGMAP_RULE, "operations": ["CREATE"], "resourceNames": ["guarded"]}
    await install(client, policy(rule=rule, validations=[{"expression": "has(object.data) && 'ok' in object.data"}]),
                  binding())
    assert (await client.post(CONFIGMAPS, json=configmap("other", {}))).status_code == 201
    assert (await client.post(CONFIGMAPS, json=configmap("guarded", {}))).status_code == 422
    assert (await client.post(CONFIGMAPS, json=configmap("guarded", {"ok": "1"}))).status_code == 201
    # UPDATE is not in the rule.
    emptied = await client.put(f"{CONFIGMAPS}/guarded", json=configmap("guarded", {}))
    assert emptied.status_code == 200, emptied.text
    # excludeResourceRules wins over resourceRules.
    await install(client, policy("all-cms", CONFIGMAP_RULE, validations=[{"expression": "false"}],
                                 matchConstraints={"resourceRules": [CONFIGMAP_RULE], "excludeResourceRules": [
                                     {**CONFIGMAP_RULE, "resourceNames": ["free"]}]}),
                  binding("all-cms", "all-cms"))
    assert (await client.post(CONFIGMAPS, json=configmap("free", {}))).status_code == 201
    assert (await client.post(CONFIGMAPS, json=configmap("bound", {}))).status_code == 422


async def test_scope_and_subresource_rules(client: httpx.AsyncClient) -> None:
    cluster_only = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["*"],
                    "scope": "Cluster"}
    await install(client, policy("cluster", cluster_only, validations=[{"expression": "false"}]),
                  binding("cluster", "cluster"))
    assert (await client.post(CONFIGMAPS, json=configmap("c", {}))).status_code == 201
    refused = await client.post("/api/v1/namespaces", json={"metadata": {"name": "n1"}})
    assert refused.status_code == 422
    assert refused.json()["message"].startswith('namespaces "n1" is forbidden: ValidatingAdmissionPolicy')
    status_rule = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"],
                   "resources": ["deployments/status"]}
    await install(client, policy("status", status_rule, validations=[{"expression": "request.subResource == 'x'"}]),
                  binding("status", "status"))
    assert (await client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    merge = {"content-type": "application/merge-patch+json"}
    assert (await client.patch(f"{DEPLOYMENTS}/web", json={"spec": {"replicas": 2}}, headers=merge)).status_code == 200
    status = await client.patch(f"{DEPLOYMENTS}/web/status", json={"status": {"replicas": 1}}, headers=merge)
    assert status.status_code == 422


async def test_namespace_and_object_selectors_on_policy_and_binding(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/namespaces", json={"metadata": {"name": "prod", "labels": {"env": "prod"}}})
    await client.post("/api/v1/namespaces", json={"metadata": {"name": "dev", "labels": {"env": "dev"}}})
    await install(client, policy(rule=CONFIGMAP_RULE, validations=[{"expression": "false", "message": "no"}],
                                 matchConstraints={"resourceRules": [CONFIGMAP_RULE],
                                                   "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
                  binding(matchResources={"objectSelector": {"matchExpressions": [
                      {"key": "guard", "operator": "Exists"}]}}))
    for namespace, labels, code in [("prod", {"guard": "1"}, 422), ("prod", {}, 201), ("dev", {"guard": "1"}, 201)]:
        body = configmap(f"c-{code}-{len(labels)}", {}, namespace, **labels)
        created = await client.post(f"/api/v1/namespaces/{namespace}/configmaps", json=body)
        assert created.status_code == code, (namespace, labels, created.text)
    # The object selector also matches the old object's labels: removing the label is still judged.
    stored = (await client.get("/api/v1/namespaces/prod/configmaps/c-201-0")).json()
    stored["metadata"]["labels"] = {"guard": "1"}
    assert (await client.put("/api/v1/namespaces/prod/configmaps/c-201-0", json=stored)).status_code == 422


async def test_params_by_name_from_a_configmap_in_the_requests_namespace_or_the_refs(client: httpx.AsyncClient) -> None:
    await install(client, policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"}, validations=[{
        "expression": "object.spec.replicas <= int(params.data.max)",
        "messageExpression": "'at most ' + params.data.max + ' replicas (' + params.metadata.namespace + ')'"}]),
        binding(paramRef={"name": "limits", "parameterNotFoundAction": "Deny"}))
    missing = await client.post(DEPLOYMENTS, json=deployment(replicas=1))
    assert refused_message(missing) == ("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to "
                                        "configure binding: no params found for policy binding with `Deny` "
                                        "parameterNotFoundAction")
    await install(client, configmap("limits", {"max": "3"}))
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=4))).endswith(
        "denied request: at most 3 replicas (default)")
    assert (await client.post(DEPLOYMENTS, json=deployment(replicas=3))).status_code == 201
    # paramRef.namespace picks a fixed namespace.
    await client.post("/api/v1/namespaces", json={"metadata": {"name": "config"}})
    await install(client, configmap("limits", {"max": "1"}, "config"))
    await client.patch(f"{BINDINGS}/b", json={"spec": {"paramRef": {"namespace": "config"}}},
                       headers={"content-type": "application/merge-patch+json"})
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment("web", replicas=2))).endswith(
        "at most 1 replicas (config)")


async def test_params_by_selector_each_judged_and_allow_when_none(client: httpx.AsyncClient) -> None:
    await install(client, policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"}, validations=[{
        "expression": "object.spec.replicas <= int(params.data.max)",
        "messageExpression": "params.metadata.name + ' allows ' + params.data.max"}]),
        binding(paramRef={"selector": {"matchLabels": {"limit": "yes"}}, "parameterNotFoundAction": "Allow"}))
    assert (await client.post(DEPLOYMENTS, json=deployment("free", replicas=50))).status_code == 201
    await install(client, configmap("b-limit", {"max": "4"}, limit="yes"), configmap("a-limit", {"max": "6"}, limit="yes"),
                  configmap("ignored", {"max": "0"}))
    assert (await client.post(DEPLOYMENTS, json=deployment("ok", replicas=4))).status_code == 201
    # Params in name order: a-limit passes 5, b-limit refuses it.
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=5))).endswith(
        "denied request: b-limit allows 4")
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=7))).endswith(
        "denied request: a-limit allows 6")


async def test_params_from_a_custom_resource_and_an_unknown_param_kind(client: httpx.AsyncClient) -> None:
    await install(client, policy(paramKind={"apiVersion": "example.com/v1", "kind": "Limit"}, validations=[{
        "expression": "object.spec.replicas <= params.spec.max"}]),
        binding(paramRef={"name": "cluster-limit", "parameterNotFoundAction": "Deny"}))
    unknown = await client.post(DEPLOYMENTS, json=deployment(replicas=1))
    # A policy-level configuration error names no binding.
    assert refused_message(unknown) == ("ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: "
                                        "failed to find resource referenced by paramKind: 'example.com/v1, Kind=Limit'")
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "limits.example.com"},
           "spec": {"group": "example.com", "scope": "Cluster",
                    "names": {"plural": "limits", "singular": "limit", "kind": "Limit", "listKind": "LimitList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "max": {"type": "integer"}}}}}}}]}}
    assert (await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)).status_code == 201
    for _ in range(200):
        if (await client.get("/apis/example.com/v1/limits")).status_code == 200:
            break
    created = await client.post("/apis/example.com/v1/limits", json={
        "apiVersion": "example.com/v1", "kind": "Limit", "metadata": {"name": "cluster-limit"}, "spec": {"max": 2}})
    assert created.status_code == 201, created.text
    assert (await client.post(DEPLOYMENTS, json=deployment(replicas=2))).status_code == 201
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment("web", replicas=3))).endswith(
        "failed expression: object.spec.replicas <= params.spec.max")
    # A cluster-scoped paramKind takes no paramRef.namespace.
    await client.patch(f"{BINDINGS}/b", json={"spec": {"paramRef": {"namespace": "default"}}},
                       headers={"content-type": "application/merge-patch+json"})
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=1))).endswith(
        "failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`")


async def test_a_policy_with_param_kind_and_a_binding_without_param_ref_sees_null_params(
    client: httpx.AsyncClient,
) -> None:
    await install(client, policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                                 validations=[{"expression": "params == null"}]), binding())
    assert (await client.post(DEPLOYMENTS, json=deployment())).status_code == 201


async def test_namespace_object_request_and_old_object(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/namespaces", json={"metadata": {"name": "team", "labels": {"tier": "gold"},
                                                               "annotations": {"max": "2"}}})
    await install(client, policy(rule=CONFIGMAP_RULE, validations=[
        {"expression": "namespaceObject.metadata.labels.tier == 'gold' && namespaceObject.metadata.name == 'team'"},
        {"expression": "request.operation != 'UPDATE' || oldObject.data.v == object.data.v",
         "message": "v is immutable"},
        {"expression": "request.namespace == 'team' && request.kind.kind == 'ConfigMap' && "
                       "request.resource.resource == 'configmaps' && request.name == object.metadata.name && "
                       "!has(namespaceObject.metadata.managedFields) && oldObject == null || "
                       "request.operation != 'CREATE'"}]), binding())
    url = "/api/v1/namespaces/team/configmaps"
    assert (await client.post(url, json=configmap("c", {"v": "1"}, "team"))).status_code == 201
    stored = (await client.get(f"{url}/c")).json()
    stored["data"] = {"v": "2"}
    changed = await client.put(f"{url}/c", json=stored)
    assert changed.status_code == 422 and changed.json()["message"].endswith("denied request: v is immutable")
    # Elsewhere, namespaceObject is another namespace: the first validation fails.
    assert (await client.post(CONFIGMAPS, json=configmap("c", {"v": "1"}))).status_code == 422
    # On DELETE object is null and oldObject the stored object.
    await client.patch(f"{POLICIES}/p", headers={"content-type": "application/merge-patch+json"}, json={"spec": {
        "validations": [{"expression": "request.operation != 'DELETE' || (object == null && "
                                       "oldObject.metadata.name == 'c' && request.dryRun)",
                         "message": "only dry-run deletes"}]}})
    assert (await client.delete(f"{url}/c?dryRun=All")).status_code == 200
    refused = await client.delete(f"{url}/c")
    assert refused.status_code == 422
    assert refused.json()["message"] == ('configmaps "c" is forbidden: ValidatingAdmissionPolicy \'p\' with binding '
                                         "'b' denied request: only dry-run deletes")


async def test_variables_are_lazy_and_composable(client: httpx.AsyncClient) -> None:
    await install(client, policy(variables=[
        {"name": "broken", "expression": "object.spec.nothing.here"},
        {"name": "replicas", "expression": "object.spec.replicas"},
        {"name": "tooMany", "expression": "variables.replicas > 5"}],
        validations=[{"expression": "!variables.tooMany",
                      "messageExpression": "'replicas: ' + string(variables.replicas)"}]), binding())
    # "broken" would fail, but nothing reads it.
    assert (await client.post(DEPLOYMENTS, json=deployment("ok", replicas=2))).status_code == 201
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=8))).endswith(
        "denied request: replicas: 8")
    await client.patch(f"{POLICIES}/p", headers={"content-type": "application/merge-patch+json"}, json={"spec": {
        "validations": [{"expression": "variables.broken == 1"}]}})
    assert refused_message(await client.post(DEPLOYMENTS, json=deployment(replicas=1))).endswith(
        "denied request: expression 'variables.broken == 1' resulted in error: no such key: nothing")


async def test_evaluation_errors_obey_the_failure_policy(client: httpx.AsyncClient) -> None:
    await install(client, policy(validations=[{"expression": "object.spec.missing > 1"}]), binding())
    refused = await client.post(DEPLOYMENTS, json=deployment(replicas=1))
    assert refused_message(refused) == ("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
                                        "expression 'object.spec.missing > 1' resulted in error: no such key: missing")
    await client.patch(f"{POLICIES}/p", json={"spec": {"failurePolicy": "Ignore"}},
                       headers={"content-type": "application/merge-patch+json"})
    assert (await client.post(DEPLOYMENTS, json=deployment(replicas=1))).status_code == 201
    # Ignore also drops configuration errors.
    await client.patch(f"{BINDINGS}/b", headers={"content-type": "application/merge-patch+json"}, json={"spec": {
        "paramRef": {"name": "nope", "parameterNotFoundAction": "Deny"}}})
    await client.patch(f"{POLICIES}/p", headers={"content-type": "application/merge-patch+json"}, json={"spec": {
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": [{"expression": "false"}]}})
    assert (await client.post(DEPLOYMENTS, json=deployment("other", replicas=1))).status_code == 201


async def test_match_conditions_gate_the_policy(client: httpx.AsyncClient) -> None:
    await install(client, policy(rule=CONFIGMAP_RULE, matchConditions=[
        {"name": "labelled", "expression": "has(object.metadata.labels) && 'strict' in object.metadata.labels"},
        {"name": "erring", "expression": "object.data.x == 'y'"}],
        validations=[{"expression": "false", "message": "strict configmaps are refused"}]), binding())
    # The first condition is false: no decision, even though the second would fail.
    assert (await client.post(CONFIGMAPS, json=configmap("plain", {}))).status_code == 201
    assert (await client.post(CONFIGMAPS, json=configmap("s1", {"x": "y"}, strict="1"))).status_code == 422
    erring = await client.post(CONFIGMAPS, json=configmap("s2", {}, strict="1"))
    assert erring.status_code == 422
    assert erring.json()["message"] == ('configmaps "s2" is forbidden: ValidatingAdmissionPolicy \'p\' with binding '
                                        "'b' denied request: expression 'object.data.x == 'y'' resulted in error: "
                                        "no such key: x")


async def test_warn_adds_a_header_and_audit_changes_nothing(client: httpx.AsyncClient) -> None:
    await install(client, policy(validations=[{"expression": "object.spec.replicas <= 5",
                                               "message": "keep it small"}]),
                  binding(validationActions=["Warn", "Audit"]))
    created = await client.post(DEPLOYMENTS, json=deployment(replicas=7))
    assert created.status_code == 201, created.text
    assert created.headers.get_list("warning") == [
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': keep it small\""]
    quiet = await client.post(DEPLOYMENTS, json=deployment("small", replicas=1))
    assert quiet.headers.get_list("warning") == []
    await client.patch(f"{BINDINGS}/b", json={"spec": {"validationActions": ["Audit"]}},
                       headers={"content-type": "application/merge-patch+json"})
    audited = await client.post(DEPLOYMENTS, json=deployment("big", replicas=9))
    assert audited.status_code == 201 and audited.headers.get_list("warning") == []


async def test_audit_annotation_errors_deny_under_fail(client: httpx.AsyncClient) -> None:
    await install(client, policy(validations=[], auditAnnotations=[
        {"key": "replicas", "valueExpression": "object.spec.replicas"}]), binding(validationActions=["Audit"]))
    refused = await client.post(DEPLOYMENTS, json=deployment(replicas=1))
    assert refused_message(refused) == (
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: valueExpression 'object.spec.replicas' "
        "resulted in unsupported return type: int. Return type must be either string or null.")


async def test_a_namespaced_param_kind_needs_a_namespace_for_cluster_scoped_requests(client: httpx.AsyncClient) -> None:
    namespaces = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["namespaces"]}
    await install(client, policy(rule=namespaces, paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                                 validations=[{"expression": "object.metadata.name.startsWith(params.data.prefix)"}]),
                  binding(paramRef={"name": "naming", "parameterNotFoundAction": "Deny"}))
    refused = await client.post("/api/v1/namespaces", json={"metadata": {"name": "team-a"}})
    assert refused.status_code == 422
    assert refused.json()["message"] == (
        "namespaces \"team-a\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to "
        "configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
    await install(client, configmap("naming", {"prefix": "team-"}))
    await client.patch(f"{BINDINGS}/b", json={"spec": {"paramRef": {"namespace": "default"}}},
                       headers={"content-type": "application/merge-patch+json"})
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team-a"}})).status_code == 201
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "other"}})).status_code == 422


async def test_bindings_written_past_the_watch_buffer_are_read_again(tmp_path: Path) -> None:
    # Writes of bindings are not judged, so nothing polls the plugin's watch while they are made: past its
    # buffer it is dropped, and the next judged request reads every binding again.
    store = await SqliteStore.open(tmp_path / "db", watch_buffer=4)
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(3))
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://k") as client:
            await install(client, policy())
            assert (await client.post(DEPLOYMENTS, json=deployment("first"))).status_code == 201
            for i in range(6):
                await install(client, binding(f"b{i}", policy_name=f"other-{i}"))
            await install(client, binding("last"))
            refused = await client.post(DEPLOYMENTS, json=deployment())
            assert refused_message(refused) == ("ValidatingAdmissionPolicy 'p' with binding 'last' denied request: "
                                                "failed expression: object.spec.replicas <= 5")
    finally:
        await app.shutdown()
        await store.close()
