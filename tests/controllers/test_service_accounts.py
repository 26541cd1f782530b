"""The ServiceAccount controller and the root CA publisher, run as kube-controller-manager runs them.

Upstream: k/k pkg/controller/serviceaccount/serviceaccounts_controller.go and
pkg/controller/certificates/rootcacertpublisher/publisher.go (1.32). Both are built-ins of
:func:`add_builtin_controllers`, on an in-process cluster whose server has the ServiceAccount admission
plugin on (``service_accounts=True``), so pods are admitted as on a real cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop.client import Client
from kubeloop.controllers import BUILTIN_CONTROLLERS, RootCACertPublisher, add_builtin_controllers, has_synced
from kubeloop.controllers._root_ca_publisher import DESCRIPTION
from kubeloop.runtime import Manager
from kubeloop.testing import FakeClock, InProcessCluster, eventually, resource

from .conftest import CONFIGMAPS, NAMESPACES, PODS

SERVICEACCOUNTS = resource("", "ServiceAccount")
QUOTAS = resource("", "ResourceQuota")
CA = "-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG...test...\n-----END CERTIFICATE-----\n"
DESCRIPTION_KEY = "kubernetes.io/description"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=["ns"], default_namespace="ns",
                                service_accounts=True) as c:  # fmt: skip
        yield c


@contextlib.asynccontextmanager
async def controllers(cluster: InProcessCluster, *names: str) -> AsyncIterator[Manager]:
    manager = Manager(cluster.new_client(Client), clock=cluster.clock, graceful_shutdown_timeout=0)
    added = add_builtin_controllers(manager, names=names or ["serviceaccount", "root-ca-cert-publisher"])
    publisher = added.get("root-ca-cert-publisher")
    if isinstance(publisher, RootCACertPublisher):
        publisher.root_ca = CA
    task = asyncio.create_task(manager.run())
    try:
        yield manager
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def settled(cluster: InProcessCluster, manager: Manager) -> None:
    async def idle() -> bool:
        return manager.idle()

    assert isinstance(cluster.clock, FakeClock)
    await eventually(idle, clock=cluster.clock)


async def present(cluster: InProcessCluster, info: Any, name: str, namespace: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        return await cluster.get_or_none(info, name, namespace)

    found: dict[str, Any] = await cluster.eventually(check)
    return found


def test_both_are_builtin_controllers() -> None:
    assert {"serviceaccount", "root-ca-cert-publisher"} <= set(BUILTIN_CONTROLLERS)


async def test_every_namespace_gets_a_default_service_account(cluster: InProcessCluster) -> None:
    async with controllers(cluster, "serviceaccount"):
        sa = await present(cluster, SERVICEACCOUNTS, "default", "ns")
        assert set(sa) >= {"apiVersion", "kind", "metadata"}
        assert "secrets" not in sa
        for system in ("default", "kube-system", "kube-public"):
            await present(cluster, SERVICEACCOUNTS, "default", system)
        await cluster.client.create(NAMESPACES, {"metadata": {"name": "fresh"}})
        await present(cluster, SERVICEACCOUNTS, "default", "fresh")


async def test_a_deleted_default_service_account_comes_back(cluster: InProcessCluster) -> None:
    async with controllers(cluster, "serviceaccount"):
        first = await present(cluster, SERVICEACCOUNTS, "default", "ns")
        await cluster.client.delete(SERVICEACCOUNTS, "default", namespace="ns")

        async def recreated() -> bool:
            again = await cluster.get_or_none(SERVICEACCOUNTS, "default", "ns")
            return again is not None and again["metadata"]["uid"] != first["metadata"]["uid"]

        await cluster.eventually(recreated)


async def test_nothing_is_created_in_a_terminating_namespace(cluster: InProcessCluster) -> None:
    # No namespace controller runs, so a deleted namespace stays Terminating (its spec finalizer).
    await cluster.client.create(NAMESPACES, {"metadata": {"name": "leaving"}})
    await cluster.client.delete(NAMESPACES, "leaving")
    async with controllers(cluster) as manager:
        await present(cluster, SERVICEACCOUNTS, "default", "ns")
        await settled(cluster, manager)
        assert await cluster.gone(SERVICEACCOUNTS, "default", "leaving")
        assert await cluster.gone(CONFIGMAPS, "kube-root-ca.crt", "leaving")


async def test_every_namespace_gets_the_root_ca_config_map(cluster: InProcessCluster) -> None:
    async with controllers(cluster, "root-ca-cert-publisher"):
        cm = await present(cluster, CONFIGMAPS, "kube-root-ca.crt", "ns")
        assert cm["data"] == {"ca.crt": CA}
        assert cm["metadata"]["annotations"] == {DESCRIPTION_KEY: DESCRIPTION}
        await cluster.client.create(NAMESPACES, {"metadata": {"name": "fresh"}})
        assert (await present(cluster, CONFIGMAPS, "kube-root-ca.crt", "fresh"))["data"] == {"ca.crt": CA}


async def test_root_ca_config_map_is_put_back_when_edited_or_deleted(cluster: InProcessCluster) -> None:
    async with controllers(cluster, "root-ca-cert-publisher"):
        cm = await present(cluster, CONFIGMAPS, "kube-root-ca.crt", "ns")
        cm["data"] = {"ca.crt": "tampered", "extra": "x"}
        cm["metadata"]["annotations"] = {"team": "red"}
        await cluster.client.update(CONFIGMAPS, cm)

        async def restored() -> bool:
            now = await cluster.client.get(CONFIGMAPS, "kube-root-ca.crt", namespace="ns")
            assert now["data"] == {"ca.crt": CA}
            assert now["metadata"]["annotations"] == {"team": "red", DESCRIPTION_KEY: DESCRIPTION}
            return True

        await cluster.eventually(restored)
        await cluster.client.delete(CONFIGMAPS, "kube-root-ca.crt", namespace="ns")
        assert (await present(cluster, CONFIGMAPS, "kube-root-ca.crt", "ns"))["data"] == {"ca.crt": CA}


async def test_pods_of_a_new_namespace_run_as_its_default_service_account(cluster: InProcessCluster) -> None:
    async with controllers(cluster):
        await cluster.client.create(NAMESPACES, {"metadata": {"name": "apps"}})
        # The admission plugin waits (on the fake clock) for the controller's ServiceAccount: fake time
        # stands still until the controller has created it (its write goes through the store's writer
        # thread, in real time), then moves, so the plugin's next read finds it.
        creating = asyncio.ensure_future(cluster.client.create(
            PODS, {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            namespace="apps"))

        async def default_exists() -> bool:
            return await cluster.exists(SERVICEACCOUNTS, "default", "apps")

        await eventually(default_exists, interval=0.002)

        async def admitted() -> bool:
            return creating.done()

        await cluster.eventually(admitted, step=0.05)
        spec = creating.result()["spec"]
        assert spec["serviceAccountName"] == "default"
        assert spec["volumes"][0]["projected"]["sources"][1]["configMap"]["name"] == "kube-root-ca.crt"


async def test_quota_counts_the_root_ca_config_map(cluster: InProcessCluster) -> None:
    async with controllers(cluster, "root-ca-cert-publisher", "resourcequota"):
        await present(cluster, CONFIGMAPS, "kube-root-ca.crt", "ns")
        await cluster.create(QUOTAS, "q", spec={"hard": {"configmaps": "5", "count/configmaps": "5"}})

        async def counted() -> bool:
            quota = await cluster.client.get(QUOTAS, "q", namespace="ns")
            assert (quota.get("status") or {}).get("used") == {"configmaps": "1", "count/configmaps": "1"}
            return True

        await cluster.eventually(counted)


async def test_every_built_in_controller_beside_them_still_runs_and_syncs(cluster: InProcessCluster) -> None:
    # The namespace controller is a runnable with a ``controller`` of its own: it must still be run.
    manager = Manager(cluster.new_client(Client), clock=cluster.clock, graceful_shutdown_timeout=0)
    added = add_builtin_controllers(manager, names=["namespace", "serviceaccount", "root-ca-cert-publisher"])
    task = asyncio.create_task(manager.run())
    try:
        async def synced() -> bool:
            return all(has_synced(c) for c in added.values())

        await cluster.eventually(synced)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
