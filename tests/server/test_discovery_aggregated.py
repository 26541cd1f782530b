"""Aggregated discovery answers only when asked for, in the shape client-go parses."""

from __future__ import annotations

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.server._discovery import api_group, api_group_list, api_resource_list
from kubeloop.server._discovery_aggregated import aggregated_discovery, content_type, negotiate_discovery

KUBECTL_132 = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
               "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
KUBECTL_128 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"


def test_negotiation_follows_the_accept_order() -> None:
    assert negotiate_discovery(KUBECTL_132) == "v2"
    assert negotiate_discovery(KUBECTL_128) == "v2beta1"
    assert negotiate_discovery("application/json, */*") is None
    assert negotiate_discovery("") is None
    assert content_type("v2") == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def test_core_group_document_lists_pods_with_subresources() -> None:
    doc = aggregated_discovery(KindRegistry(), legacy=True, version="v2")
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    [core] = doc["items"]
    assert core["metadata"]["name"] == ""
    resources = {r["resource"]: r for r in core["versions"][0]["resources"]}
    pods = resources["pods"]
    assert pods["responseKind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert pods["scope"] == "Namespaced" and "po" in pods["shortNames"] and pods["categories"] == ["all"]
    assert {s["subresource"] for s in pods["subresources"]} >= {"status", "eviction"}
    assert resources["namespaces"]["scope"] == "Cluster"


def test_groups_document_prefers_the_highest_stable_version_first() -> None:
    reg = KindRegistry()
    for version in ("v1alpha1", "v2", "v1beta1", "v1"):
        reg.add(ResourceInfo("example.com", version, "Widget", "widgets", "widget", True, custom=True))
    doc = aggregated_discovery(reg, legacy=False, version="v2beta1")
    groups = {i["metadata"]["name"]: i for i in doc["items"]}
    assert "" not in groups and "apps" in groups
    assert [v["version"] for v in groups["example.com"]["versions"]] == ["v2", "v1", "v1beta1", "v1alpha1"]
    deployments = next(r for r in groups["apps"]["versions"][0]["resources"] if r["resource"] == "deployments")
    scale = next(s for s in deployments["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def test_aggregated_subresources_match_legacy_discovery() -> None:
    # Upstream lists pods/binding and namespaces/finalize in both documents (aggregated discovery is
    # built from the same storage map as APIResourceList, apiserver endpoints/discovery/aggregated).
    doc = aggregated_discovery(KindRegistry(), legacy=True, version="v2")
    resources = {r["resource"]: r for r in doc["items"][0]["versions"][0]["resources"]}
    pod_subs = {s["subresource"]: s for s in resources["pods"]["subresources"]}
    assert pod_subs["binding"] == {
        "subresource": "binding", "responseKind": {"group": "", "version": "v1", "kind": "Binding"}, "verbs": ["create"]
    }
    assert pod_subs["eviction"]["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert pod_subs["status"] == {
        "subresource": "status", "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
        "verbs": ["get", "patch", "update"],
    }
    ns_subs = {s["subresource"]: s for s in resources["namespaces"]["subresources"]}
    assert ns_subs["finalize"]["verbs"] == ["update"]
    legacy = api_resource_list(KindRegistry(), "", "v1")
    assert legacy is not None
    listed = {r["name"] for r in legacy["resources"] if "/" in r["name"]}
    aggregated = {f"{r['resource']}/{s['subresource']}" for r in resources.values() for s in r.get("subresources", [])}
    assert aggregated == listed


def test_both_discovery_forms_order_versions_alike_with_non_kubernetes_versions_last_alphabetically() -> None:
    # apimachinery CompareKubeAwareVersionStrings: Kubernetes-like versions first (GA, beta, alpha,
    # higher numbers first), then the others in lexicographic order, in either discovery document.
    reg = KindRegistry()
    for version in ("foo", "v1beta1", "bar", "v1"):
        reg.add(ResourceInfo("example.com", version, "Widget", "widgets", "widget", True, custom=True))
    expected = ["v1", "v1beta1", "bar", "foo"]
    legacy = api_group(reg, "example.com")
    assert legacy is not None
    assert [v["version"] for v in legacy["versions"]] == expected
    assert legacy["preferredVersion"]["version"] == "v1"
    listed = next(g for g in api_group_list(reg)["groups"] if g["name"] == "example.com")
    assert [v["version"] for v in listed["versions"]] == expected
    doc = aggregated_discovery(reg, legacy=False, version="v2")
    groups = {i["metadata"]["name"]: i for i in doc["items"]}
    assert [v["version"] for v in groups["example.com"]["versions"]] == expected
