"""VolumeBinding's PreBind writes: what the scheduler changes so the chosen node's volumes get bound.

``BindPodVolumes`` (``pkg/scheduler/framework/plugins/volumebinding/binder.go``, Kubernetes 1.32) as
API updates: each volume matched to an unbound ``WaitForFirstConsumer`` claim is pre-bound to it
(``spec.claimRef`` with the claim's uid and resourceVersion, and the ``pv.kubernetes.io/bound-by-controller``
annotation), and each claim left to provisioning is annotated ``volume.kubernetes.io/selected-node``
with the chosen node (skipped when it already says so). The volume controller completes the binding;
the scheduler waits for it (:mod:`._scheduler`).
"""

from __future__ import annotations

from kubeloop.client import Client
from kubeloop.controllers._scheduler_resources import PVCS, PVS
from kubeloop.controllers._scheduler_volumes import Bindings
from kubeloop.controllers._volume import BOUND_BY_CONTROLLER, SELECTED_NODE

__all__ = ["prebind"]


async def prebind(client: Client, chosen: Bindings, node_name: str) -> None:
    """``BindPodVolumes``' API updates: pre-bind matched volumes, annotate claims to provision."""
    for pv, claim in chosen.static:
        meta = claim["metadata"]
        claim_ref = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"), "name": meta.get("name"),
                     "uid": meta.get("uid"), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion")}
        annotations = {**(pv["metadata"].get("annotations") or {}), BOUND_BY_CONTROLLER: "yes"}
        await client.update(PVS, {**pv, "metadata": {**pv["metadata"], "annotations": annotations},
                                  "spec": {**pv["spec"], "claimRef": claim_ref}})
    for claim in chosen.provision:
        meta = claim["metadata"]
        if (meta.get("annotations") or {}).get(SELECTED_NODE) == node_name:
            continue
        await client.patch(PVCS, str(meta["name"]), {"metadata": {
            "annotations": {SELECTED_NODE: node_name}, "resourceVersion": meta.get("resourceVersion")}},
            namespace=str(meta.get("namespace") or ""))
