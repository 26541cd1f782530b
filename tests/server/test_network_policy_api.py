"""NetworkPolicy (networking.k8s.io/v1) through the HTTP API: defaults, validation messages, generation, table.

Upstream (1.32): k/k ``pkg/apis/networking/v1/defaults.go`` (``SetDefaults_NetworkPolicy``,
``SetDefaults_NetworkPolicyPort``), ``pkg/apis/networking/validation/validation.go`` (``ValidateNetworkPolicy``,
``ValidateIPBlock``, ``ValidationOptionsForNetworking``), ``pkg/registry/networking/networkpolicy/strategy.go``
and ``pkg/printers/internalversion/printers.go`` (``printNetworkPolicy``).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .test_ingress_api import TABLE, causes

BASE = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"


def policy(name: str = "np", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name}, "spec": spec}


async def refused(client: httpx.AsyncClient, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    found = causes(await client.post(BASE, json=body))
    assert (await client.get(f"{BASE}/{body['metadata']['name']}")).status_code == 404
    return found


async def test_defaults_policy_types_protocol_and_the_empty_pod_selector(client: httpx.AsyncClient) -> None:
    created = await client.post(BASE, json=policy(ingress=[{"ports": [{"port": 80}, {"port": "dns", "protocol": "UDP"}]}]))
    assert created.status_code == 201, created.text
    spec = (await client.get(f"{BASE}/np")).json()["spec"]
    # podSelector is a value struct without omitempty: a policy without one selects every pod and reads {}
    assert spec["podSelector"] == {}
    assert spec["policyTypes"] == ["Ingress"]
    assert spec["ingress"][0]["ports"] == [{"port": 80, "protocol": "TCP"}, {"port": "dns", "protocol": "UDP"}]
    egress = (await client.post(BASE, json=policy("out", egress=[{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]))).json()
    assert egress["spec"]["policyTypes"] == ["Ingress", "Egress"]
    explicit = (await client.post(BASE, json=policy("only-egress", podSelector={"matchLabels": {"app": "db"}},
                                                    policyTypes=["Egress"]))).json()
    assert explicit["spec"]["policyTypes"] == ["Egress"] and explicit["metadata"]["generation"] == 1


async def test_port_rules(client: httpx.AsyncClient) -> None:
    path = "spec.ingress[0].ports"
    ports = [{"protocol": "ICMP"}, {"port": 0}, {"endPort": 90}, {"port": 100, "endPort": 90},
             {"port": "http", "endPort": 90}, {"port": "Bad Name"}, {"port": 80, "endPort": 70000}]
    assert await refused(client, policy(ingress=[{"ports": ports}])) == [
        ("FieldValueNotSupported", f"{path}[0].protocol",
         'Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"'),
        ("FieldValueInvalid", f"{path}[1].port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        ("FieldValueInvalid", f"{path}[2].endPort", "Invalid value: 90: may not be specified when `port` is not "
                                                    "specified"),
        # 1.32 shows the port's value in this message
        ("FieldValueInvalid", f"{path}[3].endPort", "Invalid value: 100: must be greater than or equal to `port`"),
        ("FieldValueInvalid", f"{path}[4].endPort", "Invalid value: 90: may not be specified when `port` is "
                                                    "non-numeric"),
        ("FieldValueInvalid", f"{path}[5].port", 'Invalid value: "Bad Name": must contain only alpha-numeric '
                                                 "characters (a-z, 0-9), and hyphens (-)"),
        ("FieldValueInvalid", f"{path}[6].endPort", "Invalid value: 70000: must be between 1 and 65535, inclusive")]
    ok = await client.post(BASE, json=policy(egress=[{"ports": [{"port": 32000, "endPort": 32768, "protocol": "SCTP"}]}]))
    assert ok.status_code == 201


async def test_a_peer_names_something_and_an_ip_block_stands_alone(client: httpx.AsyncClient) -> None:
    path = "spec.egress[0].to"
    peers = [{}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
             {"podSelector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {}}]
    assert await refused(client, policy(egress=[{"to": peers}])) == [
        ("FieldValueRequired", f"{path}[0]", "Required value: must specify a peer"),
        ("FieldValueForbidden", f"{path}[1]", "Forbidden: may not specify both ipBlock and another peer")]
    bad_selector = policy(ingress=[{"from": [{"namespaceSelector": {"matchLabels": {"bad key!": "x"}}}]}])
    found = await refused(client, bad_selector)
    assert found[0][:2] == ("FieldValueInvalid", "spec.ingress[0].from[0].namespaceSelector.matchLabels")


@pytest.mark.parametrize(("block", "expected"), [
    ({}, [("FieldValueRequired", "cidr", "Required value")]),
    ({"cidr": "10.0.0.0"}, [("FieldValueInvalid", "cidr", 'Invalid value: "10.0.0.0": not a valid CIDR')]),
    ({"cidr": "10.0.0.0/33"}, [("FieldValueInvalid", "cidr", 'Invalid value: "10.0.0.0/33": not a valid CIDR')]),
    ({"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16", "10.0.0.0/8", "bad", "10.1.0.0/16"]},
     [("FieldValueInvalid", "except[0]", 'Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`'),
      ("FieldValueInvalid", "except[1]", 'Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`'),
      # the first unparsable entry ends the block's checks (1.32's early return)
      ("FieldValueInvalid", "except[2]", 'Invalid value: "bad": not a valid CIDR')]),
    ({"cidr": "2001:db8::/32", "except": ["10.0.0.0/16"]},
     [("FieldValueInvalid", "except[0]", 'Invalid value: "10.0.0.0/16": must be a strict subset of `cidr`')]),
])
async def test_ip_block_cidrs(client: httpx.AsyncClient, block: dict[str, Any],
                              expected: list[tuple[str, str, str]]) -> None:
    path = "spec.ingress[0].from[0].ipBlock."
    assert await refused(client, policy(ingress=[{"from": [{"ipBlock": block}]}])) == [
        (reason, path + field, message) for reason, field, message in expected]


async def test_sloppy_cidrs_with_host_bits_and_leading_zeros_are_accepted(client: httpx.AsyncClient) -> None:
    # apivalidation.ValidateCIDR is netutils.ParseCIDRSloppy: leading zeros and host bits pass (as stored)
    block = {"cidr": "010.001.0.7/8", "except": ["10.1.2.3/16", "2001:db8::1/128"][:1]}
    created = await client.post(BASE, json=policy(ingress=[{"from": [{"ipBlock": block}]}]))
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["ingress"][0]["from"][0]["ipBlock"] == block


async def test_policy_types(client: httpx.AsyncClient) -> None:
    assert await refused(client, policy(policyTypes=["Ingress", "Egress", "Ingress"])) == [
        ("FieldValueInvalid", "spec.policyTypes", 'Invalid value: []networking.PolicyType{"Ingress", "Egress", '
                                                  '"Ingress"}: may not specify more than two policyTypes')]
    assert await refused(client, policy(policyTypes=["Ingress", "Both"])) == [
        ("FieldValueNotSupported", "spec.policyTypes[1]",
         'Unsupported value: "Both": supported values: "Ingress", "Egress"')]


async def test_generation_and_an_invalid_stored_selector_value_on_update(client: httpx.AsyncClient) -> None:
    stored = (await client.post(BASE, json=policy(podSelector={"matchLabels": {"app": "web"}}))).json()
    stored["metadata"]["labels"] = {"x": "y"}
    stored = (await client.put(f"{BASE}/np", json=stored)).json()
    assert stored["metadata"]["generation"] == 1
    stored["spec"]["podSelector"] = {"matchLabels": {"app": "api"}}
    stored = (await client.put(f"{BASE}/np", json=stored)).json()
    assert stored["metadata"]["generation"] == 2
    stored["spec"]["podSelector"] = {"matchLabels": {"app": "not a value"}}
    response = await client.put(f"{BASE}/np", json=stored)
    found = causes(response)
    # ValidateNetworkPolicy and ValidateNetworkPolicyUpdate both validate the spec: the cause comes twice,
    # the message once (field.ErrorList.ToAggregate)
    assert len(found) == 2 and found[0] == found[1]
    assert found[0][:2] == ("FieldValueInvalid", "spec.podSelector.matchLabels")
    assert response.json()["message"].count("not a value") == 1
    assert causes(await client.put(f"{BASE}/np", json={**stored, "spec": {"policyTypes": ["Both"]}})) == [
        ("FieldValueNotSupported", "spec.policyTypes[0]", 'Unsupported value: "Both": supported values: "Ingress", '
                                                          '"Egress"')] * 2


async def test_the_table_shows_the_pod_selector(client: httpx.AsyncClient) -> None:
    await client.post(BASE, json=policy("all"))
    await client.post(BASE, json=policy("web", podSelector={"matchLabels": {"tier": "web", "app": "shop"},
                                                            "matchExpressions": [{"key": "env", "operator": "In",
                                                                                  "values": ["prod"]}]}))
    table = (await client.get(BASE, headers={"accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Pod-Selector", "Age"]
    # metav1.FormatLabelSelector: the requirements sorted by key (labels.internalSelector.Add sorts them)
    assert [r["cells"][:2] for r in table["rows"]] == [["all", "<none>"], ["web", "app=shop,env in (prod),tier=web"]]
