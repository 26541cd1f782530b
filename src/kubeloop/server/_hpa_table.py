"""The HorizontalPodAutoscaler table row: k/k ``pkg/printers/internalversion/printers.go`` (release 1.32)
``printHorizontalPodAutoscaler`` and ``formatHPAMetrics``.

Cells: the name, ``<kind>/<name>`` of the scale target, the metrics (``TARGETS``), ``minReplicas``
(``<unset>`` when nil), ``maxReplicas``, ``status.currentReplicas`` and the age (every column typed
string, the two counts given as integers). A metric is shown as ``<current>/<target>`` with the metric at
the same index of ``status.currentMetrics`` as current, ``<unknown>`` without one; a Resource or
ContainerResource metric is prefixed with its resource name (``cpu: <unknown>/80%``), a utilization target
shows as a percentage (``<auto>`` when unset), an average-value target of an Object or External metric gets
`` (avg)``. At most two metrics are listed, then `` + N more...``; no metric at all is ``<none>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubeloop.api._pod_fields import as_list, mapping_of
from kubeloop.api._quantity import canonical_text

__all__ = ["format_hpa_metrics", "hpa_cells"]

_MAX_SHOWN = 2


def _quantity(value: Any) -> str:
    try:
        return canonical_text(value)
    except ValueError:
        return str(value)


def _current(statuses: list[Any], i: int, member: str, field: str) -> str | None:
    status = mapping_of(statuses[i]) if i < len(statuses) else {}
    if status.get(member) is None:
        return None
    value = mapping_of(mapping_of(status.get(member)).get("current")).get(field)
    return None if value is None else _quantity(value)


def _valued(spec: Mapping[str, Any], statuses: list[Any], i: int, member: str, avg_suffix: bool) -> str:
    target = mapping_of(mapping_of(spec.get(member)).get("target"))
    if target.get("averageValue") is not None:
        current = _current(statuses, i, member, "averageValue") or "<unknown>"
        return f"{current}/{_quantity(target['averageValue'])}" + (" (avg)" if avg_suffix else "")
    current = _current(statuses, i, member, "value") or "<unknown>"
    return f"{current}/{_quantity(target.get('value') or '0')}"


def _resource(spec: Mapping[str, Any], statuses: list[Any], i: int, member: str) -> str:
    source = mapping_of(spec.get(member))
    name = str(source.get("name") or "")
    target = mapping_of(source.get("target"))
    if target.get("averageValue") is not None:
        current = _current(statuses, i, member, "averageValue") or "<unknown>"
        return f"{name}: {current}/{_quantity(target['averageValue'])}"
    status = mapping_of(statuses[i]) if i < len(statuses) else {}
    utilization = mapping_of(mapping_of(status.get(member)).get("current")).get("averageUtilization")
    current = f"{utilization}%" if status.get(member) is not None and utilization is not None else "<unknown>"
    wanted = target.get("averageUtilization")
    return f"{name}: {current}/{f'{wanted}%' if wanted is not None else '<auto>'}"


_FORMATS: dict[str, Callable[[Mapping[str, Any], list[Any], int], str]] = {
    "External": lambda s, st, i: _valued(s, st, i, "external", True),
    "Pods": lambda s, st, i: f"{_current(st, i, 'pods', 'averageValue') or '<unknown>'}/"
                             f"{_quantity(mapping_of(mapping_of(s.get('pods')).get('target')).get('averageValue') or '0')}",
    "Object": lambda s, st, i: _valued(s, st, i, "object", True),
    "Resource": lambda s, st, i: _resource(s, st, i, "resource"),
    "ContainerResource": lambda s, st, i: _resource(s, st, i, "containerResource"),
}


def format_hpa_metrics(specs: list[Any], statuses: list[Any]) -> str:
    if not specs:
        return "<none>"
    shown = []
    for i, spec in enumerate(specs):
        spec = mapping_of(spec)
        fmt = _FORMATS.get(str(spec.get("type") or ""))
        shown.append(fmt(spec, statuses, i) if fmt is not None else "<unknown type>")
    text = ", ".join(shown[:_MAX_SHOWN])
    return f"{text} + {len(shown) - _MAX_SHOWN} more..." if len(shown) > _MAX_SHOWN else text


def hpa_cells(hpa: Mapping[str, Any], name: str, age: str) -> list[Any]:
    spec, status = mapping_of(hpa.get("spec")), mapping_of(hpa.get("status"))
    ref = mapping_of(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    return [name, f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
            format_hpa_metrics(as_list(spec.get("metrics")), as_list(status.get("currentMetrics"))),
            "<unset>" if min_replicas is None else str(min_replicas), int(spec.get("maxReplicas") or 0),
            int(status.get("currentReplicas") or 0), age]
