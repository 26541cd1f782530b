"""The resource quota controller (k/k pkg/controller/resourcequota), on an in-process cluster with its manager.

The controller runs as kube-controller-manager runs it (a built-in of :func:`add_builtin_controllers`) on
the cluster's fake clock, so its 5-minute full recount is reached by advancing fake time.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubeloop.api import ApiError, Forbidden, NotFound, ResourceInfo
from kubeloop.client import Client
from kubeloop.controllers import BUILTIN_CONTROLLERS, add_builtin_controllers
from kubeloop.controllers._quota_monitors import SYNC_PERIOD, QuotaMonitors
from kubeloop.controllers._resource_quota import RESYNC_PERIOD, ResourceQuotaController, resources_to_count
from kubeloop.runtime import Manager
from kubeloop.testing import FakeClock, InProcessCluster, eventually, resource

from .conftest import CONFIGMAPS, CRDS, DEPLOYMENTS, PODS, fake_clock

QUOTAS = resource("", "ResourceQuota")


@contextlib.asynccontextmanager
async def quota_controller(cluster: InProcessCluster) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, clock=cluster.clock, graceful_shutdown_timeout=0)
    add_builtin_controllers(manager, names=["resourcequota"])
    task = asyncio.create_task(manager.run())
    try:
        yield manager
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def pod_body(name: str, cpu: str | None = None) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}} if cpu else {}
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": resources}]}}


async def status_of(cluster: InProcessCluster, name: str = "q") -> dict[str, Any]:
    return dict((await cluster.client.get(QUOTAS, name, namespace="ns")).get("status") or {})


async def status_becomes(cluster: InProcessCluster, expected: dict[str, Any], name: str = "q",
                         clock: FakeClock | None = None) -> None:
    async def check() -> bool:
        assert await status_of(cluster, name) == expected
        return True

    await eventually(check, clock=clock)


def test_the_controller_is_a_builtin() -> None:
    assert "resourcequota" in BUILTIN_CONTROLLERS


def test_kinds_to_count_follow_the_hard_names() -> None:
    counted = resources_to_count(["pods", "requests.cpu", "configmaps", "count/deployments.apps", "count/widgets"])
    assert counted == {("", "pods"): ["pods", "requests.cpu"], ("", "configmaps"): ["configmaps"],
                       ("apps", "deployments"): ["count/deployments.apps"], ("", "widgets"): ["count/widgets"]}


async def test_a_new_quota_counts_what_the_namespace_already_has(cluster: InProcessCluster) -> None:
    for name, cpu in (("a", "250m"), ("b", "500m")):
        await cluster.client.create(PODS, pod_body(name, cpu), namespace="ns")
    await cluster.create(CONFIGMAPS, "cm")
    async with quota_controller(cluster):
        await cluster.create(QUOTAS, "q", spec={"hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "1Gi",
                                                         "configmaps": "5", "count/deployments.apps": "3"}})
        await status_becomes(cluster, {
            "hard": {"configmaps": "5", "count/deployments.apps": "3", "limits.memory": "1Gi", "pods": "10",
                     "requests.cpu": "2"},
            "used": {"configmaps": "1", "count/deployments.apps": "0", "limits.memory": "0", "pods": "2",
                     "requests.cpu": "750m"},
        })


async def test_deleted_and_finished_pods_release_their_quota(cluster: InProcessCluster) -> None:
    async with quota_controller(cluster):
        await cluster.create(QUOTAS, "q", spec={"hard": {"pods": "2"}})
        await status_becomes(cluster, {"hard": {"pods": "2"}, "used": {"pods": "0"}})
        for name in ("a", "b"):
            await cluster.client.create(PODS, pod_body(name), namespace="ns")
        assert (await status_of(cluster))["used"] == {"pods": "2"}  # charged by admission, before the store write
        with pytest.raises(Forbidden, match="exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"):
            await cluster.client.create(PODS, pod_body("c"), namespace="ns")
        await cluster.client.delete(PODS, "a", namespace="ns")
        await status_becomes(cluster, {"hard": {"pods": "2"}, "used": {"pods": "1"}})
        await cluster.client.create(PODS, pod_body("c"), namespace="ns")
        # A pod that reached a terminal phase no longer counts against "pods" (QuotaV1Pod).
        done = await cluster.client.get(PODS, "b", namespace="ns")
        done["status"] = {"phase": "Succeeded"}
        await cluster.client.update(PODS, done, subresource="status")
        await status_becomes(cluster, {"hard": {"pods": "2"}, "used": {"pods": "1"}})


async def test_a_changed_hard_limit_is_taken_into_status(cluster: InProcessCluster) -> None:
    async with quota_controller(cluster):
        quota = await cluster.create(QUOTAS, "q", spec={"hard": {"pods": "2"}})
        await status_becomes(cluster, {"hard": {"pods": "2"}, "used": {"pods": "0"}})
        quota = await cluster.client.get(QUOTAS, "q", namespace="ns")
        quota["spec"]["hard"] = {"pods": "1", "count/configmaps": "4"}
        await cluster.client.update(QUOTAS, quota)
        await status_becomes(cluster, {"hard": {"count/configmaps": "4", "pods": "1"},
                                       "used": {"count/configmaps": "0", "pods": "0"}})


async def test_a_deleted_object_of_any_counted_kind_replenishes_at_once(cluster: InProcessCluster) -> None:
    """Upstream's QuotaMonitor watches every quotable resource (resource_quota_monitor.go ``SyncMonitors`` over
    ``GetQuotableResources``; ``controllerFor``'s DeleteFunc), not only the evaluators of registry.go: a deleted
    Deployment frees its ``count/deployments.apps`` without waiting for the 5-minute recount. (This test used to
    assert the opposite, the charge kept until the recount, which is not what upstream does.)"""
    deployment = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    async with quota_controller(cluster):
        await cluster.create(QUOTAS, "q", spec={"hard": {"count/deployments.apps": "1"}})
        await status_becomes(cluster, {"hard": {"count/deployments.apps": "1"}, "used": {"count/deployments.apps": "0"}})
        await cluster.client.create(DEPLOYMENTS, deployment, namespace="ns")
        assert (await status_of(cluster))["used"] == {"count/deployments.apps": "1"}  # charged by admission
        with pytest.raises(Forbidden, match="exceeded quota: q"):
            await cluster.client.create(DEPLOYMENTS, {**deployment, "metadata": {"name": "e"}}, namespace="ns")
        await cluster.client.delete(DEPLOYMENTS, "d", namespace="ns")
        await status_becomes(cluster, {"hard": {"count/deployments.apps": "1"},
                                       "used": {"count/deployments.apps": "0"}})
        await cluster.client.create(DEPLOYMENTS, {**deployment, "metadata": {"name": "e"}}, namespace="ns")


async def test_a_deleted_quota_replenishes_the_resourcequotas_count(cluster: InProcessCluster) -> None:
    """``resourcequotas`` is one of registry.go's legacy object-count aliases; the monitor of ResourceQuotas
    replenishes the quotas that track it when one is deleted."""
    async with quota_controller(cluster):
        await cluster.create(QUOTAS, "q", spec={"hard": {"resourcequotas": "2", "count/resourcequotas": "5"}})
        await status_becomes(cluster, {"hard": {"count/resourcequotas": "5", "resourcequotas": "2"},
                                       "used": {"count/resourcequotas": "1", "resourcequotas": "1"}})
        await cluster.create(QUOTAS, "other", spec={"hard": {"pods": "1"}})
        assert (await status_of(cluster))["used"] == {"count/resourcequotas": "2", "resourcequotas": "2"}
        with pytest.raises(Forbidden, match="exceeded quota: q, requested: resourcequotas=1"):
            await cluster.create(QUOTAS, "third", spec={"hard": {"pods": "1"}})
        await cluster.client.delete(QUOTAS, "other", namespace="ns")
        await status_becomes(cluster, {"hard": {"count/resourcequotas": "5", "resourcequotas": "2"},
                                       "used": {"count/resourcequotas": "1", "resourcequotas": "1"}})


async def test_the_full_recount_corrects_a_wrong_used_after_the_sync_period(cluster: InProcessCluster) -> None:
    """A status write wakes nothing (``addQuota`` on update only when ``spec.hard`` changed); the periodic
    recount (``--resource-quota-sync-period``, 5m) puts ``used`` right again."""
    clock = fake_clock(cluster)
    async with quota_controller(cluster):
        await cluster.create(QUOTAS, "q", spec={"hard": {"count/deployments.apps": "3"}})
        await status_becomes(cluster, {"hard": {"count/deployments.apps": "3"}, "used": {"count/deployments.apps": "0"}})
        quota = await cluster.client.get(QUOTAS, "q", namespace="ns")
        quota["status"]["used"] = {"count/deployments.apps": "2"}
        await cluster.client.update(QUOTAS, quota, subresource="status")
        for _ in range(20):
            await asyncio.sleep(0)
        assert (await status_of(cluster))["used"] == {"count/deployments.apps": "2"}
        await clock.advance(RESYNC_PERIOD)
        await status_becomes(cluster, {"hard": {"count/deployments.apps": "3"},
                                       "used": {"count/deployments.apps": "0"}}, clock=clock)


async def test_replication_controllers_are_counted_and_refused_past_the_quota(cluster: InProcessCluster) -> None:
    """``replicationcontrollers`` (the legacy alias) and ``count/replicationcontrollers`` count core/v1 RCs."""
    rcs = resource("", "ReplicationController")

    def rc_body(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"template": {
            "metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}

    await cluster.client.create(rcs, rc_body("one"), namespace="ns")
    async with quota_controller(cluster):
        await cluster.create(QUOTAS, "q", spec={"hard": {"replicationcontrollers": "2",
                                                         "count/replicationcontrollers": "3"}})
        await status_becomes(cluster, {"hard": {"count/replicationcontrollers": "3", "replicationcontrollers": "2"},
                                       "used": {"count/replicationcontrollers": "1", "replicationcontrollers": "1"}})
        await cluster.client.create(rcs, rc_body("two"), namespace="ns")
        with pytest.raises(Forbidden, match="exceeded quota: q, requested: replicationcontrollers=1, "
                                            "used: replicationcontrollers=2, limited: replicationcontrollers=2"):
            await cluster.client.create(rcs, rc_body("three"), namespace="ns")
        # A deleted RC replenishes the quota at once (the controller watches RCs, as upstream's monitors do).
        await cluster.client.delete(rcs, "one", namespace="ns", propagation_policy="Background")
        await status_becomes(cluster, {"hard": {"count/replicationcontrollers": "3", "replicationcontrollers": "2"},
                                       "used": {"count/replicationcontrollers": "1", "replicationcontrollers": "1"}})


WIDGETS = ResourceInfo("example.com", "v1", "Widget", "widgets", "widget", True, custom=True)
WIDGET_KIND = (WIDGETS.group, WIDGETS.plural)


async def serve_widgets(cluster: InProcessCluster, first: str) -> None:
    """Create the widgets' CRD and wait until it serves: until widget ``first`` could be created in ``ns``."""
    from .test_gc_propagation import CRD

    await cluster.client.create(CRDS, CRD)

    async def served() -> dict[str, Any] | None:
        try:
            return await cluster.create(WIDGETS, first)
        except ApiError:
            return None

    await eventually(served, clock=fake_clock(cluster))


async def test_a_custom_resource_count_is_replenished_when_one_is_deleted(cluster: InProcessCluster) -> None:
    """``count/<resource>.<group>`` of a custom resource: upstream's QuotaMonitor monitors the resources
    discovery lists (CRDs too) and gives each the generic object count evaluator (``SyncMonitors``:
    ``generic.NewObjectCountEvaluator``), so a deleted widget frees its count at once."""
    widgets = WIDGETS
    await serve_widgets(cluster, "w1")
    async with quota_controller(cluster):
        await cluster.create(QUOTAS, "q", spec={"hard": {"count/widgets.example.com": "2"}})
        await status_becomes(cluster, {"hard": {"count/widgets.example.com": "2"},
                                       "used": {"count/widgets.example.com": "1"}}, clock=fake_clock(cluster))
        await cluster.create(widgets, "w2")
        with pytest.raises(Forbidden, match=r"exceeded quota: q, requested: count/widgets\.example\.com=1"):
            await cluster.create(widgets, "w3")
        await cluster.client.delete(widgets, "w1", namespace="ns")
        await status_becomes(cluster, {"hard": {"count/widgets.example.com": "2"},
                                       "used": {"count/widgets.example.com": "1"}})
        await cluster.create(widgets, "w3")


async def test_a_deleted_crds_monitor_is_stopped_and_a_served_again_kind_is_monitored_afresh(
    cluster: InProcessCluster,
) -> None:
    """kube-controller-manager runs ``resourceQuotaController.Sync(ctx, discoveryFunc, 30*time.Second)``
    (cmd/kube-controller-manager/app/core.go); ``SyncMonitors`` stops the monitors of resources discovery
    no longer lists. So a deleted CRD's kind is not watched (nor its list retried) for ever, and when the
    CRD comes back, a quota counting it is replenished on a delete again."""
    widgets, kind = WIDGETS, WIDGET_KIND
    clock = fake_clock(cluster)
    hard = {"count/widgets.example.com": "5"}
    await serve_widgets(cluster, "w1")
    manager = Manager(cluster.client, clock=cluster.clock, graceful_shutdown_timeout=0)
    controller = ResourceQuotaController(manager)  # what add_builtin_controllers adds, kept in hand
    manager.add_controller(controller.controller)
    task = asyncio.create_task(manager.run())
    try:
        await cluster.create(QUOTAS, "q", spec={"hard": hard})
        await status_becomes(cluster, {"hard": hard, "used": {"count/widgets.example.com": "1"}}, clock=clock)
        first = controller.monitors.informer(kind)
        assert first is not None and first.running
        # Discovery still lists widgets: a sync keeps the monitor.
        await controller.monitors.sync()
        assert controller.monitors.informer(kind) is first and first.running

        await cluster.client.delete(CRDS, "widgets.example.com")

        async def crd_gone() -> bool:
            try:
                await cluster.client.get(CRDS, "widgets.example.com")
            except NotFound:
                return True
            return False

        await eventually(crd_gone, clock=clock)

        async def stopped() -> bool:
            assert controller.monitors.informer(kind) is None
            return True

        # The periodic sync (run by the manager on its clock) stops it.
        await eventually(stopped, clock=clock, step=SYNC_PERIOD / 4)
        assert not first.running

        # Served again: the quota's next sync (a changed hard limit here) monitors the kind afresh.
        await serve_widgets(cluster, "w2")
        await cluster.create(widgets, "w3")
        hard = {"count/widgets.example.com": "6"}
        quota = await cluster.client.get(QUOTAS, "q", namespace="ns")
        quota["spec"]["hard"] = hard
        await cluster.client.update(QUOTAS, quota)
        await status_becomes(cluster, {"hard": hard, "used": {"count/widgets.example.com": "2"}}, clock=clock)

        async def monitored_and_listed() -> bool:
            assert controller.monitors.informer(kind) is not None
            assert not controller.monitors.listing(widgets)
            return True

        await eventually(monitored_and_listed, clock=clock)
        again = controller.monitors.informer(kind)
        assert again is not None and again is not first and again.running
        await cluster.client.delete(widgets, "w2", namespace="ns")
        await status_becomes(cluster, {"hard": hard, "used": {"count/widgets.example.com": "1"}})
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class _BrokenDiscovery:
    """Passes every request to the server, except that the discovery roots (``/api``, ``/apis``) answer 503
    while ``broken`` is set, and an aggregated discovery list with no group while ``empty`` is (faults by
    wrapping the real server: nothing is mocked)."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self.broken = False
        self.empty = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if not (self.broken or self.empty) or scope.get("type") != "http" or scope.get("path") not in ("/api", "/apis"):
            await self._app(scope, receive, send)
            return
        if self.broken:
            status, body = 503, orjson.dumps({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "the server is currently unable to handle the request", "reason": "ServiceUnavailable",
                "code": 503})
        else:
            status, body = 200, orjson.dumps({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                                              "metadata": {}, "items": []})
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


async def test_a_failed_partial_or_empty_discovery_stops_no_monitor(cluster: InProcessCluster) -> None:
    """resource_quota_controller.go ``Sync``: when discovery fails for some group/versions, every old monitor
    is kept (``IsGroupDiscoveryFailedError``: "don't remove any existing informers"); when it fails outright
    or lists no resource, the sync changes nothing ("short circuit in non-discovery error cases or if
    discovery returned zero resources"). Here the widgets' CRD is gone, so only a discovery that answered
    completely may stop their monitor."""
    from .test_gc_expected_monitors import StaleGroup

    widgets, kind = WIDGETS, WIDGET_KIND
    await serve_widgets(cluster, "w1")
    broken = _BrokenDiscovery(cluster.app)
    stale = StaleGroup(broken)
    async with Client.from_asgi(stale, clock=cluster.clock) as client:
        manager = Manager(client, clock=cluster.clock, graceful_shutdown_timeout=0)
        gone: list[tuple[str, str]] = []
        monitors = QuotaMonitors(client, manager.informers, clock=cluster.clock, rng=random.Random(7),
                                 on_gone=gone.append)
        monitors.monitor(widgets, lambda _obj: None)
        informer = monitors.informer(kind)
        assert informer is not None and informer.running
        try:
            await cluster.client.delete(CRDS, "widgets.example.com")

            async def crd_gone() -> bool:
                return await cluster.gone(CRDS, "widgets.example.com")

            await eventually(crd_gone, clock=fake_clock(cluster))
            stale.stale = "apps"  # apps/v1 Stale: a partial discovery
            await monitors.sync()
            assert monitors.informer(kind) is informer and informer.running and gone == []
            stale.stale = ""
            broken.broken = True  # no discovery at all
            await monitors.sync()
            assert monitors.informer(kind) is informer and informer.running and gone == []
            broken.broken = False
            broken.empty = True  # a discovery that lists nothing
            await monitors.sync()
            assert monitors.informer(kind) is informer and informer.running and gone == []
            broken.empty = False  # a complete discovery without widgets: the monitor goes
            await monitors.sync()
            assert monitors.informer(kind) is None and not informer.running and gone == [kind]
        finally:
            await informer.stop()
