"""Predicates: which events are worth a reconcile (controller-runtime ``pkg/predicate``).

A predicate is any callable ``(Event) -> bool``; the controller drops an event when any of the
predicates on its watch says ``False``. The built-ins judge only updates and let ``create``,
``delete`` and ``generic`` events through, as upstream's do:

- :class:`GenerationChanged`: ``metadata.generation`` moved, i.e. the spec changed. The classic use is a
  controller that writes its own status and must not wake itself up doing so. Caveats (upstream's):
  it will not notice status overwritten by someone else, and for Deployments the generation also
  moves on annotation changes.
- :class:`LabelsChanged`, :class:`AnnotationsChanged`, :class:`ResourceVersionChanged`.

Combine with :func:`all_of`, :func:`any_of`, :func:`negate`, or with ``&``, ``|`` and ``~`` on the
built-ins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubeloop.api import metadata_of
from kubeloop.runtime._handlers import Event

__all__ = [
    "AnnotationsChanged",
    "GenerationChanged",
    "LabelsChanged",
    "Predicate",
    "PredicateFn",
    "ResourceVersionChanged",
    "all_of",
    "any_of",
    "negate",
]

PredicateFn = Callable[[Event], bool]


class Predicate:
    """Base of the built-ins: a callable with ``&``, ``|`` and ``~``."""

    def __call__(self, event: Event) -> bool:
        raise TypeError(f"{type(self).__name__} must define __call__")

    def __and__(self, other: PredicateFn) -> Predicate:
        return all_of(self, other)

    def __or__(self, other: PredicateFn) -> Predicate:
        return any_of(self, other)

    def __invert__(self) -> Predicate:
        return negate(self)


class _UpdateOnly(Predicate):
    """Lets every non-update event through; judges updates with :meth:`changed`."""

    def __call__(self, event: Event) -> bool:
        if event.type != "update":
            return True
        if event.old_object is None:
            return False  # upstream: an update without an old object is malformed, drop it
        return self.changed(metadata_of(event.old_object), metadata_of(event.object))

    def changed(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        raise TypeError(f"{type(self).__name__} must define changed")


class GenerationChanged(_UpdateOnly):
    def changed(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        return old.get("generation") != new.get("generation")


class LabelsChanged(_UpdateOnly):
    def changed(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        return (old.get("labels") or {}) != (new.get("labels") or {})


class AnnotationsChanged(_UpdateOnly):
    def changed(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        return (old.get("annotations") or {}) != (new.get("annotations") or {})


class ResourceVersionChanged(_UpdateOnly):
    def changed(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        return old.get("resourceVersion") != new.get("resourceVersion")


class _Combined(Predicate):
    def __init__(self, kind: str, predicates: tuple[PredicateFn, ...]) -> None:
        self.kind, self.predicates = kind, predicates

    def __call__(self, event: Event) -> bool:
        if self.kind == "all":
            return all(p(event) for p in self.predicates)
        if self.kind == "any":
            return any(p(event) for p in self.predicates)
        return not self.predicates[0](event)

    def __repr__(self) -> str:
        return (
            f"{self.kind}_of{self.predicates!r}" if self.kind != "not" else f"negate({self.predicates[0]!r})"
        )


def all_of(*predicates: PredicateFn) -> Predicate:
    """True when every predicate is (and for no predicates)."""
    return _Combined("all", predicates)


def any_of(*predicates: PredicateFn) -> Predicate:
    """True when at least one predicate is."""
    return _Combined("any", predicates)


def negate(predicate: PredicateFn) -> Predicate:
    return _Combined("not", (predicate,))
