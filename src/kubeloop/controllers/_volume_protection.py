"""Storage object in-use protection: the ``kubernetes.io/pvc-protection`` and ``pv-protection`` finalizers.

Mirrors ``pkg/controller/volume/pvcprotection`` and ``pvprotection``:

- Every claim carries ``kubernetes.io/pvc-protection`` (added here; upstream's admission plugin adds
  it at create). A claim being deleted keeps it while any pod that is not finished (phase not
  Succeeded/Failed) names the claim in ``spec.volumes``; the pods are checked in the cache and then
  with a live list, so a pod the cache has not seen yet still protects its claim. When none does,
  the finalizer is removed and the API server completes the delete.
- Every volume carries ``kubernetes.io/pv-protection``; a volume being deleted keeps it while it is
  Bound, and loses it once it is not (e.g. Released), so the delete completes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import NotFound
from kubeloop.controllers._scheduler_resources import PODS, PVCS, PVS
from kubeloop.runtime import Builder, EnqueueMapped, Manager, Request, Result

__all__ = ["PVC_PROTECTION", "PV_PROTECTION", "VolumeProtectionController"]

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def claims_of(pod: Mapping[str, Any]) -> list[str]:
    return [str(v["persistentVolumeClaim"]["claimName"]) for v in (pod.get("spec") or {}).get("volumes") or ()
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
            and v["persistentVolumeClaim"].get("claimName")]


def _uses(pod: Mapping[str, Any], claim: str) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and claim in claims_of(pod)


class VolumeProtectionController:
    """Adds and removes the in-use protection finalizers. Build it on a manager before it runs."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.pvcs = manager.informer(PVCS)
        self.pvs = manager.informer(PVS)
        self.pods = manager.informer(PODS)
        self.claims = (
            Builder(manager).named("pvc-protection").for_(PVCS)
            .watches(PODS, EnqueueMapped(self._claims_of_pod)).build(self.reconcile_claim)
        )
        self.volumes = Builder(manager).named("pv-protection").for_(PVS).build(self.reconcile_volume)

    @staticmethod
    def _claims_of_pod(pod: Mapping[str, Any]) -> list[Request]:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        return [Request(namespace, name) for name in claims_of(pod)]

    async def reconcile_claim(self, request: Request) -> Result | None:
        pvc = self.pvcs.cache.get_by_name(request.name, request.namespace)
        if pvc is None:
            return None
        finalizers = list(pvc["metadata"].get("finalizers") or [])
        if not pvc["metadata"].get("deletionTimestamp"):
            if PVC_PROTECTION not in finalizers:
                await self._set_finalizers(PVCS, pvc, [*finalizers, PVC_PROTECTION])
            return None
        if PVC_PROTECTION not in finalizers or await self._in_use(request.namespace, request.name):
            return None
        await self._set_finalizers(PVCS, pvc, [f for f in finalizers if f != PVC_PROTECTION])
        return None

    async def _in_use(self, namespace: str, claim: str) -> bool:
        if any(_uses(p, claim) for p in self.pods.cache.list(namespace=namespace)):
            return True
        items, _ = await self.client.list_all(PODS, namespace=namespace)
        return any(_uses(p, claim) for p in items)

    async def reconcile_volume(self, request: Request) -> Result | None:
        pv = self.pvs.cache.get_by_name(request.name)
        if pv is None:
            return None
        finalizers = list(pv["metadata"].get("finalizers") or [])
        if not pv["metadata"].get("deletionTimestamp"):
            if PV_PROTECTION not in finalizers:
                await self._set_finalizers(PVS, pv, [*finalizers, PV_PROTECTION])
        elif PV_PROTECTION in finalizers and (pv.get("status") or {}).get("phase") != "Bound":
            await self._set_finalizers(PVS, pv, [f for f in finalizers if f != PV_PROTECTION])
        return None

    async def _set_finalizers(self, resource: Any, obj: dict[str, Any], finalizers: list[str]) -> None:
        meta = {**obj["metadata"], "finalizers": finalizers}
        try:
            await self.client.update(resource, {**obj, "metadata": meta})
        except NotFound:
            pass
