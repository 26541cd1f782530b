"""The garbage collector's owner graph (k/k ``garbagecollector/graph.go``, ``graph_builder.go``).

One :class:`Node` per object uid, built from informer events of every monitored kind: the node's
identity (apiVersion, kind, namespace, name, uid), its ``ownerReferences`` as last observed, the
uids of its dependents, and two flags (``being_deleted``; ``deleting_dependents`` once the object
carries ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer).

:class:`OwnerGraph` applies events in the order the informers deliver them (handlers run
synchronously on one event loop, which serialises them as upstream's single ``graphChanges``
goroutine does) and tells the collector what to look at through two callbacks:

* ``attempt_to_delete(uid)``: the node may be garbage, or (an owner) may be able to finish a
  foreground deletion. Emitted for: a virtual owner (a uid referenced but never observed), the
  dependents of a deleted owner, the dependents of an owner entering foreground deletion, an owner
  whose blocking dependent went away or stopped blocking, a dependent whose ownerReferences
  disagree with the owner's observed coordinates.
* ``attempt_to_orphan(uid)``: the owner just got ``deletionTimestamp`` and the ``orphan`` finalizer.

``report_invalid(node, owner_uid)`` is called when a namespaced dependent references an observed
owner that lives in another namespace (upstream's ``OwnerRefInvalidNamespace`` event).

Virtual nodes: a referenced owner that has not been observed gets a virtual node (namespace = the
dependent's) so that its dependents are reachable; the collector verifies it with a live GET and
either waits for the informer to observe it or calls :meth:`OwnerGraph.virtual_delete`. A virtual
delete never removes an observed node whose coordinates differ, and a virtual node that dependents
reference under other coordinates survives under an alternate identity (``partitionDependents``,
``getAlternateOwnerIdentity``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeloop.api import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS

__all__ = ["AbsentOwnerCache", "Node", "ObjectReference", "OwnerGraph"]


@dataclass(frozen=True, slots=True, order=True)
class ObjectReference:
    """An object's coordinates; ``str()`` is upstream's ``objectReference.String()``."""

    namespace: str
    name: str
    api_version: str
    kind: str
    uid: str

    def __str__(self) -> str:
        return (f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, "
                f"name: {self.name}, uid: {self.uid}]")  # fmt: skip

    @classmethod
    def of(cls, obj: Mapping[str, Any], *, api_version: str = "", kind: str = "") -> ObjectReference:
        meta = obj.get("metadata") or {}
        return cls(
            namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
            api_version=str(obj.get("apiVersion") or api_version), kind=str(obj.get("kind") or kind),
            uid=str(meta.get("uid") or ""),
        )  # fmt: skip

    @classmethod
    def of_owner(cls, ref: Mapping[str, Any], namespace: str) -> ObjectReference:
        return cls(namespace, str(ref.get("name") or ""), str(ref.get("apiVersion") or ""),
                   str(ref.get("kind") or ""), str(ref.get("uid") or ""))  # fmt: skip

    def matches(self, ref: Mapping[str, Any]) -> bool:
        """``ownerReferenceMatchesCoordinates``: uid, name, kind and apiVersion all equal."""
        return (ref.get("uid") == self.uid and ref.get("name") == self.name
                and ref.get("kind") == self.kind and ref.get("apiVersion") == self.api_version)  # fmt: skip


def blocks(ref: Mapping[str, Any]) -> bool:
    return ref.get("blockOwnerDeletion") is True


@dataclass(eq=False)
class Node:
    identity: ObjectReference
    owners: list[dict[str, Any]] = field(default_factory=list)
    dependents: set[str] = field(default_factory=set)
    being_deleted: bool = False
    deleting_dependents: bool = False
    virtual: bool = False

    @property
    def uid(self) -> str:
        return self.identity.uid

    def reference_to(self, owner_uid: str) -> dict[str, Any] | None:
        for ref in self.owners:
            if ref.get("uid") == owner_uid:
                return ref
        return None


ABSENT_OWNER_CACHE_SIZE = 16_384


class AbsentOwnerCache:
    """An LRU of owner coordinates verified absent.

    Upstream keeps 500 entries. When thousands of owners go at once (a namespace of owner chains being
    emptied), 500 is evicted before their dependents are processed and each dependent costs a live GET
    of an owner already seen gone; 16,384 entries (about 2 MB) cover such bursts. Only the number of
    lookups changes: an entry is added only for an owner observed deleted or verified absent.
    """

    def __init__(self, size: int = ABSENT_OWNER_CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, ref: ObjectReference) -> None:
        self._items[ref] = None
        self._items.move_to_end(ref)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def __contains__(self, ref: object) -> bool:
        if ref in self._items:
            self._items.move_to_end(ref)  # type: ignore[arg-type]
            return True
        return False


def _deleting_with(obj: Mapping[str, Any] | None, finalizer: str) -> bool:
    if obj is None:
        return False
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or ())


def _starts_waiting(old: Mapping[str, Any] | None, new: Mapping[str, Any], finalizer: str) -> bool:
    return _deleting_with(new, finalizer) and not _deleting_with(old, finalizer)


def _refs(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in (obj.get("metadata") or {}).get("ownerReferences") or () if isinstance(r, Mapping)]


def _diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[
    list[dict[str, Any]], list[dict[str, Any]], list[tuple[dict[str, Any], dict[str, Any]]]
]:
    """``referencesDiffs``: (added, removed, changed) by uid."""
    old_by_uid = {r.get("uid"): r for r in old}
    added: list[dict[str, Any]] = []
    changed: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for ref in new:
        before = old_by_uid.pop(ref.get("uid"), None)
        if before is None:
            added.append(ref)
        elif before != ref:
            changed.append((before, ref))
    return added, list(old_by_uid.values()), changed


class OwnerGraph:
    def __init__(
        self,
        *,
        attempt_to_delete: Callable[[str], None],
        attempt_to_orphan: Callable[[str], None],
        report_invalid: Callable[[Node, str], None],
        requeue_rate_limited: Callable[[str], None] | None = None,
    ) -> None:
        self.nodes: dict[str, Node] = {}
        self.absent = AbsentOwnerCache()
        self._delete = attempt_to_delete
        self._orphan = attempt_to_orphan
        self._report_invalid = report_invalid
        self._requeue = requeue_rate_limited or attempt_to_delete

    def dependents(self, node: Node) -> list[Node]:
        return [d for uid in node.dependents if (d := self.nodes.get(uid)) is not None]

    def blocking_dependents(self, node: Node) -> list[Node]:
        out = []
        for dep in self.dependents(node):
            ref = dep.reference_to(node.uid)
            if ref is not None and blocks(ref):
                out.append(dep)
        return out

    # -- informer events -------------------------------------------------------------------------

    def upsert(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, api_version: str, kind: str) -> None:
        """An add (``old`` None) or update observed by an informer."""
        identity = ObjectReference.of(obj, api_version=api_version, kind=kind)
        if not identity.uid:
            return
        node = self.nodes.get(identity.uid)
        if node is not None and node.virtual:
            if identity != node.identity:
                # The bad-child-then-good-parent order: dependents that named us otherwise are rechecked.
                _, mismatched = self._partition(self.dependents(node), identity)
                for dep in mismatched:
                    if identity.namespace and dep.identity.namespace != identity.namespace:
                        self._report_invalid(dep, identity.uid)
                    self._delete(dep.uid)
                node.identity = identity
            node.virtual = False
        owners = _refs(obj)
        deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
        if node is None:
            node = Node(identity, owners=owners, being_deleted=deleting)
            self.nodes[identity.uid] = node
            self._add_dependent_to_owners(node, owners)
        else:
            node.identity = identity
            added, removed, changed = _diff(node.owners, owners)
            if added or removed or changed:
                self._add_unblocked_owners(removed, changed)
                node.owners = owners
                self._add_dependent_to_owners(node, added)
                for ref in removed:
                    owner = self.nodes.get(str(ref.get("uid")))
                    if owner is not None:
                        owner.dependents.discard(node.uid)
            if deleting:
                node.being_deleted = True
        self._process_transitions(old, obj, node)

    def remove(self, obj: Mapping[str, Any], *, api_version: str, kind: str) -> None:
        """A delete observed by an informer."""
        identity = ObjectReference.of(obj, api_version=api_version, kind=kind)
        node = self.nodes.get(identity.uid)
        if node is not None:
            self._remove_and_notify(node, identity)

    def virtual_delete(self, identity: ObjectReference) -> None:
        """The collector verified with a live GET that ``identity`` does not exist."""
        node = self.nodes.get(identity.uid)
        if node is None:
            return
        if node.virtual:
            matching, mismatched = self._partition(self.dependents(node), identity)
            if mismatched:
                # Some dependents disagree about our coordinates: keep the node for them.
                if matching:
                    self.absent.add(identity)
                    for dep in matching:
                        self._delete(dep.uid)
                if node.identity == identity:
                    alternate = self._alternate_identity(mismatched, identity)
                    if alternate is not None:
                        node.identity = alternate
                        self._requeue(node.uid)
                return
        elif node.identity != identity:
            # Never remove an observed node because of a virtual delete under other coordinates.
            matching, _ = self._partition(self.dependents(node), identity)
            if matching:
                self.absent.add(identity)
                for dep in matching:
                    self._delete(dep.uid)
            return
        self._remove_and_notify(node, identity)

    # -- internals ------------------------------------------------------------------------------

    def _remove_and_notify(self, node: Node, identity: ObjectReference) -> None:
        self.nodes.pop(node.uid, None)
        for ref in node.owners:
            owner = self.nodes.get(str(ref.get("uid")))
            if owner is not None:
                owner.dependents.discard(node.uid)
        if node.dependents:
            self.absent.add(identity)
        for uid in list(node.dependents):
            if uid in self.nodes:
                self._delete(uid)
        for ref in node.owners:
            owner = self.nodes.get(str(ref.get("uid")))
            if owner is not None and owner.deleting_dependents:
                # Lets the owner check whether its blocking dependents are all gone.
                self._delete(owner.uid)

    def _add_dependent_to_owners(self, node: Node, owners: Iterable[Mapping[str, Any]]) -> None:
        suspicious = False
        for ref in owners:
            uid = str(ref.get("uid") or "")
            if not uid:
                continue
            owner = self.nodes.get(uid)
            if owner is None:
                owner = Node(ObjectReference.of_owner(ref, node.identity.namespace), virtual=True)
                self.nodes[uid] = owner
                owner.dependents.add(node.uid)
                self._delete(uid)  # verified (and removed if absent) by a live lookup
                continue
            owner.dependents.add(node.uid)
            if suspicious:
                continue
            owner_ns = owner.identity.namespace
            if owner_ns and owner_ns != node.identity.namespace:
                if not owner.virtual:
                    self._report_invalid(node, uid)
                suspicious = True
            elif not owner.identity.matches(ref) or (
                not owner_ns and owner.virtual and owner_ns != node.identity.namespace
            ):
                suspicious = True
        if suspicious:
            self._delete(node.uid)

    def _add_unblocked_owners(
        self, removed: list[dict[str, Any]], changed: list[tuple[dict[str, Any], dict[str, Any]]]
    ) -> None:
        uids = [str(r.get("uid")) for r in removed if blocks(r)]
        uids += [str(new.get("uid")) for old, new in changed if blocks(old) and not blocks(new)]
        for uid in uids:
            if uid in self.nodes:
                self._delete(uid)

    def _process_transitions(self, old: Mapping[str, Any] | None, new: Mapping[str, Any], node: Node) -> None:
        if _starts_waiting(old, new, FINALIZER_ORPHAN_DEPENDENTS):
            self._orphan(node.uid)
            return
        if _starts_waiting(old, new, FINALIZER_DELETE_DEPENDENTS):
            node.deleting_dependents = True
            for uid in list(node.dependents):
                self._delete(uid)
            self._delete(node.uid)

    @staticmethod
    def _partition(dependents: list[Node], owner: ObjectReference) -> tuple[list[Node], list[Node]]:
        """``partitionDependents``: those that reference ``owner`` by exactly its coordinates, and not."""
        matching: list[Node] = []
        mismatched: list[Node] = []
        for dep in dependents:
            found_match = found_mismatch = False
            if owner.namespace and owner.namespace != dep.identity.namespace:
                found_mismatch = True
            else:
                for ref in dep.owners:
                    if ref.get("uid") == owner.uid:
                        if owner.matches(ref):
                            found_match = True
                        else:
                            found_mismatch = True
            if found_match:
                matching.append(dep)
            if found_mismatch:
                mismatched.append(dep)
        return matching, mismatched

    @staticmethod
    def _alternate_identity(dependents: list[Node], absent: ObjectReference) -> ObjectReference | None:
        """``getAlternateOwnerIdentity``: the next identity (sorted) that dependents use for this uid."""
        cluster_scoped = not absent.namespace
        seen = {absent}
        first: ObjectReference | None = None
        following: ObjectReference | None = None
        for dep in dependents:
            for ref in dep.owners:
                if ref.get("uid") != absent.uid:
                    continue
                if absent.matches(ref) and (cluster_scoped or absent.namespace == dep.identity.namespace):
                    continue
                alt = ObjectReference.of_owner(ref, dep.identity.namespace)
                if cluster_scoped and alt.api_version == absent.api_version and alt.kind == absent.kind:
                    alt = ObjectReference("", alt.name, alt.api_version, alt.kind, alt.uid)
                if alt in seen:
                    continue
                seen.add(alt)
                if first is None or alt < first:
                    first = alt
                if absent < alt and (following is None or alt < following):
                    following = alt
        return following if following is not None else first
