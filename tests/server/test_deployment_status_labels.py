"""A Deployment's ``/status`` update keeps the stored labels, as it keeps the spec.

Upstream: k/k ``pkg/registry/apps/deployment/strategy.go`` ``deploymentStatusStrategy.PrepareForUpdate``
(``newDeployment.Spec = oldDeployment.Spec; newDeployment.Labels = oldDeployment.Labels``; its
``GetResetFields`` lists ``spec`` and ``metadata.labels``). A ReplicaSet's status strategy resets only
the spec, so its labels may change there.
"""

from __future__ import annotations

from typing import Any

import httpx

APPS = "/apis/apps/v1/namespaces/default"


def workload(kind: str, labels: dict[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", **({"labels": labels} if labels is not None else {})}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
                     "template": {"metadata": {"labels": {"app": "w"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def put_status(client: httpx.AsyncClient, url: str, labels: dict[str, str] | None) -> dict[str, Any]:
    current = (await client.get(url)).json()
    if labels is None:
        current["metadata"].pop("labels", None)
    else:
        current["metadata"]["labels"] = labels
    current["metadata"]["annotations"] = {"note": "from status"}
    current["status"] = {"observedGeneration": 1, "replicas": 1}
    r = await client.put(f"{url}/status", json=current)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_a_deployment_status_update_keeps_the_stored_labels(client: httpx.AsyncClient) -> None:
    assert (await client.post(f"{APPS}/deployments", json=workload("Deployment", {"tier": "web"}))).status_code == 201
    url = f"{APPS}/deployments/w"
    out = await put_status(client, url, {"tier": "changed", "extra": "x"})
    assert (out["metadata"]["labels"], out["status"]["replicas"]) == ({"tier": "web"}, 1)
    assert out["metadata"]["annotations"] == {"note": "from status"}  # other metadata still goes through
    out = await put_status(client, url, None)
    assert out["metadata"]["labels"] == {"tier": "web"}
    assert (await client.get(url)).json()["metadata"]["labels"] == {"tier": "web"}


async def test_labels_cannot_be_added_through_status_either(client: httpx.AsyncClient) -> None:
    assert (await client.post(f"{APPS}/deployments", json=workload("Deployment", None))).status_code == 201
    out = await put_status(client, f"{APPS}/deployments/w", {"new": "label"})
    assert "labels" not in out["metadata"]


async def test_a_replicaset_status_update_may_change_its_labels(client: httpx.AsyncClient) -> None:
    assert (await client.post(f"{APPS}/replicasets", json=workload("ReplicaSet", {"tier": "web"}))).status_code == 201
    out = await put_status(client, f"{APPS}/replicasets/w", {"tier": "changed"})
    assert out["metadata"]["labels"] == {"tier": "changed"}
