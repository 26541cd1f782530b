"""Event handlers: which requests an object event should enqueue (controller-runtime ``pkg/handler``).

An :class:`Event` is what a source (an informer) reports: ``create``, ``update`` (with the old object),
``delete`` or ``generic``. A :class:`Handler` maps one event to the requests to reconcile; it is one
method, and the controller adds the requests to its queue (where duplicates collapse).

- :class:`EnqueueForObject`: the object itself.
- :class:`EnqueueForOwner`: the owner named in the object's ``ownerReferences`` (by default only the
  *controlling* owner, ``controller: true``) of the given kind. The owner is looked up in the object's
  namespace, or cluster-wide when the owner kind is cluster-scoped (ownerReferences carry no
  namespace). On update both the old and the new owner are enqueued, so moving an object from one
  owner to another wakes both.
- :class:`EnqueueMapped`: whatever a mapping function returns for the object (old and new on update).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from kubeloop.api import ResourceInfo, split_api_version
from kubeloop.runtime._reconcile import Request

__all__ = ["EnqueueForObject", "EnqueueForOwner", "EnqueueMapped", "Event", "EventType", "Handler"]

EventType = Literal["create", "update", "delete", "generic"]


@dataclass(frozen=True, slots=True)
class Event:
    type: EventType
    object: Mapping[str, Any]
    old_object: Mapping[str, Any] | None = None  # set for updates only

    def objects(self) -> tuple[Mapping[str, Any], ...]:
        """The objects the event is about: old and new for an update, else the one object."""
        if self.type == "update" and self.old_object is not None:
            return (self.old_object, self.object)
        return (self.object,)


class Handler(Protocol):
    def requests(self, event: Event) -> Iterable[Request]: ...


class EnqueueForObject:
    """Reconcile the object the event is about."""

    def requests(self, event: Event) -> Iterable[Request]:
        return (Request.for_object(event.object),)


class EnqueueForOwner:
    """Reconcile the owner (of kind ``owner``) that the object's ``ownerReferences`` name."""

    def __init__(self, owner: ResourceInfo, *, only_controller: bool = True) -> None:
        self.owner = owner
        self.only_controller = only_controller

    def requests(self, event: Event) -> Iterable[Request]:
        found: dict[Request, None] = {}
        for obj in event.objects():
            for request in self._owners(obj):
                found.setdefault(request, None)
        return tuple(found)

    def _owners(self, obj: Mapping[str, Any]) -> Iterable[Request]:
        meta = obj.get("metadata") or {}
        namespace = (meta.get("namespace") or "") if self.owner.namespaced else ""
        for ref in meta.get("ownerReferences") or ():
            if self.only_controller and ref.get("controller") is not True:
                continue
            group, _ = split_api_version(str(ref.get("apiVersion", "")))
            if group == self.owner.group and ref.get("kind") == self.owner.kind and ref.get("name"):
                yield Request(namespace, str(ref["name"]))


class EnqueueMapped:
    """Reconcile whatever ``fn(object)`` returns (for old and new objects on update)."""

    def __init__(self, fn: Callable[[Mapping[str, Any]], Iterable[Request]]) -> None:
        self.fn = fn

    def requests(self, event: Event) -> Iterable[Request]:
        found: dict[Request, None] = {}
        for obj in event.objects():
            for request in self.fn(obj):
                found.setdefault(request, None)
        return tuple(found)
