"""Ingress (networking.k8s.io/v1) through the HTTP API: validation with upstream's messages, generation, status.

Upstream (1.32): k/k ``pkg/apis/networking/validation/validation.go`` (``ValidateIngressCreate``,
``ValidateIngressUpdate``, ``ValidateIngressStatusUpdate``), ``pkg/registry/networking/ingress/strategy.go``
(generation, status, ``WarningsOnCreate``), ``pkg/printers/internalversion/printers.go`` (``printIngress``).
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import orjson
import pytest

from kubeloop.server import App

from ._asgi import stream

BASE = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
WILDCARD = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
            "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. "
            "'*.example.com', regex used for validation is "
            "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def backend(name: str = "web", port: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"service": {"name": name, "port": {"number": 80} if port is None else port}}


def http_path(path: str = "/", path_type: str | None = "Prefix", **entry: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"path": path, "backend": backend(), **entry}
    if path_type is not None:
        out["pathType"] = path_type
    return out


def ingress(name: str = "web", *, rules: Any = None, annotations: dict[str, str] | None = None,
            **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if annotations is not None:
        meta["annotations"] = annotations
    if rules is None and "defaultBackend" not in spec:
        rules = [{"host": "example.com", "http": {"paths": [http_path()]}}]
    if rules is not None:
        spec["rules"] = rules
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def with_paths(*paths: dict[str, Any], host: str = "example.com") -> dict[str, Any]:
    return ingress(rules=[{"host": host, "http": {"paths": list(paths)}}])


def causes(response: httpx.Response) -> list[tuple[str, str, str]]:
    assert response.status_code == 422, response.text
    return [(c["reason"], c["field"], c["message"]) for c in response.json()["details"]["causes"]]


async def refused(client: httpx.AsyncClient, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The causes of a refused create, after checking nothing was stored."""
    found = causes(await client.post(BASE, json=body))
    assert (await client.get(f"{BASE}/{body['metadata']['name']}")).status_code == 404
    return found


async def test_a_created_ingress_has_generation_1_and_the_empty_status_go_writes(client: httpx.AsyncClient) -> None:
    body = ingress(status={"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}})
    body["status"] = body["spec"].pop("status")
    created = await client.post(BASE, json=body)
    assert created.status_code == 201, created.text
    stored = (await client.get(f"{BASE}/web")).json()
    assert stored["metadata"]["generation"] == 1
    assert stored["status"] == {"loadBalancer": {}}  # create cannot set status
    assert stored["spec"]["rules"][0]["http"]["paths"][0] == http_path()
    assert "warning" not in created.headers


async def test_neither_rules_nor_default_backend_is_invalid(client: httpx.AsyncClient) -> None:
    response = await client.post(BASE, json={**ingress(), "spec": {"tls": [{"secretName": "tls"}]}})
    assert response.json()["message"] == ('Ingress.networking.k8s.io "web" is invalid: spec: Invalid value: '
                                          "[]networking.IngressRule(nil): either `defaultBackend` or `rules` must be "
                                          "specified")
    assert (await client.post(BASE, json=ingress(rules=[]))).status_code == 422
    assert await refused(client, {**ingress(), "spec": {}}) == [
        ("FieldValueInvalid", "spec",
         "Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified")]
    assert (await client.post(BASE, json=ingress(defaultBackend=backend()))).status_code == 201


async def test_a_rule_host_is_a_dns_name_or_a_wildcard_never_an_ip(client: httpx.AsyncClient) -> None:
    def hosted(host: str, name: str = "web") -> dict[str, Any]:
        return ingress(name, rules=[{"host": host, "http": {"paths": [http_path()]}}])

    assert await refused(client, hosted("10.0.0.1")) == [
        ("FieldValueInvalid", "spec.rules[0].host", 'Invalid value: "10.0.0.1": must be a DNS name, not an IP address')]
    assert await refused(client, hosted("Foo.com")) == [
        ("FieldValueInvalid", "spec.rules[0].host", f'Invalid value: "Foo.com": {SUBDOMAIN}')]
    assert await refused(client, hosted("*")) == [
        ("FieldValueInvalid", "spec.rules[0].host", f'Invalid value: "*": {WILDCARD}')]
    assert await refused(client, hosted("foo.*.com")) == [
        ("FieldValueInvalid", "spec.rules[0].host", f'Invalid value: "foo.*.com": {WILDCARD}')]
    assert (await client.post(BASE, json=hosted("*.example.com", "wild"))).status_code == 201
    # an IPv6 address is an IP too (netutils.ParseIPSloppy), and not a subdomain either
    v6 = await refused(client, hosted("::1"))
    assert v6[0] == ("FieldValueInvalid", "spec.rules[0].host", 'Invalid value: "::1": must be a DNS name, not an IP '
                                                                "address")


async def test_an_http_path_needs_a_path_type_and_an_absolute_path(client: httpx.AsyncClient) -> None:
    assert await refused(client, with_paths(http_path(path_type=None))) == [
        ("FieldValueRequired", "spec.rules[0].http.paths[0].pathType", "Required value: pathType must be specified")]
    assert await refused(client, with_paths(http_path(path_type="Regex"))) == [
        ("FieldValueNotSupported", "spec.rules[0].http.paths[0].pathType",
         'Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"')]
    assert await refused(client, with_paths(http_path("foo", "Exact"))) == [
        ("FieldValueInvalid", "spec.rules[0].http.paths[0].path", 'Invalid value: "foo": must be an absolute path')]
    assert await refused(client, with_paths(http_path("", "Prefix"))) == [
        ("FieldValueInvalid", "spec.rules[0].http.paths[0].path", 'Invalid value: "": must be an absolute path')]
    assert await refused(client, with_paths(http_path("foo", "ImplementationSpecific"))) == [
        ("FieldValueInvalid", "spec.rules[0].http.paths[0].path", 'Invalid value: "foo": must be an absolute path')]
    # ImplementationSpecific may leave the path out, and holds any sequence
    assert (await client.post(BASE, json=with_paths({"pathType": "ImplementationSpecific", "backend": backend()},
                                                    http_path("/a//b/..", "ImplementationSpecific")))).status_code == 201


async def test_exact_and_prefix_paths_refuse_dot_segments_and_encoded_slashes(client: httpx.AsyncClient) -> None:
    found = await refused(client, with_paths(http_path("/a//b/./c/../%2fd%2F/..", "Exact")))
    field = "spec.rules[0].http.paths[0].path"
    value = '"/a//b/./c/../%2fd%2F/.."'
    assert found == [("FieldValueInvalid", field, f"Invalid value: {value}: must not contain '{s}'")
                     for s in ("//", "/./", "/../", "%2f", "%2F")] + [
        ("FieldValueInvalid", field, f"Invalid value: {value}: cannot end with '/..'")]
    assert await refused(client, with_paths(http_path("/a/.", "Prefix"))) == [
        ("FieldValueInvalid", field, "Invalid value: \"/a/.\": cannot end with '/.'")]


async def test_a_backend_is_a_service_or_a_resource(client: httpx.AsyncClient) -> None:
    path = "spec.rules[0].http.paths[0].backend"
    both = http_path(backend={**backend(), "resource": {"kind": "Bucket", "name": "b"}})
    assert await refused(client, with_paths(both)) == [
        ("FieldValueInvalid", path, 'Invalid value: "": cannot set both resource and service backends')]
    assert await refused(client, with_paths(http_path(backend={}))) == [
        ("FieldValueInvalid", path, 'Invalid value: "": resource or service backend is required')]
    resource = http_path(backend={"resource": {"apiGroup": "Bad_Group", "kind": "a/b", "name": ""}})
    found = await refused(client, with_paths(resource))
    assert found == [
        ("FieldValueInvalid", f"{path}.resource.apiGroup", f'Invalid value: "Bad_Group": {SUBDOMAIN}'),
        ("FieldValueInvalid", f"{path}.resource.kind", "Invalid value: \"a/b\": may not contain '/'"),
        ("FieldValueRequired", f"{path}.resource.name", "Required value: name is required")]
    ok = http_path(backend={"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}})
    assert (await client.post(BASE, json=with_paths(ok))).status_code == 201


async def test_a_service_backend_names_a_dns_1035_service_and_a_port_name_xor_number(
        client: httpx.AsyncClient) -> None:
    path = "spec.rules[0].http.paths[0].backend"
    assert await refused(client, with_paths(http_path(backend=backend(port={"name": "http", "number": 80})))) == [
        ("FieldValueInvalid", path, 'Invalid value: "": cannot set both port name & port number')]
    assert await refused(client, with_paths(http_path(backend=backend(port={})))) == [
        ("FieldValueRequired", path, "Required value: port name or number is required")]
    assert await refused(client, with_paths(http_path(backend=backend(port={"number": 70000})))) == [
        ("FieldValueInvalid", f"{path}.service.port.number",
         "Invalid value: 70000: must be between 1 and 65535, inclusive")]
    assert await refused(client, with_paths(http_path(backend=backend(port={"name": "HTTP"})))) == [
        ("FieldValueInvalid", f"{path}.service.port.name",
         'Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
        ("FieldValueInvalid", f"{path}.service.port.name", 'Invalid value: "HTTP": must contain at least one letter '
                                                            "(a-z)")]
    found = await refused(client, with_paths(http_path(backend=backend(name="1web"))))
    assert found[0][:2] == ("FieldValueInvalid", f"{path}.service.name")
    assert found[0][2].startswith('Invalid value: "1web": a DNS-1035 label must consist of lower case')
    assert await refused(client, with_paths(http_path(backend={"service": {"port": {"number": 80}}}))) == [
        ("FieldValueRequired", f"{path}.service.name", "Required value")]
    assert (await client.post(BASE, json=with_paths(http_path(backend=backend(port={"name": "http"}))))
            ).status_code == 201


async def test_tls_hosts_and_secret_names(client: httpx.AsyncClient) -> None:
    # an IP is a valid DNS subdomain: TLS hosts are not checked for IPs, unlike rule hosts
    tls = [{"hosts": ["ok.example.com", "10.0.0.1"]}, {"hosts": ["Bad.Host", "*"], "secretName": "Bad_Secret"}]
    found = await refused(client, ingress(tls=tls))
    assert [(reason, field) for reason, field, _ in found] == [
        ("FieldValueInvalid", "spec.tls[1].hosts[0]"), ("FieldValueInvalid", "spec.tls[1].hosts[1]"),
        ("FieldValueInvalid", "spec.tls[1].secretName")]
    assert found[1][2] == f'Invalid value: "*": {WILDCARD}'
    assert found[2][2] == f'Invalid value: "Bad_Secret": {SUBDOMAIN}'
    assert (await client.post(BASE, json=ingress(tls=[{"hosts": ["*.example.com"], "secretName": "tls"}]))
            ).status_code == 201


async def test_the_class_name_and_the_deprecated_annotation(client: httpx.AsyncClient) -> None:
    assert await refused(client, ingress(ingressClassName="Nginx")) == [
        ("FieldValueInvalid", "spec.ingressClassName", f'Invalid value: "Nginx": {SUBDOMAIN}')]
    mismatch = ingress(ingressClassName="nginx", annotations={"kubernetes.io/ingress.class": "traefik"})
    assert await refused(client, mismatch) == [
        ("FieldValueInvalid", "annotations.kubernetes.io/ingress.class",
         'Invalid value: "traefik": must match `ingressClassName` when both are specified')]
    # equal values are accepted since 1.27 (kubernetes#115447), without a warning
    same = await client.post(BASE, json=ingress("same", ingressClassName="nginx",
                                                annotations={"kubernetes.io/ingress.class": "nginx"}))
    assert same.status_code == 201 and "warning" not in same.headers
    # the annotation alone is accepted with upstream's warning (ingress strategy WarningsOnCreate)
    alone = await client.post(BASE, json=ingress("alone", annotations={"kubernetes.io/ingress.class": "nginx"}))
    assert alone.status_code == 201
    assert alone.headers["warning"] == ('299 - "annotation \\"kubernetes.io/ingress.class\\" is deprecated, please use '
                                       "'spec.ingressClassName' instead\"")
    # no update warns, and the mismatch is only a create's check
    stored = alone.json()
    stored["spec"]["ingressClassName"] = "other"
    updated = await client.put(f"{BASE}/alone", json=stored)
    assert updated.status_code == 200 and "warning" not in updated.headers


async def test_generation_moves_with_the_spec_only(client: httpx.AsyncClient) -> None:
    stored = (await client.post(BASE, json=ingress())).json()
    stored["metadata"]["labels"] = {"tier": "edge"}
    relabelled = (await client.put(f"{BASE}/web", json=stored)).json()
    assert relabelled["metadata"]["generation"] == 1
    relabelled["spec"]["rules"][0]["host"] = "other.example.com"
    assert (await client.put(f"{BASE}/web", json=relabelled)).json()["metadata"]["generation"] == 2
    patched = await client.patch(f"{BASE}/web", json={"spec": {"ingressClassName": "nginx"}},
                                 headers={"content-type": "application/merge-patch+json"})
    assert patched.json()["metadata"]["generation"] == 3


async def test_status_changes_only_through_the_status_subresource(client: httpx.AsyncClient) -> None:
    stored = (await client.post(BASE, json=ingress())).json()
    point = {"ip": "192.0.2.10", "ports": [{"port": 443, "protocol": "TCP"}]}
    main = copy.deepcopy(stored)
    main["status"] = {"loadBalancer": {"ingress": [point]}}
    assert (await client.put(f"{BASE}/web", json=main)).json()["status"] == {"loadBalancer": {}}
    current = (await client.get(f"{BASE}/web")).json()
    current["status"] = {"loadBalancer": {"ingress": [point, {"hostname": "lb.example.com"}]}}
    current["spec"]["rules"][0]["host"] = "ignored.example.com"
    updated = await client.put(f"{BASE}/web/status", json=current)
    assert updated.status_code == 200, updated.text
    after = updated.json()
    assert after["status"]["loadBalancer"]["ingress"] == [point, {"hostname": "lb.example.com"}]
    assert after["spec"]["rules"][0]["host"] == "example.com"  # /status keeps the spec
    assert after["metadata"]["generation"] == 1
    table = (await client.get(BASE, headers={"accept": TABLE})).json()
    assert table["rows"][0]["cells"][3] == "192.0.2.10,lb.example.com"


async def test_status_load_balancer_points_are_validated(client: httpx.AsyncClient) -> None:
    await client.post(BASE, json=ingress())
    current = (await client.get(f"{BASE}/web")).json()
    current["status"] = {"loadBalancer": {"ingress": [{"ip": "not-an-ip"}, {"hostname": "10.1.2.3"},
                                                      {"hostname": "Bad_Host"}]}}
    found = causes(await client.put(f"{BASE}/web/status", json=current))
    assert found == [
        ("FieldValueInvalid", "status.loadBalancer.ingress[0].ip", 'Invalid value: "not-an-ip": must be a valid IP '
                                                                   "address"),
        ("FieldValueInvalid", "status.loadBalancer.ingress[1].hostname",
         'Invalid value: "10.1.2.3": must be a DNS name, not an IP address'),
        ("FieldValueInvalid", "status.loadBalancer.ingress[2].hostname", f'Invalid value: "Bad_Host": {SUBDOMAIN}')]
    assert (await client.get(f"{BASE}/web")).json()["status"] == {"loadBalancer": {}}


@pytest.mark.parametrize(("spec", "cells"), [
    ({"defaultBackend": backend()}, ["<none>", "*", "", "80"]),
    ({"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
      "rules": [{"host": h, "http": {"paths": [http_path()]}} for h in ("a.example.com", "", "b.example.com",
                                                                        "c.example.com", "d.example.com")]},
     ["nginx", "a.example.com,b.example.com,c.example.com + 2 more...", "", "80, 443"]),
])
async def test_the_table_has_upstreams_columns(client: httpx.AsyncClient, spec: dict[str, Any],
                                               cells: list[str]) -> None:
    assert (await client.post(BASE, json={**ingress(), "spec": spec})).status_code == 201
    table = (await client.get(BASE, headers={"accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert table["rows"][0]["cells"][:5] == ["web", *cells]


async def test_field_and_label_selectors_and_watch(app: App, client: httpx.AsyncClient) -> None:
    await client.post(BASE, json={**ingress("a"), "metadata": {"name": "a", "labels": {"app": "shop"}}})
    await client.post(BASE, json=ingress("b"))
    by_field = (await client.get(BASE, params={"fieldSelector": "metadata.name=b"})).json()
    assert [o["metadata"]["name"] for o in by_field["items"]] == ["b"]
    by_label = (await client.get(BASE, params={"labelSelector": "app=shop"})).json()
    assert [o["metadata"]["name"] for o in by_label["items"]] == ["a"]
    unknown = await client.get(BASE, params={"fieldSelector": "spec.ingressClassName=x"})
    assert unknown.status_code == 400
    assert unknown.json()["message"] == ('"spec.ingressClassName" is not a known field selector: only '
                                         '"metadata.name", "metadata.namespace"')
    async with stream(app, BASE, "watch=true&fieldSelector=metadata.name%3Db") as watch:
        (added,) = await watch.events(1)
        assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "b")
        await client.delete(f"{BASE}/b")
        (deleted,) = await watch.events(1)
        assert deleted["type"] == "DELETED"


async def test_aggregated_discovery_lists_the_group_with_short_names_and_ingress_status(
        client: httpx.AsyncClient) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    doc = (await client.get("/apis", headers={"accept": accept})).json()
    [group] = [g for g in doc["items"] if g["metadata"]["name"] == "networking.k8s.io"]
    [version] = group["versions"]
    assert version["version"] == "v1"
    resources = {r["resource"]: r for r in version["resources"]}
    assert sorted(resources) == ["ingressclasses", "ingresses", "networkpolicies"]
    assert resources["ingresses"]["shortNames"] == ["ing"] and resources["networkpolicies"]["shortNames"] == ["netpol"]
    assert "shortNames" not in resources["ingressclasses"] and resources["ingressclasses"]["scope"] == "Cluster"
    assert [s["subresource"] for s in resources["ingresses"].get("subresources", [])] == ["status"]
    assert "subresources" not in resources["networkpolicies"]


async def test_an_update_keeps_what_the_stored_ingress_already_had(client: httpx.AsyncClient, store: Any) -> None:
    """ValidateIngressUpdate's allowInvalidSecretName and allowInvalidWildcardHostRule: an object stored before
    those checks (written here straight into the store) can still be updated; a new object cannot be made so."""
    created = (await client.post(BASE, json=ingress())).json()
    legacy = copy.deepcopy(created)
    legacy["spec"]["tls"] = [{"secretName": "Old_Secret"}]
    legacy["spec"]["rules"].append({"host": "*.example.com", "http": {"paths": [http_path("relative", "Exact")]}})
    key = "/registry/networking.k8s.io/ingresses/default/web"
    current = await store.get(key)
    await store.update(key, lambda revision: orjson.dumps(legacy), expected_revision=current.mod_revision)
    stored = (await client.get(f"{BASE}/web")).json()
    stored["metadata"]["labels"] = {"kept": "yes"}
    del stored["metadata"]["resourceVersion"]  # an unconditional update (allowed for Ingresses)
    updated = await client.put(f"{BASE}/web", json=stored)
    assert updated.status_code == 200, updated.text
    fresh = {**ingress("fresh"), "spec": {k: v for k, v in legacy["spec"].items()}}
    assert [field for _, field, _ in await refused(client, fresh)] == [
        "spec.rules[1].http.paths[0].path", "spec.tls[0].secretName"]
