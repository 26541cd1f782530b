"""Plan ids, what changed between two impacts, and where previews are kept for ``--confirm``.

* :func:`plan_id` is a stable hash (16 hex digits of SHA-256) of exactly what a delete would do:
  the target and the cascade, the sorted uid+resourceVersion of every deleted, orphaned and
  surviving object, and of every volume at risk with its fate. Any write to any of them (a new
  Pod, a changed ownerReference, a PV switched to reclaimPolicy Delete) yields another id;
  listing order and unrelated objects do not.
* :func:`diff_impacts` says what changed between the reviewed impact and the current one: objects
  added to or removed from each section, and objects modified in place (same uid, new version).
* :class:`PlanStore` keeps each previewed impact as ``<plan-id>.json`` in a directory
  (``$KUBELOOP_PLAN_DIR``, else ``$XDG_CACHE_HOME/kubeloop/plans``, else ``~/.cache/kubeloop/plans``),
  so a refused ``--confirm`` can show the difference; without the file it still refuses, showing
  the current impact.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from kubeloop._files import make_directory, write_atomically
from kubeloop.guard._model import DataAtRisk, Entry, Impact, ObjectRef, Survivor

__all__ = ["ImpactDiff", "PlanStore", "default_plan_dir", "diff_impacts", "plan_id", "with_plan_id"]


def plan_id(impact: Impact) -> str:
    t = impact.target
    doc = {
        "target": [t.api_version, t.kind, t.namespace, t.name, t.uid, t.resource_version],
        "cascade": impact.cascade,
        "deleted": sorted([e.ref.uid, e.ref.resource_version] for e in impact.deleted),
        "orphaned": sorted([e.ref.uid, e.ref.resource_version] for e in impact.orphaned),
        "surviving": sorted([s.ref.uid, s.ref.resource_version] for s in impact.surviving),
        "data": sorted([d.ref.uid, d.ref.resource_version, d.fate] for d in impact.data),
    }
    return hashlib.sha256(orjson.dumps(doc)).hexdigest()[:16]


def with_plan_id(impact: Impact) -> Impact:
    return dataclasses.replace(impact, plan_id=plan_id(impact))


@dataclass(frozen=True, slots=True)
class Change:
    section: str  # deleted, orphaned, surviving, data
    change: str  # added, removed, modified
    ref: ObjectRef


@dataclass(frozen=True)
class ImpactDiff:
    changes: tuple[Change, ...]

    def __bool__(self) -> bool:
        return bool(self.changes)

    def lines(self) -> list[str]:
        sign = {"added": "+", "removed": "-", "modified": "~"}
        return [f"{sign[c.change]} {c.section}: {c.ref.display_ns} ({c.change})" for c in self.changes]


def _refs(impact: Impact, section: str) -> dict[str, ObjectRef]:
    items: tuple[Entry | Survivor | DataAtRisk, ...] = getattr(impact, section)
    return {item.ref.uid: item.ref for item in items}


def diff_impacts(old: Impact, new: Impact) -> ImpactDiff:
    changes: list[Change] = []
    for section in ("deleted", "orphaned", "surviving", "data"):
        before, after = _refs(old, section), _refs(new, section)
        for uid in sorted(after.keys() - before.keys(), key=lambda u: after[u].display_ns):
            changes.append(Change(section, "added", after[uid]))
        for uid in sorted(before.keys() - after.keys(), key=lambda u: before[u].display_ns):
            changes.append(Change(section, "removed", before[uid]))
        for uid in sorted(before.keys() & after.keys(), key=lambda u: after[u].display_ns):
            if before[uid].resource_version != after[uid].resource_version:
                changes.append(Change(section, "modified", after[uid]))
    if old.cascade != new.cascade:
        changes.insert(0, Change("deleted", "modified", new.target))
    return ImpactDiff(tuple(changes))


def default_plan_dir() -> Path:
    if os.environ.get("KUBELOOP_PLAN_DIR"):
        return Path(os.environ["KUBELOOP_PLAN_DIR"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kubeloop" / "plans"


class PlanStore:
    """Previewed impacts on disk, by plan id. Failures to write are not fatal (the id is the contract)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or default_plan_dir()

    def save(self, impact: Impact) -> Path | None:
        path = self.directory / f"{impact.plan_id}.json"
        try:
            # Durably: a plan printed to the user must still be there for ``--confirm`` after a crash.
            make_directory(self.directory)
            write_atomically(path, orjson.dumps(impact.to_json()), mode=0o644)
        except OSError:
            return None
        return path

    def load(self, plan: str) -> Impact | None:
        if not plan.isalnum():
            return None
        try:
            return Impact.from_json(orjson.loads((self.directory / f"{plan}.json").read_bytes()))
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
            return None
