"""Legacy discovery through the client: ``/api`` and ``/apis`` are read together, then each group/version.

client-go's ``ServerGroupsAndResources`` fetches the two roots and then the group/versions in parallel;
a failure of a root fails the call (``ApiError``), a failed group/version is reported, not raised.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeloop.api import ApiError
from kubeloop.client import Client, discover_resources
from kubeloop.testing import FakeClock, InProcessCluster


async def test_discovery_asks_for_apis_before_api_has_answered(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock()) as cluster:
        apis_asked = asyncio.Event()
        api_answered_after_apis: list[bool] = []

        async def roots_in_parallel(scope: Any, receive: Any, send: Any) -> None:
            """Hold ``/api`` (up to a bounded number of loop turns) until ``/apis`` has been asked."""
            if scope["path"] == "/apis":
                apis_asked.set()
            if scope["path"] == "/api":
                for _ in range(1000):
                    if apis_asked.is_set():
                        break
                    await asyncio.sleep(0)
                api_answered_after_apis.append(apis_asked.is_set())
            await cluster.app(scope, receive, send)

        async with Client.from_asgi(roots_in_parallel) as client:
            discovery = await discover_resources(client)
        assert api_answered_after_apis == [True]
        assert {(r.group, r.plural) for r in discovery.preferred} >= {("", "pods"), ("apps", "deployments")}


@pytest.mark.parametrize("root", ["/api", "/apis"])
async def test_a_failed_root_fails_discovery_and_leaves_no_request_behind(tmp_path: Path, root: str) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), inject_http_faults=True) as cluster:
        faults = cluster.http_faults
        faults.fail("GET", 503, path_contains=root, times=2)  # matches /api and /apis for "/api"
        client: Client = cluster.client
        with pytest.raises(ApiError) as caught:
            await discover_resources(client)
        assert caught.value.code == 503
        assert not [r for r in faults.requests if r.path.count("/") > 1]  # no group/version was read
        assert faults.in_flight == 0


def _legacy_only(app: Any, *, path: str | None = None) -> Any:
    """``app`` as a server without aggregated discovery would answer (at ``path`` only, when given):
    every Accept is plain JSON."""

    async def legacy(scope: Any, receive: Any, send: Any) -> None:
        if path is None or scope["path"] == path:
            headers = [(k, b"application/json" if k.lower() == b"accept" else v) for k, v in scope["headers"]]
            scope = {**scope, "headers": headers}
        await app(scope, receive, send)

    return legacy


async def test_aggregated_discovery_finds_what_the_legacy_documents_list_in_two_requests(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), inject_http_faults=True) as cluster:
        faults = cluster.http_faults
        aggregated = await discover_resources(cluster.client)
        assert sorted(r.path for r in faults.requests) == ["/api", "/apis"]
        async with Client.from_asgi(_legacy_only(faults)) as client:
            legacy = await discover_resources(client)
        assert len(faults.requests) > 4  # the legacy path read each group/version
        assert set(aggregated.resources) == set(legacy.resources)
        assert set(aggregated.preferred) == set(legacy.preferred)
        assert aggregated.failed == legacy.failed == {}
        deployments = aggregated.by_kind("apps/v1", "Deployment")
        assert deployments is not None and deployments.namespaced and "deploy" in deployments.short_names
        assert {"create", "delete", "list", "watch"} <= set(deployments.verbs)


@pytest.mark.parametrize("legacy_root", ["/api", "/apis"])
async def test_when_only_one_root_answers_aggregated_both_are_read_as_legacy_documents(
    tmp_path: Path, legacy_root: str
) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock()) as cluster:
        aggregated = await discover_resources(cluster.client)
        async with Client.from_asgi(_legacy_only(cluster.app, path=legacy_root)) as client:
            mixed = await discover_resources(client)
        assert set(mixed.resources) == set(aggregated.resources)
        assert set(mixed.preferred) == set(aggregated.preferred)
        assert mixed.failed == {}
        assert {("", "pods"), ("apps", "deployments")} <= {(r.group, r.plural) for r in mixed.preferred}


async def test_a_stale_version_is_failed_and_a_resource_without_response_kind_is_dropped() -> None:
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

    def version(name: str, freshness: str, *resources: dict[str, Any]) -> dict[str, Any]:
        return {"version": name, "freshness": freshness, "resources": list(resources)}

    widget = {"resource": "widgets", "responseKind": {"group": "example.com", "version": "v2", "kind": "Widget"},
              "scope": "Cluster", "singularResource": "widget", "verbs": ["get", "list"]}  # fmt: skip
    documents = {
        "/api": {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
            {"metadata": {"name": ""}, "versions": [version("v1", "Current", {"resource": "things", "verbs": ["get"]})]},
        ]},
        "/apis": {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
            {"metadata": {"name": "example.com"},
             "versions": [version("v2", "Current", widget), version("v1", "Stale", widget)]},
        ]},
    }  # fmt: skip

    async def server(scope: Any, receive: Any, send: Any) -> None:
        body = orjson.dumps(documents[scope["path"]])
        headers = [(b"content-type", aggregated.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async with Client.from_asgi(server) as client:
        discovery = await discover_resources(client)
    assert [(r.group, r.version, r.plural, r.namespaced) for r in discovery.resources] == [
        ("example.com", "v2", "widgets", False)
    ]
    assert discovery.preferred == discovery.resources
    assert discovery.failed == {"example.com/v1": "stale GroupVersion discovery: example.com/v1"}
