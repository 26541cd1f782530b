"""Discovery lists ``serviceaccounts/token`` as upstream 1.32 does, and only as a create route.

Upstream: ``pkg/registry/core/serviceaccount/storage/token.go`` (``TokenREST`` implements only
``rest.Creater`` and ``GroupVersionKind`` answers authentication.k8s.io/v1 TokenRequest), so
``GET /api/v1`` lists ``{"name": "serviceaccounts/token", "group": "authentication.k8s.io",
"version": "v1", "kind": "TokenRequest", "verbs": ["create"]}`` and the aggregated document the
same subresource with that response kind.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from kubernetes import client as k8s

from kubeloop.api import SystemClock
from kubeloop.server import App, create_app
from kubeloop.store import SqliteStore

from ._uvicorn import serve

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


async def test_legacy_discovery_lists_the_token_subresource(client: httpx.AsyncClient) -> None:
    resources = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    assert resources["serviceaccounts/token"] == {
        "name": "serviceaccounts/token", "singularName": "", "namespaced": True,
        "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"],
    }
    # The ServiceAccount resource itself keeps its own kind and verbs.
    assert resources["serviceaccounts"]["kind"] == "ServiceAccount"


async def test_aggregated_discovery_lists_the_token_subresource(client: httpx.AsyncClient) -> None:
    [core] = (await client.get("/api", headers={"accept": AGGREGATED})).json()["items"]
    accounts = next(r for r in core["versions"][0]["resources"] if r["resource"] == "serviceaccounts")
    assert accounts["subresources"] == [{
        "subresource": "token",
        "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
        "verbs": ["create"],
    }]


async def test_token_subresource_only_creates(client: httpx.AsyncClient) -> None:
    # TokenREST has no Getter: go-restful registers only POST on .../token, so a GET is a 405, and the
    # generic subresource route (which now sees "token" among the subresources) must not answer it.
    await client.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})
    created = await client.post("/api/v1/namespaces/ns/serviceaccounts", json={"metadata": {"name": "sa"}})
    assert created.status_code == 201
    got = await client.get("/api/v1/namespaces/ns/serviceaccounts/sa/token")
    assert got.status_code == 405 and got.json()["reason"] == "MethodNotAllowed"


def _core_resources(url: str) -> Any:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        return k8s.CoreV1Api(api_client).get_api_resources()


async def test_the_kubernetes_client_reads_the_token_subresource(store: SqliteStore) -> None:
    app: App = create_app(store=store, clock=SystemClock())
    async with serve(app) as url:
        listed = await asyncio.to_thread(_core_resources, url)
    token = next(r for r in listed.resources if r.name == "serviceaccounts/token")
    assert (token.group, token.version, token.kind, token.verbs, token.namespaced) == (
        "authentication.k8s.io", "v1", "TokenRequest", ["create"], True)
