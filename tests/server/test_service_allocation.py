"""Services get cluster IPs and node ports as kube-apiserver 1.32 allocates them.

Upstream: k/k ``pkg/registry/core/service/storage/alloc.go`` (``allocateCreate``, ``initIPFamilyFields``,
``allocClusterIPs``, ``initNodePorts``, ``allocateUpdate``), ``storage/storage.go`` (``beginCreate``,
``beginUpdate``, ``patchAllocatedValues``, ``normalizeClusterIPs``), ``ipallocator`` / ``portallocator``
(``ErrAllocated``, ``ErrNotInRange``, the random scan above the range offset), ``pkg/apis/core/v1/defaults.go``
``SetDefaults_Service``, and the bootstrap controller's ``kubernetes`` Service (cluster IP 10.96.0.1).
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
from pathlib import Path
from typing import Any

import httpx

from kubeloop.server import create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

SERVICES = "/api/v1/namespaces/default/services"
CIDR = ipaddress.ip_network("10.96.0.0/12")


def svc(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


async def created(client: httpx.AsyncClient, body: dict[str, Any], **params: str) -> dict[str, Any]:
    r = await client.post(SERVICES, json=body, params=params)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


def invalid(r: httpx.Response) -> str:
    assert r.status_code == 422, r.text
    assert r.json()["reason"] == "Invalid"
    return str(r.json()["message"])


async def names(client: httpx.AsyncClient) -> list[str]:
    return [s["metadata"]["name"] for s in (await client.get(SERVICES)).json()["items"]]


async def test_a_cluster_ip_service_gets_an_address_from_the_service_cidr_and_its_defaults(
        client: httpx.AsyncClient) -> None:
    spec = (await created(client, svc()))["spec"]
    ip = ipaddress.ip_address(spec["clusterIP"])
    assert ip in CIDR
    # Dynamic allocations come from above the range's offset (256 addresses kept for static requests).
    assert int(ip) - int(CIDR.network_address) > 256
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"], spec["internalTrafficPolicy"]) == (["IPv4"], "SingleStack",
                                                                                            "Cluster")
    assert (spec["type"], spec["sessionAffinity"]) == ("ClusterIP", "None")
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert "externalTrafficPolicy" not in spec
    stored = (await client.get(f"{SERVICES}/web")).json()
    assert stored["spec"]["clusterIP"] == spec["clusterIP"]
    assert stored["status"] == {"loadBalancer": {}}


async def test_the_kubernetes_service_holds_the_first_address(client: httpx.AsyncClient) -> None:
    kubernetes = (await client.get(f"{SERVICES}/kubernetes")).json()
    assert kubernetes["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert kubernetes["spec"]["clusterIP"] == "10.96.0.1"
    assert kubernetes["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]
    r = await client.post(SERVICES, json=svc(clusterIP="10.96.0.1"))
    assert invalid(r) == ('Service "web" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.1"}: '
                          "failed to allocate IP 10.96.0.1: provided IP is already allocated")
    # The default address is loopback: no valid endpoint (ValidateEndpoints refuses it), so none.
    assert (await client.get("/api/v1/namespaces/default/endpoints/kubernetes")).status_code == 404


async def test_the_kubernetes_service_has_endpoints_at_a_routable_server_address(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "db")
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(1), server_address="192.168.7.9:8443")
    await app.startup()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://k") as client:
            svc_ = (await client.get(f"{SERVICES}/kubernetes")).json()
            assert svc_["spec"]["ports"][0]["targetPort"] == 8443
            ep = (await client.get("/api/v1/namespaces/default/endpoints/kubernetes")).json()
            assert ep["subsets"] == [{"addresses": [{"ip": "192.168.7.9"}],
                                      "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}]}]
            assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
            es = (await client.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")).json()
            assert es["addressType"] == "IPv4"
            assert es["endpoints"] == [{"addresses": ["192.168.7.9"], "conditions": {"ready": True}}]
            assert es["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    finally:
        await app.shutdown()
        await store.close()


async def test_a_requested_address_is_honoured_once(client: httpx.AsyncClient) -> None:
    assert (await created(client, svc(clusterIP="10.96.0.10")))["spec"]["clusterIPs"] == ["10.96.0.10"]
    r = await client.post(SERVICES, json=svc("other", clusterIP="10.96.0.10"))
    assert invalid(r) == ('Service "other" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.10"}: '
                          "failed to allocate IP 10.96.0.10: provided IP is already allocated")
    r = await client.post(SERVICES, json=svc("far", clusterIP="10.200.0.1"))
    assert invalid(r) == ('Service "far" is invalid: spec.clusterIPs: Invalid value: []string{"10.200.0.1"}: '
                          "failed to allocate IP 10.200.0.1: provided IP is not in the valid range. "
                          "The range of valid IPs is 10.96.0.0/12")
    assert sorted(await names(client)) == ["kubernetes", "web"]


async def test_concurrent_creates_never_share_an_address(client: httpx.AsyncClient) -> None:
    results = await asyncio.gather(*(client.post(SERVICES, json=svc(f"s{i}")) for i in range(40)))
    assert all(r.status_code == 201 for r in results)
    ips = {r.json()["spec"]["clusterIP"] for r in results}
    assert len(ips) == 40 and "10.96.0.1" not in ips


async def test_a_deleted_service_gives_its_address_and_node_port_back(client: httpx.AsyncClient) -> None:
    await created(client, svc(type="NodePort", clusterIP="10.96.0.20", ports=[{"port": 80, "nodePort": 30100}]))
    r = await client.post(SERVICES, json=svc("again", type="NodePort", clusterIP="10.96.0.20",
                                             ports=[{"port": 80, "nodePort": 30100}]))
    assert r.status_code == 422
    assert (await client.delete(f"{SERVICES}/web")).status_code == 200
    again = await created(client, svc("again", type="NodePort", clusterIP="10.96.0.20",
                                      ports=[{"port": 80, "nodePort": 30100}]))
    assert again["spec"]["ports"][0]["nodePort"] == 30100


async def test_node_ports_are_allocated_in_range_and_a_taken_one_is_refused(client: httpx.AsyncClient) -> None:
    spec = (await created(client, svc(type="NodePort", ports=[{"name": "http", "port": 80},
                                                               {"name": "https", "port": 443}])))["spec"]
    ports = [p["nodePort"] for p in spec["ports"]]
    assert len(set(ports)) == 2 and all(30000 <= p <= 32767 for p in ports)
    assert spec["externalTrafficPolicy"] == "Cluster"
    r = await client.post(SERVICES, json=svc("clash", type="NodePort", ports=[{"port": 80, "nodePort": ports[0]}]))
    assert invalid(r) == (f'Service "clash" is invalid: spec.ports[0].nodePort: Invalid value: {ports[0]}: '
                          "provided port is already allocated")
    r = await client.post(SERVICES, json=svc("low", type="NodePort", ports=[{"port": 80, "nodePort": 8080}]))
    assert invalid(r) == ('Service "low" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is '
                          "not in the valid range. The range of valid ports is 30000-32767")
    # The refused creates hold nothing: their address is free for the next Service.
    assert sorted(await names(client)) == ["kubernetes", "web"]


async def test_a_load_balancer_gets_node_ports_and_a_health_check_port_when_local(client: httpx.AsyncClient) -> None:
    spec = (await created(client, svc(type="LoadBalancer", externalTrafficPolicy="Local")))["spec"]
    assert spec["allocateLoadBalancerNodePorts"] is True
    assert 30000 <= spec["ports"][0]["nodePort"] <= 32767
    assert 30000 <= spec["healthCheckNodePort"] <= 32767
    assert spec["healthCheckNodePort"] != spec["ports"][0]["nodePort"]


async def test_headless_services_get_no_address(client: httpx.AsyncClient) -> None:
    spec = (await created(client, svc(clusterIP="None")))["spec"]
    assert (spec["clusterIP"], spec["clusterIPs"], spec["ipFamilies"], spec["ipFamilyPolicy"]) == (
        "None", ["None"], ["IPv4"], "SingleStack")
    # Headless and selectorless: RequireDualStack, both families (initIPFamilyFields' special case).
    body = svc("bare", clusterIP="None")
    del body["spec"]["selector"]
    spec = (await created(client, body))["spec"]
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"]) == ("RequireDualStack", ["IPv4", "IPv6"])


async def test_dry_run_allocates_nothing(client: httpx.AsyncClient) -> None:
    dry = await created(client, svc(clusterIP="10.96.0.30", type="NodePort", ports=[{"port": 80, "nodePort": 30200}]),
                        dryRun="All")
    assert dry["spec"]["clusterIP"] == "10.96.0.30"
    assert (await client.get(f"{SERVICES}/web")).status_code == 404
    real = await created(client, svc("real", clusterIP="10.96.0.30", type="NodePort",
                                     ports=[{"port": 80, "nodePort": 30200}]))
    assert real["spec"]["ports"][0]["nodePort"] == 30200
    # A dry run still says when the requested address is taken.
    r = await client.post(SERVICES, json=svc("dup", clusterIP="10.96.0.30"), params={"dryRun": "All"})
    assert "provided IP is already allocated" in invalid(r)


async def test_an_update_keeps_the_address_and_may_not_change_it(client: httpx.AsyncClient) -> None:
    first = await created(client, svc(type="NodePort"))
    ip, node_port = first["spec"]["clusterIP"], first["spec"]["ports"][0]["nodePort"]
    # A PUT without the allocated values (kubectl replace of the original manifest) keeps them.
    body = svc(type="NodePort", selector={"app": "v2"})
    body["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"]
    r = await client.put(f"{SERVICES}/web", json=body)
    assert r.status_code == 200, r.text
    assert (r.json()["spec"]["clusterIP"], r.json()["spec"]["ports"][0]["nodePort"]) == (ip, node_port)
    changed = r.json()
    changed["spec"]["clusterIP"] = "10.96.0.40"
    changed["spec"]["clusterIPs"] = ["10.96.0.40"]
    r = await client.put(f"{SERVICES}/web", json=changed)
    assert invalid(r) == ('Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.0.40"}: '
                          "may not change once set")
    assert (await client.get(f"{SERVICES}/web")).json()["spec"]["clusterIP"] == ip


async def test_type_changes_allocate_and_release_node_ports(client: httpx.AsyncClient) -> None:
    first = await created(client, svc())
    assert "nodePort" not in first["spec"]["ports"][0]
    r = await client.patch(f"{SERVICES}/web", json={"spec": {"type": "NodePort"}},
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    node_port = r.json()["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    r = await client.patch(f"{SERVICES}/web", json={"spec": {"type": "ClusterIP"}},
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert "nodePort" not in r.json()["spec"]["ports"][0]  # dropTypeDependentFields
    assert "externalTrafficPolicy" not in r.json()["spec"]
    # Released: another Service may have it now.
    await created(client, svc("next", type="NodePort", ports=[{"port": 80, "nodePort": node_port}]))


async def test_external_name_services_hold_no_address_until_they_change_type(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
            "spec": {"type": "ExternalName", "externalName": "db.example.com"}}
    spec = (await created(client, body))["spec"]
    assert "clusterIP" not in spec and "ipFamilies" not in spec and "internalTrafficPolicy" not in spec
    r = await client.patch(f"{SERVICES}/ext", json={"spec": {"type": "ClusterIP", "externalName": None,
                                                            "ports": [{"port": 53}]}},
                           headers={"content-type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert ipaddress.ip_address(r.json()["spec"]["clusterIP"]) in CIDR


async def test_allocations_survive_a_restart(tmp_path: Path) -> None:
    async def run(check: Any) -> Any:
        store = await SqliteStore.open(tmp_path / "db")
        app = create_app(store=store, clock=FakeClock(), rng=random.Random(5))
        await app.startup()
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://k") as client:
                return await check(client)
        finally:
            await app.shutdown()
            await store.close()

    async def first(client: httpx.AsyncClient) -> list[str]:
        made = [await created(client, svc(f"s{i}", type="NodePort")) for i in range(5)]
        await created(client, svc("pinned", clusterIP="10.96.0.77"))
        return [m["spec"]["clusterIP"] for m in made]

    async def second(client: httpx.AsyncClient) -> list[str]:
        r = await client.post(SERVICES, json=svc("copy", clusterIP="10.96.0.77"))
        assert "provided IP is already allocated" in invalid(r)
        # The same seed replays the same random choices: each one taken is skipped, never handed out twice.
        made = [await created(client, svc(f"t{i}", type="NodePort")) for i in range(5)]
        return [m["spec"]["clusterIP"] for m in made]

    before = await run(first)
    after = await run(second)
    assert not set(before) & set(after)
