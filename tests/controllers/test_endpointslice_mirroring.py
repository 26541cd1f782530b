"""The endpointslice-mirroring controller through the API: hand-written Endpoints of Services without a
selector mirrored into EndpointSlices (k/k release-1.32 pkg/controller/endpointslicemirroring:
endpointslicemirroring_controller.go syncEndpoints, reconciler.go, utils.go, events.go)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.client import Client, WatchEvent
from kubeloop.controllers import add_builtin_controllers
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.runtime import Manager
from kubeloop.testing import FakeClock, InProcessCluster, InterceptedClient

from ._world import NS, ManagedWorld, managed_cluster

SERVICES = builtin("", "services")
ENDPOINTS = builtin("", "endpoints")
SLICES = builtin("discovery.k8s.io", "endpointslices")
EVENTS = builtin("", "events")
NAMESPACES = builtin("", "namespaces")
MIRROR = "endpointslicemirroring-controller.k8s.io"


@dataclass(kw_only=True)
class World(ManagedWorld):
    poll_tries = 2000

    async def slices(self, name: str) -> list[dict[str, Any]]:
        listed = await self.client.list(SLICES, namespace=NS, label_selector=f"kubernetes.io/service-name={name}")
        return sorted(listed.get("items") or [], key=lambda s: (s["addressType"], s["metadata"]["name"]))

    async def until_slices(self, name: str, count: int, addresses: int | None = None) -> list[dict[str, Any]]:
        async def check() -> tuple[list[dict[str, Any]]] | None:
            found = await self.slices(name)
            total = sum(len(s.get("endpoints") or []) for s in found)
            return (found,) if len(found) == count and (addresses is None or total == addresses) else None

        result: tuple[list[dict[str, Any]]] = await self.eventually(check)
        return result[0]

    async def events_about(self, name: str, reason: str) -> list[dict[str, Any]]:
        items = (await self.client.list(EVENTS, namespace=NS)).get("items") or []
        return [e for e in items if e["involvedObject"].get("name") == name and e["reason"] == reason]


@contextlib.asynccontextmanager
async def open_world(tmp_path: Path) -> AsyncIterator[World]:
    async with managed_cluster(tmp_path) as (cluster, ctl, manager):
        add_builtin_controllers(manager, names=["endpointslice-mirroring"])
        world = World(cluster=cluster, ctl=ctl, manager=manager)
        async with world.started():
            await world.synced()
            yield world


def service(name: str = "ext", *, selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"name": "http", "port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def endpoints(name: str = "ext", *subsets: dict[str, Any], labels: dict[str, str] | None = None,
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta, "subsets": list(subsets)}


def subset(*ips: str, not_ready: tuple[str, ...] = (), port: int = 8080, **port_fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"name": "http", "port": port, **port_fields}]}
    if ips:
        body["addresses"] = [{"ip": ip} for ip in ips]
    if not_ready:
        body["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return body


def addresses(es: dict[str, Any]) -> list[str]:
    return sorted(a for e in es.get("endpoints") or [] for a in e["addresses"])


async def test_endpoints_of_a_service_without_selector_are_mirrored_per_address_type(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        ep = await world.create(ENDPOINTS, endpoints("ext", {
            "addresses": [{"ip": "10.0.0.2", "hostname": "db-0", "nodeName": "node-a",
                           "targetRef": {"kind": "Pod", "namespace": NS, "name": "db-0", "uid": "u-0"}},
                          {"ip": "fd00::2"}],
            "notReadyAddresses": [{"ip": "10.0.0.3"}],
            "ports": [{"name": "http", "port": 8080, "appProtocol": "http"}, {"name": "dns", "port": 53,
                                                                              "protocol": "UDP"}]},
            labels={"team": "db"},
            annotations={"note": "kept", "endpoints.kubernetes.io/last-change-trigger-time": "2024-01-01T00:00:00Z",
                         "kubectl.kubernetes.io/last-applied-configuration": "{}"}))
        v4, v6 = await world.until_slices("ext", 2, addresses=3)
        assert (v4["addressType"], v6["addressType"]) == ("IPv4", "IPv6")
        for es in (v4, v6):
            meta = es["metadata"]
            assert meta["generateName"] == "ext-" and meta["name"].startswith("ext-")
            assert meta["labels"] == {"team": "db", "kubernetes.io/service-name": "ext",
                                      "endpointslice.kubernetes.io/managed-by": MIRROR}
            # utils.go newEndpointSlice: every annotation but the trigger time and kubectl's last-applied.
            assert meta["annotations"] == {"note": "kept"}
            # NewControllerRef(endpoints, v1 Endpoints): the Endpoints controls its slices, not the Service.
            assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Endpoints", "name": "ext",
                                                "uid": ep["metadata"]["uid"], "controller": True,
                                                "blockOwnerDeletion": True}]
            assert sorted(es["ports"], key=lambda p: p["name"]) == [
                {"name": "dns", "port": 53, "protocol": "UDP"},
                {"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}]
        assert sorted(v4["endpoints"], key=lambda e: e["addresses"]) == [
            {"addresses": ["10.0.0.2"], "conditions": {"ready": True}, "hostname": "db-0", "nodeName": "node-a",
             "targetRef": {"kind": "Pod", "namespace": NS, "name": "db-0", "uid": "u-0"}},
            {"addresses": ["10.0.0.3"], "conditions": {"ready": False}}]
        assert v6["endpoints"] == [{"addresses": ["fd00::2"], "conditions": {"ready": True}}]
        assert await world.quiet_writes() == 0


async def test_each_set_of_ports_gets_its_slice_and_a_changed_port_updates_it_in_place(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        await world.create(ENDPOINTS, endpoints("ext", subset("10.0.0.1", port=80), subset("10.0.0.2", port=81)))
        slices = await world.until_slices("ext", 2, addresses=2)
        assert sorted((s["ports"][0]["port"], addresses(s)) for s in slices) == [(80, ["10.0.0.1"]), (81, ["10.0.0.2"])]
        names = sorted(s["metadata"]["name"] for s in slices)

        world.ctl.reset()
        current = await world.get(ENDPOINTS, "ext")
        current["subsets"] = [subset("10.0.0.1", port=80), subset("10.0.0.2", port=82)]
        await world.client.update(ENDPOINTS, current, namespace=NS)

        async def moved() -> list[dict[str, Any]] | None:
            found = await world.slices("ext")
            return found if sorted(s["ports"][0]["port"] for s in found) == [80, 82] else None

        slices = await world.eventually(moved)
        # recycleSlices: the slice for port 81 became the one for port 82, no create and no delete.
        assert sorted(s["metadata"]["name"] for s in slices) == names
        assert world.ctl.count(verb="create", resource="endpointslices") == 0
        assert world.ctl.count(verb="delete", resource="endpointslices") == 0
        assert world.ctl.count(verb="update", resource="endpointslices") == 1
        assert await world.quiet_writes() == 0


async def test_duplicate_addresses_are_repacked_and_ready_wins(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        # The same address twice on the same port, once ready and once not, in two subsets (RepackSubsets).
        await world.create(ENDPOINTS, endpoints("ext", subset("10.0.0.1", not_ready=("10.0.0.2",)),
                                                subset("10.0.0.3", not_ready=("10.0.0.1",))))
        (es,) = await world.until_slices("ext", 1)
        assert sorted((e["addresses"][0], e["conditions"]["ready"]) for e in es["endpoints"]) == [
            ("10.0.0.1", True), ("10.0.0.2", False), ("10.0.0.3", True)]


async def test_an_ipv4_mapped_address_is_mirrored_as_ipv4(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        # getAddressType: ParseIPSloppy(ip).To4() != nil; the address is copied as written.
        await world.create(ENDPOINTS, endpoints("ext", subset("::ffff:10.0.0.5", "fd00::5")))
        v4, v6 = await world.until_slices("ext", 2)
        assert (v4["addressType"], addresses(v4)) == ("IPv4", ["::ffff:10.0.0.5"])
        assert (v6["addressType"], addresses(v6)) == ("IPv6", ["fd00::5"])


async def test_leading_zeros_are_mirrored_as_written_and_are_no_invalid_address(tmp_path: Path) -> None:
    # 1.32 validates Endpoints addresses with ParseIPSloppy (010.0.0.1 is 10.0.0.1) and getAddressType parses
    # the same way: the address is IPv4, copied as written; no InvalidIPAddress. An address the mirroring
    # would count as invalid cannot pass the API's validation (the two parsers are one).
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        await world.create(ENDPOINTS, endpoints("ext", subset("010.0.0.1", "::ffff:010.0.0.2", "fd00::1")))
        v4, v6 = await world.until_slices("ext", 2, addresses=3)
        assert (v4["addressType"], addresses(v4)) == ("IPv4", ["010.0.0.1", "::ffff:010.0.0.2"])
        assert (v6["addressType"], addresses(v6)) == ("IPv6", ["fd00::1"])
        assert await world.quiet_writes() == 0
        assert await world.events_about("ext", "InvalidIPAddress") == []


async def test_no_slice_is_created_in_a_terminating_namespace_and_the_key_is_dropped(tmp_path: Path) -> None:
    # reconciler.go finalize: a create refused with the NamespaceTerminating cause ends the sync without an
    # error (creates would keep failing), so it is not retried.
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        await world.create(ENDPOINTS, endpoints("ext", subset("10.0.0.1"), labels={"endpointslice.kubernetes.io/skip-mirror": "true"}))
        await world.client.delete(NAMESPACES, NS)  # no namespace controller here: it stays Terminating
        assert (await world.get(NAMESPACES, NS, None))["status"]["phase"] == "Terminating"
        current = await world.get(ENDPOINTS, "ext")
        del current["metadata"]["labels"]
        updated = await world.client.update(ENDPOINTS, current, namespace=NS)  # updates are still allowed
        cache = world.manager.informer(ENDPOINTS).cache

        async def refused() -> bool:
            cached = cache.get_by_name("ext", NS)
            return cached is not None and world.manager.idle() \
                and cached["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"] \
                and world.ctl.count(verb="create", resource="endpointslices", ok_only=False) >= 1

        await world.eventually(refused)
        await world.advance(60)  # a retry with backoff would have run by now
        assert await world.slices("ext") == []
        attempts = [w for w in world.ctl.writes if w.verb == "create" and w.resource == "endpointslices"]
        assert [w.outcome for w in attempts] == ["error:403"]


async def test_slices_follow_the_endpoints_service_and_skip_mirror_label(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        # No Service yet: nothing is mirrored.
        await world.create(ENDPOINTS, endpoints("ext", subset("10.0.0.1")))
        await world.create(SERVICES, service("marker"))
        await world.create(ENDPOINTS, endpoints("marker", subset("10.0.0.9")))
        await world.until_slices("marker", 1)  # the controller has caught up
        assert await world.slices("ext") == []

        await world.create(SERVICES, service())
        await world.until_slices("ext", 1)

        # The skip-mirror label: slices deleted; the label gone: mirrored again.
        await world.client.patch(ENDPOINTS, "ext", {"metadata": {"labels": {
            "endpointslice.kubernetes.io/skip-mirror": "true"}}}, namespace=NS)
        await world.until_slices("ext", 0)
        await world.client.patch(ENDPOINTS, "ext", {"metadata": {"labels": {
            "endpointslice.kubernetes.io/skip-mirror": None}}}, namespace=NS)
        await world.until_slices("ext", 1)

        # A leader-election record (an Endpoints lock) is never mirrored.
        await world.client.patch(ENDPOINTS, "ext", {"metadata": {"annotations": {
            "control-plane.alpha.kubernetes.io/leader": "{}"}}}, namespace=NS)
        await world.until_slices("ext", 0)
        await world.client.patch(ENDPOINTS, "ext", {"metadata": {"annotations": {
            "control-plane.alpha.kubernetes.io/leader": None}}}, namespace=NS)
        await world.until_slices("ext", 1)

        # The Service gets a selector: its Endpoints are the endpoints controller's, the mirror goes.
        await world.client.patch(SERVICES, "ext", {"spec": {"selector": {"app": "db"}}}, namespace=NS)
        await world.until_slices("ext", 0)
        await world.client.patch(SERVICES, "ext", {"spec": {"selector": None}}, namespace=NS)
        await world.until_slices("ext", 1)

        # The Service deleted, then the Endpoints deleted.
        await world.client.delete(SERVICES, "ext", namespace=NS)
        await world.until_slices("ext", 0)
        await world.create(SERVICES, service())
        await world.until_slices("ext", 1)
        await world.client.delete(ENDPOINTS, "ext", namespace=NS)
        await world.until_slices("ext", 0)
        assert len(await world.slices("marker")) == 1


async def test_a_slice_edited_or_deleted_by_hand_is_put_back(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        await world.create(ENDPOINTS, endpoints("ext", subset("10.0.0.1", "10.0.0.2")))
        (es,) = await world.until_slices("ext", 1, addresses=2)
        es["endpoints"] = es["endpoints"][:1]
        es["metadata"]["labels"]["extra"] = "x"
        await world.client.update(SLICES, es, namespace=NS)

        async def restored() -> dict[str, Any] | None:
            (current,) = await world.slices("ext")
            return current if addresses(current) == ["10.0.0.1", "10.0.0.2"] \
                and "extra" not in current["metadata"]["labels"] else None

        await world.eventually(restored)
        await world.client.delete(SLICES, es["metadata"]["name"], namespace=NS)

        async def recreated() -> dict[str, Any] | None:
            found = await world.slices("ext")
            return found[0] if len(found) == 1 and found[0]["metadata"]["name"] != es["metadata"]["name"] else None

        again = await world.eventually(recreated)
        assert addresses(again) == ["10.0.0.1", "10.0.0.2"]
        assert await world.quiet_writes() == 0


async def test_no_slice_is_created_for_an_endpoints_being_deleted(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        body = endpoints("ext", subset("10.0.0.1"))
        body["metadata"]["finalizers"] = ["example.com/hold"]
        await world.create(ENDPOINTS, body)
        (es,) = await world.until_slices("ext", 1)
        await world.client.delete(ENDPOINTS, "ext", namespace=NS)
        cache = world.manager.informer(ENDPOINTS).cache

        async def terminating() -> bool:
            return bool(((cache.get_by_name("ext", NS) or {}).get("metadata") or {}).get("deletionTimestamp"))

        await world.eventually(terminating)
        # reconciler.go finalize: updates and deletes go on, creates stop while deletionTimestamp is set.
        await world.client.delete(SLICES, es["metadata"]["name"], namespace=NS)
        current = await world.get(ENDPOINTS, "ext")
        current["subsets"] = [subset("10.0.0.1", "10.0.0.2")]
        updated = await world.client.update(ENDPOINTS, current, namespace=NS)

        async def reconciled() -> bool:
            cached = cache.get_by_name("ext", NS)
            return cached is not None and world.manager.idle() \
                and cached["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]

        await world.eventually(reconciled)
        await world.settle()
        assert await world.slices("ext") == []
        assert world.ctl.count(verb="create", resource="endpointslices") == 1


async def test_at_most_1000_addresses_per_subset_are_mirrored_with_a_warning(tmp_path: Path) -> None:
    async with open_world(tmp_path) as world:
        await world.create(SERVICES, service())
        ips = [f"10.1.{i // 250}.{i % 250 + 1}" for i in range(1002)]
        ep = await world.create(ENDPOINTS, endpoints("ext", subset(*ips[:1001], not_ready=(ips[1001],))))
        (es,) = await world.until_slices("ext", 1, addresses=1000)
        # Ready addresses first, in RepackSubsets' order (by IP as text): the last two by that order go.
        kept = sorted(ips[:1001])[:1000]
        assert addresses(es) == sorted(kept)
        assert all(e["conditions"]["ready"] for e in es["endpoints"])

        async def warned() -> list[dict[str, Any]]:
            return await world.events_about("ext", "TooManyAddressesToMirror")

        (event,) = await world.eventually(warned)
        assert event["type"] == "Warning"
        assert event["message"] == ("A max of 1000 addresses can be mirrored to EndpointSlices per Endpoints "
                                    "subset. 2 addresses were skipped")
        assert event["source"] == {"component": "endpoint-slice-mirroring-controller"}
        assert event["involvedObject"]["kind"] == "Endpoints" and event["involvedObject"]["uid"] == ep["metadata"]["uid"]
        assert await world.events_about("ext", "InvalidIPAddress") == []


class _GatedSliceWatch(InterceptedClient):
    """Holds back EndpointSlice watch events while ``gate`` is clear: the controller's slice cache lags."""

    def __init__(self, inner: Client) -> None:
        super().__init__(inner)
        self.gate = asyncio.Event()
        self.gate.set()

    async def watch(self, resource: ResourceInfo, **kwargs: Any) -> AsyncGenerator[WatchEvent, None]:
        async for event in self.inner.watch(resource, **kwargs):
            if resource.plural == "endpointslices":
                await self.gate.wait()
            yield event


async def test_a_lagging_slice_cache_never_makes_a_second_slice(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path, clock=FakeClock(), namespaces=[NS]) as cluster:
        ctl = _GatedSliceWatch(cluster.new_client(Client))
        manager = Manager(ctl, clock=cluster.clock, rng=random.Random(3))
        add_builtin_controllers(manager, names=["endpointslice-mirroring"])
        world = World(cluster=cluster, ctl=ctl, manager=manager)
        async with world.started():
            await world.synced()
            await world.create(SERVICES, service())
            ctl.gate.clear()
            await world.create(ENDPOINTS, endpoints("ext", subset("10.0.0.1")))
            await world.until_slices("ext", 1)  # created, but the controller's cache has not seen it
            current = await world.get(ENDPOINTS, "ext")
            current["subsets"] = [subset("10.0.0.1", "10.0.0.2")]
            updated = await world.client.update(ENDPOINTS, current, namespace=NS)
            cache = manager.informer(ENDPOINTS).cache

            async def reconciled_the_update() -> bool:
                cached = cache.get_by_name("ext", NS)
                return cached is not None and manager.idle() \
                    and cached["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]

            await world.eventually(reconciled_the_update)
            await world.settle()
            # The update was reconciled (the Endpoints watch is not held) but the slice tracker held it back.
            assert world.ctl.count(verb="create", resource="endpointslices") == 1
            assert world.ctl.count(verb="update", resource="endpointslices") == 0
            ctl.gate.set()
            (es,) = await world.until_slices("ext", 1, addresses=2)
            assert addresses(es) == ["10.0.0.1", "10.0.0.2"]
            assert world.ctl.count(verb="create", resource="endpointslices") == 1
            assert await world.quiet_writes() == 0
