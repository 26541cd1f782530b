"""``Lineage``: which objects the controller under test writes *for* the scenario's primaries.

The checks must tell the controller's children from anything else it writes (an unrelated object
it patches, the primary itself), and they do it by ownership and by the controller's own recorded
requests, never by name, so a child created with ``generateName`` is matched like any other:

* the **owners** of a write are the primaries (by uid) named in an ownerReference of the body the
  controller sends (a create, a replace, a patch that sets them) or of the object the write targets
  as it is now on the server;
* a write is a **child write** when it targets an object other than a primary that has an owner
  among the primaries, or that the controller itself created in this world (the uid in the answer
  to one of its accepted POSTs, recorded by its :class:`~kubeloop.testing.ControllerTraffic`).

Looking at the target object costs the grader one read of its own (not the controller's): the
world is read as it is when the write arrives, before the server applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import NotFound, owner_references
from kubeloop.testing._traffic import Exchange
from kubeloop.testing._world import World

__all__ = ["Lineage", "reference_uids"]


def reference_uids(obj: object, *, controller_only: bool = False) -> set[str]:
    """The uids in ``obj``'s ``metadata.ownerReferences`` (only the controller one, if asked)."""
    if not isinstance(obj, Mapping):
        return set()
    return {
        str(r["uid"]) for r in owner_references(obj)
        if r.get("uid") and (r.get("controller") or not controller_only)
    }  # fmt: skip


class Lineage:
    """Ownership questions about the controller's writes in ``world`` (see the module docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def primary_uids(self) -> set[str]:
        return {str(p["metadata"]["uid"]) for p in self.world.primaries}

    def created_uids(self) -> set[str]:
        """The uids of every object the controller created in this world (its accepted POSTs)."""
        return {str(obj["metadata"]["uid"]) for obj in self.world.traffic.created() if "uid" in obj.get("metadata", {})}

    async def target(self, exchange: Exchange) -> dict[str, Any] | None:
        """The object an update, patch or delete is aimed at, as it is now (``None`` for a create,
        or when the object is not there)."""
        if exchange.method == "POST":
            return None
        found = await self.world.resolve_path(exchange.path)
        if found is None:
            return None
        info, namespace, name = found
        try:
            return await self.world.client.get(info, name, namespace=namespace)
        except NotFound:
            return None

    async def owners(self, exchange: Exchange) -> set[str]:
        """The primaries (uids) that own what ``exchange`` writes; empty for a write to a primary itself."""
        primaries = self.primary_uids()
        if not exchange.is_write or not primaries:
            return set()
        found = reference_uids(exchange.request_json()) & primaries
        target = await self.target(exchange)
        if target is not None:
            if str(target["metadata"].get("uid")) in primaries:
                return set()
            found |= reference_uids(target) & primaries
        return found

    async def is_child_write(self, exchange: Exchange) -> bool:
        """Is ``exchange`` a write to one of the controller's children (owned by a primary, or
        created by the controller), not to a primary or an object unrelated to them?"""
        if not exchange.is_write:
            return False
        primaries = self.primary_uids()
        target = await self.target(exchange)
        if target is not None:
            uid = str(target["metadata"].get("uid"))
            if uid in primaries:
                return False
            if reference_uids(target) & primaries or uid in self.created_uids():
                return True
        return bool(reference_uids(exchange.request_json()) & primaries)

    def children(self, owners: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The objects the controller created (its accepted POSTs' answers) whose controller
        reference names one of ``owners`` (the primaries by default)."""
        wanted = set(owners) if owners is not None else self.primary_uids()
        return [obj for obj in self.world.traffic.created() if reference_uids(obj, controller_only=True) & wanted]
