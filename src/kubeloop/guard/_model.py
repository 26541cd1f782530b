"""The impact of a delete, as dumb frozen data: what goes, what is orphaned, what survives, what is at risk.

An :class:`Impact` is what :func:`~kubeloop.guard.preview_delete` computes and what a plan id is a
hash of. Its JSON form (:meth:`Impact.to_json`, read back by :meth:`Impact.from_json`) is the
``-o json`` output and the saved plan; the field names are a contract for scripts.

* ``deleted``: every object the delete removes, the target first, each with the owner through which
  the cascade reaches it (``parent``; for a namespace delete, content without an owner in the
  impact hangs under the namespace) and whether that reference blocks a foreground delete.
* ``orphaned``: objects that stay, with their ownerReference to a deleted owner removed (Orphan
  propagation, or an owner that carries the ``orphan`` finalizer).
* ``surviving``: dependents of a deleted owner that stay because another owner remains; the GC
  only removes the dead references (``kept_by`` names the remaining owners).
* ``finalizers``: what blocks or delays the delete, with its effect in words.
* ``data``: claims and volumes at risk (``fate`` ``deleted``, ``released``, ``kept``) with capacity.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kubeloop.api import kubectl_name

__all__ = ["DataAtRisk", "Entry", "FinalizerNote", "Impact", "ObjectRef", "Survivor"]


@dataclass(frozen=True, slots=True)
class ObjectRef:
    group: str
    version: str
    kind: str
    plural: str
    namespace: str
    name: str
    uid: str
    resource_version: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def display(self) -> str:
        """``deployment.apps/web``: the kubectl spelling."""
        return f"{kubectl_name(self.kind, self.group)}/{self.name}"

    @property
    def display_ns(self) -> str:
        return f"{self.display} -n {self.namespace}" if self.namespace else self.display


@dataclass(frozen=True, slots=True)
class Entry:
    ref: ObjectRef
    parent: str = ""  # uid of the owner (or namespace) under which the tree shows it
    blocking: bool = False  # its reference to ``parent`` has blockOwnerDeletion: true
    finalizers: tuple[str, ...] = ()
    protected: bool = False
    being_deleted: bool = False


@dataclass(frozen=True, slots=True)
class Survivor:
    ref: ObjectRef
    removed_owners: tuple[str, ...]  # uids of the deleted owners whose references are removed
    kept_by: tuple[str, ...]  # display names of the owners that remain


@dataclass(frozen=True, slots=True)
class FinalizerNote:
    ref: ObjectRef
    finalizer: str
    effect: str
    blocks: bool  # True: nothing finishes until someone removes it; False: a known, self-clearing delay


@dataclass(frozen=True, slots=True)
class DataAtRisk:
    ref: ObjectRef
    capacity: str
    fate: str  # "deleted", "released" (PV kept, Released), "kept" (claim retained)
    detail: str
    reclaim_policy: str = ""
    volume: str = ""


@dataclass(frozen=True)
class Impact:
    target: ObjectRef
    cascade: str  # "background", "foreground", "orphan"
    deleted: tuple[Entry, ...]
    orphaned: tuple[Entry, ...] = ()
    surviving: tuple[Survivor, ...] = ()
    finalizers: tuple[FinalizerNote, ...] = ()
    data: tuple[DataAtRisk, ...] = ()
    warnings: tuple[str, ...] = ()
    plan_id: str = field(default="")

    @property
    def deleted_uids(self) -> frozenset[str]:
        return frozenset(e.ref.uid for e in self.deleted)

    @property
    def protected(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.deleted if e.protected and not e.being_deleted)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["planId"] = out.pop("plan_id")
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Impact:
        def ref(d: dict[str, Any]) -> ObjectRef:
            return ObjectRef(**d)

        return cls(
            target=ref(data["target"]),
            cascade=data["cascade"],
            deleted=tuple(Entry(**{**e, "ref": ref(e["ref"]), "finalizers": tuple(e["finalizers"])})
                          for e in data["deleted"]),
            orphaned=tuple(Entry(**{**e, "ref": ref(e["ref"]), "finalizers": tuple(e["finalizers"])})
                           for e in data.get("orphaned", ())),
            surviving=tuple(Survivor(ref(s["ref"]), tuple(s["removed_owners"]), tuple(s["kept_by"]))
                            for s in data.get("surviving", ())),
            finalizers=tuple(FinalizerNote(**{**f, "ref": ref(f["ref"])}) for f in data.get("finalizers", ())),
            data=tuple(DataAtRisk(**{**d, "ref": ref(d["ref"])}) for d in data.get("data", ())),
            warnings=tuple(data.get("warnings", ())),
            plan_id=data.get("planId", ""),
        )  # fmt: skip
