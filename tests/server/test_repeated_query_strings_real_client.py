"""The official ``kubernetes`` client repeats its query strings (``fieldManager=...``, ``dryRun=All``): every
write still gets the options its own query string says, as when each request parsed its own
(``kubeloop.server._http.query_params`` and ``_options.parse_write_options`` share a repeated query's parse
and options between requests)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.api import SystemClock
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, create_app
from kubeloop.store import SqliteStore

from ._uvicorn import serve


def _writes(url: str) -> dict[str, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        core = k8s.CoreV1Api(api_client)
        for name in ("one", "two"):
            core.create_namespaced_config_map("default", {"metadata": {"name": name}, "data": {"k": "v"}},
                                              field_manager="tool-a")
        core.create_namespaced_config_map("default", {"metadata": {"name": "dry"}}, field_manager="tool-a",
                                          dry_run="All")
        for value in ("w1", "w2"):
            core.patch_namespaced_config_map("two", "default", {"data": {"k": value}}, field_manager="tool-b")
        refused = []
        for _ in range(2):
            try:
                core.patch_namespaced_config_map("two", "default", {"data": {"k": "w3"}}, field_manager="bad\x01")
            except ApiException as error:
                refused.append(error.status)
        names = [item.metadata.name for item in core.list_namespaced_config_map("default").items]
        two = orjson.loads(core.read_namespaced_config_map("two", "default", _preload_content=False).data)
        return {"names": names, "two": two, "refused": refused}


async def test_each_write_gets_the_options_of_its_own_query_string(store: SqliteStore) -> None:
    app: App = create_app(store=store, clock=SystemClock(), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    async with serve(app) as url:
        seen = await asyncio.to_thread(_writes, url)
    assert sorted(seen["names"]) == ["one", "two"]  # the dry run stored nothing
    assert seen["refused"] == [422, 422]
    assert seen["two"]["data"] == {"k": "w2"}
    managers = sorted(entry["manager"] for entry in seen["two"]["metadata"]["managedFields"])
    assert managers == ["tool-a", "tool-b"]
