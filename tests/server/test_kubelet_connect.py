"""exec, attach, portforward and the proxies: upstream's checks before it dials, then a clear Status saying
simulated containers run no process (never a 404 that reads as a missing API); discovery lists them as
upstream 1.32's /api/v1 does; pods/log is its own RBAC subresource."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kubeloop.server import User

from ._kubelet_fixtures import PODS, node, pod, running, set_status
from ._rbac import rbac_clients


def status_of(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    return r.status_code, body.get("reason", ""), body["message"]


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_exec_and_attach_say_the_simulated_kubelet_runs_no_process(client: httpx.AsyncClient, method: str) -> None:
    await node(client)
    await pod(client, containers=("app", "side"))
    await set_status(client, "p", running("app", "kubeloop://a"), running("side", "kubeloop://s"))
    r = await client.request(method, f"{PODS}/p/exec", params={"container": "side", "command": ["ls", "/"],
                                                               "stdout": "true"})
    assert status_of(r) == (400, "BadRequest", 'kubeloop\'s simulated kubelet cannot exec in container "side" of '
                                               'pod "p": simulated containers run no process')
    r = await client.request(method, f"{PODS}/p/attach", params={"container": "app"})
    assert status_of(r) == (400, "BadRequest", 'kubeloop\'s simulated kubelet cannot attach to container "app" of '
                                               'pod "p": simulated containers run no process')
    r = await client.request(method, f"{PODS}/p/portforward", params={"ports": "80"})
    assert status_of(r) == (400, "BadRequest", 'kubeloop\'s simulated kubelet cannot forward ports of pod "p": '
                                               "simulated containers run no process")


async def test_exec_checks_what_upstream_checks_before_it_dials(client: httpx.AsyncClient) -> None:
    assert status_of(await client.post(f"{PODS}/p/exec")) == (404, "NotFound", 'pods "p" not found')
    await pod(client, containers=("app", "side"), node_name=None)
    assert status_of(await client.post(f"{PODS}/p/exec")) == (
        400, "BadRequest", "a container name must be specified for pod p, choose one of: [app side]")
    assert status_of(await client.post(f"{PODS}/p/exec", params={"container": "x"})) == (
        400, "BadRequest", "container x is not valid for pod p")
    assert status_of(await client.post(f"{PODS}/p/exec", params={"container": "app"})) == (
        400, "BadRequest", "pod p does not have a host assigned")
    # portforward checks no container.
    assert status_of(await client.post(f"{PODS}/p/portforward")) == (
        400, "BadRequest", "pod p does not have a host assigned")
    r = await client.put(f"{PODS}/p/exec", json={})
    assert (r.status_code, r.json()["reason"]) == (405, "MethodNotAllowed")


async def test_exec_on_a_node_without_a_kubelet_is_the_dial_error(client: httpx.AsyncClient) -> None:
    await node(client, annotations={})
    await pod(client)
    r = await client.post(f"{PODS}/p/exec", params={"command": "sh"})
    assert (r.status_code, "reason" in r.json(), r.json()["message"]) == (
        500, False, "error dialing backend: dial tcp 172.18.0.2:10250: connect: connection refused")


async def test_proxies_answer_service_unavailable(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    # No pod IP yet: ResourceLocation refuses the address.
    assert status_of(await client.get(f"{PODS}/p/proxy/")) == (400, "BadRequest", "address not allowed")
    await set_status(client, "p", running("app", "kubeloop://1"))
    for path in (f"{PODS}/p:8080/proxy/healthz", f"{PODS}/http:p:8080/proxy"):
        assert status_of(await client.get(path)) == (
            503, "ServiceUnavailable", "error trying to reach service: nothing listens on 10.244.0.5:8080 "
                                       "(pod \"p\"): kubeloop's simulated containers run no process")
    assert status_of(await client.get(f"{PODS}/ftp:p:1/proxy")) == (400, "BadRequest", 'invalid pod request "ftp:p:1"')
    assert status_of(await client.get(f"{PODS}/other/proxy/x"))[:2] == (404, "NotFound")
    r = await client.post("/api/v1/namespaces/default/services", json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}})
    assert r.status_code == 201, r.text
    assert status_of(await client.delete("/api/v1/namespaces/default/services/web:80/proxy/a/b")) == (
        503, "ServiceUnavailable", 'error trying to reach service: nothing listens behind service "web": '
                                   "kubeloop's simulated containers run no process")
    assert status_of(await client.get("/api/v1/namespaces/default/services/nope/proxy"))[:2] == (404, "NotFound")
    assert status_of(await client.get("/api/v1/namespaces/default/services/a:b:c:d/proxy")) == (
        400, "BadRequest", 'invalid service request "a:b:c:d"')
    assert status_of(await client.get("/api/v1/nodes/n1/proxy/metrics")) == (
        503, "ServiceUnavailable", 'error trying to reach service: kubeloop\'s simulated kubelet on node "n1" '
                                   "serves no HTTP endpoints")
    await node(client, "bare", annotations={}, address="172.18.0.9")
    assert status_of(await client.get("/api/v1/nodes/bare:10250/proxy/stats")) == (
        503, "ServiceUnavailable", "error trying to reach service: dial tcp 172.18.0.9:10250: connect: connection refused")


async def test_other_paths_below_a_subresource_are_still_404(client: httpx.AsyncClient) -> None:
    await pod(client)
    for path in (f"{PODS}/p/log/more", f"{PODS}/p/exec/x", f"{PODS}/p/status/x", f"{PODS}/p/nope"):
        assert (await client.get(path)).status_code == 404, path


async def test_discovery_lists_the_kubelet_subresources_as_upstream(client: httpx.AsyncClient) -> None:
    resources = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    proxy = ["create", "delete", "get", "patch", "update"]
    expected = {"pods/log": ("Pod", ["get"]), "pods/exec": ("PodExecOptions", ["create", "get"]),
                "pods/attach": ("PodAttachOptions", ["create", "get"]),
                "pods/portforward": ("PodPortForwardOptions", ["create", "get"]),
                "pods/proxy": ("PodProxyOptions", proxy), "services/proxy": ("ServiceProxyOptions", proxy),
                "nodes/proxy": ("NodeProxyOptions", proxy)}
    for name, (kind, verbs) in expected.items():
        entry = resources[name]
        assert (entry["kind"], entry["verbs"], "group" in entry) == (kind, verbs, False), name
    aggregated = (await client.get("/api", headers={
        "accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})).json()
    core = {r["resource"]: r for r in aggregated["items"][0]["versions"][0]["resources"]}
    subs = {s["subresource"]: s for s in core["pods"]["subresources"]}
    assert subs["exec"]["responseKind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
    assert subs["log"]["verbs"] == ["get"]


async def test_pods_log_is_its_own_rbac_subresource(tmp_path: Path) -> None:
    async with rbac_clients(tmp_path, User("dev", groups=("system:authenticated",))) as (admin, dev):
        await node(admin)
        await pod(admin)
        await set_status(admin, "p", running("app", "kubeloop://1"))
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                   "subjects": [{"kind": "User", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}]}
        rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
        assert (await admin.post(f"{rbac}/roles", json=role)).status_code == 201
        assert (await admin.post(f"{rbac}/rolebindings", json=binding)).status_code == 201
        assert (await dev.get(f"{PODS}/p")).status_code == 200
        assert status_of(await dev.get(f"{PODS}/p/log")) == (
            403, "Forbidden", 'pods "p" is forbidden: User "dev" cannot get resource "pods/log" in API group "" '
                              'in the namespace "default"')
        # The bootstrap view rules grant it (upstream's system:aggregate-to-view, which view aggregates once the
        # aggregation controller runs, lists pods/log among what it reads).
        view = {**binding, "metadata": {"name": "view"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "system:aggregate-to-view"}}
        assert (await admin.post(f"{rbac}/rolebindings", json=view)).status_code == 201
        r = await dev.get(f"{PODS}/p/log")
        assert (r.status_code, r.content) == (200, b"")
        assert status_of(await dev.post(f"{PODS}/p/exec", params={"command": "sh"}))[:2] == (403, "Forbidden")
