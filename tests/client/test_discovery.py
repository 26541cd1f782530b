"""Legacy discovery through the client: ``/api`` and ``/apis`` are read together, then each group/version.

client-go's ``ServerGroupsAndResources`` fetches the two roots and then the group/versions in parallel;
a failure of a root fails the call (``ApiError``), a failed group/version is reported, not raised.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

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
