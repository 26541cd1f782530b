"""The endpoints and endpointslice controllers on the simulated cluster: Endpoints and EndpointSlices from
the pods a Service selects (k/k pkg/controller/endpoint, pkg/controller/endpointslice, release-1.32)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubeloop.api import NotFound
from kubeloop.controllers import SimulationOptions
from kubeloop.controllers._scheduler_resources import builtin

from ._sim_world import NS, PODS, World, condition, open_world, pod

SERVICES = builtin("", "services")
ENDPOINTS = builtin("", "endpoints")
SLICES = builtin("discovery.k8s.io", "endpointslices")


def service(name: str = "web", *, selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "targetPort": "http"}], **spec}
    if selector is not None:
        body["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": {"tier": "front"}},
            "spec": body}


def web_pod(name: str, **extra: Any) -> dict[str, Any]:
    body = pod(name, **extra)
    body["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    return body


CONTROLLERS = ("endpoint", "endpointslice", "garbage-collector")


async def _ready(world: World, *names: str) -> dict[str, dict[str, Any]]:
    async def all_ready() -> dict[str, dict[str, Any]] | None:
        pods = {n: await world.get(PODS, n) for n in names}
        return pods if all(condition(p, "Ready").get("status") == "True" for p in pods.values()) else None

    result: dict[str, dict[str, Any]] = await world.eventually(all_ready)
    return result


async def _slices(world: World, service_name: str) -> list[dict[str, Any]]:
    listed = await world.client.list(SLICES, namespace=NS, label_selector=f"kubernetes.io/service-name={service_name}")
    return list(listed.get("items") or [])


async def test_endpoints_list_ready_pods_by_ip_and_unready_ones_apart(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=CONTROLLERS) as world:
        for name in ("web-1", "web-2"):
            await world.create(PODS, web_pod(name))
        await world.create(PODS, web_pod("web-3", annotations={"kubeloop.dev/fault": "crash-loop"}))
        await world.create(PODS, web_pod("other", labels={"app": "other"}))
        pods = await _ready(world, "web-1", "web-2")
        svc = await world.create(SERVICES, service(selector={"app": "web"}))

        async def listed() -> dict[str, Any] | None:
            ep = await world.maybe(ENDPOINTS, "web")
            subsets = (ep or {}).get("subsets") or []
            ready = [a for s in subsets for a in s.get("addresses") or []]
            unready = [a for s in subsets for a in s.get("notReadyAddresses") or []]
            return ep if len(ready) == 2 and len(unready) == 1 else None

        ep = await world.eventually(listed)
        (subset,) = ep["subsets"]
        ips = sorted(p["status"]["podIP"] for p in pods.values())
        assert [a["ip"] for a in subset["addresses"]] == ips
        by_ip = {p["status"]["podIP"]: p for p in pods.values()}
        for address in subset["addresses"]:
            owner = by_ip[address["ip"]]
            assert address["targetRef"] == {"kind": "Pod", "namespace": NS, "name": owner["metadata"]["name"],
                                            "uid": owner["metadata"]["uid"]}
            assert address["nodeName"] == owner["spec"]["nodeName"]
        assert subset["notReadyAddresses"][0]["targetRef"]["name"] == "web-3"
        # The named target port resolved from the container port (podutil.FindPort).
        assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        assert ep["metadata"]["labels"] == {"tier": "front"}
        assert "ownerReferences" not in ep["metadata"]

        slices = await world.eventually(lambda: _count_endpoints(world, "web", 3))
        (es,) = slices
        assert es["addressType"] == "IPv4"
        assert es["metadata"]["generateName"] == "web-"
        assert es["metadata"]["labels"] == {"tier": "front", "kubernetes.io/service-name": "web",
                                            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
        assert es["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                                      "uid": svc["metadata"]["uid"], "controller": True,
                                                      "blockOwnerDeletion": True}]
        assert es["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        conditions = {e["targetRef"]["name"]: e["conditions"] for e in es["endpoints"]}
        assert conditions == {"web-1": {"ready": True, "serving": True, "terminating": False},
                              "web-2": {"ready": True, "serving": True, "terminating": False},
                              "web-3": {"ready": False, "serving": False, "terminating": False}}
        assert all(e["nodeName"] == pods["web-1"]["spec"]["nodeName"] for e in es["endpoints"][:2])
        assert await world.quiet_writes() == 0


async def _count_endpoints(world: World, name: str, count: int) -> list[dict[str, Any]] | None:
    slices = await _slices(world, name)
    total = sum(len(s.get("endpoints") or []) for s in slices)
    return slices if total == count and len(slices) == 1 else None


async def test_a_deleted_pod_leaves_and_a_deleted_service_takes_its_endpoints(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=CONTROLLERS) as world:
        for name in ("web-1", "web-2"):
            await world.create(PODS, web_pod(name, terminationGracePeriodSeconds=0))
        await _ready(world, "web-1", "web-2")
        await world.create(SERVICES, service(selector={"app": "web"}))
        await world.eventually(lambda: _count_endpoints(world, "web", 2))
        await world.client.delete(PODS, "web-1", namespace=NS, grace_period_seconds=0)

        async def one_left() -> bool:
            ep = await world.maybe(ENDPOINTS, "web")
            addresses = [a for s in (ep or {}).get("subsets") or [] for a in s.get("addresses") or []]
            return [a["targetRef"]["name"] for a in addresses] == ["web-2"]

        await world.eventually(one_left)
        await world.eventually(lambda: _count_endpoints(world, "web", 1))
        await world.client.delete(SERVICES, "web", namespace=NS)

        async def gone() -> bool:
            return await world.maybe(ENDPOINTS, "web") is None and not await _slices(world, "web")

        await world.eventually(gone)


async def test_services_without_selector_or_external_name_get_no_endpoints(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=CONTROLLERS) as world:
        await world.create(PODS, web_pod("web-1"))
        await _ready(world, "web-1")
        await world.create(SERVICES, service("manual"))
        await world.create(SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
                                      "spec": {"type": "ExternalName", "externalName": "example.com",
                                               "selector": {"app": "web"}}})
        await world.create(SERVICES, service("marker", selector={"app": "web"}))
        await world.eventually(lambda: world.maybe(ENDPOINTS, "marker"))  # the controller has caught up
        await world.settle()
        for name in ("manual", "ext"):
            assert await world.maybe(ENDPOINTS, name) is None
            assert await _slices(world, name) == []


async def test_no_ready_pod_gives_empty_endpoints_and_a_placeholder_slice(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=CONTROLLERS) as world:
        await world.create(SERVICES, service("lonely", selector={"app": "nobody"}, clusterIP="None"))

        async def placeholder() -> list[dict[str, Any]] | None:
            slices = await _slices(world, "lonely")
            return slices or None

        (es,) = await world.eventually(placeholder)
        assert es["endpoints"] is None and es["ports"] is None
        assert es["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
        ep = await world.eventually(lambda: world.maybe(ENDPOINTS, "lonely"))
        assert "subsets" not in ep
        assert ep["metadata"]["labels"] == {"tier": "front", "service.kubernetes.io/headless": ""}
        assert await world.quiet_writes() == 0


async def test_endpoints_edited_by_hand_are_put_back(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=CONTROLLERS) as world:
        await world.create(PODS, web_pod("web-1"))
        pods = await _ready(world, "web-1")
        await world.create(SERVICES, service(selector={"app": "web"}))
        ep = await world.eventually(lambda: world.maybe(ENDPOINTS, "web"))
        ep["subsets"] = [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"name": "http", "port": 1}]}]
        await world.client.update(ENDPOINTS, ep, namespace=NS)

        async def restored() -> bool:
            current = await world.get(ENDPOINTS, "web")
            return [a["ip"] for a in current["subsets"][0].get("addresses") or []] == [pods["web-1"]["status"]["podIP"]]

        await world.eventually(restored)
        try:
            await world.client.delete(ENDPOINTS, "web", namespace=NS)
        except NotFound:
            pass
        await world.eventually(lambda: world.maybe(ENDPOINTS, "web"))


async def test_a_terminating_pod_leaves_endpoints_but_stays_in_its_slice_as_terminating(tmp_path: Path) -> None:
    async with open_world(tmp_path, SimulationOptions(nodes=1), controllers=CONTROLLERS) as world:
        await world.create(PODS, web_pod("web-1", terminationGracePeriodSeconds=30))
        await world.create(PODS, web_pod("web-2", annotations={"kubeloop.dev/fault": "crash-loop"}))
        await _ready(world, "web-1")
        await world.create(SERVICES, service(selector={"app": "web"}))
        await world.create(SERVICES, service("all", selector={"app": "web"}, publishNotReadyAddresses=True))
        await world.eventually(lambda: _count_endpoints(world, "web", 2))
        await world.client.delete(PODS, "web-1", namespace=NS)  # graceful: 30 s of fake time to go

        # The simulated kubelet stops a deleted pod's containers at once (its Ready turns False), so
        # whether the slice ever shows it serving while terminating depends on which write lands first;
        # the state it settles in for the grace period is terminating and not serving.
        async def terminating() -> dict[str, Any] | None:
            slices = await _slices(world, "web")
            found = [e for s in slices for e in s.get("endpoints") or [] if e["targetRef"]["name"] == "web-1"]
            return found[0] if found and found[0]["conditions"]["terminating"] \
                and not found[0]["conditions"]["serving"] else None

        endpoint = await world.eventually(terminating)
        assert endpoint["conditions"] == {"ready": False, "serving": False, "terminating": True}
        assert condition(await world.get(PODS, "web-1"), "Ready")["status"] == "False"

        async def left_endpoints() -> bool:
            ep = await world.get(ENDPOINTS, "web")
            names = [a["targetRef"]["name"] for s in ep.get("subsets") or []
                     for key in ("addresses", "notReadyAddresses") for a in s.get(key) or []]
            return names == ["web-2"]

        await world.eventually(left_endpoints)
        # publishNotReadyAddresses: every pod with an IP is a ready address, terminating or crash-looping.
        async def published() -> bool:
            ep = await world.maybe(ENDPOINTS, "all")
            names = sorted(a["targetRef"]["name"] for s in (ep or {}).get("subsets") or [] for a in s.get("addresses") or [])
            return names == ["web-1", "web-2"]

        await world.eventually(published)
        slices = await world.eventually(lambda: _count_endpoints(world, "all", 2))
        assert all(e["conditions"]["ready"] for s in slices for e in s["endpoints"])
