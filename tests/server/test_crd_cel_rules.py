"""CRD ``x-kubernetes-validations`` rules through the HTTP API: compiled when the CRD is written, run on
every write of its objects (create, update, merge patch, server-side apply, /status, dryRun).

Upstream: k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/cel/validation.go`` (``Validator``:
the 422's field, value and message, transition rules, map-list correlation, ratcheting),
``pkg/registry/customresource/strategy.go`` and ``status_strategy.go`` (``hasBlockingErr``), and
``pkg/apis/apiextensions/validation/validation.go`` (a rule that does not compile refuses the CRD).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import httpx

from kubeloop.server import App

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.metadata.name.size() <= 12", "message": "name too long", "reason": "FieldValueForbidden",
         "fieldPath": ".spec.mode"},
    ],
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
                {"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"},
                {"rule": "!has(self.image__dash__tag) || self.image__dash__tag.startsWith('v')",
                 "messageExpression": "'image-tag ' + self.image__dash__tag + ' must start with v'"},
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "mode": {"type": "string"},
                "image-tag": {"type": "string"},
                "limit": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "quantity(self).isLessThan(quantity('2Gi'))", "message": "limit must be below 2Gi"}]},
                "optional": {"type": "object", "properties": {"x": {"type": "integer"}},
                             "x-kubernetes-validations": [{"rule": "self.x > 0"}]},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                        "x-kubernetes-validations": [
                            {"rule": "self.port >= oldSelf.port", "message": "port may not decrease"},
                        ],
                    },
                },
            },
        },
        "status": {
            "type": "object",
            "properties": {"phase": {"type": "string"}},
            "x-kubernetes-validations": [
                {"rule": "self.phase in ['Pending', 'Ready']", "messageExpression": "'unknown phase ' + self.phase"},
            ],
        },
    },
}


def crd(schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": copy.deepcopy(schema)}}],
        },
    }


async def establish(app: App, client: httpx.AsyncClient, body: dict[str, Any] | None = None) -> None:
    r = await client.post(CRDS, json=body or crd())
    assert r.status_code == 201, r.text
    for _ in range(200):
        if app.kinds.get("example.com", "v1", "widgets"):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("CRD never served")


def widget(name: str = "w", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"minReplicas": 1, "maxReplicas": 3, "mode": "fast", **spec}}


def causes(r: httpx.Response) -> list[dict[str, str]]:
    assert r.status_code == 422, r.text
    return list(r.json()["details"]["causes"])


async def test_a_failing_rule_refuses_the_create_with_upstreams_cause(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    r = await client.post(WIDGETS, json=widget(minReplicas=5))
    assert r.json()["message"] == (
        'Widget.example.com "w" is invalid: spec: Invalid value: "object": minReplicas must not exceed maxReplicas')
    assert r.json()["reason"] == "Invalid"
    assert causes(r) == [{"reason": "FieldValueInvalid", "field": "spec",
                          "message": 'Invalid value: "object": minReplicas must not exceed maxReplicas'}]
    assert (await client.get(f"{WIDGETS}/w")).status_code == 404  # nothing stored
    assert (await client.post(WIDGETS, json=widget())).status_code == 201


async def test_message_expression_reason_field_path_and_escaped_names(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    r = await client.post(WIDGETS, json=widget("a-very-long-name", **{"image-tag": "latest"}))
    assert causes(r) == [
        # The root rule: reason FieldValueForbidden at its fieldPath.
        {"reason": "FieldValueForbidden", "field": "spec.mode", "message": "Forbidden: name too long"},
        {"reason": "FieldValueInvalid", "field": "spec",
         "message": 'Invalid value: "object": image-tag latest must start with v'},
    ]
    assert (await client.post(WIDGETS, json=widget(**{"image-tag": "v1.2"}))).status_code == 201


async def test_kubernetes_libraries_and_runtime_errors(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    assert causes(await client.post(WIDGETS, json=widget(limit="3Gi"))) == [
        {"reason": "FieldValueInvalid", "field": "spec.limit", "message": 'Invalid value: "string": limit must be below 2Gi'}]
    assert (await client.post(WIDGETS, json=widget("q", limit="1536Mi"))).status_code == 201
    # optional: {} has no x: the rule's select fails at run time, as upstream words it.
    assert causes(await client.post(WIDGETS, json=widget(optional={}))) == [
        {"reason": "FieldValueInvalid", "field": "spec.optional",
         "message": 'Invalid value: "object": no such key: x evaluating rule: self.x > 0'}]


async def test_transition_rules_run_on_update_patch_and_apply(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    created = await client.post(WIDGETS, json=widget(mode="slow"))  # no oldSelf on create: the rule is skipped
    assert created.status_code == 201
    body = created.json()
    body["spec"]["mode"] = "fast"
    r = await client.put(f"{WIDGETS}/w", json=body)
    assert causes(r) == [{"reason": "FieldValueInvalid", "field": "spec", "message": 'Invalid value: "object": mode is immutable'}]
    r = await client.patch(f"{WIDGETS}/w", content=b'{"spec":{"mode":"fast"}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.json()["message"].endswith('spec: Invalid value: "object": mode is immutable')
    applied = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"mode": "fast"}}
    r = await client.patch(f"{WIDGETS}/w?fieldManager=me&force=true", json=applied,
                           headers={"content-type": "application/apply-patch+yaml"})
    assert r.status_code == 422 and r.json()["message"].endswith("mode is immutable")
    stored = (await client.get(f"{WIDGETS}/w")).json()
    assert stored["spec"]["mode"] == "slow" and stored["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    r = await client.patch(f"{WIDGETS}/w", content=b'{"spec":{"maxReplicas":4}}',
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text


async def test_map_list_items_correlate_by_key(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    ports = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    body = (await client.post(WIDGETS, json=widget(ports=ports))).json()
    # Reordered, https lowered: the item is found by its key, wherever it moved.
    body["spec"]["ports"] = [{"name": "https", "port": 442}, {"name": "http", "port": 80}, {"name": "new", "port": 1}]
    r = await client.put(f"{WIDGETS}/w", json=body)
    assert causes(r) == [{"reason": "FieldValueInvalid", "field": "spec.ports[0]",
                          "message": 'Invalid value: "object": port may not decrease'}]
    body["spec"]["ports"][0]["port"] = 8443
    assert (await client.put(f"{WIDGETS}/w", json=body)).status_code == 200


async def test_status_rules_run_on_the_status_write(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    body = (await client.post(WIDGETS, json=widget())).json()
    body["status"] = {"phase": "Bogus"}
    r = await client.put(f"{WIDGETS}/w/status", json=body)
    assert causes(r) == [{"reason": "FieldValueInvalid", "field": "status",
                          "message": 'Invalid value: "object": unknown phase Bogus'}]
    body["status"] = {"phase": "Ready"}
    body["spec"]["mode"] = "other"  # /status ignores spec changes: the transition rule sees the stored spec
    r = await client.put(f"{WIDGETS}/w/status", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == {"phase": "Ready"} and r.json()["spec"]["mode"] == "fast"


async def test_dry_run_runs_the_rules(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    r = await client.post(f"{WIDGETS}?dryRun=All", json=widget(minReplicas=9))
    assert r.status_code == 422 and r.json()["message"].endswith("minReplicas must not exceed maxReplicas")
    assert (await client.post(f"{WIDGETS}?dryRun=All", json=widget())).status_code == 201
    assert (await client.get(f"{WIDGETS}/w")).status_code == 404


async def test_schema_errors_that_block_the_rules_say_so(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    r = await client.post(WIDGETS, json=widget(minReplicas="many"))
    assert [c["field"] for c in causes(r)] == ["spec.minReplicas", "<nil>"]
    assert causes(r)[1] == {
        "reason": "FieldValueInvalid", "field": "<nil>",
        "message": 'Invalid value: "null": some validation rules were not checked because the object was invalid; '
                   "correct the existing errors to complete validation"}


async def test_an_unchanged_invalid_value_is_ratcheted_to_a_warning(app: App, client: httpx.AsyncClient) -> None:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = []
    await establish(app, client, crd(schema))
    body = (await client.post(WIDGETS, json=widget(minReplicas=7))).json()  # valid before the rule exists
    tightened = (await client.get(f"{CRDS}/widgets.example.com")).json()
    tightened["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = copy.deepcopy(SCHEMA)
    assert (await client.put(f"{CRDS}/widgets.example.com", json=tightened)).status_code == 200
    for _ in range(200):
        r = await client.post(f"{WIDGETS}?dryRun=All", json=widget("probe", minReplicas=7))
        if r.status_code == 422:
            break
        await asyncio.sleep(0.01)
    body["metadata"]["labels"] = {"touched": "yes"}  # spec unchanged: its failing rule only warns
    r = await client.put(f"{WIDGETS}/w", json=body)
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == [
        '299 - "spec: Invalid value: \\"object\\": minReplicas must not exceed maxReplicas"']
    body = r.json()
    body["spec"]["maxReplicas"] = 4  # spec changed and still failing: an error again
    assert causes(await client.put(f"{WIDGETS}/w", json=body))[0]["field"] == "spec"


async def test_a_rule_that_does_not_compile_refuses_the_crd(app: App, client: httpx.AsyncClient) -> None:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.minReplicas <"},
                                                                {"rule": "self.minReplica > 0"}]
    r = await client.post(CRDS, json=crd(schema))
    assert r.status_code == 422
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert [c["field"] for c in r.json()["details"]["causes"]] == [f"{at}[0].rule", f"{at}[1].rule"]
    first = r.json()["details"]["causes"][0]["message"]
    assert first.startswith(
        'Invalid value: apiextensions.ValidationRule{Rule:"self.minReplicas <", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
        "compilation failed: ERROR: <input>:1:19: Syntax error: mismatched input '<EOF>' expecting")
    assert first.endswith("\n | self.minReplicas <\n | ..................^")
    assert r.json()["details"]["causes"][1]["message"].endswith(
        "compilation failed: ERROR: <input>:1:5: undefined field 'minReplica'\n | self.minReplica > 0\n | ....^")
    assert (await client.get(f"{CRDS}/widgets.example.com")).status_code == 404


async def test_rule_fields_are_checked_on_the_crd(client: httpx.AsyncClient) -> None:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "true", "reason": "FieldValueBogus"},
        {"rule": "true", "fieldPath": ".spec.nope"},
        {"rule": "self.minReplicas > 0", "optionalOldSelf": True},
    ]
    schema["properties"]["status"]["x-kubernetes-validations"] = [
        {"rule": "self.phase != ''", "messageExpression": "'phase ' +"}]
    r = await client.post(CRDS, json=crd(schema))
    at = "spec.validation.openAPIV3Schema.properties"
    assert [(c["field"], c["reason"]) for c in r.json()["details"]["causes"]] == [
        (f"{at}[spec].x-kubernetes-validations[0].reason", "FieldValueNotSupported"),
        (f"{at}[spec].x-kubernetes-validations[1].fieldPath", "FieldValueInvalid"),
        (f"{at}[status].x-kubernetes-validations[0].messageExpression", "FieldValueInvalid"),
    ]
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.minReplicas > 0", "optionalOldSelf": True}]
    r = await client.post(CRDS, json=crd(schema))
    assert next(c["message"] for c in r.json()["details"]["causes"]) == (
        "Invalid value: true: may not be set if oldSelf is not used in rule")


async def test_optional_old_self_runs_on_create_too(app: App, client: httpx.AsyncClient) -> None:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "oldSelf.hasValue() ? self.maxReplicas >= oldSelf.value().maxReplicas : self.maxReplicas < 10",
         "optionalOldSelf": True, "message": "maxReplicas may only grow, from below 10"}]
    await establish(app, client, crd(schema))
    assert causes(await client.post(WIDGETS, json=widget(maxReplicas=10)))[0]["message"].endswith(
        "maxReplicas may only grow, from below 10")
    body = (await client.post(WIDGETS, json=widget(maxReplicas=9))).json()
    body["spec"]["maxReplicas"] = 20
    assert (await client.put(f"{WIDGETS}/w", json=body)).status_code == 200
    body = (await client.get(f"{WIDGETS}/w")).json()
    body["spec"]["maxReplicas"] = 19
    assert causes(await client.put(f"{WIDGETS}/w", json=body))[0]["field"] == "spec"


async def test_a_rule_far_over_the_cost_budget_refuses_the_crd(client: httpx.AsyncClient) -> None:
    # An unbounded list of unbounded strings: ~1M items of up to 3 MiB, each scanned by a regex. Upstream's
    # estimate is past 100x StaticEstimatedCostLimit; bounds (maxItems, maxLength) bring it under.
    names: dict[str, Any] = {"type": "array", "items": {"type": "string"},
                             "x-kubernetes-validations": [{"rule": "self.all(n, n.matches('^[a-z]+$'))"}]}
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["properties"]["names"] = names
    r = await client.post(CRDS, json=crd(schema))
    assert r.status_code == 422
    assert r.json()["details"]["causes"] == [{
        "reason": "FieldValueForbidden",
        "field": "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule",
        "message": "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, "
                   "or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"}]
    names.update(maxItems=16, items={"type": "string", "maxLength": 63})
    assert (await client.post(CRDS, json=crd(schema))).status_code == 201


async def test_a_server_side_apply_create_runs_the_rules(app: App, client: httpx.AsyncClient) -> None:
    await establish(app, client)
    r = await client.patch(f"{WIDGETS}/w?fieldManager=me", json=widget(minReplicas=4),
                           headers={"content-type": "application/apply-patch+yaml"})
    assert causes(r) == [{"reason": "FieldValueInvalid", "field": "spec",
                          "message": 'Invalid value: "object": minReplicas must not exceed maxReplicas'}]
    assert (await client.get(f"{WIDGETS}/w")).status_code == 404
    r = await client.patch(f"{WIDGETS}/w?fieldManager=me", json=widget(),
                           headers={"content-type": "application/apply-patch+yaml"})
    assert r.status_code == 201, r.text


async def test_an_invalid_regex_or_duration_literal_refuses_the_crd(client: httpx.AsyncClient) -> None:
    # cel-go's AST validators (ValidateRegexLiterals, ValidateDurationLiterals): RE2 has no lookahead.
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["properties"]["mode"]["x-kubernetes-validations"] = [
        {"rule": "self.matches('^(?!x)')"}, {"rule": "duration('5 minutes') > duration('0s')"}]
    r = await client.post(CRDS, json=crd(schema))
    assert [c["message"].partition("compilation failed: ")[2] for c in r.json()["details"]["causes"]] == [
        "ERROR: <input>:1:14: invalid matches argument\n | self.matches('^(?!x)')\n | .............^",
        "ERROR: <input>:1:10: invalid duration argument\n | duration('5 minutes') > duration('0s')\n | .........^",
    ]


async def test_crd_rule_errors_come_deepest_first_and_schema_errors_stop_compilation_above(
    client: httpx.AsyncClient,
) -> None:
    # validation.go checks a node's properties before its own rules, and compiles a node's rules only when
    # no rule below it has a message/reason/fieldPath error.
    schema = copy.deepcopy(SCHEMA)
    schema["x-kubernetes-validations"] = [{"rule": "self.nope == 1"}]
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.alsoNope == 1"}]
    at = "spec.validation.openAPIV3Schema"
    r = await client.post(CRDS, json=crd(schema))
    assert [c["field"] for c in r.json()["details"]["causes"]] == [
        f"{at}.properties[spec].x-kubernetes-validations[0].rule", f"{at}.x-kubernetes-validations[0].rule"]
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "true", "reason": "Nope"}]
    r = await client.post(CRDS, json=crd(schema))
    assert [c["field"] for c in r.json()["details"]["causes"]] == [
        f"{at}.properties[spec].x-kubernetes-validations[0].reason"]


async def test_old_self_under_items_of_a_list_that_is_not_a_map_refuses_the_crd(client: httpx.AsyncClient) -> None:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["properties"]["tags"] = {
        "type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}
    r = await client.post(CRDS, json=crd(schema))
    at = "spec.validation.openAPIV3Schema.properties[spec].properties[tags]"
    assert r.json()["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": f"{at}.items.x-kubernetes-validations[0].rule",
        "message": f'Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the '
                   f"schema within {at}"}]
