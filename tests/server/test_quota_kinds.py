"""LimitRange and ResourceQuota as kinds, through the HTTP API: discovery, defaults, strategy, validation, tables.

Upstream: k/k ``pkg/registry/core/{limitrange,resourcequota}/strategy.go``, ``pkg/apis/core/v1/defaults.go``
(SetDefaults_LimitRangeItem), ``pkg/apis/core/validation/validation.go`` (ValidateLimitRange,
ValidateResourceQuota, ValidateResourceQuotaUpdate), ``pkg/printers/internalversion/printers.go``.
"""

from __future__ import annotations

from typing import Any

import httpx

QUOTAS = "/api/v1/namespaces/default/resourcequotas"
LIMITS = "/api/v1/namespaces/default/limitranges"
TABLE = {"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def quota(name: str = "q", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec}


def limit_range(*limits: dict[str, Any], name: str = "l") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(limits)}}


def causes(r: httpx.Response) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in r.json()["details"]["causes"]]


async def test_discovery_names_both_kinds_with_upstream_short_names(client: httpx.AsyncClient) -> None:
    resources = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    assert resources["limitranges"]["shortNames"] == ["limits"]
    assert resources["limitranges"]["namespaced"] is True
    assert resources["resourcequotas"]["shortNames"] == ["quota"]
    assert resources["resourcequotas/status"]["kind"] == "ResourceQuota"


async def test_a_new_quota_has_an_empty_status_and_canonical_quantities(client: httpx.AsyncClient) -> None:
    body = quota(hard={"pods": "2", "requests.cpu": "1000m", "requests.memory": "1024Mi"})
    body["status"] = {"hard": {"pods": "9"}, "used": {"pods": "9"}}
    r = await client.post(QUOTAS, json=body)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["hard"] == {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"}
    assert r.json()["status"] == {}


async def test_main_resource_keeps_status_and_status_keeps_spec(client: httpx.AsyncClient) -> None:
    await client.post(QUOTAS, json=quota(hard={"pods": "2"}))
    stored = (await client.get(f"{QUOTAS}/q")).json()
    stored["status"] = {"hard": {"pods": "2"}, "used": {"pods": "1"}}
    stored["spec"] = {"hard": {"pods": "5"}}
    r = await client.put(f"{QUOTAS}/q/status", json=stored)
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"hard": {"pods": "2"}}  # the status strategy keeps the stored spec
    assert r.json()["status"] == {"hard": {"pods": "2"}, "used": {"pods": "1"}}
    current = r.json()
    current["spec"] = {"hard": {"pods": "3"}}
    current["status"] = {}
    r = await client.put(f"{QUOTAS}/q", json=current)
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"hard": {"pods": "3"}}
    assert r.json()["status"] == {"hard": {"pods": "2"}, "used": {"pods": "1"}}


async def test_quota_validation_messages(client: httpx.AsyncClient) -> None:
    body = quota(hard={"pods": "1.5", "widgets": "1", "requests.cpu": "-1", "cpu": "1"},
                 scopes=["BestEffort", "NotBestEffort"])
    r = await client.post(QUOTAS, json=body)
    assert r.status_code == 422
    assert causes(r) == [
        "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
        "spec.hard[requests.cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
        "spec.hard[widgets]: Invalid value: \"widgets\": must be a standard resource type or fully qualified",
        "spec.hard[widgets]: Invalid value: \"widgets\": must be a standard resource for quota",
        "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: "
        "unsupported scope applied to resource",
        "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes",
    ]
    assert (await client.get(f"{QUOTAS}/q")).status_code == 404


async def test_quota_scope_selector_validation(client: httpx.AsyncClient) -> None:
    body = quota(hard={"pods": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In"},
        {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
        {"scopeName": "Bogus", "operator": "Exists"},
    ]})
    r = await client.post(QUOTAS, json=body)
    assert r.status_code == 422
    path = "spec.scopeSelector.matchExpressions"
    assert causes(r) == [
        f"{path}.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
        f"{path}.operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
        "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
        "ResourceQuotaScopeCrossNamespacePodAffinity",
        f"{path}.scopeName: Invalid value: \"Bogus\": unsupported scope",
    ]


async def test_quota_scopes_are_immutable(client: httpx.AsyncClient) -> None:
    r = await client.post(QUOTAS, json=quota(hard={"pods": "1"}, scopes=["BestEffort"]))
    assert r.status_code == 201, r.text
    changed = r.json()
    changed["spec"]["scopes"] = ["NotBestEffort"]
    r = await client.put(f"{QUOTAS}/q", json=changed)
    assert r.status_code == 422
    assert causes(r) == ['spec.scopes: Invalid value: []core.ResourceQuotaScope{"NotBestEffort"}: field is immutable']


async def test_container_limit_range_defaults_from_max_and_min(client: httpx.AsyncClient) -> None:
    r = await client.post(LIMITS, json=limit_range(
        {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Gi"}},
        {"type": "Pod", "max": {"cpu": "4"}}))
    assert r.status_code == 201, r.text
    container, pod = r.json()["spec"]["limits"]
    # SetDefaults_LimitRangeItem: default limit from max; default request from the default limit, else min.
    assert container["default"] == {"cpu": "2", "memory": "1Gi"}
    assert container["defaultRequest"] == {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "1Gi"}
    assert "default" not in pod and "defaultRequest" not in pod


async def test_limit_range_validation_messages(client: httpx.AsyncClient) -> None:
    r = await client.post(LIMITS, json=limit_range(
        {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "500m"}},
        {"type": "Pod", "default": {"cpu": "1"}, "max": {"pods": "1"}},
        {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
        {"type": "Container"},
        {"type": "Widget"},
    ))
    assert r.status_code == 422
    assert causes(r) == [
        'spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1',
        'spec.limits[0].defaultRequest[cpu]: Invalid value: "1": min value 2 is greater than default request value 1',
        'spec.limits[0].default[cpu]: Invalid value: "2": min value 2 is greater than default value 1',
        'spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1',
        'spec.limits[1].max[pods]: Invalid value: "pods": must be a standard resource for containers',
        "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
        "spec.limits[2].limits: Required value: either minimum or maximum storage value is required, but neither was "
        "provided",
        'spec.limits[3].type: Duplicate value: "Container"',
        'spec.limits[4].type: Invalid value: "Widget": must be a standard limit type or fully qualified',
    ]


async def test_limit_range_ratio_above_max_over_min(client: httpx.AsyncClient) -> None:
    r = await client.post(LIMITS, json=limit_range(
        {"type": "Pod", "min": {"memory": "1Gi"}, "max": {"memory": "2Gi"}, "maxLimitRequestRatio": {"memory": "3"}}))
    assert r.status_code == 422
    assert causes(r) == [
        'spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: "3": ratio 3 is greater than max/min = 2.000000']


async def test_tables_follow_upstream_printers(client: httpx.AsyncClient) -> None:
    await client.post(LIMITS, json=limit_range({"type": "Container", "max": {"cpu": "1"}}))
    await client.post(QUOTAS, json=quota(hard={"pods": "2", "limits.cpu": "2", "requests.cpu": "1"}))
    stored = (await client.get(f"{QUOTAS}/q")).json()
    stored["status"] = {"hard": {"pods": "2", "limits.cpu": "2", "requests.cpu": "1"},
                        "used": {"pods": "1", "limits.cpu": "500m", "requests.cpu": "250m"}}
    assert (await client.put(f"{QUOTAS}/q/status", json=stored)).status_code == 200
    table = (await client.get(QUOTAS, headers=TABLE)).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age", "Request", "Limit"]
    assert table["rows"][0]["cells"][2:] == ["pods: 1/2, requests.cpu: 250m/1", "limits.cpu: 500m/2"]
    table = (await client.get(LIMITS, headers=TABLE)).json()
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [("Name", "string"), ("Created At", "date")]
    created = (await client.get(f"{LIMITS}/l")).json()["metadata"]["creationTimestamp"]
    assert table["rows"][0]["cells"] == ["l", created]


async def test_openapi_serves_both_kinds_and_the_status_path(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi/v3/api/v1")).json()
    schemas = document["components"]["schemas"]
    assert {"io.k8s.api.core.v1.LimitRange", "io.k8s.api.core.v1.ResourceQuota",
            "io.k8s.api.core.v1.ResourceQuotaStatus"} <= set(schemas)
    assert "/api/v1/namespaces/{namespace}/resourcequotas/{name}/status" in document["paths"]
    assert "/api/v1/namespaces/{namespace}/limitranges/{name}" in document["paths"]
