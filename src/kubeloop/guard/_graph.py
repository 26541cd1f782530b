"""The cascade as the garbage collector and the namespace controller will run it, computed from listed objects.

:func:`compute_impact` is pure: given the target, every object in scope (as listed), the owners
found live outside that scope, and the persistent volumes, it predicts exactly what upstream removes
(controllers reference sections 1 and 2):

* The target is deleted; a Namespace takes all its content (the namespace controller deletes it
  with Background propagation, which also overrides an ``orphan`` finalizer on the content).
* An object is collected when it references a deleted owner and none of its owners is still
  *solid* (GC ``attemptToDeleteItem``): a reference is dead when the owner is deleted by this
  cascade, absent, has another uid, or is a namespaced owner in another namespace (treated as
  absent, §1.7); a cluster-scoped dependent of a namespaced owner is unresolvable and never
  collected. Repeated to a fixpoint, so chains and multi-owner objects resolve in any order.
* Owners that do not propagate (the target under ``--cascade=orphan``, or a collected object that
  carries the ``orphan`` finalizer, which the GC deletes with Orphan propagation) have their
  references removed from their dependents instead: those are *orphaned*.
* A dependent with a solid owner left *survives*; only its dead references are removed.
* Events are not GC dependents (the GC does not watch them) but are namespace content.
* Foreground: the target waits for dependents whose reference has ``blockOwnerDeletion: true``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeloop.api import (
    APPROVED_ANNOTATION,
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    GC_IGNORED_RESOURCES,
    PROTECT_ANNOTATION,
    ResourceInfo,
    is_protected,
    metadata_of,
    name_of,
    namespace_of,
    uid_of,
)
from kubeloop.guard._model import DataAtRisk, Entry, FinalizerNote, Impact, ObjectRef, Survivor

__all__ = ["APPROVED_ANNOTATION", "PROTECT_ANNOTATION", "Listed", "compute_impact", "object_ref"]

_QUIET_FINALIZERS = {
    "kubernetes.io/pvc-protection": "removed once no pod uses the claim",
    "kubernetes.io/pv-protection": "removed once the volume is no longer bound to a claim",
}


@dataclass(frozen=True, slots=True)
class Listed:
    info: ResourceInfo
    obj: Mapping[str, Any]

    @property
    def meta(self) -> Mapping[str, Any]:
        return metadata_of(self.obj)

    @property
    def uid(self) -> str:
        return uid_of(self.obj)


def object_ref(info: ResourceInfo, obj: Mapping[str, Any]) -> ObjectRef:
    return ObjectRef(
        group=info.group, version=info.version, kind=info.kind, plural=info.plural,
        namespace=namespace_of(obj) if info.namespaced else "", name=name_of(obj), uid=uid_of(obj),
        resource_version=str(metadata_of(obj).get("resourceVersion") or ""),
    )  # fmt: skip


def _owner_refs(item: Listed) -> list[Mapping[str, Any]]:
    return [r for r in item.meta.get("ownerReferences") or () if isinstance(r, Mapping) and r.get("uid")]


class _Cascade:
    def __init__(self, target: Listed, objects: Iterable[Listed], alive_elsewhere: set[str]) -> None:
        self.by_uid: dict[str, Listed] = {}
        for item in objects:
            self.by_uid.setdefault(item.uid, item)
        self.target_uid = target.uid
        self.by_uid[self.target_uid] = target
        self.alive_elsewhere = alive_elsewhere
        self.deleted: dict[str, str] = {}  # uid -> tree parent uid
        self.propagating: set[str] = set()

    def state(self, ref: Mapping[str, Any], dependent: Listed) -> str:
        """``dead``, ``removed`` (owner deleted without propagation) or ``solid``."""
        uid = str(ref["uid"])
        owner = self.by_uid.get(uid)
        if owner is None:
            return "solid" if uid in self.alive_elsewhere else "dead"
        if owner.info.namespaced:
            if not dependent.info.namespaced:
                return "solid"  # unresolvable: never collected (§1.7)
            if owner.meta.get("namespace") != dependent.meta.get("namespace"):
                return "dead"  # looked up in the dependent's namespace: absent
        if uid in self.deleted:
            return "dead" if uid in self.propagating else "removed"
        return "solid"

    def add(self, uid: str, parent: str, *, propagates: bool) -> None:
        self.deleted[uid] = parent
        if propagates:
            self.propagating.add(uid)

    def run(self, candidates: Sequence[Listed]) -> None:
        changed = True
        while changed:
            changed = False
            for item in candidates:
                uid = item.uid
                if uid in self.deleted:
                    continue
                refs = _owner_refs(item)
                into = [r for r in refs if str(r["uid"]) in self.propagating]
                if not into:
                    continue
                if all(self.state(r, item) != "solid" for r in refs):
                    finalizers = item.meta.get("finalizers") or ()
                    self.add(uid, str(into[0]["uid"]), propagates=FINALIZER_ORPHAN_DEPENDENTS not in finalizers)
                    changed = True


def compute_impact(
    target: Listed,
    objects: Sequence[Listed],
    *,
    cascade: str,
    alive_elsewhere: set[str] | None = None,
    volumes: Mapping[str, Listed] | None = None,
    warnings: Sequence[str] = (),
) -> Impact:
    """The impact of deleting ``target`` with ``cascade`` (``background``, ``foreground``, ``orphan``)."""
    graph = _Cascade(target, objects, alive_elsewhere or set())
    tuid = graph.target_uid
    graph.add(tuid, "", propagates=cascade != "orphan")
    is_namespace = target.info.group == "" and target.info.plural == "namespaces"
    if is_namespace:
        name = target.meta.get("name")
        for uid, item in graph.by_uid.items():
            if item.info.namespaced and item.meta.get("namespace") == name and uid != tuid:
                graph.add(uid, tuid, propagates=True)
        for uid, parent in list(graph.deleted.items()):
            if parent == tuid:
                owners = [str(r["uid"]) for r in _owner_refs(graph.by_uid[uid]) if str(r["uid"]) in graph.deleted]
                graph.deleted[uid] = owners[0] if owners and owners[0] != uid else tuid
    candidates = [
        item for item in graph.by_uid.values()
        if _owner_refs(item) and (item.info.group, item.info.plural) not in GC_IGNORED_RESOURCES
    ]  # fmt: skip
    graph.run(candidates)

    entries: list[Entry] = []
    for uid, parent in graph.deleted.items():
        item = graph.by_uid[uid]
        blocking = any(str(r["uid"]) == parent and r.get("blockOwnerDeletion") for r in _owner_refs(item))
        entries.append(Entry(
            ref=object_ref(item.info, item.obj), parent=parent, blocking=blocking,
            finalizers=tuple(item.meta.get("finalizers") or ()), protected=is_protected(item.obj),
            being_deleted=bool(item.meta.get("deletionTimestamp")),
        ))  # fmt: skip
    orphaned: list[Entry] = []
    surviving: list[Survivor] = []
    for item in candidates:
        uid = item.uid
        if uid in graph.deleted:
            continue
        refs = _owner_refs(item)
        into = [str(r["uid"]) for r in refs if str(r["uid"]) in graph.deleted]
        if not into:
            continue
        solid = [r for r in refs if graph.state(r, item) == "solid"]
        ref = object_ref(item.info, item.obj)
        if solid:
            kept_by = tuple(f"{str(r.get('kind', '')).lower()}/{r.get('name', '')}" for r in solid)
            surviving.append(Survivor(ref, tuple(into), kept_by))
        else:
            orphaned.append(Entry(ref=ref, parent=into[0], finalizers=tuple(item.meta.get("finalizers") or ()),
                                  protected=is_protected(item.obj)))
    notes = _finalizer_notes(graph, entries, cascade=cascade, is_namespace=is_namespace)
    data = _data_at_risk(graph, entries, cascade=cascade, volumes=volumes or {})
    warn = list(warnings)
    protected = [e for e in entries if e.protected and not e.being_deleted]
    if protected:
        names = ", ".join(e.ref.display_ns for e in protected[:5]) + (" ..." if len(protected) > 5 else "")
        warn.append(f"{len(protected)} protected object(s) ({PROTECT_ANNOTATION}=true): {names}; a plain delete is "
                    "refused for them, confirming this plan approves them")
    if entries[0].being_deleted:
        warn.append(f"{entries[0].ref.display_ns} is already being deleted")
    graceful = [g for g in (_grace_period(graph.by_uid[e.ref.uid]) for e in entries if not e.being_deleted) if g]
    if graceful:
        warn.append(f"{len(graceful)} pod(s) terminate gracefully: each stays Terminating for up to its "
                    f"terminationGracePeriodSeconds (up to {max(graceful)} s here) until its kubelet confirms it "
                    "stopped, so the delete finishes that much later")
    return Impact(target=entries[0].ref, cascade=cascade, deleted=tuple(entries), orphaned=tuple(orphaned),
                  surviving=tuple(surviving), finalizers=tuple(notes), data=tuple(data), warnings=tuple(warn))


def _grace_period(item: Listed) -> int:
    """Seconds a DELETE leaves this pod Terminating (pod strategy CheckGracefulDelete); 0 if not a pod.

    Unscheduled pods and pods that already finished are removed at once; the others wait for
    ``terminationGracePeriodSeconds`` (default 30).
    """
    if item.info.group != "" or item.info.plural != "pods":
        return 0
    spec = item.obj.get("spec") or {}
    if not spec.get("nodeName") or (item.obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    grace = spec.get("terminationGracePeriodSeconds")
    return grace if isinstance(grace, int) else 30


def _finalizer_notes(graph: _Cascade, entries: list[Entry], *, cascade: str, is_namespace: bool) -> list[FinalizerNote]:
    notes: list[FinalizerNote] = []
    target = entries[0]
    if cascade == "foreground":
        blockers = [e for e in entries if e.parent == target.ref.uid and e.blocking]
        notes.append(FinalizerNote(target.ref, FINALIZER_DELETE_DEPENDENTS, (
            f"the target stays visible with a deletionTimestamp until its {len(blockers)} blocking dependent(s) "
            "(blockOwnerDeletion) are gone; dependents that own objects are deleted in foreground too"), False))
    if is_namespace:
        spec_finalizers = (graph.by_uid[target.ref.uid].obj.get("spec") or {}).get("finalizers") or ()
        for f in spec_finalizers:
            notes.append(FinalizerNote(target.ref, f, (
                "spec finalizer: the namespace stays Terminating while the namespace controller deletes all "
                "content (pods first), then it is removed"), False))
    for entry in entries:
        for f in entry.finalizers:
            if f in (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS):
                if entry is not target and f == FINALIZER_ORPHAN_DEPENDENTS:
                    notes.append(FinalizerNote(entry.ref, f, "deleted with Orphan propagation: its dependents are "
                                               "kept, with their ownerReference removed", False))
                continue
            if f in _QUIET_FINALIZERS:
                notes.append(FinalizerNote(entry.ref, f, _QUIET_FINALIZERS[f], False))
                continue
            where = "the namespace stays Terminating" if is_namespace else "it stays (with a deletionTimestamp)"
            notes.append(FinalizerNote(entry.ref, f, f"{where} until its controller removes this finalizer", True))
    return notes


def _capacity(obj: Mapping[str, Any]) -> str:
    status = (obj.get("status") or {}).get("capacity") or {}
    spec = obj.get("spec") or {}
    return str(status.get("storage") or (spec.get("capacity") or {}).get("storage")
               or ((spec.get("resources") or {}).get("requests") or {}).get("storage") or "?")


def _data_at_risk(
    graph: _Cascade, entries: list[Entry], *, cascade: str, volumes: Mapping[str, Listed]
) -> list[DataAtRisk]:
    out: list[DataAtRisk] = []
    deleted = graph.deleted
    seen_pv: set[str] = set()

    def volume(pv: Mapping[str, Any], pv_ref: ObjectRef, *, claim_deleted: bool) -> None:
        if pv_ref.uid in seen_pv:
            return
        seen_pv.add(pv_ref.uid)
        policy = str((pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain")
        if policy == "Delete":
            fate, detail = "deleted", "reclaimPolicy Delete: the volume and ITS DATA are deleted"
        elif policy == "Recycle":
            fate, detail = "deleted", "reclaimPolicy Recycle: the volume is scrubbed (its data erased)"
        elif claim_deleted:
            fate, detail = "released", "reclaimPolicy Retain: the volume is kept (Released); its data stays"
        else:
            fate, detail = "deleted", "the PersistentVolume object is deleted; reclaimPolicy Retain keeps the storage"
        out.append(DataAtRisk(pv_ref, _capacity(pv), fate, detail, reclaim_policy=policy))

    for entry in entries:
        item = graph.by_uid[entry.ref.uid]
        if item.info.group == "" and item.info.kind == "PersistentVolumeClaim":
            volume_name = str((item.obj.get("spec") or {}).get("volumeName") or "")
            out.append(DataAtRisk(entry.ref, _capacity(item.obj), "deleted", "the claim is deleted",
                                  volume=volume_name))
            pv = volumes.get(volume_name)
            if pv is not None:
                pv_ref = object_ref(pv.info, pv.obj)
                if pv_ref.uid not in deleted:
                    volume(pv.obj, pv_ref, claim_deleted=True)
        elif item.info.group == "" and item.info.kind == "PersistentVolume":
            volume(item.obj, entry.ref, claim_deleted=False)
        elif item.info.group == "apps" and item.info.kind == "StatefulSet":
            out.extend(_statefulset_claims(graph, item, cascade=cascade))
    return out


def _statefulset_claims(graph: _Cascade, sts: Listed, *, cascade: str) -> list[DataAtRisk]:
    """Claims of a deleted StatefulSet that stay (persistentVolumeClaimRetentionPolicy, §4.2)."""
    spec = sts.obj.get("spec") or {}
    policy = str((spec.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted") or "Retain")
    set_name = str(sts.meta.get("name"))
    templates = [str((t.get("metadata") or {}).get("name") or "") for t in spec.get("volumeClaimTemplates") or ()]
    patterns = [re.compile(rf"^{re.escape(t)}-{re.escape(set_name)}-\d+$") for t in templates if t]
    out: list[DataAtRisk] = []
    for uid, item in graph.by_uid.items():
        if item.info.kind != "PersistentVolumeClaim" or item.info.group != "" or uid in graph.deleted:
            continue
        if item.meta.get("namespace") != sts.meta.get("namespace"):
            continue
        if not any(p.match(str(item.meta.get("name"))) for p in patterns):
            continue
        if cascade == "orphan":
            why = "kept: --cascade=orphan keeps the StatefulSet's claims"
        elif policy == "Delete":
            why = ("kept: persistentVolumeClaimRetentionPolicy.whenDeleted=Delete, but the claim has no "
                   "ownerReference to the StatefulSet yet, so the GC does not collect it")
        else:
            why = "kept: persistentVolumeClaimRetentionPolicy.whenDeleted=Retain"
        out.append(DataAtRisk(object_ref(item.info, item.obj), _capacity(item.obj), "kept", why,
                              volume=str((item.obj.get("spec") or {}).get("volumeName") or "")))
    return out
