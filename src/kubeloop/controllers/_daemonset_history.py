"""A DaemonSet's revision history: ControllerRevisions of its pod template, as ``kubectl rollout`` reads them.

Upstream (release 1.32): k/k ``pkg/controller/daemon/update.go`` (``constructHistory``,
``controlledHistories``, ``Match``, ``getPatch``, ``snapshot``, ``dedupCurHistories``, ``cleanupHistory``).

- The ControllerRevisions the set controls are claimed like its pods (adopted when orphaned and
  selected, released when no longer selected). One without a ``controller-revision-hash`` label gets
  its own name there.
- A revision *matches* the set when its ``data`` is the set's ``getPatch``: the strategic patch
  ``{"spec": {"template": {..., "$patch": "replace"}}}`` that restores the template (compared as
  ``apiequality.Semantic`` would, nil and empty alike). The current revision is the matching one with
  the highest number (duplicates are deleted after the set's pods are relabelled to it); if it is not
  the newest it is renumbered to newest + 1 (``kubectl rollout undo`` brings an old template back).
- Without a match, :meth:`History.snapshot` creates ``<set>-<hash>`` (``ComputeHash`` of the template and
  ``status.collisionCount``), labelled with the template's labels and the hash, annotated with the set's
  annotations, controlled by the set. A name taken by a different template bumps
  ``status.collisionCount`` and fails the sync, which retries with the new hash.
- :meth:`History.cleanup` deletes the oldest non-current revisions beyond ``revisionHistoryLimit``
  whose hash no daemon pod still carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeloop.api import (
    AlreadyExists,
    NotFound,
    copy_json,
    label_selector_from_dict,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
)
from kubeloop.client import Client
from kubeloop.controllers._daemonset_util import REVISION_LABEL
from kubeloop.controllers._statefulset_util import revision_data, template_of_revision
from kubeloop.controllers._workload_claim import candidates, claim_children
from kubeloop.controllers._workload_hash import compute_hash, normalize
from kubeloop.controllers._workload_kinds import DAEMONSETS, PODS, REVISIONS, int_field
from kubeloop.runtime import Cache

__all__ = ["History", "StaleCollisionCount", "matches"]

Obj = Mapping[str, Any]


class StaleCollisionCount(Exception):
    """The set's cached ``collisionCount`` is behind the server's: the sync is retried."""


def matches(ds: Obj, revision: Obj) -> bool:
    """``Match``: the revision restores exactly the set's current template."""
    template = (ds.get("spec") or {}).get("template") or {}
    return bool(normalize(template_of_revision(revision)) == normalize(template))


class History:
    """The history steps of one DaemonSet controller (its client, revision cache and field manager)."""

    def __init__(self, client: Client, revisions: Cache, *, field_manager: str) -> None:
        self.client = client
        self.revisions = revisions
        self.field_manager = field_manager

    async def construct(self, ds: dict[str, Any], pods: Sequence[Obj]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """``constructHistory``: (current revision, old revisions)."""
        selector = label_selector_from_dict((ds.get("spec") or {}).get("selector"))
        claimed = await claim_children(
            self.client, owner=ds, owner_resource=DAEMONSETS, child_resource=REVISIONS,
            children=candidates(self.revisions, ds), matches=lambda r: selector.matches(labels_of(r)),
            field_manager=self.field_manager,
        )  # fmt: skip
        current: list[dict[str, Any]] = []
        old: list[dict[str, Any]] = []
        for revision in claimed:
            history = dict(revision)
            if REVISION_LABEL not in labels_of(history):
                history = copy_json(history)
                history["metadata"].setdefault("labels", {})[REVISION_LABEL] = name_of(history)
                history = await self.client.update(REVISIONS, history, namespace=namespace_of(ds),
                                                   field_manager=self.field_manager)  # fmt: skip
            (current if matches(ds, history) else old).append(history)
        next_number = max((int_field(r, "revision") for r in old), default=0) + 1
        if not current:
            return await self.snapshot(ds, next_number), old
        keep = await self._dedup(ds, current, pods)
        if int_field(keep, "revision") < next_number:
            keep = await self.client.update(REVISIONS, {**keep, "revision": next_number}, namespace=namespace_of(ds),
                                            field_manager=self.field_manager)  # fmt: skip
        return keep, old

    async def _dedup(self, ds: Obj, current: list[dict[str, Any]], pods: Sequence[Obj]) -> dict[str, Any]:
        """``dedupCurHistories``: keep the highest-numbered match, relabel pods to it, delete the others."""
        if len(current) == 1:
            return current[0]
        keep = current[0]
        for revision in current:
            if int_field(revision, "revision") >= int_field(keep, "revision"):
                keep = revision
        keep_hash = labels_of(keep).get(REVISION_LABEL)
        for pod in pods:
            if labels_of(pod).get(REVISION_LABEL) != keep_hash:
                await self.client.patch(PODS, name_of(pod), {"metadata": {"labels": {REVISION_LABEL: keep_hash}}},
                                        namespace=namespace_of(pod), patch_type="merge",
                                        field_manager=self.field_manager)  # fmt: skip
        for revision in current:
            if name_of(revision) != name_of(keep):
                await self.client.delete(REVISIONS, name_of(revision), namespace=namespace_of(revision))
        return keep

    async def snapshot(self, ds: dict[str, Any], number: int) -> dict[str, Any]:
        """``snapshot``: create the revision of the set's template (see the module docstring)."""
        template = (ds.get("spec") or {}).get("template") or {}
        status = ds.get("status") or {}
        collisions = status.get("collisionCount")
        revision_hash = compute_hash(template, collisions)
        name = f"{name_of(ds)}-{revision_hash}"
        meta: dict[str, Any] = {
            "name": name, "namespace": namespace_of(ds),
            "labels": {**((template.get("metadata") or {}).get("labels") or {}), REVISION_LABEL: revision_hash},
            "ownerReferences": [owner_reference(ds, controller=True, block_owner_deletion=True)],
        }  # fmt: skip
        annotations = (ds.get("metadata") or {}).get("annotations")
        if annotations:
            meta["annotations"] = dict(annotations)
        body = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta,
                "data": revision_data(template), "revision": number}  # fmt: skip
        try:
            created: dict[str, Any] = await self.client.create(REVISIONS, body, namespace=namespace_of(ds),
                                                               field_manager=self.field_manager)  # fmt: skip
            return created
        except AlreadyExists as taken:
            existing = await self.client.get(REVISIONS, name, namespace=namespace_of(ds))
            if matches(ds, existing):
                return existing
            fresh = await self.client.get(DAEMONSETS, name_of(ds), namespace=namespace_of(ds))
            fresh_count = (fresh.get("status") or {}).get("collisionCount")
            if fresh_count != collisions:
                raise StaleCollisionCount(f"found a stale collision count ({collisions}, expected {fresh_count}) of "
                                          f"DaemonSet {name_of(ds)!r} while processing; will retry until it is updated") from taken
            fresh["status"] = {**(fresh.get("status") or {}), "collisionCount": (fresh_count or 0) + 1}
            await self.client.update(DAEMONSETS, fresh, namespace=namespace_of(ds), subresource="status",
                                     field_manager=self.field_manager)  # fmt: skip
            raise

    async def cleanup(self, ds: Obj, old: list[dict[str, Any]], pods: Sequence[Obj]) -> None:
        """``cleanupHistory``."""
        surplus = len(old) - int_field(ds.get("spec"), "revisionHistoryLimit", 10)
        if surplus <= 0:
            return
        live = {labels_of(p).get(REVISION_LABEL) for p in pods} - {None, ""}
        for revision in sorted(old, key=lambda r: int_field(r, "revision")):
            if surplus <= 0:
                break
            if labels_of(revision).get(REVISION_LABEL) in live:
                continue
            try:
                await self.client.delete(REVISIONS, name_of(revision), namespace=namespace_of(revision))
            except NotFound:
                pass
            surplus -= 1
