"""Helpers that make the defensive patterns the easy ones (controller-runtime ``controllerutil``).

Ownership (in place on a JSON dict, returning whether anything changed):

- :func:`set_controller_reference` names ``owner`` as the object's one controller
  (``controller: true``, ``blockOwnerDeletion: true``). It **refuses** with :class:`AlreadyOwnedError`
  when another controller already owns the object: adopting someone else's object is how two
  controllers end up fighting. It also refuses owners the garbage collector would treat as absent
  (a namespaced owner for a cluster-scoped object, or an owner in another namespace).
- :func:`set_owner_reference` adds or refreshes a non-controller owner.
- :func:`add_finalizer`, :func:`remove_finalizer`; adding to an object that is being deleted raises,
  because the API server forbids new finalizers after ``deletionTimestamp``.

Writes that happen only when needed:

- :func:`create_or_update`: GET; create (``created``) if absent; else apply ``mutate`` to a copy and
  PUT it with the live ``resourceVersion`` (``updated``, 409 on a race) only if something changed
  (``unchanged`` writes nothing).
- :func:`create_or_patch`: the same, but writes a JSON merge patch of only what changed; a change to
  ``status`` on a kind with a status subresource is patched there (``updated_status`` /
  ``updated_status_only``).
- Both read the live object from the server, or, given ``cache=`` (an informer's
  :class:`~kubeloop.runtime.Cache`), from the cache, as controller-runtime's cache-backed client does:
  one request per change instead of two, and none when nothing changed. A cache that lags behind
  makes the write fail safely (409 on update, ``AlreadyExists`` on create), and the controller retries.
- :class:`StatusWriter`: sets ``status.observedGeneration`` to the generation of the object the
  reconciler acted on, and writes the status (via ``/status`` when the kind has it) only when it
  differs; the PUT carries that object's ``resourceVersion``, so status is never written over a newer
  object from a stale copy.
- :func:`set_condition`: ``meta.SetStatusCondition``: ``lastTransitionTime`` moves only when the
  condition's status changes.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from kubeloop.api import (
    Clock,
    NotFound,
    ResourceInfo,
    SystemClock,
    copy_json,
    create_merge_patch,
    format_time,
    is_being_deleted,
    name_of,
    namespace_of,
    owner_reference,
    split_api_version,
)
from kubeloop.client import Client
from kubeloop.runtime._cache import Cache

__all__ = [
    "AlreadyOwnedError",
    "Mutate",
    "OperationResult",
    "StatusWriter",
    "add_finalizer",
    "create_or_patch",
    "create_or_update",
    "remove_finalizer",
    "set_condition",
    "set_controller_reference",
    "set_owner_reference",
]

Mutate = Callable[[dict[str, Any]], Awaitable[None] | None]


class OperationResult(enum.StrEnum):
    """What a create-or-update did to the object."""

    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updated_status"
    UPDATED_STATUS_ONLY = "updated_status_only"
    UNCHANGED = "unchanged"


class AlreadyOwnedError(ValueError):
    """The object already has a different controller; it is not ours to adopt."""

    def __init__(self, obj: Mapping[str, Any], existing: Mapping[str, Any]) -> None:
        self.existing = dict(existing)
        super().__init__(
            f"Object {_describe(obj)} is already owned by another {existing.get('kind')} controller "
            f"{existing.get('name')}"
        )


# -- ownership ------------------------------------------------------------------------------------


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    # controller-runtime referSameObject: same group (any version), kind and name.
    ga, _ = split_api_version(str(a.get("apiVersion", "")))
    gb, _ = split_api_version(str(b.get("apiVersion", "")))
    return ga == gb and a.get("kind") == b.get("kind") and a.get("name") == b.get("name")


def _check_owner_scope(
    owner: Mapping[str, Any], obj: Mapping[str, Any], owner_namespaced: bool | None
) -> None:
    owner_ns = namespace_of(owner)
    namespaced = owner_namespaced if owner_namespaced is not None else bool(owner_ns)
    if not namespaced:
        return
    if not namespace_of(obj):
        raise ValueError(
            f"cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_ns}"
        )
    if owner_ns != namespace_of(obj):
        raise ValueError(
            f"cross-namespace owner references are disallowed, owner's namespace {owner_ns}, "
            f"obj's namespace {namespace_of(obj)}"
        )


def _reference(owner: Mapping[str, Any], *, controller: bool) -> dict[str, Any]:
    meta = owner.get("metadata") or {}
    if not owner.get("apiVersion") or not owner.get("kind") or not meta.get("name") or not meta.get("uid"):
        raise ValueError(
            "owner needs apiVersion, kind, metadata.name and metadata.uid (read it from the API first)"
        )
    return owner_reference(owner, controller=controller, block_owner_deletion=controller)


def _upsert(obj: MutableMapping[str, Any], ref: dict[str, Any]) -> bool:
    meta = obj.setdefault("metadata", {})
    refs: list[dict[str, Any]] = list(meta.get("ownerReferences") or [])
    for i, existing in enumerate(refs):
        if _same_owner(existing, ref):
            if existing == ref:
                return False
            refs[i] = ref
            break
    else:
        refs.append(ref)
    meta["ownerReferences"] = refs
    return True


def set_controller_reference(
    owner: Mapping[str, Any], obj: MutableMapping[str, Any], *, owner_namespaced: bool | None = None
) -> bool:
    """Make ``owner`` the controller of ``obj`` (in place); refuse if another controller owns it.

    ``owner_namespaced`` says whether the owner's kind is namespaced (default: it has a namespace).
    Returns whether ``obj`` changed.
    """
    ref = _reference(owner, controller=True)
    _check_owner_scope(owner, obj, owner_namespaced)
    for existing in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if existing.get("controller") is True and not _same_owner(existing, ref):
            raise AlreadyOwnedError(obj, existing)
    return _upsert(obj, ref)


def set_owner_reference(
    owner: Mapping[str, Any], obj: MutableMapping[str, Any], *, owner_namespaced: bool | None = None
) -> bool:
    """Add (or refresh) ``owner`` as a non-controller owner of ``obj`` (in place)."""
    _check_owner_scope(owner, obj, owner_namespaced)
    return _upsert(obj, _reference(owner, controller=False))


# -- finalizers -----------------------------------------------------------------------------------


def add_finalizer(obj: MutableMapping[str, Any], finalizer: str) -> bool:
    """Add ``finalizer`` (in place); ``False`` if present. Raises if the object is being deleted."""
    meta = obj.setdefault("metadata", {})
    current: list[str] = list(meta.get("finalizers") or [])
    if finalizer in current:
        return False
    if is_being_deleted(obj):
        raise ValueError(
            f"no new finalizers can be added if the object is being deleted, found new finalizers [{finalizer!r}]"
        )
    meta["finalizers"] = [*current, finalizer]
    return True


def remove_finalizer(obj: MutableMapping[str, Any], finalizer: str) -> bool:
    """Remove every occurrence of ``finalizer`` (in place); ``False`` if it was not there."""
    meta = obj.setdefault("metadata", {})
    current: list[str] = list(meta.get("finalizers") or [])
    if finalizer not in current:
        return False
    remaining = [f for f in current if f != finalizer]
    if remaining:
        meta["finalizers"] = remaining
    else:
        meta.pop("finalizers", None)
    return True


# -- create or update -----------------------------------------------------------------------------


async def _apply_mutate(mutate: Mutate, obj: dict[str, Any]) -> None:
    outcome = mutate(obj)
    if inspect.isawaitable(outcome):
        await outcome


def _check_key(before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    if (name_of(before), namespace_of(before)) != (name_of(after), namespace_of(after)):
        raise ValueError("mutate must not change the object's name or namespace")


async def _get_or_create(
    client: Client,
    resource: ResourceInfo,
    obj: Mapping[str, Any],
    mutate: Mutate,
    field_manager: str | None,
    cache: Cache | None = None,
) -> tuple[dict[str, Any], bool]:
    """The live object, or the object just created from ``obj`` + ``mutate``; and whether it was created."""
    namespace = namespace_of(obj) or None
    try:
        if cache is None:
            return await client.get(resource, name_of(obj), namespace=namespace), False
        cached = cache.get_by_name(name_of(obj), namespace)
        if cached is None:
            raise NotFound(f"{resource.plural} {name_of(obj)!r} not in the cache")
        return cached, False
    except NotFound:
        fresh = copy_json(dict(obj))
        await _apply_mutate(mutate, fresh)
        _check_key(obj, fresh)
        return await client.create(resource, fresh, namespace=namespace, field_manager=field_manager), True


async def _live_and_desired(
    client: Client,
    resource: ResourceInfo,
    obj: Mapping[str, Any],
    mutate: Mutate,
    field_manager: str | None,
    cache: Cache | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The live object and a mutated copy of it; ``None`` as the copy when the object was just created."""
    live, created = await _get_or_create(client, resource, obj, mutate, field_manager, cache)
    if created:
        return live, None
    desired = copy_json(live)
    await _apply_mutate(mutate, desired)
    _check_key(live, desired)
    return live, desired


async def create_or_update(
    client: Client,
    resource: ResourceInfo,
    obj: Mapping[str, Any],
    mutate: Mutate,
    *,
    field_manager: str | None = None,
    cache: Cache | None = None,
) -> tuple[dict[str, Any], OperationResult]:
    """Ensure ``obj`` (name/namespace, plus ``mutate``'s changes) exists; write only what changed."""
    live, desired = await _live_and_desired(client, resource, obj, mutate, field_manager, cache)
    if desired is None:
        return live, OperationResult.CREATED
    if desired == live:
        return live, OperationResult.UNCHANGED
    updated = await client.update(
        resource, desired, namespace=namespace_of(live) or None, field_manager=field_manager
    )
    return updated, OperationResult.UPDATED


async def create_or_patch(
    client: Client,
    resource: ResourceInfo,
    obj: Mapping[str, Any],
    mutate: Mutate,
    *,
    field_manager: str | None = None,
    cache: Cache | None = None,
) -> tuple[dict[str, Any], OperationResult]:
    """Like :func:`create_or_update`, but sends merge patches of only the changed fields."""
    live, desired = await _live_and_desired(client, resource, obj, mutate, field_manager, cache)
    if desired is None:
        return live, OperationResult.CREATED
    namespace = namespace_of(live) or None
    status_before, status_after = live.get("status"), desired.get("status")
    split_status = resource.status_subresource
    main_before = {k: v for k, v in live.items() if not (split_status and k == "status")}
    main_after = {k: v for k, v in desired.items() if not (split_status and k == "status")}
    main_patch = create_merge_patch(main_before, main_after)
    status_changed = split_status and status_before != status_after
    current = live
    if main_patch:
        current = await client.patch(
            resource, name_of(live), main_patch, namespace=namespace, field_manager=field_manager
        )
    if status_changed:
        status_patch = create_merge_patch({"status": status_before}, {"status": status_after})
        current = await client.patch(
            resource, name_of(live), status_patch, namespace=namespace, subresource="status",
            field_manager=field_manager,
        )  # fmt: skip
    if main_patch and status_changed:
        return current, OperationResult.UPDATED_STATUS
    if status_changed:
        return current, OperationResult.UPDATED_STATUS_ONLY
    if main_patch:
        return current, OperationResult.UPDATED
    return live, OperationResult.UNCHANGED


# -- status ---------------------------------------------------------------------------------------


class StatusWriter:
    """Writes an object's status only when it changed, stamped with the generation acted on."""

    def __init__(self, client: Client, *, field_manager: str | None = None) -> None:
        self.client = client
        self.field_manager = field_manager

    async def write(
        self,
        resource: ResourceInfo,
        obj: Mapping[str, Any],
        status: Mapping[str, Any],
        *,
        observed_generation: bool = True,
    ) -> tuple[dict[str, Any], OperationResult]:
        """Set ``obj``'s status to ``status`` (PUT with ``obj``'s resourceVersion: 409 if ``obj`` is stale).

        ``obj`` is the object the reconciler read and acted on; its ``metadata.generation`` becomes
        ``status.observedGeneration`` (not the generation of some re-read copy).
        """
        new_status = copy_json(dict(status))
        generation = (obj.get("metadata") or {}).get("generation")
        if observed_generation and generation is not None:
            new_status["observedGeneration"] = generation
        if new_status == obj.get("status"):
            return dict(obj), OperationResult.UNCHANGED
        body = {**obj, "status": new_status}
        written = await self.client.update(
            resource, body, namespace=namespace_of(obj) or None,
            subresource="status" if resource.status_subresource else None, field_manager=self.field_manager,
        )  # fmt: skip
        return written, OperationResult.UPDATED


def set_condition(
    conditions: list[dict[str, Any]],
    *,
    type: str,
    status: str,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
    clock: Clock | None = None,
) -> bool:
    """Add or update a ``metav1.Condition`` in place; return whether anything changed.

    ``lastTransitionTime`` is set for a new condition and when ``status`` changes, and kept otherwise,
    so re-asserting the same observation is not a change (apimachinery ``meta.SetStatusCondition``).
    """
    if status not in ("True", "False", "Unknown"):
        raise ValueError(f"condition status must be True, False or Unknown, not {status!r}")
    now = format_time((clock or SystemClock()).now())
    for existing in conditions:
        if existing.get("type") != type:
            continue
        before = dict(existing)
        if existing.get("status") != status:
            existing["status"] = status
            existing["lastTransitionTime"] = now
        existing["reason"] = reason
        existing["message"] = message
        if observed_generation is not None:
            existing["observedGeneration"] = observed_generation
        return existing != before
    condition: dict[str, Any] = {"type": type, "status": status}
    if observed_generation is not None:
        condition["observedGeneration"] = observed_generation
    condition.update(lastTransitionTime=now, reason=reason, message=message)
    conditions.append(condition)
    return True


def _describe(obj: Mapping[str, Any]) -> str:
    ns, name = namespace_of(obj), name_of(obj)
    return f"{ns}/{name}" if ns else name
