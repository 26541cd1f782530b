"""IngressClass (networking.k8s.io/v1, cluster-scoped) and the DefaultIngressClass admission plugin over HTTP.

Upstream (1.32): k/k ``pkg/apis/networking/validation/validation.go`` (``ValidateIngressClass``,
``ValidateIngressClassUpdate``), ``pkg/apis/networking/v1/defaults.go`` (``SetDefaults_IngressClass``),
``pkg/registry/networking/ingressclass/strategy.go``, ``pkg/printers/internalversion/printers.go``
(``printIngressClass``) and ``plugin/pkg/admission/network/defaultingressclass/admission.go``.
"""

from __future__ import annotations

from typing import Any

import httpx

from kubeloop.testing import FakeClock

from .test_ingress_api import BASE as INGRESSES
from .test_ingress_api import TABLE, causes, ingress

BASE = "/apis/networking.k8s.io/v1/ingressclasses"
DEFAULT = "ingressclass.kubernetes.io/is-default-class"


def ingress_class(name: str, controller: str = "example.com/ingress-controller", *, default: str | None = None,
                  **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if default is not None:
        meta["annotations"] = {DEFAULT: default}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": meta,
            "spec": {"controller": controller, **spec}}


async def refused(client: httpx.AsyncClient, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    found = causes(await client.post(BASE, json=body))
    assert (await client.get(f"{BASE}/{body['metadata']['name']}")).status_code == 404
    return found


async def test_the_controller_is_a_domain_prefixed_path_of_at_most_250_bytes(client: httpx.AsyncClient) -> None:
    assert await refused(client, ingress_class("a", "")) == [("FieldValueRequired", "spec.controller", "Required value")]
    assert await refused(client, ingress_class("a", "nginx")) == [
        ("FieldValueInvalid", "spec.controller",
         'Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")')]
    assert await refused(client, ingress_class("a", "example.com/a b")) == [
        ("FieldValueInvalid", "spec.controller",
         "Invalid value: \"a b\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')")]
    assert await refused(client, ingress_class("a", "example.com/" + "x" * 240)) == [
        ("FieldValueTooLong", "spec.controller", "Too long: may not be more than 250 bytes")]
    created = await client.post(BASE, json=ingress_class("a"))
    assert created.status_code == 201
    assert created.json()["metadata"]["generation"] == 1 and "namespace" not in created.json()["metadata"]


async def test_the_controller_is_immutable_and_generation_follows_the_spec(client: httpx.AsyncClient) -> None:
    stored = (await client.post(BASE, json=ingress_class("a"))).json()
    stored["spec"]["controller"] = "example.com/other"
    assert causes(await client.put(f"{BASE}/a", json=stored)) == [
        ("FieldValueInvalid", "spec.controller", 'Invalid value: "example.com/other": field is immutable')]
    stored = (await client.get(f"{BASE}/a")).json()
    stored["metadata"]["labels"] = {"team": "edge"}
    stored = (await client.put(f"{BASE}/a", json=stored)).json()
    assert stored["metadata"]["generation"] == 1
    stored["spec"]["parameters"] = {"kind": "Config", "name": "c"}
    assert (await client.put(f"{BASE}/a", json=stored)).json()["metadata"]["generation"] == 2


async def test_parameters_scope_defaults_to_cluster_and_rules_the_namespace(client: httpx.AsyncClient) -> None:
    created = (await client.post(BASE, json=ingress_class("a", parameters={"apiGroup": "k8s.example.com",
                                                                           "kind": "IngressParameters",
                                                                           "name": "external-lb"}))).json()
    assert created["spec"]["parameters"]["scope"] == "Cluster"  # SetDefaults_IngressClass
    path = "spec.parameters"
    assert await refused(client, ingress_class("b", parameters={"kind": "P", "name": "n", "namespace": "x"})) == [
        ("FieldValueForbidden", f"{path}.namespace", "Forbidden: `parameters.scope` is set to 'Cluster'")]
    assert await refused(client, ingress_class("b", parameters={"kind": "P", "name": "n", "scope": "Namespace"})) == [
        ("FieldValueRequired", f"{path}.namespace", "Required value: `parameters.scope` is set to 'Namespace'")]
    found = await refused(client, ingress_class("b", parameters={"kind": "P", "name": "n", "scope": "Namespace",
                                                                 "namespace": "Bad.NS"}))
    assert found[0][:2] == ("FieldValueInvalid", f"{path}.namespace")
    assert found[0][2].startswith('Invalid value: "Bad.NS": a lowercase RFC 1123 label must consist of')
    assert await refused(client, ingress_class("b", parameters={"kind": "P", "name": "n", "scope": "Global"})) == [
        ("FieldValueNotSupported", f"{path}.scope", 'Unsupported value: "Global": supported values: "Cluster", '
                                                    '"Namespace"')]
    assert await refused(client, ingress_class("b", parameters={"name": "n/x"})) == [
        ("FieldValueRequired", f"{path}.kind", "Required value: kind is required"),
        ("FieldValueInvalid", f"{path}.name", "Invalid value: \"n/x\": may not contain '/'")]
    ok = await client.post(BASE, json=ingress_class("b", parameters={"kind": "P", "name": "n", "scope": "Namespace",
                                                                     "namespace": "external"}))
    assert ok.status_code == 201


async def test_the_table_shows_controller_and_parameters(client: httpx.AsyncClient) -> None:
    await client.post(BASE, json=ingress_class("a"))
    await client.post(BASE, json=ingress_class("b", parameters={"apiGroup": "k8s.example.com", "kind": "Params",
                                                                "name": "p"}))
    table = (await client.get(BASE, headers={"accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Controller", "Parameters", "Age"]
    assert [r["cells"][:3] for r in table["rows"]] == [
        ["a", "example.com/ingress-controller", "<none>"],
        ["b", "example.com/ingress-controller", "Params.k8s.example.com/p"]]


# -- the DefaultIngressClass admission plugin ------------------------------------------------------------


async def class_of(client: httpx.AsyncClient, body: dict[str, Any]) -> str | None:
    created = await client.post(INGRESSES, json=body)
    assert created.status_code == 201, created.text
    value = created.json()["spec"].get("ingressClassName")
    assert value == (await client.get(f"{INGRESSES}/{body['metadata']['name']}")).json()["spec"].get(
        "ingressClassName")
    return value if value is None else str(value)


async def test_without_a_default_class_an_ingress_keeps_no_class(client: httpx.AsyncClient) -> None:
    await client.post(BASE, json=ingress_class("plain"))
    await client.post(BASE, json=ingress_class("almost", default="True"))  # only the text "true" counts
    assert await class_of(client, ingress("a")) is None


async def test_the_default_class_is_written_into_an_ingress_that_names_none(client: httpx.AsyncClient) -> None:
    await client.post(BASE, json=ingress_class("nginx", default="true"))
    assert await class_of(client, ingress("a")) == "nginx"
    assert await class_of(client, ingress("b", ingressClassName="other")) == "other"
    # the deprecated annotation counts as a class: nothing is defaulted
    assert await class_of(client, ingress("c", annotations={"kubernetes.io/ingress.class": "traefik"})) is None
    # only creates are defaulted: an update that drops the class keeps none
    stored = (await client.get(f"{INGRESSES}/a")).json()
    del stored["spec"]["ingressClassName"]
    assert "ingressClassName" not in (await client.put(f"{INGRESSES}/a", json=stored)).json()["spec"]
    # a dry-run create is admitted too, and answers the defaulted class
    assert (await client.post(INGRESSES, json=ingress("d"), params={"dryRun": "All"})).json()["spec"][
        "ingressClassName"] == "nginx"


async def test_of_several_default_classes_the_newest_wins_then_the_lower_name(
        client: httpx.AsyncClient, clock: FakeClock) -> None:
    await client.post(BASE, json=ingress_class("old", default="true"))
    await clock.advance(5)
    await client.post(BASE, json=ingress_class("zeta", default="true"))
    await client.post(BASE, json=ingress_class("beta", default="true"))
    # kubernetes#110974 (1.25): no error; the newest by creationTimestamp, ties to the lower name
    assert await class_of(client, ingress("a")) == "beta"
    await client.delete(f"{BASE}/beta")
    assert await class_of(client, ingress("b")) == "zeta"
    await client.patch(f"{BASE}/zeta", json={"metadata": {"annotations": {DEFAULT: "false"}}},
                       headers={"content-type": "application/merge-patch+json"})
    assert await class_of(client, ingress("c")) == "old"
