"""The official ``kubernetes`` client sees upstream's order of a write's steps: a mutating admission plugin's
fix is accepted where validation alone refuses, and a stale replace carrying a bad quantity is the
decode's 400, not a 409 (apiserver handlers/update.go: decode before the optimistic lock)."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.api import ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin

from ._uvicorn import serve


class LabelFixer(MutatingPlugin):
    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return operation == "CREATE" and resource.plural == "configmaps"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        labels = obj["metadata"].get("labels") or {}
        for key, value in labels.items():
            labels[key] = value.replace(" ", "-")


def _flow(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        core = k8s.CoreV1Api(api_client)
        body = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="cm", labels={"tier": "front end"}))
        out["labels"] = core.create_namespaced_config_map("default", body).metadata.labels
        container = k8s.V1Container(name="c", image="nginx:1",
                                    resources=k8s.V1ResourceRequirements(requests={"cpu": "1000m"}))
        pod = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="p"), spec=k8s.V1PodSpec(containers=[container]))
        created = core.create_namespaced_pod("default", pod)
        out["cpu"] = created.spec.containers[0].resources.requests["cpu"]
        core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"x": "y"}}})
        created.spec.containers[0].resources.requests["cpu"] = "lots"  # created's resourceVersion is stale now
        try:
            core.replace_namespaced_pod("p", "default", created)
        except ApiException as exc:
            out["bad_quantity"] = (exc.status, exc.reason)
        created.spec.containers[0].resources.requests["cpu"] = "1"
        try:
            core.replace_namespaced_pod("p", "default", created)
        except ApiException as exc:
            out["stale"] = exc.status
    return out


async def test_kubernetes_client_sees_upstreams_order_of_a_writes_steps(real_app: App) -> None:
    real_app.admission.append(LabelFixer())
    async with serve(real_app) as url:
        out = await asyncio.to_thread(_flow, url)
    assert out["labels"] == {"tier": "front-end"}
    assert out["cpu"] == "1"
    assert out["bad_quantity"] == (400, "Bad Request")
    assert out["stale"] == 409
