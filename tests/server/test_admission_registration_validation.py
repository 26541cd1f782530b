"""Rules and ``matchConditions`` are validated alike in webhook configurations and admission policies.

Upstream: k/k ``pkg/apis/admissionregistration/validation/validation.go``, whose functions both kinds share:
``validateMatchConditions`` (``field.TooMany(path, len, 64)`` prints the count: ``Too many: 65: must have at
most 64 items``; a blank expression and a missing name are Required; a repeated name is Duplicate) and
``validateRuleWithOperations`` / ``validateResources`` (``*`` alone in its list, wildcards that overlap).
"""

from __future__ import annotations

from typing import Any

import httpx

from ._webhooks import configuration, webhook
from .test_admission_policy_admission import POLICIES, policy

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
CLIENT = {"url": "https://127.0.0.1:9/hook", "caBundle": ""}


def conditions(count: int) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "expression": "true"} for i in range(count)]


def causes(response: httpx.Response) -> list[tuple[str, str, str]]:
    assert response.status_code == 422, response.text
    return [(c["reason"], c["field"], c["message"]) for c in response.json()["details"]["causes"]]


async def test_both_kinds_refuse_65_conditions_with_upstreams_count(client: httpx.AsyncClient) -> None:
    config = configuration("ValidatingWebhookConfiguration", "many",
                           webhook("many.kubeloop.test", CLIENT, matchConditions=conditions(65)))
    assert causes(await client.post(WEBHOOKS, json=config)) == [
        ("FieldValueTooMany", "webhooks[0].matchConditions", "Too many: 65: must have at most 64 items")]
    refused = await client.post(POLICIES, json=policy(matchConditions=conditions(65)))
    assert causes(refused) == [
        ("FieldValueTooMany", "spec.matchConditions", "Too many: 65: must have at most 64 items")]
    # 64 is allowed in both.
    config["webhooks"][0]["matchConditions"] = conditions(64)
    assert (await client.post(WEBHOOKS, json=config)).status_code == 201
    assert (await client.post(POLICIES, json=policy(matchConditions=conditions(64)))).status_code == 201


async def test_blank_expressions_missing_and_repeated_names_are_reported_alike(client: httpx.AsyncClient) -> None:
    bad = [{"name": "a", "expression": "  "}, {"name": "", "expression": "true"}, {"name": "a", "expression": "true"}]
    config = configuration("ValidatingWebhookConfiguration", "bad", webhook("bad.kubeloop.test", CLIENT, matchConditions=bad))
    expected = [("FieldValueRequired", "matchConditions[0].expression"), ("FieldValueRequired", "matchConditions[1].name"),
                ("FieldValueDuplicate", "matchConditions[2].name")]
    webhook_causes = [(reason, field) for reason, field, _ in causes(await client.post(WEBHOOKS, json=config))]
    policy_causes = [(reason, field) for reason, field, _ in causes(await client.post(POLICIES, json=policy(matchConditions=bad)))]
    assert webhook_causes == [(r, f"webhooks[0].{f}") for r, f in expected]
    assert policy_causes == [(r, f"spec.{f}") for r, f in expected]


async def test_both_kinds_refuse_the_same_rules_with_the_same_causes(client: httpx.AsyncClient) -> None:
    rule = {"operations": ["*", "CREATE"], "apiGroups": ["*", "apps"], "apiVersions": [""],
            "resources": ["*/*", "pods/*", "pods/status"], "scope": "Everywhere"}
    expected = [
        ("FieldValueInvalid", "operations", 'Invalid value: []admissionregistration.OperationType{"*", "CREATE"}: '
                                            "if '*' is present, must not specify other operations"),
        ("FieldValueInvalid", "apiGroups", 'Invalid value: []string{"*", "apps"}: '
                                           "if '*' is present, must not specify other API groups"),
        ("FieldValueRequired", "apiVersions[0]", "Required value"),
        ("FieldValueInvalid", "resources[1]", 'Invalid value: "pods/*": if \'*/*\' is present, '
                                              "must not specify pods/*"),
        ("FieldValueInvalid", "resources[2]", 'Invalid value: "pods/status": if \'pods/*\' is present, '
                                              "must not specify pods/status"),
        ("FieldValueInvalid", "resources", 'Invalid value: []string{"*/*", "pods/*", "pods/status"}: '
                                           "if '*/*' is present, must not specify other resources"),
        ("FieldValueNotSupported", "scope", 'Unsupported value: "Everywhere": supported values: "*", "Cluster", '
                                            '"Namespaced"'),
    ]
    hook = webhook("rules.kubeloop.test", CLIENT)
    hook["rules"] = [rule]
    webhook_causes = causes(await client.post(WEBHOOKS, json=configuration("ValidatingWebhookConfiguration", "r", hook)))
    assert webhook_causes == [(r, f"webhooks[0].rules[0].{f}", m) for r, f, m in expected]
    policy_causes = causes(await client.post(POLICIES, json=policy(rule=rule)))
    assert policy_causes == [(r, f"spec.matchConstraints.resourceRules[0].{f}", m) for r, f, m in expected]
