"""``GET /metrics``: the API server's request counts, open watches, stored objects and build, as kube-apiserver
names and labels them (k8s.io/apiserver pkg/endpoints/metrics), through the security chain."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import kubeloop.server._app
from kubeloop.cli._bootstrap import bootstrap
from kubeloop.server import App, secure, store_rbac_authorizer
from kubeloop.server._authn import User

from ._uvicorn import serve

ADMIN = User("kubernetes-admin", "1", ("system:masters", "system:authenticated"))
ALICE = User("alice", groups=("system:authenticated",))
PROMETHEUS = User("prometheus", groups=("system:monitoring", "system:authenticated"))
TOKENS = {"t": ADMIN, "alice-token": ALICE, "prom-token": PROMETHEUS}
CONFIGMAPS = "/api/v1/namespaces/ns/configmaps"


@pytest.fixture
async def app(app: App) -> App:
    """The conftest's app with the bootstrap policy (the RBAC roles, ``system:monitoring`` among them)."""
    await bootstrap(app)
    return app


def chain(app: App) -> Any:
    return secure(app, tokens=TOKENS, authorizer=store_rbac_authorizer(app.state.store))


def client(app: App, token: str | None = "t") -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=chain(app)), base_url="http://kubeloop", headers=headers)


@pytest.fixture
async def http(app: App) -> AsyncIterator[httpx.AsyncClient]:
    async with client(app) as admin:
        assert (await admin.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})).status_code == 201
        yield admin


async def scrape(http: httpx.AsyncClient, **headers: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Each family's samples (name suffixes included: ``apiserver_request_total``), as labels and value."""
    r = await http.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def requests_of(samples: dict[str, Any], resource: str) -> dict[tuple[str, ...], float]:
    """apiserver_request_total of one resource: (verb, dry_run, subresource, scope, code) -> count."""
    found: dict[tuple[str, ...], float] = {}
    for labels, value in samples["apiserver_request_total"]:
        if labels["resource"] == resource:
            assert (labels["component"], labels["version"], labels["group"]) == ("apiserver", "v1", "")
            found[labels["verb"], labels["dry_run"], labels["subresource"], labels["scope"], labels["code"]] = value
    return found


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_each_request_is_counted_by_verb_scope_dry_run_and_code(http: httpx.AsyncClient) -> None:
    # metrics.go: CleanScope (resource for a name or a create, namespace for a namespaced collection, else
    # cluster), CanonicalVerb (a collection's GET is LIST), cleanVerb (WATCH, APPLY), cleanDryRun.
    assert (await http.post(CONFIGMAPS, json=cm("a"))).status_code == 201
    assert (await http.post(CONFIGMAPS, json=cm("a"))).status_code == 409
    assert (await http.post(CONFIGMAPS, params={"dryRun": "All"}, json=cm("b"))).status_code == 201
    assert (await http.post(CONFIGMAPS, params={"dryRun": "Later"}, json=cm("b"))).status_code == 422
    got = (await http.get(f"{CONFIGMAPS}/a")).json()
    assert (await http.get(CONFIGMAPS)).status_code == 200
    assert (await http.get("/api/v1/configmaps")).status_code == 200
    assert (await http.get(CONFIGMAPS, params={"fieldSelector": "metadata.name=a"})).status_code == 200
    assert (await http.put(f"{CONFIGMAPS}/a", json={**got, "data": {"k": "v"}})).status_code == 200
    merge = {"Content-Type": "application/merge-patch+json"}
    assert (await http.patch(f"{CONFIGMAPS}/a", content=b'{"data":{"k":"w"}}', headers=merge)).status_code == 200
    apply = {"Content-Type": "application/apply-patch+yaml"}
    r = await http.patch(f"{CONFIGMAPS}/c", params={"fieldManager": "me"}, content=b"kind: ConfigMap\napiVersion: v1\n"
                         b"metadata: {name: c}\ndata: {k: v}\n", headers=apply)  # fmt: skip
    assert r.status_code == 201, r.text
    assert (await http.request("OPTIONS", CONFIGMAPS)).status_code == 405
    assert (await http.delete(f"{CONFIGMAPS}/a")).status_code == 200
    assert (await http.delete(CONFIGMAPS)).status_code == 200
    samples = await scrape(http)
    assert requests_of(samples, "configmaps") == {
        ("POST", "", "", "resource", "201"): 1,
        ("POST", "", "", "resource", "409"): 1,
        ("POST", "All", "", "resource", "201"): 1,
        ("POST", "invalid", "", "resource", "422"): 1,
        # The GET, and the list narrowed to one name by its field selector: that object's GET, as upstream's
        # RequestInfo takes the name from metadata.name=.
        ("GET", "", "", "resource", "200"): 2,
        ("LIST", "", "", "namespace", "200"): 1,
        ("LIST", "", "", "cluster", "200"): 1,
        ("PUT", "", "", "resource", "200"): 1,
        ("PATCH", "", "", "resource", "200"): 1,
        ("APPLY", "", "", "resource", "201"): 1,
        ("other", "", "", "namespace", "405"): 1,
        ("DELETE", "", "", "resource", "200"): 1,
        ("DELETE", "", "", "namespace", "200"): 1,
    }


async def test_a_subresource_and_a_group_are_labelled(http: httpx.AsyncClient) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}},
                           "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}  # fmt: skip
    deployments = "/apis/apps/v1/namespaces/ns/deployments"
    assert (await http.post(deployments, json=deployment)).status_code == 201
    assert (await http.get(f"{deployments}/d/scale")).status_code == 200
    assert (await http.get(f"{deployments}/d/status")).status_code == 200
    samples = await scrape(http)
    rows = {(s["verb"], s["group"], s["version"], s["resource"], s["subresource"], s["scope"], s["code"]): v
            for s, v in samples["apiserver_request_total"] if s["resource"] == "deployments"}  # fmt: skip
    assert rows == {("POST", "apps", "v1", "deployments", "", "resource", "201"): 1,
                    ("GET", "apps", "v1", "deployments", "scale", "resource", "200"): 1,
                    ("GET", "apps", "v1", "deployments", "status", "resource", "200"): 1}  # fmt: skip


async def test_a_request_served_before_the_routing_parses_it_is_counted(http: httpx.AsyncClient) -> None:
    # A pod's eviction is answered beside the REST handlers (no parse in the scope): labelled from its own.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert (await http.post("/api/v1/namespaces/ns/pods", json=pod)).status_code == 201
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "ns"}}
    r = await http.post("/api/v1/namespaces/ns/pods/p/eviction", json=eviction)
    assert r.status_code == 201, r.text
    samples = await scrape(http)
    assert requests_of(samples, "pods") == {("POST", "", "", "resource", "201"): 1,
                                            ("POST", "", "eviction", "resource", "201"): 1}


async def test_unknown_resources_and_refused_requests_are_not_counted(app: App, http: httpx.AsyncClient) -> None:
    # Upstream instruments its REST routes: a path with no route, or a request that authentication or
    # authorization refuses, never reaches one (and any client could grow the label sets without bound).
    before = (await scrape(http))["apiserver_request_total"]
    assert (await http.get("/api/v1/namespaces/ns/nothings")).status_code == 404
    assert (await http.get("/apis/made.up/v1/things")).status_code == 404
    async with client(app, "alice-token") as alice, client(app, None) as anonymous, client(app, "wrong") as wrong:
        assert (await alice.get(CONFIGMAPS)).status_code == 403
        assert (await anonymous.get(CONFIGMAPS)).status_code == 401
        assert (await wrong.get(CONFIGMAPS)).status_code == 401
    assert (await http.get("/version")).status_code == 200
    assert (await scrape(http))["apiserver_request_total"] == before


async def test_counts_survive_the_fold_and_a_resource_gone_since_is_dropped(
    app: App, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Requests are noted and counted in bulk every FOLD_AT: none is lost or counted twice across folds.
    monkeypatch.setattr(kubeloop.server._app, "FOLD_AT", 3)
    for _ in range(10):
        assert (await http.get(CONFIGMAPS)).status_code == 200
    assert len(app.metrics.answered) < 3  # folded every third request
    samples = await scrape(http)
    assert requests_of(samples, "configmaps") == {("LIST", "", "", "namespace", "200"): 10}
    # A request noted for a resource that is no longer served at the fold (a custom resource whose definition
    # was deleted since) is not counted.
    assert (await http.get(CONFIGMAPS)).status_code == 200
    configmaps = app.kinds.get("", "v1", "configmaps")
    assert configmaps is not None
    app.kinds.remove("", "v1", "configmaps")
    try:
        app.metrics.fold()
    finally:
        app.kinds.add(configmaps)
    samples = await scrape(http)
    assert requests_of(samples, "configmaps") == {("LIST", "", "", "namespace", "200"): 10}


async def test_a_watch_counts_as_open_while_it_runs(app: App) -> None:
    async with serve(chain(app)) as url, httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer t"}) as http:
        assert (await http.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})).status_code == 201

        async def open_watches() -> float:
            samples = await scrape(http)
            return sum(value for labels, value in samples["apiserver_longrunning_requests"]
                       if (labels["verb"], labels["resource"], labels["scope"]) == ("WATCH", "configmaps", "namespace"))

        async with http.stream("GET", CONFIGMAPS, params={"watch": "1"}) as watch:
            assert watch.status_code == 200
            assert await open_watches() == 1
        # The server sees the client go at its next read: wait for the watch to end, then it is counted.
        async with asyncio.timeout(10):
            while await open_watches():
                await asyncio.sleep(0.01)
        samples = await scrape(http)
        assert requests_of(samples, "configmaps") == {("WATCH", "", "", "namespace", "200"): 1}


async def test_stored_objects_build_and_process(http: httpx.AsyncClient) -> None:
    for name in ("a", "b", "c"):
        assert (await http.post(CONFIGMAPS, json=cm(name))).status_code == 201
    stored = len((await http.get("/api/v1/configmaps")).json()["items"])
    namespaces = len((await http.get("/api/v1/namespaces")).json()["items"])
    samples = await scrape(http)
    objects = {labels["resource"]: value for labels, value in samples["apiserver_storage_objects"]}
    assert (objects["configmaps"], objects["namespaces"], objects["deployments.apps"]) == (stored, namespaces, 0)
    assert objects["clusterroles.rbac.authorization.k8s.io"] > 0  # the bootstrap policy
    (build, one), = samples["kubernetes_build_info"]
    version = (await http.get("/version")).json()
    assert one == 1 and (build["git_version"], build["major"], build["minor"]) == (
        version["gitVersion"], version["major"], version["minor"])
    assert samples["process_cpu_seconds_total"][0][1] > 0


async def test_metrics_answer_in_the_format_asked_for(http: httpx.AsyncClient) -> None:
    r = await http.get("/metrics")
    assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "# TYPE apiserver_request_total counter" in r.text
    r = await http.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert r.text.endswith("# EOF\n")
    r = await http.post("/metrics", content=b"")
    assert (r.status_code, r.json()["reason"]) == (405, "MethodNotAllowed")


async def test_reading_metrics_needs_rbac_which_system_monitoring_grants(app: App) -> None:
    async with client(app, "alice-token") as alice, client(app, "prom-token") as prometheus:
        r = await alice.get("/metrics")
        assert (r.status_code, r.json()["message"]) == (
            403, 'forbidden: User "alice" cannot get path "/metrics"')
        r = await prometheus.get("/metrics")
        assert r.status_code == 200 and "apiserver_storage_objects" in r.text
