"""Dual-stack fields of Services on kubeloop's single-stack IPv4 cluster, as kube-apiserver 1.32 answers them.

Upstream: k/k ``pkg/registry/core/service/storage/alloc.go`` ``initIPFamilyFields`` (run by ``beginCreate`` /
``beginUpdate`` before validation): ``ipFamilyPolicy`` defaults to ``SingleStack`` (the old policy on an update;
``RequireDualStack`` for a headless, selectorless service); ``RequireDualStack`` is refused ("this cluster is not
configured for dual-stack services") because the cluster has one family; ``PreferDualStack`` stays on the one
family; a family or a cluster IP of a family the cluster lacks is refused; only headless, selectorless services
may hold both families. ``pkg/apis/core/validation`` ``ValidateServiceClusterIPsRelatedFields`` checks
``clusterIPs`` against ``clusterIP`` and refuses duplicate families. Each refusal leaves nothing stored.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import App

from ._uvicorn import kubectl_for

SERVICES = "/api/v1/namespaces/default/services"
CIDR = ipaddress.ip_network("10.96.0.0/12")
MERGE = {"Content-Type": "application/merge-patch+json"}


def svc(name: str, *, selector: bool = True, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"port": 80}], **spec}
    if selector:
        body["selector"] = {"app": name}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


async def families_of(client: httpx.AsyncClient, body: dict[str, Any]) -> tuple[str, list[str], list[str]]:
    r = await client.post(SERVICES, json=body)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    return spec["ipFamilyPolicy"], spec["ipFamilies"], spec["clusterIPs"]


async def refused(client: httpx.AsyncClient, body: dict[str, Any]) -> str:
    r = await client.post(SERVICES, json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"]) == ("Invalid", "Service")
    assert (await client.get(f"{SERVICES}/{body['metadata']['name']}")).status_code == 404
    return str(status["message"])


async def test_require_dual_stack_is_refused_on_a_single_stack_cluster(client: httpx.AsyncClient) -> None:
    assert await refused(client, svc("a", ipFamilyPolicy="RequireDualStack")) == (
        'Service "a" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services")
    # A headless service with a selector gets no exception.
    assert await refused(client, svc("h", clusterIP="None", ipFamilyPolicy="RequireDualStack")) == (
        'Service "h" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services")
    assert await refused(client, svc("b", ipFamilyPolicy="RequireDualStack", ipFamilies=["IPv4", "IPv6"])) == (
        'Service "b" is invalid: [spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not '
        'configured for dual-stack services, spec.ipFamilies[1]: Invalid value: "IPv6": not configured on this cluster]')


async def test_prefer_dual_stack_stays_on_the_one_family(client: httpx.AsyncClient) -> None:
    policy, families, ips = await families_of(client, svc("p", ipFamilyPolicy="PreferDualStack"))
    assert (policy, families, len(ips)) == ("PreferDualStack", ["IPv4"], 1)
    assert ipaddress.ip_address(ips[0]) in CIDR
    assert await families_of(client, svc("hp", clusterIP="None", ipFamilyPolicy="PreferDualStack")) == (
        "PreferDualStack", ["IPv4"], ["None"])
    # Asking for the missing family by name is refused, whatever the policy.
    assert await refused(client, svc("p2", ipFamilyPolicy="PreferDualStack", ipFamilies=["IPv4", "IPv6"])) == (
        'Service "p2" is invalid: spec.ipFamilies[1]: Invalid value: "IPv6": not configured on this cluster')
    assert await refused(client, svc("v6", ipFamilies=["IPv6"])) == (
        'Service "v6" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster')


async def test_cluster_ips_of_a_missing_family_or_without_cluster_ip_are_refused(client: httpx.AsyncClient) -> None:
    assert await refused(client, svc("v6ip", clusterIP="fd00::5")) == (
        'Service "v6ip" is invalid: spec.clusterIPs[0]: Invalid value: []string{"fd00::5"}: '
        "IPv6 is not configured on this cluster")
    assert await refused(client, svc("two", ipFamilyPolicy="PreferDualStack", clusterIPs=["10.96.0.50", "fd00::1"])) == (
        'Service "two" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.50", "fd00::1"}: '
        "must be empty when `clusterIP` is not specified")


async def test_two_families_need_a_dual_stack_policy(client: httpx.AsyncClient) -> None:
    message = ("must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified")
    assert await refused(client, svc("s", ipFamilyPolicy="SingleStack", ipFamilies=["IPv4", "IPv6"])) == (
        f'Service "s" is invalid: spec.ipFamilyPolicy: Invalid value: "SingleStack": {message}')
    assert await refused(client, svc("n", ipFamilies=["IPv4", "IPv6"])) == (  # no policy: SingleStack
        f'Service "n" is invalid: spec.ipFamilyPolicy: Invalid value: "SingleStack": {message}')
    assert await refused(client, svc("d", ipFamilyPolicy="PreferDualStack", ipFamilies=["IPv4", "IPv4"])) == (
        'Service "d" is invalid: spec.ipFamilies[1]: Duplicate value: "IPv4"')


async def test_headless_selectorless_services_may_hold_both_families(client: httpx.AsyncClient) -> None:
    assert await families_of(client, svc("bare", selector=False, clusterIP="None")) == (
        "RequireDualStack", ["IPv4", "IPv6"], ["None"])
    assert await families_of(client, svc("v6first", selector=False, clusterIP="None", ipFamilyPolicy="PreferDualStack",
                                         ipFamilies=["IPv6"])) == ("PreferDualStack", ["IPv6", "IPv4"], ["None"])
    assert await families_of(client, svc("single", selector=False, clusterIP="None", ipFamilyPolicy="SingleStack")) == (
        "SingleStack", ["IPv4"], ["None"])


async def test_updates_keep_the_policy_and_refuse_require_dual_stack(client: httpx.AsyncClient) -> None:
    _, _, ips = await families_of(client, svc("web", ipFamilyPolicy="PreferDualStack"))
    r = await client.patch(f"{SERVICES}/web", json={"spec": {"ipFamilyPolicy": "RequireDualStack"}}, headers=MERGE)
    assert r.status_code == 422 and r.json()["message"] == (
        'Service "web" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services")
    r = await client.patch(f"{SERVICES}/web", json={"spec": {"ipFamilyPolicy": "SingleStack"}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert (r.json()["spec"]["ipFamilyPolicy"], r.json()["spec"]["ipFamilies"], r.json()["spec"]["clusterIPs"]) == (
        "SingleStack", ["IPv4"], ips)
    # A PUT without a policy adopts the stored one (initIPFamilyFields on update).
    stored = (await client.get(f"{SERVICES}/web")).json()
    del stored["spec"]["ipFamilyPolicy"]
    r = await client.put(f"{SERVICES}/web", json=stored)
    assert r.status_code == 200 and r.json()["spec"]["ipFamilyPolicy"] == "SingleStack", r.text
    r = await client.patch(f"{SERVICES}/web", json={"spec": {"ipFamilyPolicy": "PreferDualStack"}}, headers=MERGE)
    assert r.status_code == 200 and r.json()["spec"]["ipFamilies"] == ["IPv4"], r.text
    assert r.json()["spec"]["clusterIPs"] == ips


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_sees_prefer_dual_stack_single_and_require_dual_stack_refused(real_app: App, tmp_path: Path) -> None:
    async with kubectl_for(real_app, tmp_path) as kubectl:
        code, _, err = await kubectl.run("apply", "-f", "-", ok=False,
                                         stdin=json.dumps(svc("dual", ipFamilyPolicy="RequireDualStack")).encode())
        assert code == 1
        assert err.strip() == ('The Service "dual" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
                               "this cluster is not configured for dual-stack services")
        code, _, err = await kubectl.run("apply", "-f", "-", ok=False,
                                         stdin=json.dumps(svc("prefer", ipFamilyPolicy="PreferDualStack")).encode())
        assert code == 0, err
        code, out, err = await kubectl.run("get", "service", "prefer", "-o",
                                           "jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies} {.spec.clusterIPs}",
                                           ok=False)
    assert code == 0, err
    policy, families, ips = out.split(" ")
    assert (policy, json.loads(families)) == ("PreferDualStack", ["IPv4"])
    assert len(json.loads(ips)) == 1
