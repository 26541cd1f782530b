"""Namespace lifecycle admission follows every version of the namespace: content may be created while
it is active, not once it is terminating (even right after creates that saw it active), and again
once it has been purged and created anew."""

from __future__ import annotations

import httpx


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_creates_follow_the_namespace_from_active_to_terminating_to_recreated(client: httpx.AsyncClient) -> None:
    cms = "/api/v1/namespaces/team/configmaps"
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    for i in range(3):
        assert (await client.post(cms, json=configmap(f"a{i}"))).status_code == 201
    ns = (await client.request("DELETE", "/api/v1/namespaces/team")).json()
    assert ns["status"]["phase"] == "Terminating"
    refused = await client.post(cms, json=configmap("late"))
    assert refused.status_code == 403
    assert refused.json()["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    ns["spec"]["finalizers"] = []
    assert (await client.put("/api/v1/namespaces/team/finalize", json=ns)).status_code == 200
    assert (await client.post(cms, json=configmap("gone"))).status_code == 404
    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    assert (await client.post(cms, json=configmap("again"))).status_code == 201
