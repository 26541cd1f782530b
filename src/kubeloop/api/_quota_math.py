"""Resource lists as quota arithmetic reads them: exact sums, masks and comparisons of named quantities.

A :data:`ResourceList` maps a resource name (``pods``, ``requests.cpu``, ``count/configmaps``) to an
:class:`Amount`: an exact value and the format upstream's ``resource.Quantity`` keeps, so a sum prints
as upstream's ``Quantity.String()`` does (``500m`` + ``500m`` is ``1``; ``1Gi`` + ``1Gi`` is ``2Gi``).
The operations are those of k/k ``staging/src/k8s.io/apiserver/pkg/quota/v1/resources.go`` (``Add``,
``Subtract``, ``SubtractWithNonNegativeResult``, ``Mask``, ``LessThanOrEqual``, ``RemoveZeros``,
``IsNegative``, ``Equals``), and :func:`pod_requests` / :func:`pod_limits` are the pod totals of
``k8s.io/component-helpers/resource`` ``PodRequests``/``PodLimits`` (containers summed, init containers
as their maximum, restartable (sidecar) init containers added to both, the pod overhead added to the
requests, and to the limits the pod has).
A sum keeps the first non-zero operand's format (``Quantity.Add``). Values that do not parse are
skipped (the API server refused them at decode). Pure functions; inputs are never changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubeloop.api._quantity import DECIMAL_SI, QuantityError, _canonical, parse_quantity

__all__ = [
    "ZERO",
    "Amount",
    "ResourceList",
    "add",
    "amount",
    "equals",
    "is_negative",
    "less_than_or_equal",
    "mask",
    "parse_list",
    "pod_limits",
    "pod_requests",
    "remove_zeros",
    "render",
    "subtract",
    "subtract_non_negative",
]

_NANO = 10**9


@dataclass(frozen=True, slots=True)
class Amount:
    """An exact quantity and the format its text is written in (``DecimalSI``, ``BinarySI``, ...)."""

    value: Fraction
    format: str = DECIMAL_SI

    def text(self) -> str:
        """``Quantity.String()``: the canonical spelling (values finer than a nano round up, as upstream)."""
        scaled = self.value * _NANO
        unscaled = -((-scaled.numerator) // scaled.denominator) if scaled > 0 else scaled.numerator // scaled.denominator
        return _canonical(unscaled, -9, self.format)

    def plus(self, other: Amount) -> Amount:
        """``Quantity.Add``: the sum keeps this format unless this is zero."""
        return Amount(self.value + other.value, self.format if self.value else other.format)

    def negated(self) -> Amount:
        return Amount(-self.value, self.format)


ZERO = Amount(Fraction(0))
ResourceList = dict[str, Amount]


def amount(value: Any) -> Amount | None:
    """The amount a JSON quantity value spells, or ``None`` when it does not parse."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        quantity = parse_quantity(str(value).strip())
    except QuantityError:
        return None
    return Amount(quantity.value, quantity.format)


def parse_list(resources: Any) -> ResourceList:
    """A JSON ResourceList as amounts (entries that do not parse are left out)."""
    out: ResourceList = {}
    if isinstance(resources, Mapping):
        for name, value in resources.items():
            parsed = amount(value)
            if parsed is not None:
                out[str(name)] = parsed
    return out


def render(resources: ResourceList) -> dict[str, str]:
    """The JSON form: each amount as its canonical text, names in order."""
    return {name: resources[name].text() for name in sorted(resources)}


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for name, value in b.items():
        out[name] = out[name].plus(value) if name in out else value
    return out


def subtract(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for name, value in b.items():
        out[name] = out[name].plus(value.negated()) if name in out else value.negated()
    return out


def subtract_non_negative(a: ResourceList, b: ResourceList) -> ResourceList:
    """``SubtractWithNonNegativeResult``: a negative difference is zero."""
    return {name: value if value.value >= 0 else Amount(Fraction(0), value.format)
            for name, value in subtract(a, b).items()}


def mask(resources: ResourceList, names: Iterable[str]) -> ResourceList:
    wanted = set(names)
    return {name: value for name, value in resources.items() if name in wanted}


def less_than_or_equal(a: ResourceList, b: ResourceList) -> tuple[bool, list[str]]:
    """Whether every amount of ``a`` that ``b`` also names is at most ``b``'s, and the names that are not."""
    exceeded = sorted(name for name, limit in b.items() if name in a and a[name].value > limit.value)
    return not exceeded, exceeded


def remove_zeros(resources: ResourceList) -> ResourceList:
    return {name: value for name, value in resources.items() if value.value != 0}


def is_negative(resources: ResourceList) -> list[str]:
    return sorted(name for name, value in resources.items() if value.value < 0)


def equals(a: ResourceList, b: ResourceList) -> bool:
    return a.keys() == b.keys() and all(a[name].value == b[name].value for name in a)


def _max_into(target: ResourceList, other: ResourceList) -> None:
    for name, value in other.items():
        if name not in target or value.value > target[name].value:
            target[name] = value


def _containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    found = spec.get(key)
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def _container_list(container: Mapping[str, Any], which: str) -> ResourceList:
    resources = container.get("resources")
    return parse_list(resources.get(which)) if isinstance(resources, Mapping) else {}


def _pod_total(pod: Mapping[str, Any], which: str, with_overhead: bool) -> ResourceList:
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return {}
    total: ResourceList = {}
    for container in _containers(spec, "containers"):
        total = add(total, _container_list(container, which))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for container in _containers(spec, "initContainers"):
        own = _container_list(container, which)
        if container.get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            _max_into(init_max, sidecars)
        else:
            _max_into(init_max, add(own, sidecars))
    _max_into(total, init_max)
    if not with_overhead:
        return total
    overhead = parse_list(spec.get("overhead"))
    if which == "limits":  # overhead is added to the limits the pod has, never makes one
        overhead = mask(overhead, total)
    return add(total, overhead)


def pod_requests(pod: Mapping[str, Any], *, with_overhead: bool = True) -> ResourceList:
    """The pod's effective requests (``resourcehelper.PodRequests``; without the overhead, LimitRanger's
    own ``podRequests``)."""
    return _pod_total(pod, "requests", with_overhead)


def pod_limits(pod: Mapping[str, Any], *, with_overhead: bool = True) -> ResourceList:
    """The pod's effective limits (``resourcehelper.PodLimits``; without the overhead, LimitRanger's
    own ``podLimits``)."""
    return _pod_total(pod, "limits", with_overhead)
