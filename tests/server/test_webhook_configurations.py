"""Validating/MutatingWebhookConfiguration as a served kind: defaults, validation, generation, discovery, tables.

Upstream: k/k ``pkg/apis/admissionregistration/v1/defaults.go``, ``pkg/apis/admissionregistration/validation/
validation.go`` (ValidateValidatingWebhookConfiguration and its Update twin), k8s.io/apiserver
``pkg/util/webhook/validation.go`` (ValidateWebhookURL, ValidateWebhookService), apimachinery
``util/validation.IsFullyQualifiedName``, k/k ``pkg/registry/admissionregistration/*/strategy.go``.
"""

from __future__ import annotations

from typing import Any

import httpx

from ._webhooks import configuration, webhook

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
URL = {"url": "https://hooks.example.com/validate"}


def _causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in r.json()["details"]["causes"]]


async def test_defaults_are_upstreams_and_generation_moves_with_the_webhooks(client: httpx.AsyncClient) -> None:
    hook = webhook("m.example.com", {"service": {"name": "s", "namespace": "ns"}})
    r = await client.post(MWC, json=configuration("MutatingWebhookConfiguration", "m", hook))
    assert r.status_code == 201, r.text
    stored = r.json()
    (got,) = stored["webhooks"]
    assert got["failurePolicy"] == "Fail" and got["matchPolicy"] == "Equivalent"
    assert got["namespaceSelector"] == {} and got["objectSelector"] == {}
    assert got["timeoutSeconds"] == 10 and got["reinvocationPolicy"] == "Never"
    assert got["rules"][0]["scope"] == "*"
    assert got["clientConfig"]["service"]["port"] == 443
    assert stored["metadata"]["generation"] == 1
    r = await client.patch(f"{MWC}/m", json={"metadata": {"labels": {"a": "b"}}},
                           headers={"content-type": "application/merge-patch+json"})
    assert r.json()["metadata"]["generation"] == 1
    r = await client.patch(f"{MWC}/m", json={"webhooks": [{**got, "timeoutSeconds": 5}]},
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == 2
    vhook = webhook("v.example.com", URL)
    r = await client.post(VWC, json=configuration("ValidatingWebhookConfiguration", "v", vhook))
    assert "reinvocationPolicy" not in r.json()["webhooks"][0]


async def test_invalid_webhooks_are_422_with_upstreams_causes_and_nothing_is_stored(client: httpx.AsyncClient) -> None:
    bad: dict[str, Any] = {
        "name": "short.name",
        "clientConfig": {"url": "http://user@hooks.example.com/x?y=1#z"},
        "rules": [{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"],
                   "resources": ["*/*", "pods"], "scope": "Everywhere"}],
        "failurePolicy": "Sometimes",
        "timeoutSeconds": 31,
        "admissionReviewVersions": ["v2"],
        "matchConditions": [{"name": "c", "expression": "object.metadata.name ="}],
    }
    r = await client.post(VWC, json=configuration("ValidatingWebhookConfiguration", "bad", bad))
    assert r.status_code == 422
    causes = _causes(r)
    assert ("FieldValueInvalid", "webhooks[0].name",
            'Invalid value: "short.name": should be a domain with at least three segments separated by dots') in causes
    assert ("FieldValueInvalid", "webhooks[0].rules[0].operations",
            'Invalid value: []admissionregistration.OperationType{"*", "CREATE"}: if \'*\' is present, must not '
            "specify other operations") in causes
    assert ("FieldValueRequired", "webhooks[0].rules[0].apiGroups", "Required value") in causes
    assert ("FieldValueInvalid", "webhooks[0].rules[0].resources",
            'Invalid value: []string{"*/*", "pods"}: if \'*/*\' is present, must not specify other resources') in causes
    assert ("FieldValueNotSupported", "webhooks[0].rules[0].scope",
            'Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced"') in causes
    assert ("FieldValueNotSupported", "webhooks[0].failurePolicy",
            'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"') in causes
    assert ("FieldValueRequired", "webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun") in causes
    assert ("FieldValueInvalid", "webhooks[0].timeoutSeconds",
            "Invalid value: 31: the timeout value must be between 1 and 30 seconds") in causes
    url = "webhooks[0].clientConfig.url"
    assert ("FieldValueInvalid", url, 'Invalid value: "http": \'https\' is the only allowed URL scheme; desired format: '
            "https://host[/path]") in causes
    assert ("FieldValueInvalid", url, 'Invalid value: "user": user information is not permitted in the URL') in causes
    assert ("FieldValueInvalid", url, 'Invalid value: "y=1": query parameters are not permitted in the URL') in causes
    assert ("FieldValueInvalid", url, 'Invalid value: "z": fragments are not permitted in the URL') in causes
    assert ("FieldValueInvalid", "webhooks[0].admissionReviewVersions",
            'Invalid value: []string{"v2"}: must include at least one of v1, v1beta1') in causes
    assert any(field == "webhooks[0].matchConditions[0].expression" and "compilation failed" in message
               for _, field, message in causes)
    assert (await client.get(f"{VWC}/bad")).status_code == 404


async def test_names_must_be_unique_and_client_config_exactly_one(client: httpx.AsyncClient) -> None:
    both = webhook("dup.example.com", {**URL, "service": {"name": "s", "namespace": "ns"}})
    neither = {**webhook("dup.example.com", URL), "clientConfig": {}}
    no_versions = {**webhook("other.example.com", URL), "admissionReviewVersions": []}
    r = await client.post(MWC, json=configuration("MutatingWebhookConfiguration", "m", both, neither, no_versions))
    assert r.status_code == 422
    causes = _causes(r)
    assert ("FieldValueRequired", "webhooks[0].clientConfig", "Required value: exactly one of url or service is required") in causes
    assert ("FieldValueRequired", "webhooks[1].clientConfig", "Required value: exactly one of url or service is required") in causes
    assert ("FieldValueDuplicate", "webhooks[1].name", 'Duplicate value: "dup.example.com"') in causes
    assert ("FieldValueRequired", "webhooks[2].admissionReviewVersions",
            "Required value: must specify one of v1, v1beta1") in causes
    bad_policy = {**webhook("r.example.com", URL), "reinvocationPolicy": "Always", "sideEffects": "Some"}
    r = await client.post(MWC, json=configuration("MutatingWebhookConfiguration", "m", bad_policy))
    causes = _causes(r)
    assert ("FieldValueNotSupported", "webhooks[0].reinvocationPolicy",
            'Unsupported value: "Always": supported values: "IfNeeded", "Never"') in causes
    assert ("FieldValueNotSupported", "webhooks[0].sideEffects",
            'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"') in causes


async def test_served_like_the_other_kinds_discovery_table_list_and_deletecollection(client: httpx.AsyncClient) -> None:
    r = await client.get("/apis/admissionregistration.k8s.io/v1")
    resources = {res["name"]: res for res in r.json()["resources"]}
    for plural in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        assert resources[plural]["namespaced"] is False
        assert resources[plural]["categories"] == ["api-extensions"]
        assert "deletecollection" in resources[plural]["verbs"]
    for name in ("a", "b"):
        hooks = [webhook(f"h{i}.{name}.example.com", URL) for i in range(2 if name == "a" else 1)]
        assert (await client.post(VWC, json=configuration("ValidatingWebhookConfiguration", name, *hooks))).status_code == 201
    r = await client.get(VWC, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = r.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Webhooks", "Age"]
    assert [row["cells"][:2] for row in table["rows"]] == [["a", 2], ["b", 1]]
    assert (await client.delete(VWC)).status_code == 200
    assert (await client.get(VWC)).json()["items"] == []
    r = await client.get("/openapi/v3/apis/admissionregistration.k8s.io/v1")
    assert r.status_code == 200
    assert "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration" in r.json()["components"]["schemas"]
