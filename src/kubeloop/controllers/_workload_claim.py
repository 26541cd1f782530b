"""Adoption and release of children by controller reference (upstream ``ClaimObject``).

Source: k/k ``pkg/controller/controller_ref_manager.go``. For each candidate child of ``owner``:

- controlled by another UID: ignored (never stolen);
- controlled by ``owner`` and matching the selector: claimed (nothing written);
- controlled by ``owner`` but no longer matching: released with a strategic merge patch that
  deletes our ownerReference (carrying the child's UID, so a recreated namesake is never touched),
  unless ``owner`` is being deleted; 404 and 422 on release are ignored;
- an orphan that matches, is not being deleted, while ``owner`` is not being deleted: adopted
  with a patch adding ``{controller: true, blockOwnerDeletion: true}``. Before the first adoption the
  owner is re-read *uncached* (``RecheckDeletionTimestamp``): if it is gone, has another UID or is
  being deleted, nothing is adopted. A 404 on adoption is ignored.

:func:`candidates` narrows the objects to consider with two cache indexes instead of a namespace scan.

The result lists the children now controlled by ``owner``; errors other than the ignored ones are
raised after every candidate was tried (the sync then retries with backoff).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubeloop.api import (
    ApiError,
    Invalid,
    LabelSelector,
    NotFound,
    ResourceInfo,
    controller_of,
    is_being_deleted,
    label_selector_from_dict,
    labels_of,
    name_of,
    namespace_of,
    owner_reference,
    uid_of,
)
from kubeloop.client import Client
from kubeloop.runtime import OWNER_UID_INDEX, Cache, Request, SharedInformer

__all__ = [
    "ORPHAN_INDEX",
    "ClaimError",
    "add_orphan_index",
    "candidates",
    "claim_children",
    "controller_uid",
    "index_orphans",
    "owners_selecting",
    "resolve_controller",
]

ORPHAN_INDEX = "kubeloop-orphans"


def index_orphans(obj: Mapping[str, Any]) -> list[str]:
    """Index objects without a controller reference by namespace: the only ones we may adopt."""
    return [] if controller_of(obj) is not None else [namespace_of(obj)]


def add_orphan_index(informer: SharedInformer) -> SharedInformer:
    """Give ``informer``'s cache :data:`ORPHAN_INDEX` (once: informers are shared between controllers)."""
    if ORPHAN_INDEX not in informer.cache.indexers:
        informer.add_indexers({ORPHAN_INDEX: index_orphans})
    return informer


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    ref = controller_of(obj)
    return None if ref is None else str(ref.get("uid"))


def resolve_controller(cache: Cache, namespace: str, ref: Mapping[str, Any] | None, kind: str) -> dict[str, Any] | None:
    """The cached ``kind`` object a controller reference names, if it is that very object (same UID).

    Upstream's ``resolveControllerRef``: a reference to another kind, or to a namesake that was
    deleted and recreated, resolves to nothing.
    """
    if ref is None or ref.get("kind") != kind:
        return None
    owner = cache.get(f"{namespace}/{ref.get('name')}")
    return owner if owner is not None and uid_of(owner) == ref.get("uid") else None


def _label_selector(owner: Mapping[str, Any]) -> LabelSelector:
    return label_selector_from_dict((owner.get("spec") or {}).get("selector"))


def owners_selecting(cache: Cache, obj: Mapping[str, Any], *,
                     selector_of: Callable[[Mapping[str, Any]], LabelSelector] = _label_selector) -> list[Request]:
    """A request for every cached owner in ``obj``'s namespace whose (non-empty) selector matches it.

    Who may adopt an orphan (upstream's ``getPodReplicaSets``, ``getReplicaSetsForDeployment``...).
    ``selector_of`` reads an owner's selector (a ``spec.selector`` LabelSelector by default; a
    ReplicationController's is a label map).
    """
    found = []
    for owner in cache.list(namespace=namespace_of(obj)):
        if not (owner.get("spec") or {}).get("selector"):
            continue
        if selector_of(owner).matches(labels_of(obj)):
            found.append(Request.for_object(owner))
    return found


def candidates(cache: Cache, owner: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What ``ClaimObject`` could claim: children naming ``owner`` in a reference, and orphans.

    Equivalent to scanning the namespace (objects controlled by someone else are ignored by the
    claim anyway), at the cost of two index lookups. The cache needs :data:`ORPHAN_INDEX`.
    """
    seen: dict[str, dict[str, Any]] = {}
    namespace = namespace_of(owner)
    for obj in cache.by_index(OWNER_UID_INDEX, uid_of(owner)):
        if namespace_of(obj) == namespace:
            seen[uid_of(obj)] = obj
    for obj in cache.by_index(ORPHAN_INDEX, namespace):
        seen.setdefault(uid_of(obj), obj)
    return list(seen.values())


class ClaimError(Exception):
    """Some children could not be adopted or released; the others were claimed."""


def _adopt_patch(owner: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    ref = owner_reference(owner, controller=True, block_owner_deletion=True)
    return {"metadata": {"ownerReferences": [ref], "uid": uid_of(child)}}


def _release_patch(owner: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid_of(owner)}], "uid": uid_of(child)}}


async def claim_children(
    client: Client,
    *,
    owner: Mapping[str, Any],
    owner_resource: ResourceInfo,
    child_resource: ResourceInfo,
    children: Iterable[Mapping[str, Any]],
    matches: Callable[[Mapping[str, Any]], bool],
    field_manager: str | None = None,
) -> list[Mapping[str, Any]]:
    owner_uid = uid_of(owner)
    owner_deleting = is_being_deleted(owner)
    claimed: list[Mapping[str, Any]] = []
    errors: list[str] = []
    adoption_checked: bool | None = None

    async def can_adopt() -> bool:
        nonlocal adoption_checked
        if adoption_checked is None:
            try:
                fresh = await client.get(owner_resource, name_of(owner), namespace=namespace_of(owner) or None)
            except NotFound:
                fresh = None
            if fresh is None or uid_of(fresh) != owner_uid:
                errors.append(f"original {namespace_of(owner)}/{name_of(owner)} is gone")
                adoption_checked = False
            elif is_being_deleted(fresh):
                errors.append(f"{namespace_of(owner)}/{name_of(owner)} has just been deleted")
                adoption_checked = False
            else:
                adoption_checked = True
        return adoption_checked

    for child in children:
        ref = controller_of(child)
        if ref is not None:
            if ref.get("uid") != owner_uid:
                continue
            if matches(child):
                claimed.append(child)
                continue
            if owner_deleting:
                continue
            try:
                await client.patch(
                    child_resource, name_of(child), _release_patch(owner, child),
                    namespace=namespace_of(child) or None, patch_type="strategic", field_manager=field_manager,
                )  # fmt: skip
            except (NotFound, Invalid):
                pass
            except ApiError as err:
                errors.append(f"release {name_of(child)}: {err}")
            continue
        if owner_deleting or not matches(child) or is_being_deleted(child):
            continue
        if namespace_of(owner) and namespace_of(owner) != namespace_of(child):
            continue
        if not await can_adopt():
            continue
        try:
            adopted = await client.patch(
                child_resource, name_of(child), _adopt_patch(owner, child),
                namespace=namespace_of(child) or None, patch_type="strategic", field_manager=field_manager,
            )  # fmt: skip
        except NotFound:
            continue
        except ApiError as err:
            errors.append(f"adopt {name_of(child)}: {err}")
            continue
        claimed.append(adopted)
    if errors:
        raise ClaimError("; ".join(errors))
    return claimed
