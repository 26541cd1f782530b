"""DefaultTolerationSeconds admission (upstream plugin/pkg/admission/defaulttolerationseconds), through the API."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.client import Client
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, DefaultTolerationSeconds, create_app
from kubeloop.server._admission import AdmissionAttributes
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

KINDS = KindRegistry()
NAMESPACES: ResourceInfo = KINDS.by_kind("", "Namespace")  # type: ignore[assignment]
PODS: ResourceInfo = KINDS.by_kind("", "Pod")  # type: ignore[assignment]
NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
               "tolerationSeconds": 300}


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Client]:
    store = await SqliteStore.open(tmp_path / "db")
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(3), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    client = Client.from_asgi(app, default_namespace="ns")
    await client.create(NAMESPACES, {"metadata": {"name": "ns"}})
    try:
        yield client
    finally:
        await client.close()
        await app.shutdown()
        await store.close()


def pod(name: str, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def test_pod_without_tolerations_gets_300s_not_ready_and_unreachable_ones(api: Client) -> None:
    created = await api.create(PODS, pod("web"))
    assert created["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]
    assert (await api.get(PODS, "web"))["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]


async def test_own_toleration_for_a_taint_is_kept_and_only_the_other_is_added(api: Client) -> None:
    own = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 6000}
    created = await api.create(PODS, pod("db", [own]))
    assert created["spec"]["tolerations"] == [own, NOT_READY]


async def test_empty_key_or_empty_effect_tolerates_both_taints(api: Client) -> None:
    every_taint = {"operator": "Exists"}
    assert (await api.create(PODS, pod("a", [every_taint])))["spec"]["tolerations"] == [every_taint]
    no_execute = {"operator": "Exists", "effect": "NoExecute"}
    assert (await api.create(PODS, pod("b", [no_execute])))["spec"]["tolerations"] == [no_execute]
    # A NoSchedule toleration of the same key does not count (the effect must be NoExecute or empty).
    no_schedule = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}
    assert (await api.create(PODS, pod("c", [no_schedule])))["spec"]["tolerations"] == [
        no_schedule, NOT_READY, UNREACHABLE]


async def test_update_that_drops_the_defaults_gets_them_back(api: Client) -> None:
    created = await api.create(PODS, pod("web"))
    created["spec"].pop("tolerations")
    created["metadata"]["labels"] = {"app": "web"}
    updated = await api.update(PODS, created)
    assert updated["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]
    assert updated["metadata"]["labels"] == {"app": "web"}


async def test_status_subresource_is_left_alone(api: Client) -> None:
    created = await api.create(PODS, pod("web"))
    created["spec"]["tolerations"] = []
    created["status"] = {"phase": "Running"}
    updated = await api.update(PODS, created, subresource="status")
    # The status strategy keeps the stored spec; admission on the subresource adds nothing of its own.
    assert updated["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]
    assert updated["status"]["phase"] == "Running"


async def test_the_plugin_leaves_subresources_other_kinds_and_deletes_alone() -> None:
    # Through the API a status write keeps the stored spec anyway; here the plugin itself is asked.
    plugin = DefaultTolerationSeconds()
    configmaps: ResourceInfo = KINDS.by_kind("", "ConfigMap")  # type: ignore[assignment]
    for attributes in (AdmissionAttributes("UPDATE", PODS, "ns", "web", subresource="status"),
                       AdmissionAttributes("CREATE", PODS, "ns", "web", subresource="binding"),
                       AdmissionAttributes("CREATE", configmaps, "ns", "web"),
                       AdmissionAttributes("DELETE", PODS, "ns", "web")):
        obj = pod("web")
        await plugin(attributes, obj, None)
        assert "tolerations" not in obj["spec"], attributes
    obj = pod("web")
    await plugin(AdmissionAttributes("CREATE", PODS, "ns", "web"), obj, None)
    assert obj["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]
    short = DefaultTolerationSeconds(not_ready_seconds=30, unreachable_seconds=60)
    obj = pod("web")
    await short(AdmissionAttributes("UPDATE", PODS, "ns", "web"), obj, None)
    assert [t["tolerationSeconds"] for t in obj["spec"]["tolerations"]] == [30, 60]
