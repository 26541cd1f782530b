"""Reviewed deletes: ``confirm_delete`` executes a plan only if its impact is unchanged; ``wait_for_impact``.

:func:`confirm_delete` guarantees, in order:

1. the impact is recomputed from the live cluster; if its plan id differs from the reviewed one,
   nothing is written and :class:`PlanChanged` (a 409 ``Conflict``) is raised, carrying the
   current impact and, when the reviewed impact is known, what changed;
2. every protected object of the impact (``kubeloop.dev/protect: "true"``, not yet being deleted)
   gets the approval annotation ``kubeloop.dev/delete-approved: "<plan-id>/<uid>"`` by a merge
   patch conditional on the resourceVersion the plan was computed from (a concurrent write is a
   409, reported as a changed plan);
3. one DELETE of the target with the cascade's propagationPolicy and uid + resourceVersion
   preconditions (the version just approved, or the reviewed one), so only the reviewed state of
   the target is deleted; if that DELETE fails, the approvals written in step 2 are removed again.

:func:`wait_for_impact` polls (list calls, on the injected clock) until every object the impact
deletes is gone, reporting the remaining count, or raises ``Timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubeloop.api import ApiError, Clock, Conflict, ResourceInfo, SystemClock, Timeout, approval_value, uid_of
from kubeloop.client import Client, Discovery, discover_resources
from kubeloop.guard._graph import APPROVED_ANNOTATION
from kubeloop.guard._impact import deletable_resources, preview_delete
from kubeloop.guard._model import Impact, ObjectRef
from kubeloop.guard._plan import ImpactDiff, diff_impacts
from kubeloop.guard._resolve import resolve_resource

__all__ = ["DeleteOutcome", "PlanChanged", "confirm_delete", "wait_for_impact"]


class PlanChanged(Conflict):
    """The impact is not the reviewed one any more; ``current`` is the new impact, ``diff`` what changed."""

    def __init__(self, message: str, *, current: Impact, diff: ImpactDiff | None) -> None:
        super().__init__(message, reason="Conflict")
        self.current = current
        self.diff = diff


@dataclass(frozen=True)
class DeleteOutcome:
    impact: Impact
    approved: tuple[ObjectRef, ...]
    response: dict[str, Any]  # what the DELETE answered: the object (still terminating) or a Status


def _info(ref: ObjectRef) -> ResourceInfo:
    return ResourceInfo(group=ref.group, version=ref.version, kind=ref.kind, plural=ref.plural, singular="",
                        namespaced=bool(ref.namespace))


async def confirm_delete(
    client: Client,
    resource: ResourceInfo | str,
    name: str,
    *,
    plan: str,
    namespace: str | None = None,
    cascade: str = "background",
    reviewed: Impact | None = None,
    discovery: Discovery | None = None,
) -> DeleteOutcome:
    """Delete ``resource``/``name`` only if the impact still hashes to ``plan``."""
    discovery = discovery or await discover_resources(client)
    if isinstance(resource, str):
        resource = resolve_resource(deletable_resources(discovery), resource)
    current = await preview_delete(client, resource, name, namespace=namespace, cascade=cascade, discovery=discovery)
    if current.plan_id != plan:
        diff = diff_impacts(reviewed, current) if reviewed is not None else None
        raise PlanChanged(f"the impact of deleting {current.target.display_ns} changed since plan {plan} was "
                          f"reviewed (it is now plan {current.plan_id}); review it again",
                          current=current, diff=diff)
    approved: list[tuple[ObjectRef, str]] = []
    try:
        for entry in current.protected:
            ref = entry.ref
            patch = {"metadata": {"resourceVersion": ref.resource_version,
                                  "annotations": {APPROVED_ANNOTATION: approval_value(plan, ref.uid)}}}
            try:
                done = await client.patch(_info(ref), ref.name, patch, namespace=ref.namespace or None)
            except Conflict:
                raise PlanChanged(f"{ref.display_ns} changed while plan {plan} was being confirmed; review it again",
                                  current=current, diff=None) from None
            approved.append((ref, str((done.get("metadata") or {}).get("resourceVersion") or "")))
        target_rv = next((rv for ref, rv in approved if ref.uid == current.target.uid),
                         current.target.resource_version)
        response = await client.delete(
            resource, name, namespace=current.target.namespace or None,
            propagation_policy=cascade.capitalize(),
            preconditions={"uid": current.target.uid, "resourceVersion": target_rv},
        )
    except ApiError:
        await _revoke(client, [ref for ref, _ in approved])
        raise
    return DeleteOutcome(current, tuple(ref for ref, _ in approved), response)


async def _revoke(client: Client, refs: list[ObjectRef]) -> None:
    for ref in refs:
        with contextlib.suppress(ApiError):
            await client.patch(_info(ref), ref.name, {"metadata": {"annotations": {APPROVED_ANNOTATION: None}}},
                               namespace=ref.namespace or None)


async def remaining(client: Client, impact: Impact) -> list[ObjectRef]:
    """The objects of ``impact.deleted`` that still exist (same uid)."""
    groups: dict[tuple[ObjectRef, str], list[ObjectRef]] = {}
    for entry in impact.deleted:
        ref = entry.ref
        key = dataclasses.replace(ref, namespace="", name="", uid="", resource_version="")
        groups.setdefault((key, ref.namespace), []).append(ref)

    async def one(key: ObjectRef, namespace: str, refs: list[ObjectRef]) -> list[ObjectRef]:
        info = dataclasses.replace(_info(key), namespaced=bool(namespace))
        if len(refs) <= 3:
            out = []
            for ref in refs:
                with contextlib.suppress(ApiError):
                    got = await client.get(info, ref.name, namespace=namespace or None)
                    if uid_of(got) == ref.uid:
                        out.append(ref)
            return out
        items, _ = await client.list_all(info, namespace=namespace or None)
        present = {uid_of(i) for i in items}
        return [r for r in refs if r.uid in present]

    batches = await asyncio.gather(*(one(key, ns, refs) for (key, ns), refs in groups.items()))
    return [r for batch in batches for r in batch]


async def wait_for_impact(
    client: Client,
    impact: Impact,
    *,
    timeout: float = 300.0,
    interval: float = 0.25,
    clock: Clock | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Return once every object ``impact`` deletes is gone; ``progress(removed, total)`` after each poll."""
    clock = clock or SystemClock()
    deadline = clock.monotonic() + timeout
    total = len(impact.deleted)
    while True:
        left = await remaining(client, impact)
        if progress is not None:
            progress(total - len(left), total)
        if not left:
            return
        if clock.monotonic() >= deadline:
            names = ", ".join(r.display_ns for r in left[:5]) + (" ..." if len(left) > 5 else "")
            raise Timeout(f"{len(left)} of {total} object(s) still exist after {timeout:g}s: {names}")
        await clock.sleep(interval)
