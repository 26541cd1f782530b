"""``preview_delete``: the impact of a delete, read from any cluster through discovery and list calls.

Contract: nothing is written. The target is read with a GET; then every resource the server
announces with the ``list`` and ``delete`` verbs (preferred version of each group, custom
resources included) is listed, in parallel: in the target's namespace for a namespaced target
(valid owners of its dependents can only live there, §1.7), cluster-wide for a cluster-scoped
target (a namespace included: cluster-scoped owners may have dependents anywhere). Owners outside
that scope are checked with a GET, as the GC does. Objects seen through two groups (core and
``events.k8s.io`` events) count once. A resource that cannot be listed (RBAC, an unserved CRD
version) does not fail the preview: it becomes a warning, because its objects are then missing
from the impact. The result carries its plan id (:func:`~kubeloop.guard.plan_id`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kubeloop.api import ApiError, NotFound, ResourceInfo, uid_of
from kubeloop.client import NAMESPACE_ALL, Client, Discovery, discover_resources, with_verbs
from kubeloop.guard._graph import Listed, compute_impact
from kubeloop.guard._model import Impact
from kubeloop.guard._plan import with_plan_id
from kubeloop.guard._resolve import resolve_resource

__all__ = ["CASCADES", "deletable_resources", "preview_delete"]

CASCADES = ("background", "foreground", "orphan")
_PARALLEL_LISTS = 8


def deletable_resources(discovery: Discovery) -> list[ResourceInfo]:
    return with_verbs(discovery.preferred, "list", "delete")


async def preview_delete(
    client: Client,
    resource: ResourceInfo | str,
    name: str,
    *,
    namespace: str | None = None,
    cascade: str = "background",
    discovery: Discovery | None = None,
) -> Impact:
    """What deleting ``resource``/``name`` with ``cascade`` would remove, orphan, keep and put at risk."""
    if cascade not in CASCADES:
        raise ValueError(f"cascade must be one of {', '.join(CASCADES)}, got {cascade!r}")
    discovery = discovery or await discover_resources(client)
    resources = deletable_resources(discovery)
    info = resource if isinstance(resource, ResourceInfo) else resolve_resource(resources, resource)
    ns = (namespace or client.default_namespace) if info.namespaced else ""
    target_obj = await client.get(info, name, namespace=ns or None)
    target = Listed(info, target_obj)
    warnings = [f"discovery: {discovery.failure_message()}"] if discovery.failed else []

    scope = ns if info.namespaced else NAMESPACE_ALL
    wanted = [r for r in resources if r.namespaced or not info.namespaced]
    listed, failures = await _list_everything(client, wanted, scope)
    warnings.extend(failures)
    objects = _dedupe(listed)

    known = {o.uid for o in objects}
    alive = await _owners_alive_elsewhere(client, discovery, objects, known)
    volumes: dict[str, Listed] = {}
    if any(o.info.group == "" and o.info.kind == "PersistentVolumeClaim" for o in objects):
        pv_items = [o for o in objects if o.info.group == "" and o.info.plural == "persistentvolumes"]
        if info.namespaced:
            pv_info = next((r for r in resources if r.group == "" and r.plural == "persistentvolumes"), None)
            if pv_info is not None:
                pv_items, failed = await _list_everything(client, [pv_info], NAMESPACE_ALL)
                warnings.extend(failed)
        volumes = {str(o.meta.get("name")): o for o in pv_items}
    impact = compute_impact(target, objects, cascade=cascade, alive_elsewhere=alive, volumes=volumes,
                            warnings=warnings)
    return with_plan_id(impact)


async def _list_everything(
    client: Client, resources: Sequence[ResourceInfo], namespace: str
) -> tuple[list[Listed], list[str]]:
    gate = asyncio.Semaphore(_PARALLEL_LISTS)
    failures: list[str] = []

    async def one(info: ResourceInfo) -> list[Listed]:
        async with gate:
            try:
                items, _ = await client.list_all(info, namespace=namespace if info.namespaced else None)
            except ApiError as err:
                failures.append(f"could not list {info.group_resource} ({err.message}): its objects are not "
                                "in this preview")
                return []
        return [Listed(info, item) for item in items]

    batches = await asyncio.gather(*(one(r) for r in resources))
    return [item for batch in batches for item in batch], sorted(failures)


def _dedupe(listed: list[Listed]) -> list[Listed]:
    seen: set[str] = set()
    out: list[Listed] = []
    for item in listed:
        uid = item.uid
        if uid and uid not in seen:
            seen.add(uid)
            out.append(item)
    return out


async def _owners_alive_elsewhere(
    client: Client, discovery: Discovery, objects: list[Listed], known: set[str]
) -> set[str]:
    """UIDs of owners outside the listed scope that exist (live GET by kind and name, uid compared)."""
    wanted: dict[tuple[str, str, str], set[str]] = {}
    for item in objects:
        for ref in item.meta.get("ownerReferences") or ():
            uid = str(ref.get("uid") or "")
            if uid and uid not in known:
                wanted.setdefault((str(ref.get("apiVersion")), str(ref.get("kind")), str(ref.get("name"))),
                                  set()).add(uid)
    alive: set[str] = set()
    gate = asyncio.Semaphore(_PARALLEL_LISTS)

    async def check(api_version: str, kind: str, name: str, uids: set[str]) -> None:
        info = discovery.by_kind(api_version, kind)
        if info is None:
            alive.update(uids)  # the GC cannot resolve the kind either: it never collects these dependents
            return
        if info.namespaced:
            return  # namespaced owners live in the dependent's namespace, which was listed
        async with gate:
            try:
                owner: dict[str, Any] = await client.get(info, name)
            except NotFound:
                return
        alive.update(uids & {uid_of(owner)})

    await asyncio.gather(*(check(*key, uids) for key, uids in wanted.items()))
    return alive
