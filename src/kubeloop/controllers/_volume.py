"""The persistent volume controller: default StorageClass, binding, simulated provisioning, reclaim.

Mirrors ``pkg/controller/volume/persistentvolume`` (``syncClaim`` / ``syncVolume``) for a simulated
cluster:

- A StorageClass ``standard`` (default-class annotation, provisioner ``kubeloop.dev/hostpath``,
  reclaimPolicy Delete, volumeBindingMode Immediate) is created when absent.
- A claim with no ``storageClassName`` gets the default class's name (retroactive default
  StorageClass assignment). A pending claim binds to a volume pre-bound to it (``claimRef`` naming
  it, uid or not; any phase), else to the smallest volume in phase ``Available`` (a new volume is
  ``Pending`` until this controller marks it Available) that matches (same class, enough capacity,
  the access modes, volume mode and selector); with none, a class
  whose provisioner is ``kubeloop.dev/hostpath`` provisions ``pvc-<claim uid>`` with the claim's
  request, the class's reclaim policy and ``pv.kubernetes.io/provisioned-by``.
- Delayed binding (class ``volumeBindingMode: WaitForFirstConsumer``): the controller binds such a
  claim only to a volume pre-bound to it (``claimRef``, which the scheduler writes), and provisions
  only once the claim carries ``volume.kubernetes.io/selected-node`` (the scheduler's choice for the
  first pod using it); until then the claim stays Pending with a Normal ``WaitForFirstConsumer``
  Event "waiting for first consumer to be created before binding" (recorded once per claim here;
  upstream repeats it on every resync, which its recorder counts). The volume provisioned for a
  selected node requires that node (``nodeAffinity`` on ``kubernetes.io/hostname``, as hostPath
  provisioners such as local-path do), so the scheduler keeps later pods of the claim there.
- Binding writes in upstream's order: the volume's ``claimRef`` then its phase ``Bound``, the
  claim's ``volumeName`` with ``pv.kubernetes.io/bind-completed`` (and ``bound-by-controller``
  when the controller chose), then the claim's status (Bound, capacity, access modes).
- A volume without a claim is Available (a Failed one too, as upstream's ``syncVolume`` sets it), and
  so is one pre-bound to a claim by name (``claimRef`` without uid), even before that claim exists. A
  bound volume whose claim is gone (checked against the API, not only the cache) is Released and
  reclaimed: ``Delete`` deletes it, ``Retain`` keeps it Released (its claimRef keeps it from binding
  again).

Every write happens only when something differs, so a steady state writes nothing. Events come
from ``persistentvolume-controller``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubeloop.api import AlreadyExists, Conflict, NotFound, copy_json, label_selector_from_dict
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._scheduler_resources import PVCS, PVS, STORAGE_CLASSES, parse_quantity
from kubeloop.runtime import Builder, EnqueueMapped, Manager, Request, Result

__all__ = [
    "DEFAULT_CLASS_ANNOTATION",
    "PROVISIONER",
    "SELECTED_NODE",
    "PersistentVolumeController",
    "default_storage_class",
    "is_delayed_binding",
    "volume_bound_to_claim",
    "volume_matches_claim",
    "volume_pre_bound_to",
    "volume_size_key",
]

log = logging.getLogger("kubeloop.controllers.volume")

PROVISIONER = "kubeloop.dev/hostpath"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
_WAITING_MEMORY = 4096  # claims whose WaitForFirstConsumer Event was recorded (bounded)


def default_storage_class() -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}


def _storage(obj: Mapping[str, Any], *path: str) -> float:
    node: Any = obj
    for key in path:
        node = (node or {}).get(key)
    return parse_quantity(((node or {}).get("storage")) or 0)


def volume_size_key(pv: Mapping[str, Any]) -> tuple[float, str]:
    """Sort key of candidate volumes: the smallest capacity first, then by name (``findMatchingVolume``)."""
    return _storage(pv, "spec", "capacity"), str((pv.get("metadata") or {}).get("name") or "")


def is_delayed_binding(storage_class: Mapping[str, Any] | None) -> bool:
    return bool(storage_class) and (storage_class or {}).get("volumeBindingMode") == "WaitForFirstConsumer"


def volume_bound_to_claim(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """``IsVolumeBoundToClaim``: the volume's ``claimRef`` names the claim (and its uid, when it has one)."""
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    meta = pvc.get("metadata") or {}
    if not ref or ref.get("name") != meta.get("name") or (ref.get("namespace") or "") != (meta.get("namespace") or ""):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def _holds_claim(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """What ``FindMatchingVolume`` asks of every candidate, pre-bound or not: not being deleted,
    the claim's access modes (its index), volume mode and size."""
    spec, want = pv.get("spec") or {}, pvc.get("spec") or {}
    if (pv.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (want.get("volumeMode") or "Filesystem"):
        return False
    if not set(want.get("accessModes") or ()) <= set(spec.get("accessModes") or ()):
        return False
    return _storage(pv, "spec", "capacity") >= _storage(pvc, "spec", "resources", "requests")


def volume_matches_claim(pv: Mapping[str, Any], pvc: Mapping[str, Any], class_name: str) -> bool:
    """An unbound volume the claim may bind to: phase ``Available`` (class, access modes, volume
    mode, size, selector).

    ``FindMatchingVolume`` (``pkg/controller/volume/persistentvolume/util``), which the PV controller
    and the scheduler's volume binder share, skips unbound volumes in any other phase: a volume just
    created is ``Pending`` until the PV controller marks it ``Available``."""
    spec, want = pv.get("spec") or {}, pvc.get("spec") or {}
    if spec.get("claimRef") or (pv.get("status") or {}).get("phase") != "Available":
        return False
    if (spec.get("storageClassName") or "") != class_name or not _holds_claim(pv, pvc):
        return False
    selector = want.get("selector")
    return selector is None or label_selector_from_dict(selector).matches((pv.get("metadata") or {}).get("labels"))


def volume_pre_bound_to(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """A volume whose ``claimRef`` already names the claim and that can hold it: ``FindMatchingVolume``
    returns it whatever its phase, class or labels."""
    return volume_bound_to_claim(pv, pvc) and _holds_claim(pv, pvc)


class PersistentVolumeController:
    """Binds claims to volumes, provisions and reclaims volumes. Build it on a manager before it runs."""

    def __init__(self, manager: Manager, *, ensure_default_class: bool = True) -> None:
        self.client = manager.client
        self.pvcs = manager.informer(PVCS)
        self.pvs = manager.informer(PVS)
        self.classes = manager.informer(STORAGE_CLASSES)
        self.ensure_default_class = ensure_default_class
        self.events = EventSink(self.client, component="persistentvolume-controller", clock=manager.clock)
        manager.add(self.events, needs_leader_election=False)
        self._told_waiting: dict[str, None] = {}  # claim uids, oldest first
        self.claims = (
            Builder(manager).named("persistentvolume-binder").for_(PVCS)
            .watches(PVS, EnqueueMapped(self._claim_of)).watches(STORAGE_CLASSES, EnqueueMapped(self._pending))
            .build(self.reconcile_claim)
        )
        self.volumes = (
            Builder(manager).named("persistentvolume-reclaimer").for_(PVS)
            .watches(PVCS, EnqueueMapped(self._volume_of)).build(self.reconcile_volume)
        )
        manager.add(_EnsureDefaultClass(self), needs_leader_election=True)

    def _claim_of(self, pv: Mapping[str, Any]) -> list[Request]:
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        return [Request(str(ref.get("namespace") or ""), str(ref["name"]))] if ref.get("name") else self._pending(pv)

    def _volume_of(self, pvc: Mapping[str, Any]) -> list[Request]:
        """A claim's events (its deletion above all) concern the volume bound or reserved for it."""
        uid = (pvc.get("metadata") or {}).get("uid")
        names = {str(pv["metadata"]["name"]) for pv in self.pvs.cache.list()
                 if ((pv.get("spec") or {}).get("claimRef") or {}).get("uid") == uid}
        volume = (pvc.get("spec") or {}).get("volumeName")
        if volume:
            names.add(str(volume))
        return [Request("", name) for name in sorted(names)]

    def _pending(self, _: Mapping[str, Any]) -> list[Request]:
        return [Request.for_object(c) for c in self.pvcs.cache.list()
                if (c.get("status") or {}).get("phase") in ("Pending", None)]

    def _default_class(self) -> dict[str, Any] | None:
        defaults = [c for c in self.classes.cache.list()
                    if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
        # Several defaults: the newest wins (upstream since 1.26).
        defaults.sort(key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]))
        return defaults[-1] if defaults else None

    # -- claims -------------------------------------------------------------------------------------

    async def reconcile_claim(self, request: Request) -> Result | None:
        pvc = self.pvcs.cache.get_by_name(request.name, request.namespace)
        if pvc is None or pvc["metadata"].get("deletionTimestamp"):
            return None
        spec = pvc.get("spec") or {}
        if "storageClassName" not in spec:
            default = self._default_class()
            if default is not None:
                await self.client.update(PVCS, {**pvc, "spec": {**spec, "storageClassName": default["metadata"]["name"]}})
            return None
        class_name = str(spec.get("storageClassName") or "")
        if spec.get("volumeName"):
            pv = self.pvs.cache.get_by_name(str(spec["volumeName"]))
            if pv is None:
                return None  # a volume that does not exist (yet): the claim stays Pending
            await self._bind(pvc, pv, claim_chose=False)
            return None
        cls = self.classes.cache.get_by_name(class_name) if class_name else None
        delayed = is_delayed_binding(cls)
        chosen = self._find_volume(pvc, class_name, delayed=delayed)
        if chosen is not None:
            await self._bind(pvc, chosen, claim_chose=True)
            return None
        selected = (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)
        if delayed and not selected:
            self._waiting_for_consumer(pvc)
            return None
        if cls is not None and cls.get("provisioner") == PROVISIONER:
            await self._provision(pvc, cls, node=str(selected) if delayed and selected else None)
        return None

    def _waiting_for_consumer(self, pvc: Mapping[str, Any]) -> None:
        uid = str(pvc["metadata"].get("uid") or "")
        if uid in self._told_waiting:
            return
        self._told_waiting[uid] = None
        if len(self._told_waiting) > _WAITING_MEMORY:
            del self._told_waiting[next(iter(self._told_waiting))]
        self.events.emit(pvc, "Normal", "WaitForFirstConsumer",
                         "waiting for first consumer to be created before binding",
                         api_version="v1", kind="PersistentVolumeClaim")

    def _find_volume(self, pvc: Mapping[str, Any], class_name: str, *, delayed: bool = False) -> dict[str, Any] | None:
        uid = pvc["metadata"].get("uid")
        for pv in self.pvs.cache.list():
            if ((pv.get("spec") or {}).get("claimRef") or {}).get("uid") == uid:
                return pv  # already ours (provisioned, pre-bound by the scheduler, or a bind half done)
        pre_bound = sorted((pv for pv in self.pvs.cache.list() if volume_pre_bound_to(pv, pvc)), key=volume_size_key)
        if pre_bound:
            return pre_bound[0]  # pre-bound by name (a claimRef without uid), in any phase
        if delayed:
            return None  # findBestMatchForClaim with delayed binding: the scheduler picks static volumes
        fits = [pv for pv in self.pvs.cache.list() if volume_matches_claim(pv, pvc, class_name)]
        fits.sort(key=volume_size_key)
        return fits[0] if fits else None

    async def _provision(self, pvc: dict[str, Any], cls: Mapping[str, Any], *, node: str | None = None) -> None:
        meta, spec = pvc["metadata"], pvc.get("spec") or {}
        name = f"pvc-{meta.get('uid')}"
        pv: dict[str, Any] = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER},
                         "finalizers": ["kubernetes.io/pv-protection"]},
            "spec": {
                "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
                "storageClassName": cls["metadata"]["name"],
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "hostPath": {"path": f"/var/lib/kubeloop/volumes/{name}", "type": "DirectoryOrCreate"},
                "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta.get("namespace"),
                             "name": meta.get("name"), "uid": meta.get("uid")},
            },
        }
        if node:
            pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
        if cls.get("mountOptions"):
            pv["spec"]["mountOptions"] = list(cls["mountOptions"])
        try:
            await self.client.create(PVS, pv)
        except AlreadyExists:
            pass

    async def _bind(self, pvc: dict[str, Any], pv: dict[str, Any], *, claim_chose: bool) -> None:
        meta = pvc["metadata"]
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref and (ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace")
                    or ref.get("uid") not in (None, meta.get("uid"))):
            return  # the volume is someone else's
        if ref.get("uid") != meta.get("uid"):
            annotations = {**(pv["metadata"].get("annotations") or {}), BOUND_BY_CONTROLLER: "yes"}
            claim_ref = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"), "name": meta.get("name"),
                         "uid": meta.get("uid"), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion")}
            pv = await self.client.update(PVS, {**pv, "metadata": {**pv["metadata"], "annotations": annotations},
                                                "spec": {**pv["spec"], "claimRef": claim_ref}})
        if (pv.get("status") or {}).get("phase") != "Bound":
            pv = await self.client.update(PVS, {**pv, "status": {**(pv.get("status") or {}), "phase": "Bound"}},
                                          subresource="status")
        annotations = dict(meta.get("annotations") or {})
        spec = pvc.get("spec") or {}
        wanted = {BIND_COMPLETED: "yes", **({BOUND_BY_CONTROLLER: "yes"} if claim_chose else {})}
        if spec.get("volumeName") != pv["metadata"]["name"] or any(annotations.get(k) != v for k, v in wanted.items()):
            pvc = await self.client.update(PVCS, {**pvc, "metadata": {**meta, "annotations": {**annotations, **wanted}},
                                                  "spec": {**spec, "volumeName": pv["metadata"]["name"]}})
        status = copy_json(dict(pvc.get("status") or {}))
        status.update(phase="Bound", accessModes=list((pv.get("spec") or {}).get("accessModes") or []),
                      capacity=dict((pv.get("spec") or {}).get("capacity") or {}))
        if status != pvc.get("status"):
            await self.client.update(PVCS, {**pvc, "status": status}, subresource="status")

    # -- volumes ------------------------------------------------------------------------------------

    async def reconcile_volume(self, request: Request) -> Result | None:
        pv = self.pvs.cache.get_by_name(request.name)
        if pv is None:
            return None
        ref = (pv.get("spec") or {}).get("claimRef")
        phase = (pv.get("status") or {}).get("phase")
        if not ref or not ref.get("uid"):
            # syncVolume: an unused volume is Available, whatever it was; so is one pre-bound to a claim
            # by name (no uid yet), whether or not that claim exists: the claim's sync binds it.
            if phase != "Available":
                await self._set_phase(pv, "Available")
            return None
        claim = self.pvcs.cache.get_by_name(str(ref.get("name") or ""), str(ref.get("namespace") or ""))
        if claim is None or claim["metadata"].get("uid") != ref.get("uid"):
            try:  # the cache may lag behind a claim just created: ask the API before releasing
                claim = await self.client.get(PVCS, str(ref.get("name")), namespace=str(ref.get("namespace") or ""))
            except NotFound:
                claim = None
        if claim is not None and claim["metadata"].get("uid") == ref.get("uid"):
            return None  # bound, or binding in progress: the claim side finishes it
        if phase not in ("Released", "Failed"):
            pv = await self._set_phase(pv, "Released")
        if (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete" and \
                not pv["metadata"].get("deletionTimestamp"):
            try:
                await self.client.delete(PVS, request.name, preconditions={"uid": pv["metadata"].get("uid")})
            except (NotFound, Conflict):
                pass
        return None

    async def _set_phase(self, pv: dict[str, Any], phase: str) -> dict[str, Any]:
        try:
            return await self.client.update(PVS, {**pv, "status": {**(pv.get("status") or {}), "phase": phase}},
                                            subresource="status")
        except NotFound:
            return pv


class _EnsureDefaultClass:
    def __init__(self, controller: PersistentVolumeController) -> None:
        self.controller = controller

    async def run(self) -> None:
        if not self.controller.ensure_default_class:
            return
        await self.controller.classes.wait_for_sync()
        if self.controller.classes.cache.get_by_name("standard") is None:
            try:
                await self.controller.client.create(STORAGE_CLASSES, default_storage_class())
            except AlreadyExists:
                pass
