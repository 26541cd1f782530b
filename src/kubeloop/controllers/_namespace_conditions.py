"""Namespace deletion conditions, as the namespace controller writes them (k/k
``pkg/controller/namespace/deletion/status_condition_utils.go``).

Five condition types are always present on a namespace the controller has worked on; each has a
failing form (status ``True``, with the reason and message below) and an "ok" form (status
``False``):

========================================== ============================= ======================
type                                       True reason / message          ok reason
========================================== ============================= ======================
NamespaceDeletionDiscoveryFailure          DiscoveryFailed                ResourcesDiscovered
NamespaceDeletionGroupVersionParsingFailure GroupVersionParsingFailed     ParsedGroupVersions
NamespaceDeletionContentFailure            ContentDeletionFailed          ContentDeleted
                                           "Failed to delete all resource types, N remaining: ..."
NamespaceContentRemaining                  SomeResourcesRemain            ContentRemoved
                                           "Some resources are remaining: pods. has 2 resource instances"
NamespaceFinalizersRemaining               SomeFinalizersRemain           ContentHasNoFinalizers
                                           "Some content in the namespace has finalizers remaining:
                                           example.com/x in 1 resource instances"
========================================== ============================= ======================

Message parts are sorted so repeated passes write identical conditions; :meth:`ConditionUpdater.update`
reports whether anything changed, and ``lastTransitionTime`` moves only when a status flips.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import Clock, format_time

__all__ = ["CONDITION_TYPES", "ConditionUpdater"]

CONDITION_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
_OK: dict[str, tuple[str, str]] = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}


class ConditionUpdater:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._new: dict[str, dict[str, Any]] = {}
        self._content_errors: list[str] = []

    def _fail(self, type_: str, reason: str, message: str) -> None:
        self._new[type_] = {"type": type_, "status": "True", "lastTransitionTime": format_time(self._clock.now()),
                            "reason": reason, "message": message}  # fmt: skip

    def discovery_failed(self, message: str, *, failing_groups: int | None = None) -> None:
        if failing_groups is not None:
            message = f"Discovery failed for some groups, {failing_groups} failing: {message}"
        self._fail("NamespaceDeletionDiscoveryFailure", "DiscoveryFailed", message)

    def group_version_failed(self, message: str) -> None:
        self._fail("NamespaceDeletionGroupVersionParsingFailure", "GroupVersionParsingFailed", message)

    def content_error(self, message: str) -> None:
        self._content_errors.append(message)

    def content_totals(self, remaining_by_resource: dict[str, int], remaining_by_finalizer: dict[str, int]) -> None:
        """``remaining_by_resource`` is keyed ``<plural>.<group>`` (``pods.`` for the core group)."""
        resources = sorted(f"{r} has {n} resource instances" for r, n in remaining_by_resource.items() if n)
        if resources:
            self._fail("NamespaceContentRemaining", "SomeResourcesRemain",
                       f"Some resources are remaining: {', '.join(resources)}")  # fmt: skip
        finalizers = sorted(f"{f} in {n} resource instances" for f, n in remaining_by_finalizer.items() if n)
        if finalizers:
            self._fail("NamespaceFinalizersRemaining", "SomeFinalizersRemain",
                       f"Some content in the namespace has finalizers remaining: {', '.join(finalizers)}")  # fmt: skip

    def update(self, status: dict[str, Any]) -> bool:
        """Write every condition type into ``status['conditions']``; ``True`` if anything changed."""
        if "NamespaceDeletionContentFailure" not in self._new and self._content_errors:
            errors = sorted(self._content_errors)
            self._fail("NamespaceDeletionContentFailure", "ContentDeletionFailed",
                       f"Failed to delete all resource types, {len(errors)} remaining: {', '.join(errors)}")  # fmt: skip
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        changed = False
        for type_ in CONDITION_TYPES:
            new = self._new.get(type_)
            if new is None:
                reason, message = _OK[type_]
                new = {"type": type_, "status": "False", "lastTransitionTime": format_time(self._clock.now()),
                       "reason": reason, "message": message}  # fmt: skip
            old = next((c for c in conditions if c.get("type") == type_), None)
            if old is None:
                conditions.append(new)
                changed = True
            elif (old.get("status"), old.get("reason"), old.get("message")) != (new["status"], new["reason"], new["message"]):
                if old.get("status") != new["status"]:
                    old["lastTransitionTime"] = new["lastTransitionTime"]
                old.update(status=new["status"], reason=new["reason"], message=new["message"])
                changed = True
        return changed
