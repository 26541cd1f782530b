"""A Service is validated as upstream's ValidateService / ValidateServiceUpdate validate it (release 1.32),
and a refused write stores nothing.

Upstream: k/k ``pkg/apis/core/validation/validation.go`` (``ValidateService``, ``validateServicePort``,
``ValidateServiceClusterIPsRelatedFields``, ``validateServiceExternalTrafficPolicy``,
``validateClientIPAffinityConfig``), the Endpoints and EndpointSlice validation
(``ValidateEndpoints``, ``pkg/apis/discovery/validation``), and printers.go's Endpoints and
EndpointSlice tables.
"""

from __future__ import annotations

from typing import Any

import httpx

SERVICES = "/api/v1/namespaces/default/services"
ENDPOINTS = "/api/v1/namespaces/default/endpoints"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
TABLE = {"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def svc(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {k: v for k, v in body.items() if v is not None}}


async def causes(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    before = (await client.get(path)).json()["metadata"]["resourceVersion"]
    r = await client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["reason"] == "Invalid"
    assert (await client.get(path)).json()["metadata"]["resourceVersion"] == before  # the store is unchanged
    return [(c["reason"], c["field"], c["message"]) for c in r.json()["details"]["causes"]]


async def test_ports_are_required_unless_headless_or_external_name(client: httpx.AsyncClient) -> None:
    assert await causes(client, SERVICES, svc(ports=None)) == [("FieldValueRequired", "spec.ports", "Required value")]
    assert (await client.post(SERVICES, json=svc("headless", ports=None, clusterIP="None"))).status_code == 201
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"}, "spec": {"type": "ExternalName"}}
    assert await causes(client, SERVICES, body) == [("FieldValueRequired", "spec.externalName", "Required value")]


async def test_ports_need_names_when_several_and_may_not_repeat(client: httpx.AsyncClient) -> None:
    body = svc(ports=[{"port": 80}, {"name": "Web_1", "port": 80}, {"name": "b", "port": 0, "protocol": "HTTP"}])
    assert await causes(client, SERVICES, body) == [
        ("FieldValueRequired", "spec.ports[0].name", "Required value"),
        ("FieldValueInvalid", "spec.ports[1].name", f'Invalid value: "Web_1": {LABEL_MSG}'),
        ("FieldValueInvalid", "spec.ports[2].port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        ("FieldValueNotSupported", "spec.ports[2].protocol",
         'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'),
        ("FieldValueInvalid", "spec.ports[2].targetPort", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        ("FieldValueDuplicate", "spec.ports[1]",
         'Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, '
         'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'),
    ]


async def test_named_target_ports_are_port_names(client: httpx.AsyncClient) -> None:
    body = svc(ports=[{"port": 80, "targetPort": "HTTP-port-name-x"}])
    assert await causes(client, SERVICES, body) == [
        ("FieldValueInvalid", "spec.ports[0].targetPort", 'Invalid value: "HTTP-port-name-x": must be no more than 15 '
         "characters"),
        ("FieldValueInvalid", "spec.ports[0].targetPort", 'Invalid value: "HTTP-port-name-x": must contain only '
         "alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
    ]
    made = await client.post(SERVICES, json=svc(ports=[{"port": 80, "targetPort": "http"}]))
    assert made.json()["spec"]["ports"][0]["targetPort"] == "http"


async def test_type_selector_and_affinity_are_checked(client: httpx.AsyncClient) -> None:
    assert await causes(client, SERVICES, svc(type="Magic")) == [
        ("FieldValueNotSupported", "spec.type",
         'Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"')]
    selector_errors = await causes(client, SERVICES, svc(selector={"app": "-bad"}))
    assert selector_errors[0][:2] == ("FieldValueInvalid", "spec.selector")
    body = svc(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 90000}})
    assert await causes(client, SERVICES, body) == [
        ("FieldValueInvalid", "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
         "Invalid value: 90000: must be greater than 0 and less than 86400")]
    made = (await client.post(SERVICES, json=svc(sessionAffinity="ClientIP"))).json()
    assert made["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


async def test_node_ports_and_traffic_policies_follow_the_type(client: httpx.AsyncClient) -> None:
    assert await causes(client, SERVICES, svc(ports=[{"port": 80, "nodePort": 30001}])) == [
        ("FieldValueForbidden", "spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'")]
    assert await causes(client, SERVICES, svc(externalTrafficPolicy="Local")) == [
        ("FieldValueInvalid", "spec.externalTrafficPolicy",
         'Invalid value: "Local": may only be set for externally-accessible services')]
    assert await causes(client, SERVICES, svc(type="NodePort", clusterIP="None")) == [
        ("FieldValueInvalid", "spec.clusterIPs[0]", 'Invalid value: "None": may not be set to \'None\' for NodePort '
         "services")]
    assert await causes(client, SERVICES, svc(clusterIP="10.96.0.300")) == [
        ("FieldValueInvalid", "spec.clusterIPs[0]",
         'Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')]
    assert await causes(client, SERVICES, svc(ipFamilies=["IPv6"])) == [
        ("FieldValueInvalid", "spec.ipFamilies[0]", 'Invalid value: "IPv6": not configured on this cluster')]


async def test_endpoints_are_validated(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual"},
            "subsets": [{"ports": [{"port": 80}]},
                        {"addresses": [{"ip": "127.0.0.1"}, {"ip": "not-an-ip"}], "ports": [{"port": 70000}]}]}
    assert await causes(client, ENDPOINTS, body) == [
        ("FieldValueRequired", "subsets[0]", "Required value: must specify `addresses` or `notReadyAddresses`"),
        ("FieldValueInvalid", "subsets[1].addresses[0].ip",
         'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)'),
        ("FieldValueInvalid", "subsets[1].addresses[1].ip",
         'Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
        ("FieldValueInvalid", "subsets[1].ports[0].port", "Invalid value: 70000: must be between 1 and 65535, "
         "inclusive"),
    ]


async def test_endpoint_slices_are_validated_and_their_address_type_is_immutable(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "manual"},
            "addressType": "IPv4", "endpoints": [{"addresses": ["fd00::1"]}, {"addresses": []}]}
    assert await causes(client, SLICES, body) == [
        ("FieldValueInvalid", "endpoints[0].addresses[0]", 'Invalid value: "fd00::1": must be a valid IPv4 address'),
        ("FieldValueRequired", "endpoints[1].addresses", "Required value: must contain at least 1 address"),
    ]
    body["endpoints"] = [{"addresses": ["10.1.0.5"], "conditions": {"ready": True}}]
    made = await client.post(SLICES, json={**body, "ports": [{"port": 8080}]})
    assert made.status_code == 201, made.text
    assert made.json()["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    assert made.json()["metadata"]["generation"] == 1
    changed = {**made.json(), "addressType": "IPv6"}
    r = await client.put(f"{SLICES}/manual", json=changed)
    assert r.status_code == 422
    assert r.json()["details"]["causes"][0] == {"reason": "FieldValueInvalid", "field": "addressType",
                                                "message": 'Invalid value: "IPv6": field is immutable'}


async def test_an_ipv4_mapped_address_is_an_ipv4_slice_address(client: httpx.AsyncClient) -> None:
    # IsValidIPv4Address / IsValidIPv6Address (release 1.32 apimachinery validation/ip.go): ip.To4().
    body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "mapped6"},
            "addressType": "IPv6", "endpoints": [{"addresses": ["::ffff:10.1.0.5"]}]}
    assert await causes(client, SLICES, body) == [
        ("FieldValueInvalid", "endpoints[0].addresses[0]", 'Invalid value: "::ffff:10.1.0.5": must be a valid IPv6 address')]
    made = await client.post(SLICES, json={**body, "metadata": {"name": "mapped4"}, "addressType": "IPv4"})
    assert made.status_code == 201, made.text
    assert made.json()["endpoints"][0]["addresses"] == ["::ffff:10.1.0.5"]


async def test_endpoints_and_slices_print_as_upstream_tables(client: httpx.AsyncClient) -> None:
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
          "subsets": [{"addresses": [{"ip": f"10.1.0.{i}"} for i in range(1, 6)], "ports": [{"port": 8080}]}]}
    assert (await client.post(ENDPOINTS, json=ep)).status_code == 201
    table = (await client.get(ENDPOINTS, headers=TABLE)).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Endpoints", "Age"]
    rows = {r["cells"][0]: r["cells"][1] for r in table["rows"]}
    assert rows["web"] == "10.1.0.1:8080,10.1.0.2:8080,10.1.0.3:8080 + 2 more..."
    es = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-abc"},
          "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.0.1"]}], "ports": [{"name": "http", "port": 8080}]}
    assert (await client.post(SLICES, json=es)).status_code == 201
    empty = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-none"},
             "addressType": "IPv4"}
    assert (await client.post(SLICES, json=empty)).status_code == 201
    table = (await client.get(SLICES, headers=TABLE)).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    rows = {r["cells"][0]: r["cells"][1:4] for r in table["rows"]}
    assert rows["web-abc"] == ["IPv4", "8080", "10.1.0.1"]
    assert rows["web-none"] == ["IPv4", "<unset>", "<unset>"]


async def test_discovery_serves_endpoints_and_endpointslices(client: httpx.AsyncClient) -> None:
    core = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    assert core["endpoints"]["shortNames"] == ["ep"] and core["endpoints"]["namespaced"] is True
    group = (await client.get("/apis/discovery.k8s.io/v1")).json()
    assert [(r["name"], r["kind"]) for r in group["resources"]] == [("endpointslices", "EndpointSlice")]
