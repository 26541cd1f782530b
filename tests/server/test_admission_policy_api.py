"""ValidatingAdmissionPolicy and its binding served as upstream 1.32 serves them: discovery, defaults, validation.

Upstream: k/k ``pkg/apis/admissionregistration/validation/validation.go`` (ValidateValidatingAdmissionPolicy,
...Binding, ...StatusUpdate), ``pkg/apis/admissionregistration/v1/defaults.go``,
``pkg/registry/admissionregistration/validatingadmissionpolicy{,binding}`` (strategy, storage: category
``api-extensions``, a status subresource), k8s.io/apiserver ``pkg/admission/plugin/cel/compile.go``
(``compilation failed: ...``).
"""

from __future__ import annotations

from typing import Any

import httpx

BASE = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{BASE}/validatingadmissionpolicies"
BINDINGS = f"{BASE}/validatingadmissionpolicybindings"
RULE = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}


def policy(name: str = "p", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"matchConstraints": {"resourceRules": [dict(RULE)]},
                            "validations": [{"expression": "object.spec.replicas <= 5"}]}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": body}


def binding(name: str = "b", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"policyName": "p", "validationActions": ["Deny"]}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": body}


def causes(response: httpx.Response) -> list[tuple[str, str, str]]:
    assert response.status_code == 422, response.text
    return [(c["reason"], c["field"], c["message"]) for c in response.json()["details"]["causes"]]


async def test_discovery_lists_both_kinds_cluster_scoped_with_the_policy_status(client: httpx.AsyncClient) -> None:
    listed = (await client.get(BASE)).json()
    resources = {r["name"]: r for r in listed["resources"]}
    policies = resources["validatingadmissionpolicies"]
    assert (policies["kind"], policies["namespaced"], policies["categories"]) == (
        "ValidatingAdmissionPolicy", False, ["api-extensions"])
    assert sorted(policies["verbs"]) == ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                         "watch"]
    assert resources["validatingadmissionpolicies/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["validatingadmissionpolicybindings"]["kind"] == "ValidatingAdmissionPolicyBinding"
    assert "validatingadmissionpolicybindings/status" not in resources
    groups = (await client.get("/apis")).json()["groups"]
    assert "admissionregistration.k8s.io" in [g["name"] for g in groups]


async def test_openapi_v3_serves_the_group_with_the_policy_schema(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi/v3/apis/admissionregistration.k8s.io/v1")).json()
    schemas = document["components"]["schemas"]
    spec = schemas["io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec"]
    assert {"validations", "matchConstraints", "paramKind", "variables"} <= set(spec["properties"])
    assert "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{name}" in document["paths"]


async def test_a_policy_is_defaulted_and_starts_at_generation_1_with_an_empty_status(client: httpx.AsyncClient) -> None:
    created = await client.post(POLICIES, json=policy())
    assert created.status_code == 201, created.text
    obj = created.json()
    assert obj["spec"]["failurePolicy"] == "Fail"
    assert obj["spec"]["matchConstraints"] == {
        "resourceRules": [{**RULE, "scope": "*"}], "matchPolicy": "Equivalent", "namespaceSelector": {},
        "objectSelector": {}}
    assert obj["metadata"]["generation"] == 1
    assert obj["status"] == {}


async def test_a_spec_change_moves_the_generation_and_status_only_changes_through_the_subresource(
    client: httpx.AsyncClient,
) -> None:
    await client.post(POLICIES, json=policy())
    merge = {"content-type": "application/merge-patch+json"}
    patched = await client.patch(f"{POLICIES}/p", json={"spec": {"failurePolicy": "Ignore"},
                                                        "status": {"observedGeneration": 9}}, headers=merge)
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["generation"] == 2
    assert patched.json()["status"] == {}
    status = await client.patch(f"{POLICIES}/p/status", json={"status": {"observedGeneration": 2}}, headers=merge)
    assert status.status_code == 200, status.text
    assert status.json()["status"] == {"observedGeneration": 2}
    assert status.json()["metadata"]["generation"] == 2
    bad = await client.patch(f"{POLICIES}/p/status", headers=merge, json={
        "status": {"typeChecking": {"expressionWarnings": [{"fieldRef": "spec.validations[0].expression"}]}}})
    assert causes(bad) == [("FieldValueRequired", "status.typeChecking.expressionWarnings[0].warning",
                            "Required value")]


async def test_a_binding_is_defaulted_and_tracks_its_generation(client: httpx.AsyncClient) -> None:
    created = await client.post(BINDINGS, json=binding(matchResources={"resourceRules": [dict(RULE)]}))
    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert spec["matchResources"] == {"resourceRules": [{**RULE, "scope": "*"}], "matchPolicy": "Equivalent",
                                      "namespaceSelector": {}, "objectSelector": {}}
    assert created.json()["metadata"]["generation"] == 1
    assert "status" not in created.json()
    updated = await client.patch(f"{BINDINGS}/b", json={"spec": {"validationActions": ["Warn"]}},
                                 headers={"content-type": "application/merge-patch+json"})
    assert updated.json()["metadata"]["generation"] == 2


async def test_expressions_that_do_not_compile_are_refused_at_write_and_nothing_is_stored(
    client: httpx.AsyncClient,
) -> None:
    body = policy(validations=[
        {"expression": "object.spec.replicas <= "},
        {"expression": "params.max > 1"},
        {"expression": "object.x", "messageExpression": "authorizer.group('')"},
        {"expression": "variables.missing"},
    ])
    found = causes(await client.post(POLICIES, json=body))
    assert found[0][:2] == ("FieldValueInvalid", "spec.validations[0].expression")
    assert found[0][2].startswith('Invalid value: "object.spec.replicas <= ": compilation failed: ERROR: <input>:1:25: '
                                  "Syntax error: mismatched input '<EOF>'")
    assert found[1] == ("FieldValueInvalid", "spec.validations[1].expression",
                        'Invalid value: "params.max > 1": compilation failed: ERROR: <input>:1:1: undeclared '
                        "reference to 'params' (in container '')\n | params.max > 1\n | ^")
    # A messageExpression has no authorizer (validation.go validateMessageExpression: HasAuthorizer false).
    assert found[2][1] == "spec.validations[2].messageExpression"
    assert "undeclared reference to 'authorizer'" in found[2][2]
    assert found[3][1] == "spec.validations[3].expression"
    assert "undeclared reference to 'variables'" in found[3][2]
    assert (await client.get(f"{POLICIES}/p")).status_code == 404


async def test_params_and_variables_are_declared_only_when_the_policy_has_them(client: httpx.AsyncClient) -> None:
    body = policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                  variables=[{"name": "limit", "expression": "int(params.data.max)"},
                             {"name": "over", "expression": "object.spec.replicas > variables.limit"},
                             {"name": "early", "expression": "variables.later"},
                             {"name": "later", "expression": "1"}],
                  validations=[{"expression": "!variables.over", "messageExpression": "'max ' + params.data.max"},
                               {"expression": "variables.nope"}])
    found = causes(await client.post(POLICIES, json=body))
    assert [(reason, field) for reason, field, _ in found] == [
        ("FieldValueInvalid", "spec.variables[2].expression"), ("FieldValueInvalid", "spec.validations[1].expression")]
    assert "undefined field 'later'" in found[0][2] and "undefined field 'nope'" in found[1][2]


async def test_the_policy_spec_rules_refused_with_upstreams_messages(client: httpx.AsyncClient) -> None:
    body = policy(failurePolicy="Sometimes", paramKind={"apiVersion": "a/b/c", "kind": "Config_Map"},
                  matchConditions=[{"name": "x", "expression": "true"}, {"name": "x", "expression": ""}],
                  variables=[{"name": "1bad", "expression": "1"}],
                  validations=[{"expression": "true", "message": "two\nlines", "reason": "Conflict",
                                "messageExpression": "  "}])
    body["spec"]["matchConstraints"] = {"resourceRules": [{"apiGroups": ["*", "apps"], "apiVersions": [],
                                                           "operations": ["CREATE", "PATCH"],
                                                           "resources": ["*/*", "pods"], "scope": "Global"}],
                                        "matchPolicy": "Fuzzy"}
    found = causes(await client.post(POLICIES, json=body))
    assert found == [
        ("FieldValueNotSupported", "spec.failurePolicy", 'Unsupported value: "Sometimes": supported values: "Fail", '
                                                         '"Ignore"'),
        ("FieldValueInvalid", "spec.paramKind.apiVersion", 'Invalid value: "a/b/c": unexpected GroupVersion string: '
                                                           "a/b/c"),
        ("FieldValueInvalid", "spec.paramKind.kind",
         'Invalid value: "Config_Map": may have mixed case, but should otherwise match: a DNS-1035 label must consist '
         "of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an "
         "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
         "'[a-z]([-a-z0-9]*[a-z0-9])?')"),
        ("FieldValueNotSupported", "spec.matchConstraints.matchPolicy",
         'Unsupported value: "Fuzzy": supported values: "Equivalent", "Exact"'),
        ("FieldValueNotSupported", "spec.matchConstraints.resourceRules[0].operations[1]",
         'Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"'),
        ("FieldValueInvalid", "spec.matchConstraints.resourceRules[0].apiGroups",
         'Invalid value: []string{"*", "apps"}: if \'*\' is present, must not specify other API groups'),
        ("FieldValueRequired", "spec.matchConstraints.resourceRules[0].apiVersions", "Required value"),
        ("FieldValueInvalid", "spec.matchConstraints.resourceRules[0].resources",
         'Invalid value: []string{"*/*", "pods"}: if \'*/*\' is present, must not specify other resources'),
        ("FieldValueNotSupported", "spec.matchConstraints.resourceRules[0].scope",
         'Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"'),
        ("FieldValueRequired", "spec.matchConditions[1].expression", "Required value"),
        ("FieldValueDuplicate", "spec.matchConditions[1].name", 'Duplicate value: "x"'),
        ("FieldValueInvalid", "spec.variables[0].name", 'Invalid value: "1bad": name is not a valid CEL identifier'),
        ("FieldValueInvalid", "spec.validations[0].messageExpression",
         'Invalid value: "  ": must be non-empty if specified'),
        ("FieldValueInvalid", "spec.validations[0].message",
         'Invalid value: "two\\nlines": message must not contain line breaks'),
        ("FieldValueNotSupported", "spec.validations[0].reason",
         'Unsupported value: "Conflict": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"'),
    ]


async def test_match_constraints_and_some_validation_are_required(client: httpx.AsyncClient) -> None:
    body = policy()
    del body["spec"]["matchConstraints"], body["spec"]["validations"]
    assert causes(await client.post(POLICIES, json=body)) == [
        ("FieldValueRequired", "spec.matchConstraints", "Required value"),
        ("FieldValueRequired", "spec.validations",
         "Required value: validations or auditAnnotations must contain at least one item"),
        ("FieldValueRequired", "spec.auditAnnotations",
         "Required value: validations or auditAnnotations must contain at least one item"),
    ]
    no_rules = policy()
    no_rules["spec"]["matchConstraints"] = {"namespaceSelector": {"matchLabels": {"a": "b"}}}
    assert causes(await client.post(POLICIES, json=no_rules)) == [
        ("FieldValueRequired", "spec.matchConstraints.resourceRules", "Required value")]


async def test_audit_annotations_keys_are_qualified_under_the_policy_name(client: httpx.AsyncClient) -> None:
    body = policy(auditAnnotations=[{"key": "bad key", "valueExpression": "'x'"},
                                    {"key": "ok", "valueExpression": " "},
                                    {"key": "ok", "valueExpression": "string(object.spec.replicas)"}])
    found = causes(await client.post(POLICIES, json=body))
    assert [(reason, field) for reason, field, _ in found] == [
        ("FieldValueInvalid", "spec.auditAnnotations[0].key"),
        ("FieldValueRequired", "spec.auditAnnotations[1].valueExpression"),
        ("FieldValueDuplicate", "spec.auditAnnotations[2].key")]
    assert found[0][2].startswith('Invalid value: "p/bad key": ')
    assert found[1][2] == "Required value: valueExpression is not specified"


async def test_audit_annotation_value_expressions_are_compiled_and_bounded_when_written(
        client: httpx.AsyncClient) -> None:
    # validation.go validateAuditAnnotation: at most 5 KiB (trimmed), and CompileCELExpression's error as an
    # Invalid value (a syntax error, params without a paramKind); nothing is stored.
    long = "'" + "x" * (5 * 1024) + "'"
    body = policy(validations=[], auditAnnotations=[{"key": "a", "valueExpression": "object.metadata.name +"},
                                                    {"key": "b", "valueExpression": "params.x"},
                                                    {"key": "c", "valueExpression": long}])
    found = causes(await client.post(POLICIES, json=body))
    assert [(reason, field) for reason, field, _ in found] == [
        ("FieldValueInvalid", "spec.auditAnnotations[0].valueExpression"),
        ("FieldValueInvalid", "spec.auditAnnotations[1].valueExpression"),
        ("FieldValueRequired", "spec.auditAnnotations[2].valueExpression")]
    assert found[0][2].startswith('Invalid value: "object.metadata.name +": compilation failed: ERROR: <input>:1:23: '
                                  "Syntax error: ")
    assert found[1][2].startswith('Invalid value: "params.x": compilation failed: ERROR: <input>:1:1: undeclared '
                                  "reference to 'params'")
    assert found[2][2] == "Required value: must not exceed 5120 bytes in length"
    assert (await client.get(f"{POLICIES}/p")).status_code == 404


async def test_binding_rules_refused_with_upstreams_messages(client: httpx.AsyncClient) -> None:
    body = binding(policyName="Not_A_Name", validationActions=["Deny", "Warn", "Deny", "Block"],
                   paramRef={"name": "a/b", "selector": {}, "parameterNotFoundAction": "Maybe"},
                   matchResources={"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"],
                                                      "resources": []}]})
    found = causes(await client.post(BINDINGS, json=body))
    assert found == [
        ("FieldValueInvalid", "spec.policyName",
         'Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
         "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
         "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
        ("FieldValueInvalid", "spec.paramRef.name", "Invalid value: \"a/b\": may not contain '/'"),
        ("FieldValueForbidden", "spec.paramRef.name", "Forbidden: name and selector are mutually exclusive"),
        ("FieldValueForbidden", "spec.paramRef.selector", "Forbidden: name and selector are mutually exclusive"),
        ("FieldValueNotSupported", "spec.paramRef.parameterNotFoundAction",
         'Unsupported value: "Maybe": supported values: "Deny", "Allow"'),
        # upstream's misspelt path
        ("FieldValueRequired", "spec.matchResouces.resourceRules[0].resources", "Required value"),
        ("FieldValueDuplicate", "spec.validationActions[2]", 'Duplicate value: "Deny"'),
        ("FieldValueNotSupported", "spec.validationActions[3]",
         'Unsupported value: "Block": supported values: "Audit", "Deny", "Warn"'),
        ("FieldValueInvalid", "spec.validationActions",
         'Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn", "Deny", "Block"}: must not contain '
         "both Deny and Warn (repeating the same validation failure information in the API response and headers "
         "serves no purpose)"),
    ]
    empty = binding(validationActions=[], paramRef={"parameterNotFoundAction": ""})
    empty["spec"].pop("policyName")
    assert causes(await client.post(BINDINGS, json=empty)) == [
        ("FieldValueRequired", "spec.policyName", "Required value"),
        ("FieldValueRequired", "spec.paramRef", "Required value: one of name or selector must be specified"),
        ("FieldValueRequired", "spec.paramRef.parameterNotFoundAction", "Required value"),
        ("FieldValueRequired", "spec.validationActions", "Required value: at least one validation action is required"),
    ]
    assert (await client.get(BINDINGS)).json()["items"] == []


async def test_tables_show_validations_param_kind_policy_and_param_ref(client: httpx.AsyncClient) -> None:
    table = {"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    await client.post(POLICIES, json=policy("with-params", paramKind={"apiVersion": "v1", "kind": "ConfigMap"}))
    await client.post(BINDINGS, json=binding("by-name", paramRef={"name": "cm", "parameterNotFoundAction": "Allow"}))
    await client.post(BINDINGS, json=binding("in-ns", paramRef={"name": "cm", "namespace": "ns",
                                                                "parameterNotFoundAction": "Deny"}))
    await client.post(BINDINGS, json=binding("by-selector", paramRef={
        "selector": {"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["x", "y"]}]}, "parameterNotFoundAction": "Deny"}))
    policies = (await client.get(POLICIES, headers=table)).json()
    assert [c["name"] for c in policies["columnDefinitions"]] == ["Name", "Validations", "ParamKind", "Age"]
    assert policies["rows"][0]["cells"][:3] == ["with-params", 1, "v1/ConfigMap"]
    bindings = (await client.get(BINDINGS, headers=table)).json()
    assert [c["name"] for c in bindings["columnDefinitions"]] == ["Name", "PolicyName", "ParamRef", "Age"]
    assert [row["cells"][:3] for row in bindings["rows"]] == [
        ["by-name", "p", "*/cm"],
        ["by-selector", "p", "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
                             "MatchExpressions:[]LabelSelectorRequirement{{env In [x y]},},}"],
        ["in-ns", "p", "ns/cm"],
    ]
