"""The official ``kubernetes`` client sees NamespaceLifecycle's answers for objects left in a gone namespace.

Upstream: apiserver ``pkg/admission/plugin/namespace/lifecycle/admission.go`` (release-1.32): an UPDATE
(replace, patch) of a namespaced object whose namespace does not exist is ``namespaces "x" not found``;
a DELETE is allowed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.api import SystemClock
from kubeloop.server import App, create_app
from kubeloop.store import SqliteStore

from ._uvicorn import serve


@pytest.fixture
async def real_app(store: SqliteStore) -> App:
    return create_app(store=store, clock=SystemClock())


def _flow(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        core = k8s.CoreV1Api(api_client)
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="gone")))
        core.create_namespaced_config_map("gone", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="cm"), data={"a": "1"}))
        core.delete_namespace("gone")
        # No namespace controller here: finalize it away with its ConfigMap still stored.
        ns = core.read_namespace("gone")
        ns.spec.finalizers = []
        core.replace_namespace_finalize("gone", ns)
        for verb, call in (
            ("patch", lambda: core.patch_namespaced_config_map("cm", "gone", {"data": {"a": "2"}})),
            ("replace", lambda: core.replace_namespaced_config_map(
                "cm", "gone", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="cm"), data={"a": "3"}))),
        ):
            try:
                call()
                out[verb] = None
            except ApiException as exc:
                out[verb] = (exc.status, json.loads(exc.body)["message"])
        out["data"] = core.read_namespaced_config_map("cm", "gone").data
        core.delete_namespaced_config_map("cm", "gone")
        try:
            core.read_namespaced_config_map("cm", "gone")
        except ApiException as exc:
            out["after_delete"] = exc.status
    return out


async def test_kubernetes_client_cannot_change_but_can_delete_content_of_a_gone_namespace(real_app: App) -> None:
    async with serve(real_app) as url:
        out = await asyncio.to_thread(_flow, url)
    assert out["patch"] == (404, 'namespaces "gone" not found')
    assert out["replace"] == (404, 'namespaces "gone" not found')
    assert out["data"] == {"a": "1"}
    assert out["after_delete"] == 404
