"""Legacy discovery, /version and health endpoints."""

from __future__ import annotations

import httpx

from kubeloop.server import App


async def test_api_lists_v1(client: httpx.AsyncClient) -> None:
    body = (await client.get("/api")).json()
    assert body["kind"] == "APIVersions" and body["versions"] == ["v1"]


async def test_apis_lists_groups_without_core(client: httpx.AsyncClient) -> None:
    body = (await client.get("/apis")).json()
    assert body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in body["groups"]}
    assert "" not in groups and {"apps", "coordination.k8s.io", "policy", "rbac.authorization.k8s.io"} <= set(groups)
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}


async def test_core_resource_list_has_verbs_short_names_and_subresources(client: httpx.AsyncClient) -> None:
    body = (await client.get("/api/v1")).json()
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    resources = {r["name"]: r for r in body["resources"]}
    pods = resources["pods"]
    assert pods["namespaced"] and pods["kind"] == "Pod" and pods["shortNames"] == ["po"]
    assert pods["categories"] == ["all"]
    assert set(pods["verbs"]) == {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
    assert resources["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert not resources["namespaces"]["namespaced"]


async def test_scale_subresource_is_autoscaling_scale(client: httpx.AsyncClient) -> None:
    body = (await client.get("/apis/apps/v1")).json()
    scale = next(r for r in body["resources"] if r["name"] == "deployments/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")


async def test_api_group(client: httpx.AsyncClient) -> None:
    body = (await client.get("/apis/apps")).json()
    assert body["kind"] == "APIGroup" and body["name"] == "apps"


async def test_unknown_group_version_is_404(client: httpx.AsyncClient) -> None:
    assert (await client.get("/apis/apps/v9")).status_code == 404


async def test_version_reports_1_32(client: httpx.AsyncClient) -> None:
    body = (await client.get("/version")).json()
    assert (body["major"], body["minor"], body["gitVersion"]) == ("1", "32", "v1.32.0")


async def test_aggregated_discovery_only_when_asked(client: httpx.AsyncClient) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    r = await client.get("/apis", headers={"accept": accept})
    assert r.headers["content-type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert (await client.get("/apis")).json()["kind"] == "APIGroupList"


async def test_health_endpoints_and_settable_readiness(app: App, client: httpx.AsyncClient) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        r = await client.get(path)
        assert (r.status_code, r.text) == (200, "ok")
    app.ready = False
    assert (await client.get("/readyz")).status_code == 500
    app.ready = lambda: True
    assert (await client.get("/readyz")).status_code == 200


async def test_extension_routes_are_served_before_built_ins(app: App, client: httpx.AsyncClient) -> None:
    async def hello(scope: dict[str, object], receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b"hi"})  # type: ignore[operator]

    app.add_route("/apis/example.com", hello)  # type: ignore[arg-type]
    assert (await client.get("/apis/example.com/v1/things")).text == "hi"


ALL = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


async def test_core_verbs_per_resource_are_upstreams(client: httpx.AsyncClient) -> None:
    # Upstream 1.31/1.32 GET /api/v1: namespace storage has no DeleteCollection; the rest do.
    resources = {r["name"]: r["verbs"] for r in (await client.get("/api/v1")).json()["resources"]}
    assert resources["namespaces"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    for name in ("nodes", "events", "pods", "configmaps", "secrets", "services", "serviceaccounts",
                 "persistentvolumeclaims", "persistentvolumes"):
        assert resources[name] == ALL, name
    assert resources["namespaces/finalize"] == ["update"]
    for sub in ("namespaces/status", "nodes/status", "pods/status", "services/status"):
        assert resources[sub] == ["get", "patch", "update"], sub
    assert resources["pods/binding"] == ["create"] and resources["pods/eviction"] == ["create"]


async def test_aggregated_discovery_has_the_same_verbs(client: httpx.AsyncClient) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    body = (await client.get("/api", headers={"accept": accept})).json()
    [core] = body["items"]
    verbs = {r["resource"]: r["verbs"] for r in core["versions"][0]["resources"]}
    assert verbs["namespaces"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    assert verbs["pods"] == ALL


async def test_deleting_the_namespace_collection_is_405_and_deletes_nothing(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "keep"}})
    r = await client.delete("/api/v1/namespaces")
    assert r.status_code == 405, r.text
    assert (await client.get("/api/v1/namespaces/keep")).status_code == 200
