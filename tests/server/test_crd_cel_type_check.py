"""Mistyped CEL refused when written: CRD rules, admission policy expressions and webhook matchConditions.

Upstream (1.32): apiextensions-apiserver ``pkg/apiserver/schema/cel/compilation.go`` (``compilation failed:
ERROR: <input>:L:C: found no matching overload ...``, ``cel expression must evaluate to a bool``,
``messageExpression must evaluate to a string``) reported by ``pkg/apis/apiextensions/validation/validation.go``
at ``...x-kubernetes-validations[i].rule`` / ``.messageExpression`` with the rule's ``%#v``; k8s.io/apiserver
``pkg/admission/plugin/cel/compile.go`` (``must evaluate to bool``, ``must evaluate to string``, ``must
evaluate to one of [string null_type]``) reported by k/k ``pkg/apis/admissionregistration/validation/
validation.go`` as ``Invalid value: "<expression>": <detail>``; kubectl prints a 422 as ``The <Kind>
"<name>" is invalid: <causes>``.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import App

from ._uvicorn import kubectl_for
from ._webhooks import configuration, webhook
from .test_admission_policy_api import POLICIES, policy
from .test_crd_cel_rules import CRDS, SCHEMA, crd

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
AT = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def causes(response: httpx.Response) -> list[tuple[str, str, str]]:
    assert response.status_code == 422, response.text
    return [(c["reason"], c["field"], c["message"]) for c in response.json()["details"]["causes"]]


def go_rule(rule: str, message_expression: str = "") -> str:
    return (f'apiextensions.ValidationRule{{Rule:{json.dumps(rule)}, Message:"", '
            f'MessageExpression:{json.dumps(message_expression)}, Reason:(*apiextensions.FieldValueErrorReason)(nil), '
            'FieldPath:"", OptionalOldSelf:(*bool)(nil)}')


def with_spec_rules(*rules: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["x-kubernetes-validations"] = list(rules)
    return crd(schema)


async def test_a_rule_with_mistyped_operands_refuses_the_crd_with_cel_gos_error(client: httpx.AsyncClient) -> None:
    rule = "self.mode + 1 == 2"
    found = causes(await client.post(CRDS, json=with_spec_rules({"rule": rule})))
    assert found == [("FieldValueInvalid", f"{AT}[0].rule",
                      f"Invalid value: {go_rule(rule)}: compilation failed: ERROR: <input>:1:11: found no matching "
                      "overload for '_+_' applied to '(string, int)'\n | self.mode + 1 == 2\n | ..........^")]
    assert (await client.get(f"{CRDS}/widgets.example.com")).status_code == 404


async def test_results_of_the_wrong_type_refuse_the_crd(client: httpx.AsyncClient) -> None:
    body = with_spec_rules({"rule": "self.minReplicas"},
                           {"rule": "self.minReplicas > 0", "messageExpression": "self.minReplicas"})
    assert causes(await client.post(CRDS, json=body)) == [
        ("FieldValueInvalid", f"{AT}[0].rule",
         f"Invalid value: {go_rule('self.minReplicas')}: cel expression must evaluate to a bool"),
        ("FieldValueInvalid", f"{AT}[1].messageExpression",
         f"Invalid value: {go_rule('self.minReplicas > 0', 'self.minReplicas')}: messageExpression must evaluate "
         "to a string")]
    assert (await client.get(f"{CRDS}/widgets.example.com")).status_code == 404


async def test_a_crd_update_with_a_mistyped_rule_is_refused_and_the_stored_crd_kept(client: httpx.AsyncClient) -> None:
    created = await client.post(CRDS, json=crd())
    assert created.status_code == 201, created.text
    stored = created.json()
    changed = copy.deepcopy(stored)
    schema = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.ports.all(p, p.port == 'x')"}]
    found = causes(await client.put(f"{CRDS}/widgets.example.com", json=changed))
    assert [(reason, field) for reason, field, _ in found] == [("FieldValueInvalid", f"{AT}[0].rule")]
    assert found[0][2].endswith("compilation failed: ERROR: <input>:1:26: found no matching overload for '_==_' "
                                "applied to '(int, string)'\n | self.ports.all(p, p.port == 'x')\n"
                                " | .........................^")
    again = (await client.get(f"{CRDS}/widgets.example.com")).json()
    assert again["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


async def test_policy_expressions_of_the_wrong_type_are_refused(client: httpx.AsyncClient) -> None:
    body = policy(
        matchConditions=[{"name": "c", "expression": "'yes'"}],
        variables=[{"name": "foo", "expression": "114 + '514'"}],
        validations=[{"expression": "'a'"}, {"expression": "true", "messageExpression": "1"}],
        auditAnnotations=[{"key": "k", "valueExpression": "1 + 2"}],
    )
    assert causes(await client.post(POLICIES, json=body)) == [
        ("FieldValueInvalid", "spec.matchConditions[0].expression", "Invalid value: \"'yes'\": must evaluate to bool"),
        ("FieldValueInvalid", "spec.variables[0].expression",
         "Invalid value: \"114 + '514'\": compilation failed: ERROR: <input>:1:5: found no matching overload for "
         "'_+_' applied to '(int, string)'\n | 114 + '514'\n | ....^"),
        ("FieldValueInvalid", "spec.validations[0].expression", "Invalid value: \"'a'\": must evaluate to bool"),
        ("FieldValueInvalid", "spec.validations[1].messageExpression", 'Invalid value: "1": must evaluate to string'),
        ("FieldValueInvalid", "spec.auditAnnotations[0].valueExpression",
         'Invalid value: "1 + 2": must evaluate to one of [string null_type]'),
    ]
    assert (await client.get(f"{POLICIES}/p")).status_code == 404
    # dyn results (object is untyped here) and null for an annotation are accepted
    accepted = await client.post(POLICIES, json=policy(
        validations=[{"expression": "object.spec.replicas <= 5", "messageExpression": "'too many: ' + "
                                                                                      "string(object.spec.replicas)"}],
        auditAnnotations=[{"key": "k", "valueExpression": "object.spec.replicas > 3 ? 'big' : null"}]))
    assert accepted.status_code == 201, accepted.text


async def test_a_webhook_match_condition_that_is_not_a_bool_is_refused(client: httpx.AsyncClient) -> None:
    hook = webhook("typed.kubeloop.test", {"url": "https://127.0.0.1:9/hook", "caBundle": ""},
                   matchConditions=[{"name": "c", "expression": "size(object.metadata.name)"}])
    found = causes(await client.post(WEBHOOKS, json=configuration("ValidatingWebhookConfiguration", "typed", hook)))
    assert found == [("FieldValueInvalid", "webhooks[0].matchConditions[0].expression",
                      'Invalid value: "size(object.metadata.name)": must evaluate to bool')]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_apply_of_a_crd_with_a_mistyped_rule_prints_the_error(real_app: App, tmp_path: Path) -> None:
    manifest = tmp_path / "crd.json"
    manifest.write_text(json.dumps(with_spec_rules({"rule": "self.mode + 1 == 2"})))
    async with kubectl_for(real_app, tmp_path) as kubectl:
        printed = await kubectl("apply", "-f", str(manifest), fails=True)
    assert printed.strip() == (
        f'The CustomResourceDefinition "widgets.example.com" is invalid: {AT}[0].rule: Invalid value: '
        f"{go_rule('self.mode + 1 == 2')}: compilation failed: ERROR: <input>:1:11: found no matching overload for "
        "'_+_' applied to '(string, int)'\n | self.mode + 1 == 2\n | ..........^")
