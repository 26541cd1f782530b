"""Which pods sit on which node, for the filters and scores that look at other pods.

:class:`PlacedPods` is the pod half of the scheduler cache's ``NodeInfo``: every pod the scheduler
counts on a node (bound and not finished, or assumed by this scheduler and not yet seen bound) is
placed there with its latest object. It answers, without scanning every pod:

- :meth:`~PlacedPods.on`: the pods on one node;
- :meth:`~PlacedPods.with_affinity`: per node, the pods that have pod affinity or anti-affinity
  (upstream's ``PodsWithAffinity`` and ``PodsWithRequiredAntiAffinity`` lists);
- :meth:`~PlacedPods.count_matching`: per node, how many pods of a namespace, not being deleted, a
  label selector matches (PodTopologySpread's ``countPodsMatchSelector``), looking only at the pods
  that carry the label an exact requirement of the selector names, when it has one.

:meth:`~PlacedPods.without` copies the placement minus some pods, for preemption's dry run, and
:meth:`~PlacedPods.plus` with some pods added, for the nominated pods the filters count.
:class:`Held` is the resource half: one pod's node, requests and scoring :class:`Allocation`.
Placing a pod again replaces its previous placement; the owner (the scheduler) calls :meth:`place`
and :meth:`remove` from its informer handlers and when it assumes or forgets a pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from kubeloop.api import LabelSelector
from kubeloop.controllers._scheduler_allocation import Allocation

__all__ = ["Held", "PlacedPods", "has_pod_affinity", "labels_of", "meta_of"]

_Key = tuple[str, str]


class Held(NamedTuple):
    """A pod the scheduler cache counts on a node: the node, its requests (what NodeResourcesFit's
    filter adds up) and its :class:`Allocation` (what the resource scores add up)."""

    node: str
    requests: Mapping[str, float]
    allocation: Allocation


def has_pod_affinity(pod: Mapping[str, Any]) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object's metadata, or an empty mapping when it has none (or a malformed one)."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """An object's labels, or an empty mapping."""
    labels = meta_of(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


class PlacedPods:
    """Pods by node, with a label index per namespace."""

    def __init__(self) -> None:
        self._where: dict[_Key, tuple[str, Mapping[str, Any]]] = {}
        self._by_node: dict[str, dict[_Key, Mapping[str, Any]]] = {}
        self._affine: dict[str, dict[_Key, Mapping[str, Any]]] = {}
        self._by_label: dict[tuple[str, str, str], set[_Key]] = {}  # (namespace, key, value) -> pods
        self._by_namespace: dict[str, set[_Key]] = {}

    def node_of(self, key: _Key) -> str | None:
        entry = self._where.get(key)
        return entry[0] if entry else None

    def get(self, key: _Key) -> Mapping[str, Any] | None:
        entry = self._where.get(key)
        return entry[1] if entry else None

    def place(self, key: _Key, node: str, pod: Mapping[str, Any]) -> None:
        self.remove(key)
        self._where[key] = (node, pod)
        self._by_node.setdefault(node, {})[key] = pod
        if has_pod_affinity(pod):
            self._affine.setdefault(node, {})[key] = pod
        namespace = key[0]
        self._by_namespace.setdefault(namespace, set()).add(key)
        for name, value in labels_of(pod).items():
            self._by_label.setdefault((namespace, str(name), str(value)), set()).add(key)

    def plus(self, pods: Mapping[_Key, tuple[str, Mapping[str, Any]]]) -> PlacedPods:
        """A copy with ``pods`` (key -> (node, pod)) placed too: the nominated pods the filters add."""
        copy = self.without(frozenset())
        for key, (node, pod) in pods.items():
            copy.place(key, node, pod)
        return copy

    def without(self, keys: frozenset[_Key] | set[_Key]) -> PlacedPods:
        """A copy lacking ``keys`` (what preemption's filters see once victims are gone)."""
        copy = PlacedPods()
        for key, (node, pod) in self._where.items():
            if key not in keys:
                copy.place(key, node, pod)
        return copy

    def remove(self, key: _Key) -> None:
        entry = self._where.pop(key, None)
        if entry is None:
            return
        node, pod = entry
        for table in (self._by_node, self._affine):
            pods = table.get(node)
            if pods is not None:
                pods.pop(key, None)
                if not pods:
                    del table[node]
        namespace = key[0]
        self._discard(self._by_namespace, namespace, key)
        for name, value in labels_of(pod).items():
            self._discard(self._by_label, (namespace, str(name), str(value)), key)

    @staticmethod
    def _discard(index: dict[Any, set[_Key]], at: Any, key: _Key) -> None:
        keys = index.get(at)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[at]

    def on(self, node: str) -> list[Mapping[str, Any]]:
        return list((self._by_node.get(node) or {}).values())

    def with_affinity(self) -> Iterator[tuple[str, list[Mapping[str, Any]]]]:
        for node, pods in self._affine.items():
            yield node, list(pods.values())

    def count_matching(self, selector: LabelSelector, namespace: str) -> dict[str, int]:
        """Per node name, the pods of ``namespace`` not being deleted that ``selector`` matches; an
        empty selector matches none here, as upstream's ``countPodsMatchSelector`` has it."""
        if selector.empty or selector.matches_nothing:
            return {}
        candidates: set[_Key] | None = None
        for requirement in selector.requirements:
            value = selector.requires_exact_match(requirement.key)
            if value is not None:
                candidates = self._by_label.get((namespace, requirement.key, value)) or set()
                break
        if candidates is None:
            candidates = self._by_namespace.get(namespace) or set()
        counts: dict[str, int] = {}
        for key in candidates:
            node, pod = self._where[key]
            if (pod.get("metadata") or {}).get("deletionTimestamp") or not selector.matches(labels_of(pod)):
                continue
            counts[node] = counts.get(node, 0) + 1
        return counts
