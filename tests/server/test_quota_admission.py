"""The ResourceQuota admission plugin through the HTTP API (upstream apiserver admission/plugin/resourcequota
controller.go CheckRequest/checkQuotas, pkg/quota/v1/evaluator/core)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from kubeloop.server import App

NS = "/api/v1/namespaces/default"
QUOTAS = f"{NS}/resourcequotas"


def pod(name: str, *, limits: dict[str, str] | None = None, requests: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": resources}], **spec}}


async def make_quota(client: httpx.AsyncClient, hard: dict[str, str], name: str = "q",
                     used: dict[str, str] | None = None, **spec: Any) -> None:
    """A quota as the controller leaves it: status.hard from the spec, status.used counted (zero by default)."""
    r = await client.post(QUOTAS, json={"metadata": {"name": name}, "spec": {"hard": hard, **spec}})
    assert r.status_code == 201, r.text
    body = r.json()
    body["status"] = {"hard": hard, "used": used if used is not None else dict.fromkeys(hard, "0")}
    r = await client.put(f"{QUOTAS}/{name}/status", json=body)
    assert r.status_code == 200, r.text


async def used(client: httpx.AsyncClient, name: str = "q") -> dict[str, str]:
    return dict((await client.get(f"{QUOTAS}/{name}")).json()["status"]["used"])


async def test_pods_past_the_quota_are_refused_with_upstream_message(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"pods": "2"})
    for name in ("a", "b"):
        assert (await client.post(f"{NS}/pods", json=pod(name))).status_code == 201
    assert await used(client) == {"pods": "2"}
    r = await client.post(f"{NS}/pods", json=pod("c"))
    assert r.status_code == 403
    assert r.json()["reason"] == "Forbidden"
    assert r.json()["message"] == ('pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, '
                                   "limited: pods=2")
    assert r.json()["details"] == {"name": "c", "kind": "pods"}
    assert (await client.get(f"{NS}/pods/c")).status_code == 404
    assert await used(client) == {"pods": "2"}


async def test_compute_usage_is_summed_in_upstream_quantity_form(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2"})
    spec = {"limits": {"cpu": "500m"}, "requests": {"cpu": "500m", "memory": "512Mi"}}
    assert (await client.post(f"{NS}/pods", json=pod("a", **spec))).status_code == 201
    assert (await client.post(f"{NS}/pods", json=pod("b", **spec))).status_code == 201
    assert await used(client) == {"limits.cpu": "1", "requests.cpu": "1", "requests.memory": "1Gi"}
    r = await client.post(f"{NS}/pods", json=pod("c", limits={"cpu": "100m"}, requests={"cpu": "1m", "memory": "1"}))
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "c" is forbidden: exceeded quota: q, requested: requests.cpu=1m,'
                                   "requests.memory=1, used: requests.cpu=1,requests.memory=1Gi, "
                                   "limited: requests.cpu=1,requests.memory=1Gi")


async def test_a_quota_on_cpu_requires_every_container_to_state_it(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"limits.cpu": "2", "requests.memory": "1Gi"})
    body = pod("bare")
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]
    r = await client.post(f"{NS}/pods", json=body)
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "bare" is forbidden: failed quota: q: must specify limits.cpu for: app; '
                                   "requests.memory for: app,init")


async def test_a_quota_not_yet_counted_refuses_what_it_tracks(client: httpx.AsyncClient) -> None:
    r = await client.post(QUOTAS, json={"metadata": {"name": "fresh"}, "spec": {"hard": {"pods": "5"}}})
    assert r.status_code == 201
    # Without status.hard (the controller fills it) the quota tracks nothing yet.
    assert (await client.post(f"{NS}/pods", json=pod("early"))).status_code == 201
    body = (await client.get(f"{QUOTAS}/fresh")).json()
    body["status"] = {"hard": {"pods": "5"}}
    assert (await client.put(f"{QUOTAS}/fresh/status", json=body)).status_code == 200
    r = await client.post(f"{NS}/pods", json=pod("late"))
    assert r.status_code == 403
    assert r.json()["message"] == 'pods "late" is forbidden: status unknown for quota: fresh, resources: pods'


async def test_object_counts_and_legacy_names(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"configmaps": "1", "count/secrets": "5", "count/deployments.apps": "0"})
    assert (await client.post(f"{NS}/configmaps", json={"metadata": {"name": "one"}})).status_code == 201
    r = await client.post(f"{NS}/configmaps", json={"metadata": {"name": "two"}})
    assert r.status_code == 403
    assert r.json()["message"] == ('configmaps "two" is forbidden: exceeded quota: q, requested: configmaps=1, '
                                   "used: configmaps=1, limited: configmaps=1")
    assert (await client.post(f"{NS}/secrets", json={"metadata": {"name": "s"}})).status_code == 201
    deployment = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    r = await client.post("/apis/apps/v1/namespaces/default/deployments", json=deployment)
    assert r.status_code == 403
    assert r.json()["message"] == ('deployments.apps "d" is forbidden: exceeded quota: q, requested: '
                                   "count/deployments.apps=1, used: count/deployments.apps=0, "
                                   "limited: count/deployments.apps=0")
    assert await used(client) == {"configmaps": "1", "count/deployments.apps": "0", "count/secrets": "1"}


async def test_best_effort_scope_counts_only_best_effort_pods(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"pods": "1"}, scopes=["BestEffort"])
    assert (await client.post(f"{NS}/pods", json=pod("be1"))).status_code == 201
    sized = pod("burstable", limits={"cpu": "100m"})
    assert (await client.post(f"{NS}/pods", json=sized)).status_code == 201
    r = await client.post(f"{NS}/pods", json=pod("be2"))
    assert r.status_code == 403
    assert "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1" in r.json()["message"]
    # A scoped quota never matches other kinds (MatchesNoScopeFunc).
    assert (await client.post(f"{NS}/configmaps", json={"metadata": {"name": "cm"}})).status_code == 201


async def test_priority_class_scope_selector(client: httpx.AsyncClient) -> None:
    r = await client.post("/apis/scheduling.k8s.io/v1/priorityclasses", json={"metadata": {"name": "high"}, "value": 10})
    assert r.status_code == 201
    await make_quota(client, {"pods": "0"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]})
    assert (await client.post(f"{NS}/pods", json=pod("low"))).status_code == 201
    r = await client.post(f"{NS}/pods", json=pod("urgent", priorityClassName="high"))
    assert r.status_code == 403


async def test_service_updates_are_charged_by_their_increase(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"services.nodeports": "1", "services": "5"})
    service = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    r = await client.post(f"{NS}/services", json=service)
    assert r.status_code == 201, r.text
    assert await used(client) == {"services": "1", "services.nodeports": "0"}
    current = r.json()
    current["spec"]["type"] = "NodePort"
    current["spec"]["ports"].append({"port": 81, "name": "b"})
    current["spec"]["ports"][0]["name"] = "a"
    r = await client.put(f"{NS}/services/web", json=current)
    assert r.status_code == 403
    assert r.json()["message"] == ('services "web" is forbidden: exceeded quota: q, requested: services.nodeports=2, '
                                   "used: services.nodeports=0, limited: services.nodeports=1")


async def test_dry_run_is_checked_but_not_charged(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"pods": "1"})
    r = await client.post(f"{NS}/pods?dryRun=All", json=pod("dry"))
    assert r.status_code == 201
    assert await used(client) == {"pods": "0"}


async def test_concurrent_creates_never_overrun_the_quota(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"count/configmaps": "3"})
    results = await asyncio.gather(*(client.post(f"{NS}/configmaps", json={"metadata": {"name": f"cm{i}"}})
                                     for i in range(8)))
    codes = sorted(r.status_code for r in results)
    assert codes == [201] * 3 + [403] * 5
    assert await used(client) == {"count/configmaps": "3"}


async def test_a_lost_race_is_checked_again_against_the_new_quota(app: App, client: httpx.AsyncClient) -> None:
    await make_quota(client, {"pods": "1"})
    plugin = next(p for p in app.admission if type(p).__name__ == "ResourceQuotaAdmission")
    charge = plugin._charge  # type: ignore[attr-defined]
    raced = False

    async def racing_charge(*args: Any) -> None:
        # Another apiserver charges the same quota between this check and this write.
        nonlocal raced
        if not raced:
            raced = True
            body = (await client.get(f"{QUOTAS}/q")).json()
            body["status"]["used"] = {"pods": "1"}
            assert (await client.put(f"{QUOTAS}/q/status", json=body)).status_code == 200
        await charge(*args)

    plugin._charge = racing_charge  # type: ignore[attr-defined]
    r = await client.post(f"{NS}/pods", json=pod("second"))
    assert r.status_code == 403
    assert r.json()["message"].endswith("exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1")


async def test_claims_are_charged_by_storage_and_storage_class(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"requests.storage": "10Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                              "persistentvolumeclaims": "5"})

    def claim(name: str, size: str, storage_class: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
        if storage_class:
            spec["storageClassName"] = storage_class
        return {"metadata": {"name": name}, "spec": spec}

    assert (await client.post(f"{NS}/persistentvolumeclaims", json=claim("a", "4Gi", "gold"))).status_code == 201
    r = await client.post(f"{NS}/persistentvolumeclaims", json=claim("b", "1Gi", "gold"))
    assert r.status_code == 403
    assert r.json()["message"] == ('persistentvolumeclaims "b" is forbidden: exceeded quota: q, requested: '
                                   "gold.storageclass.storage.k8s.io/persistentvolumeclaims=1, used: "
                                   "gold.storageclass.storage.k8s.io/persistentvolumeclaims=1, limited: "
                                   "gold.storageclass.storage.k8s.io/persistentvolumeclaims=1")
    r = await client.post(f"{NS}/persistentvolumeclaims", json=claim("c", "7Gi"))
    assert r.status_code == 403
    assert "requested: requests.storage=7Gi, used: requests.storage=4Gi, limited: requests.storage=10Gi" in r.json()[
        "message"]
    assert await used(client) == {"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                                  "persistentvolumeclaims": "1", "requests.storage": "4Gi"}


async def test_terminating_scope_and_other_namespaces(client: httpx.AsyncClient) -> None:
    await make_quota(client, {"pods": "0"}, scopes=["Terminating"])
    assert (await client.post(f"{NS}/pods", json=pod("long-running"))).status_code == 201
    r = await client.post(f"{NS}/pods", json=pod("job", activeDeadlineSeconds=60))
    assert r.status_code == 403
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "other"}})).status_code == 201
    r = await client.post("/api/v1/namespaces/other/pods", json=pod("job", activeDeadlineSeconds=60))
    assert r.status_code == 201  # a quota binds its own namespace only


async def test_pod_updates_are_not_charged(client: httpx.AsyncClient) -> None:
    assert (await client.post(f"{NS}/pods", json=pod("p"))).status_code == 201
    await make_quota(client, {"pods": "0"})
    current = (await client.get(f"{NS}/pods/p")).json()
    current["metadata"]["labels"] = {"touched": "yes"}
    assert (await client.put(f"{NS}/pods/p", json=current)).status_code == 200
