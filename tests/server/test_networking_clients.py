"""The networking.k8s.io kinds with real clients: kubectl 1.32 and the official ``kubernetes`` package.

kubectl: ``create ingress`` (its generator sends a protobuf body), ``apply -f`` of a typical manifest with an
IngressClass, an Ingress and a NetworkPolicy, ``get ing/netpol/ingressclass`` (columns from the server's
Table), ``describe``, ``explain`` and ``api-resources``. The kubernetes package: ``NetworkingV1Api`` reads
and writes the three kinds and gets upstream's 422 for a bad one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from kubeloop.server import App

from ._uvicorn import kubectl_for, serve

MANIFEST: list[dict[str, Any]] = [
    {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
     "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
     "spec": {"controller": "k8s.io/ingress-nginx"}},
    {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop"},
     "spec": {"tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
              "rules": [{"host": "shop.example.com", "http": {"paths": [
                  {"path": "/", "pathType": "Prefix",
                   "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                  {"path": "/api", "pathType": "Exact",
                   "backend": {"service": {"name": "api", "port": {"name": "http"}}}}]}}]}},
    {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "db-access"},
     "spec": {"podSelector": {"matchLabels": {"app": "db"}},
              "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "api"}}},
                                    {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}}],
                           "ports": [{"port": 5432}]}]}},
]  # fmt: skip


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


async def test_kubectl_apply_get_describe_explain(real_app: App, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(yaml.safe_dump_all(MANIFEST, sort_keys=False))
    async with kubectl_for(real_app, tmp_path) as kubectl:
        applied = await kubectl("apply", "-f", str(manifest))
        assert applied.split("\n")[:3] == ["ingressclass.networking.k8s.io/nginx created",
                                           "ingress.networking.k8s.io/shop created",
                                           "networkpolicy.networking.k8s.io/db-access created"]
        assert "unchanged" in await kubectl("apply", "-f", str(manifest))
        # the DefaultIngressClass plugin gave the Ingress the default class
        ing = rows(await kubectl("get", "ing"))
        assert ing[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
        assert ing[1][:4] == ["shop", "nginx", "shop.example.com", "80,"] and ing[1][4] == "443"
        netpol = rows(await kubectl("get", "netpol"))
        assert netpol[0] == ["NAME", "POD-SELECTOR", "AGE"] and netpol[1][:2] == ["db-access", "app=db"]
        classes = rows(await kubectl("get", "ingressclass"))
        assert classes[0] == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
        assert classes[1][:3] == ["nginx", "k8s.io/ingress-nginx", "<none>"]
        described = await kubectl("describe", "ingress", "shop")
        assert "Ingress Class:    nginx" in described and "/api   api:http" in described
        described = await kubectl("describe", "networkpolicy", "db-access")
        assert "PodSelector:     app=db" in described and "172.17.0.0/16" in described
        explained = await kubectl("explain", "ingress.spec.rules.http.paths.pathType")
        assert "KIND:       Ingress" in explained and "FIELD: pathType <string>" in explained
        assert "FIELD: policyTypes <[]string>" in await kubectl("explain", "netpol.spec.policyTypes")
        resources = {r[0]: r for r in rows(await kubectl("api-resources", "--api-group=networking.k8s.io"))[1:]}
        assert resources == {
            "ingressclasses": ["ingressclasses", "networking.k8s.io/v1", "false", "IngressClass"],
            "ingresses": ["ingresses", "ing", "networking.k8s.io/v1", "true", "Ingress"],
            "networkpolicies": ["networkpolicies", "netpol", "networking.k8s.io/v1", "true", "NetworkPolicy"]}
        stored = json.loads(await kubectl("get", "netpol", "db-access", "-o", "json"))
        assert stored["spec"]["policyTypes"] == ["Ingress"]
        assert stored["spec"]["ingress"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]


async def test_kubectl_create_ingress_sends_protobuf_and_is_stored_as_json(real_app: App, tmp_path: Path) -> None:
    async with kubectl_for(real_app, tmp_path) as kubectl:
        out = await kubectl("create", "ingress", "simple", "--class=default",
                            "--rule=foo.com/bar=svc1:8080,tls=my-cert", "--rule=*.example.com/*=svc2:http",
                            "--default-backend=defsvc:http", "--annotation=team=edge")
        assert out.strip() == "ingress.networking.k8s.io/simple created"
        got = json.loads(await kubectl("get", "ingress", "simple", "-o", "json"))
    spec = got["spec"]
    assert spec["ingressClassName"] == "default"
    assert spec["defaultBackend"] == {"service": {"name": "defsvc", "port": {"name": "http"}}}
    assert spec["tls"] == [{"hosts": ["foo.com"], "secretName": "my-cert"}]
    assert spec["rules"] == [
        {"host": "foo.com", "http": {"paths": [{"path": "/bar", "pathType": "Exact",
                                                "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}]}},
        {"host": "*.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                                                      "backend": {"service": {"name": "svc2",
                                                                              "port": {"name": "http"}}}}]}}]
    assert got["metadata"]["annotations"] == {"team": "edge"}
    assert got["metadata"]["generation"] == 1 and got["status"] == {"loadBalancer": {}}


def _official_client(url: str) -> dict[str, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        net = k8s.NetworkingV1Api(api_client)
        net.create_ingress_class(k8s.V1IngressClass(
            metadata=k8s.V1ObjectMeta(name="traefik"),
            spec=k8s.V1IngressClassSpec(controller="traefik.io/ingress-controller",
                                        parameters=k8s.V1IngressClassParametersReference(kind="Config", name="c"))))
        net.create_namespaced_network_policy("default", k8s.V1NetworkPolicy(
            metadata=k8s.V1ObjectMeta(name="deny-egress"),
            spec=k8s.V1NetworkPolicySpec(pod_selector=k8s.V1LabelSelector(), policy_types=["Egress"])))
        net.create_namespaced_ingress("default", k8s.V1Ingress(
            metadata=k8s.V1ObjectMeta(name="site"),
            spec=k8s.V1IngressSpec(ingress_class_name="traefik", default_backend=k8s.V1IngressBackend(
                service=k8s.V1IngressServiceBackend(name="web", port=k8s.V1ServiceBackendPort(number=80))))))
        status = net.read_namespaced_ingress_status("site", "default")
        status.status = k8s.V1IngressStatus(load_balancer=k8s.V1IngressLoadBalancerStatus(
            ingress=[k8s.V1IngressLoadBalancerIngress(ip="203.0.113.7")]))
        net.replace_namespaced_ingress_status("site", "default", status)
        try:
            net.create_namespaced_ingress("default", k8s.V1Ingress(
                metadata=k8s.V1ObjectMeta(name="bad"),
                spec=k8s.V1IngressSpec(rules=[k8s.V1IngressRule(host="10.0.0.1", http=k8s.V1HTTPIngressRuleValue(
                    paths=[k8s.V1HTTPIngressPath(path="/", path_type="Prefix", backend=k8s.V1IngressBackend(
                        service=k8s.V1IngressServiceBackend(name="web", port=k8s.V1ServiceBackendPort(number=80))))])
                )])))
            refused: dict[str, Any] = {}
        except k8s.ApiException as exc:
            refused = {"http_status": exc.status, **json.loads(exc.body)}
        return {
            "class": net.read_ingress_class("traefik").spec.parameters.scope,
            "policy": net.read_namespaced_network_policy("deny-egress", "default").spec.policy_types,
            "address": net.read_namespaced_ingress("site", "default").status.load_balancer.ingress[0].ip,
            "ingresses": [i.metadata.name for i in net.list_ingress_for_all_namespaces().items],
            "refused": refused,
        }


async def test_the_kubernetes_package_networking_v1_api(real_app: App) -> None:
    async with serve(real_app) as url:
        got = await asyncio.to_thread(_official_client, url)
    assert got["class"] == "Cluster"  # SetDefaults_IngressClass
    assert got["policy"] == ["Egress"]
    assert got["address"] == "203.0.113.7"
    assert got["ingresses"] == ["site"]
    assert (got["refused"]["http_status"], got["refused"]["reason"]) == (422, "Invalid")
    assert got["refused"]["message"] == ('Ingress.networking.k8s.io "bad" is invalid: spec.rules[0].host: Invalid '
                                         'value: "10.0.0.1": must be a DNS name, not an IP address')
