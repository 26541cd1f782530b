"""delete and deletecollection, as apiserver ``registry/generic/registry/store.go`` Delete does.

Flow for one object (``Delete`` / ``updateForGracefulDeletionAndFinalizers`` / ``rest.BeforeDelete``):

1. Missing: 404. DeleteOptions preconditions (uid, resourceVersion) that do not hold: 409 with
   upstream's messages.
2. Already being deleted with a grace period: only a shorter grace period changes anything; the
   answer is the object (kinds that return deleted objects) or a Success Status.
3. The GC finalizers are recomputed from the propagation policy (``deletionFinalizersForGarbage
   Collection``): ``orphan`` for Orphan / ``orphanDependents=true`` (or an existing ``orphan``
   finalizer when the request says nothing, or when the kind's default policy orphans, as core/v1
   ReplicationControllers' does), ``foregroundDeletion`` for Foreground.
4. A graceful kind (a pod on a node) gets ``deletionTimestamp = now + grace`` and stays; an object
   with finalizers gets ``deletionTimestamp = now``, ``deletionGracePeriodSeconds = 0``
   (``markAsDeleting``, which also bumps ``generation`` once); both answer 200 with the object
   (202 when the request set ``orphanDependents=false``).
5. Otherwise the object is removed at once; the answer is the deleted object for kinds with
   ``return_deleted_object`` and a Success Status (``details.kind`` = the plural) otherwise.

``dryRun`` runs the whole flow and stores nothing.

deletecollection (:func:`delete_listed`) runs that flow for every listed object, up to
``COLLECTION_WORKERS`` at a time (upstream's DeleteCollection hands items to a pool of workers), so
the store's group commit shares one durable commit among many deletes instead of paying one fsync
per object. Items answer in list order; an object already gone is skipped; the first other error is
raised once every delete has finished.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

from kubeloop.api import NotFound, ResourceInfo, conflict, format_time, not_found, parse_time
from kubeloop.api._validation import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS
from kubeloop.server._admission import AdmissionAttributes, run_admission
from kubeloop.server._options import DeleteOptions
from kubeloop.server._state import GUARANTEED_UPDATE_RETRIES, ServerState, object_key, renderer
from kubeloop.store import KeyNotFound, KeyValue, RevisionMismatch

__all__ = ["COLLECTION_WORKERS", "DeleteResult", "check_preconditions", "delete_listed", "delete_object"]

COLLECTION_WORKERS = 64


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """What one delete answered: ``body`` is the object, or a Success Status (``is_status``) for kinds
    that do not return the deleted object."""

    status: int
    body: bytes
    deleted: bool
    is_status: bool = False


def _as_is(status: int, value: bytes, deleted: bool) -> DeleteResult:
    return DeleteResult(status, value, deleted)


def _success_status(info: ResourceInfo, obj: dict[str, Any]) -> bytes:
    meta = obj.get("metadata") or {}
    details: dict[str, Any] = {"name": meta.get("name", ""), "kind": info.plural}
    if info.group:
        details["group"] = info.group
    if meta.get("uid"):
        details["uid"] = meta["uid"]
    return orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": details})


def _finalize_delete(info: ResourceInfo, obj: dict[str, Any], value: bytes, deleted: bool) -> DeleteResult:
    if info.return_deleted_object:
        return DeleteResult(200, value, deleted)
    return DeleteResult(200, _success_status(info, obj), deleted, is_status=True)


def _should_orphan(options: DeleteOptions, finalizers: list[str], default: bool) -> bool:
    if options.orphan_dependents is not None:
        return options.orphan_dependents
    if options.propagation_policy is not None:
        return options.propagation_policy == "Orphan"
    for f in finalizers:
        if f == FINALIZER_ORPHAN_DEPENDENTS:
            return True
        if f == FINALIZER_DELETE_DEPENDENTS:
            return False
    return default  # the kind's DefaultGarbageCollectionPolicy (store.go shouldOrphanDependents)


def _should_foreground(options: DeleteOptions, finalizers: list[str]) -> bool:
    if options.orphan_dependents is not None:
        return False
    if options.propagation_policy is not None:
        return options.propagation_policy == "Foreground"
    for f in finalizers:
        if f == FINALIZER_DELETE_DEPENDENTS:
            return True
        if f == FINALIZER_ORPHAN_DEPENDENTS:
            return False
    return False


def gc_finalizers(options: DeleteOptions, finalizers: list[str], *, orphans_by_default: bool = False
                  ) -> tuple[bool, list[str]]:
    """store.go deletionFinalizersForGarbageCollection: (changed, new finalizers). ``orphans_by_default``:
    the kind's DefaultGarbageCollectionPolicy is OrphanDependents (core/v1 ReplicationControllers)."""
    new = [f for f in finalizers if f not in (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS)]
    if _should_orphan(options, finalizers, orphans_by_default):
        new.append(FINALIZER_ORPHAN_DEPENDENTS)
    if _should_foreground(options, finalizers):
        new.append(FINALIZER_DELETE_DEPENDENTS)
    if set(new) == set(finalizers):
        return False, finalizers
    return True, new


def check_preconditions(info: ResourceInfo, meta: dict[str, Any], options: DeleteOptions) -> None:
    """DeleteOptions.preconditions against the stored object: a 409 naming the kind, as upstream's."""
    name = str(meta.get("name") or "")
    uid = str(meta.get("uid") or "")
    rv = str(meta.get("resourceVersion") or "")
    # rest.BeforeDelete names the kind (not the resource) in these conflicts.
    if options.uid_precondition is not None and options.uid_precondition != uid:
        raise conflict(info.kind, name, info.group,
                       f"the UID in the precondition ({options.uid_precondition}) does not match the UID in record "
                       f"({uid}). The object might have been deleted and then recreated")
    if options.rv_precondition is not None and options.rv_precondition != rv:
        raise conflict(info.kind, name, info.group,
                       f"the ResourceVersion in the precondition ({options.rv_precondition}) does not match the "
                       f"ResourceVersion in record ({rv}). The object might have been modified")


async def delete_object(
    state: ServerState,
    info: ResourceInfo,
    namespace: str,
    name: str,
    options: DeleteOptions,
    *,
    user: Any = None,
    listed: KeyValue | None = None,
    warnings: list[str] | None = None,
) -> DeleteResult:
    """Delete one object. ``listed`` is its stored state as a list just read it: the first attempt
    starts from it instead of reading again; its compare-and-swap fails if the object changed since,
    and the retry reads afresh (as a ``GuaranteedUpdate`` from a cached object does)."""
    key = object_key(info, namespace, name)
    strategy = state.strategy(info)
    accepted = 202 if options.orphan_dependents is False else 200
    for _ in range(GUARANTEED_UPDATE_RETRIES):
        kv = listed if listed is not None else await state.store.get(key)
        listed = None
        if kv is None:
            raise not_found(info.plural, name, info.group)
        obj = orjson.loads(kv.value)
        meta = obj.setdefault("metadata", {})
        check_preconditions(info, meta, options)
        attrs = AdmissionAttributes("DELETE", info, namespace if info.namespaced else "", name,
                                    user=user, dry_run=options.dry_run, warnings=warnings, options=options)
        await run_admission(state.admission, attrs, None, obj)

        now = state.clock.now()
        if info.group == "" and info.plural == "namespaces":
            spec = obj.get("spec") or {}
            if not meta.get("deletionTimestamp"):
                result = await _start_namespace_termination(state, key, kv.mod_revision, obj, options, now)
                if result is None:
                    continue
                return result
            if spec.get("finalizers"):
                return _as_is(200, kv.value, False)

        graceful = False
        existing_grace = meta.get("deletionGracePeriodSeconds")
        requested = options.grace_period_seconds
        if meta.get("deletionTimestamp") and strategy.graceful_period(obj, requested) is not None:
            # rest.BeforeDelete on an object already being deleted: only a shorter period counts.
            if existing_grace:
                if requested is None or requested >= existing_grace:
                    return _finalize_delete(info, obj, kv.value, False)
                start = parse_time(meta["deletionTimestamp"]) - existing_grace
                meta["deletionTimestamp"] = format_time(start + requested)
                meta["deletionGracePeriodSeconds"] = requested
                graceful = requested > 0
        elif not meta.get("deletionTimestamp"):
            period = strategy.graceful_period(obj, requested)
            if period is not None and period > 0:
                meta["deletionTimestamp"] = format_time(now + period)
                meta["deletionGracePeriodSeconds"] = period
                if int(meta.get("generation") or 0) > 0:
                    meta["generation"] = int(meta["generation"]) + 1
                graceful = True

        finalizers = list(meta.get("finalizers") or [])
        changed, finalizers = gc_finalizers(options, finalizers, orphans_by_default=info.orphans_by_default)
        if changed:
            meta["finalizers"] = finalizers
        if not finalizers:
            meta.pop("finalizers", None)
        pending_finalizers = bool(finalizers)
        if pending_finalizers and not graceful:
            _mark_as_deleting(meta, now)
        delete_now = not graceful and not pending_finalizers
        if delete_now:
            if options.dry_run:
                return _finalize_delete(info, obj, kv.value, True)
            try:
                gone = await state.store.delete(key, expected_revision=kv.mod_revision, render=renderer(obj))
            except (RevisionMismatch, KeyNotFound):
                continue
            return _finalize_delete(info, obj, gone.value, True)
        if options.dry_run:
            return _as_is(accepted, orjson.dumps(obj), False)
        if obj == orjson.loads(kv.value):
            return _as_is(accepted, kv.value, False)
        try:
            stored = await state.store.update(key, renderer(obj), expected_revision=kv.mod_revision)
        except (RevisionMismatch, KeyNotFound):
            continue
        return _as_is(accepted, stored.value, False)
    raise conflict(info.plural, name, info.group)


async def delete_listed(
    state: ServerState,
    info: ResourceInfo,
    items: list[KeyValue],
    options: DeleteOptions,
    *,
    user: Any = None,
    workers: int = COLLECTION_WORKERS,
    warnings: list[str] | None = None,
) -> list[bytes]:
    """deletecollection of already listed objects (stored key-values): what each delete answered
    (the object), in list order. ``workers`` deletes run at a time, each worker taking the next item.
    Every delete adds its admission warnings to ``warnings`` (the request's, one context for all of
    upstream's DeleteCollection deletes)."""
    answers: list[bytes | None] = [None] * len(items)
    failures: list[BaseException] = []
    queue = iter(enumerate(items))

    async def worker() -> None:
        for i, item in queue:
            # The key names the object: /registry/GROUP/RESOURCE[/NAMESPACE]/NAME (names hold no "/").
            head, _, name = item.key.rpartition("/")
            namespace = head.rpartition("/")[2] if info.namespaced else ""
            try:
                result = await delete_object(state, info, namespace, name, options, user=user, listed=item,
                                             warnings=warnings)
            except NotFound:
                continue
            except Exception as exc:  # the first other error is raised once every delete has finished
                failures.append(exc)
                continue
            answers[i] = item.value if result.is_status else result.body

    await asyncio.gather(*(worker() for _ in range(min(workers, len(items)))))
    if failures:
        raise failures[0]
    return [a for a in answers if a is not None]


def _mark_as_deleting(meta: dict[str, Any], now: float) -> None:
    """store.go markAsDeleting."""
    existing = meta.get("deletionTimestamp")
    if not existing and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    if not existing or parse_time(existing) > now:
        meta["deletionTimestamp"] = format_time(now)
    meta["deletionGracePeriodSeconds"] = 0


async def _start_namespace_termination(
    state: ServerState, key: str, revision: int, obj: dict[str, Any], options: DeleteOptions, now: float
) -> DeleteResult | None:
    """namespace storage.go Delete, first request: deletionTimestamp, phase Terminating, GC finalizers."""
    meta = obj["metadata"]
    meta["deletionTimestamp"] = format_time(now)
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    obj["status"] = {**(status or {}), "phase": "Terminating"}
    changed, finalizers = gc_finalizers(options, list(meta.get("finalizers") or []))
    if changed:
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
    if options.dry_run:
        return _as_is(200, orjson.dumps(obj), False)
    try:
        stored = await state.store.update(key, renderer(obj), expected_revision=revision)
    except (RevisionMismatch, KeyNotFound):
        return None
    return _as_is(200, stored.value, False)
