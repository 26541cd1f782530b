"""Node resource scores: NodeResourcesFit's LeastAllocated and NodeResourcesBalancedAllocation, in integers.

Upstream: ``pkg/scheduler/framework/plugins/noderesources`` (``resource_allocation.go``,
``least_allocated.go``, ``balanced_allocation.go``) and ``pkg/scheduler/util/pod_resources.go`` as of
Kubernetes 1.32, with the default ``resources`` of both plugins: cpu and memory, weight 1 each.

Quantities are upstream's int64s: cpu in millicores (``MilliValue``, rounded up), memory in bytes
(``Value``, rounded up). :class:`Allocation` is what one pod adds to a node, twice over:

- ``requested``: its requests as they are (``computePodResourceRequest``: containers summed, each init
  container's a floor, plus overhead), what BalancedAllocation counts (``useRequested: true``);
- ``non_zero``: the same with a container that requests no cpu counted at 100m and one that requests no
  memory at 200 MiB (``schedutil.DefaultMilliCPURequest`` / ``DefaultMemoryRequest``, the
  ``NonMissingContainerRequests`` option), what LeastAllocated counts, so pods without requests still
  spread.

A node's totals are the sums over the pods the scheduler cache counts there (bound and not finished,
or assumed); each score adds the incoming pod's own :class:`Allocation`.

- :func:`least_allocated_score`: per resource whose allocatable is not 0, ``(allocatable - requested) *
  100 / allocatable`` (0 when over), averaged with the weights (integer division at each step).
- :func:`balanced_allocation_score`: the fraction ``requested / allocatable`` of each resource (capped at
  1) and their standard deviation (for two resources ``|f1 - f2| / 2``), scored ``int((1 - std) * 100)``.
  Upstream 1.32 scores every pod this way, a pod without requests included (later releases skip
  BestEffort pods, kubernetes#129138).

Neither plugin normalises its scores.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kubeloop.api._quantity import QuantityError
from kubeloop.api._quantity import parse_quantity as parse_exact

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "MAX_NODE_SCORE",
    "Allocation",
    "Resources",
    "allocatable_of",
    "balanced_allocation_score",
    "least_allocated_score",
    "pod_allocation",
]

MAX_NODE_SCORE = 100  # framework.MaxNodeScore
DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest


class Resources(NamedTuple):
    """cpu in millicores, memory in bytes."""

    cpu: int = 0
    memory: int = 0

    def __add__(self, other: object) -> Resources:
        if not isinstance(other, Resources):
            return NotImplemented
        return Resources(self.cpu + other.cpu, self.memory + other.memory)

    def scaled(self, sign: int) -> Resources:
        return Resources(sign * self.cpu, sign * self.memory)


class Allocation(NamedTuple):
    """What a pod adds to a node for scoring: its requests, and the same with the non-zero defaults."""

    requested: Resources = Resources()
    non_zero: Resources = Resources()

    def __add__(self, other: object) -> Allocation:
        if not isinstance(other, Allocation):
            return NotImplemented
        return Allocation(self.requested + other.requested, self.non_zero + other.non_zero)

    def scaled(self, sign: int) -> Allocation:
        return Allocation(self.requested.scaled(sign), self.non_zero.scaled(sign))


def _ceil(value: Any, scale: int) -> int | None:
    """The quantity times ``scale``, rounded up (``MilliValue`` / ``Value``); None when absent or invalid."""
    if value is None or isinstance(value, bool):
        return None
    try:
        exact = parse_exact(str(value).strip()).value
    except QuantityError:
        return None
    return math.ceil(exact * scale)


def _container(container: Mapping[str, Any]) -> tuple[Resources, Resources]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}  # a limit defaults the request
    cpu, memory = _ceil(merged.get("cpu"), 1000), _ceil(merged.get("memory"), 1)
    requested = Resources(cpu or 0, memory or 0)
    # NonMissingContainerRequests: only a request that is missing gets the default, not one of 0.
    non_zero = Resources(DEFAULT_MILLI_CPU_REQUEST if cpu is None else cpu,
                         DEFAULT_MEMORY_REQUEST if memory is None else memory)
    return requested, non_zero


def _containers(spec: Mapping[str, Any], field: str) -> Iterable[Mapping[str, Any]]:
    return (c for c in spec.get(field) or () if isinstance(c, Mapping))


def pod_allocation(pod: Mapping[str, Any]) -> Allocation:
    """``resourcehelper.PodRequests`` for cpu and memory, plain and with the non-zero defaults."""
    spec = pod.get("spec") or {}
    requested, non_zero = Resources(), Resources()
    for container in _containers(spec, "containers"):
        plain, defaulted = _container(container)
        requested, non_zero = requested + plain, non_zero + defaulted
    for container in _containers(spec, "initContainers"):
        plain, defaulted = _container(container)
        requested = Resources(max(requested.cpu, plain.cpu), max(requested.memory, plain.memory))
        non_zero = Resources(max(non_zero.cpu, defaulted.cpu), max(non_zero.memory, defaulted.memory))
    overhead = spec.get("overhead") or {}
    extra = Resources(_ceil(overhead.get("cpu"), 1000) or 0, _ceil(overhead.get("memory"), 1) or 0)
    return Allocation(requested + extra, non_zero + extra)


def allocatable_of(node: Mapping[str, Any]) -> Resources:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return Resources(_ceil(allocatable.get("cpu"), 1000) or 0, _ceil(allocatable.get("memory"), 1) or 0)


def least_allocated_score(requested: Resources, allocatable: Resources) -> int:
    """``leastResourceScorer`` with cpu and memory weighted 1: ``requested`` includes the incoming pod."""
    score = weights = 0
    for used, capacity in zip(requested, allocatable, strict=True):
        if capacity == 0:
            continue
        score += 0 if used > capacity else (capacity - used) * MAX_NODE_SCORE // capacity
        weights += 1
    return score // weights if weights else 0


def balanced_allocation_score(requested: Resources, allocatable: Resources) -> int:
    """``balancedResourceScorer``: ``requested`` includes the incoming pod."""
    fractions = [min(1.0, used / capacity) for used, capacity in zip(requested, allocatable, strict=True)
                 if capacity != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)
