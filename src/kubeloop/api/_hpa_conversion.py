"""autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscaler conversion, as k/k
``pkg/apis/autoscaling/v1/conversion.go`` (release 1.32) converts through the internal version.

v2 to v1 (:func:`hpa_v2_to_v1`): the first Resource ``cpu`` metric's ``averageUtilization`` becomes
``targetCPUUtilizationPercentage``; every other metric (all but Resource cpu metrics with a utilization target)
goes, in v1's metric shape, to the ``autoscaling.alpha.kubernetes.io/metrics`` annotation; the status metrics
(all of them) to ``.../current-metrics``, with the last cpu utilization as ``currentCPUUtilizationPercentage``;
``behavior`` to ``.../behavior`` (upstream marshals its internal type, which has no JSON tags: Go field names,
``null`` for unset pointers); the conditions to ``.../conditions``. Annotations of those names the object
carried are dropped first (``DropRoundTripHorizontalPodAutoscalerAnnotations``).

v1 to v2 (:func:`hpa_v1_to_v2`): ``targetCPUUtilizationPercentage`` becomes a Resource cpu Utilization metric,
placed after the annotation's metrics; the annotations are read back (one that does not parse is ignored, as
upstream ignores its unmarshal error), a v1 object without any metric gets cpu at 80%, and the round-trip
annotations are dropped. Objects are plain JSON dicts; the input is not mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api._hpa_defaults import DEFAULT_CPU_UTILIZATION

__all__ = ["ROUND_TRIP_ANNOTATIONS", "hpa_v1_to_v2", "hpa_v2_to_v1"]

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
ROUND_TRIP_ANNOTATIONS = (METRICS, BEHAVIOR, CURRENT_METRICS, CONDITIONS)
_ZERO = "0"  # a resource.Quantity value field's zero, as Go marshals it


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """An omitempty field: written only when set."""
    if value is not None and value != "" and value != {}:
        out[key] = value


_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                             "\u2029": "\\u2029"})


def _json_dumps(value: Any) -> str:
    """``json.Marshal``: compact, UTF-8 as is, ``<``, ``>``, ``&`` (and U+2028, U+2029) escaped (Go's HTML-safe
    default), so the annotation's text is the one upstream's conversion writes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(_GO_ESCAPES)


def _condition_v1(condition: Any) -> dict[str, Any]:
    """A v1 ``HorizontalPodAutoscalerCondition`` in its Go field order (``lastTransitionTime``, ``reason``,
    ``message`` omitempty)."""
    condition = _m(condition)
    out: dict[str, Any] = {"type": condition.get("type") or "", "status": condition.get("status") or ""}
    for key in ("lastTransitionTime", "reason", "message"):
        _put(out, key, condition.get(key))
    return out


def _json_loads(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _meta_without_round_trip(meta: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(meta)
    annotations = out.get("annotations")
    if isinstance(annotations, Mapping) and any(k in annotations for k in ROUND_TRIP_ANNOTATIONS):
        kept = {k: v for k, v in annotations.items() if k not in ROUND_TRIP_ANNOTATIONS}
        if kept:
            out["annotations"] = kept
        else:
            out.pop("annotations")
    return out


# -- v2 -> v1 ----------------------------------------------------------------------------------------


def _ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    out = {"kind": ref.get("kind") or "", "name": ref.get("name") or ""}
    _put(out, "apiVersion", ref.get("apiVersion"))
    return out


def _spec_to_v1(metric: Mapping[str, Any]) -> dict[str, Any]:
    kind = metric.get("type") or ""
    out: dict[str, Any] = {"type": kind}
    if (src := metric.get("object")) is not None:
        src, target, ident = _m(src), _m(_m(src).get("target")), _m(_m(src).get("metric"))
        obj = {"target": _ref(_m(src.get("describedObject"))), "metricName": ident.get("name") or "",
               "targetValue": target.get("value") or _ZERO}
        _put(obj, "selector", ident.get("selector"))
        _put(obj, "averageValue", target.get("averageValue"))
        out["object"] = obj
    if (src := metric.get("pods")) is not None:
        target, ident = _m(_m(src).get("target")), _m(_m(src).get("metric"))
        pods = {"metricName": ident.get("name") or "", "targetAverageValue": target.get("averageValue") or _ZERO}
        _put(pods, "selector", ident.get("selector"))
        out["pods"] = pods
    for member in ("resource", "containerResource"):
        if (src := metric.get(member)) is not None:
            target = _m(_m(src).get("target"))
            res: dict[str, Any] = {"name": _m(src).get("name") or ""}
            _put(res, "targetAverageUtilization", target.get("averageUtilization"))
            _put(res, "targetAverageValue", target.get("averageValue"))
            if member == "containerResource":
                res["container"] = _m(src).get("container") or ""
            out[member] = res
    if (src := metric.get("external")) is not None:
        target, ident = _m(_m(src).get("target")), _m(_m(src).get("metric"))
        ext: dict[str, Any] = {"metricName": ident.get("name") or ""}
        _put(ext, "metricSelector", ident.get("selector"))
        _put(ext, "targetValue", target.get("value"))
        _put(ext, "targetAverageValue", target.get("averageValue"))
        out["external"] = ext
    return out


def _status_to_v1(metric: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type") or ""}
    if (src := metric.get("object")) is not None:
        current, ident = _m(_m(src).get("current")), _m(_m(src).get("metric"))
        obj = {"target": _ref(_m(_m(src).get("describedObject"))), "metricName": ident.get("name") or "",
               "currentValue": current.get("value") or _ZERO}
        _put(obj, "selector", ident.get("selector"))
        _put(obj, "averageValue", current.get("averageValue"))
        out["object"] = obj
    if (src := metric.get("pods")) is not None:
        current, ident = _m(_m(src).get("current")), _m(_m(src).get("metric"))
        pods = {"metricName": ident.get("name") or "", "currentAverageValue": current.get("averageValue") or _ZERO}
        _put(pods, "selector", ident.get("selector"))
        out["pods"] = pods
    for member in ("resource", "containerResource"):
        if (src := metric.get(member)) is not None:
            current = _m(_m(src).get("current"))
            res: dict[str, Any] = {"name": _m(src).get("name") or ""}
            _put(res, "currentAverageUtilization", current.get("averageUtilization"))
            res["currentAverageValue"] = current.get("averageValue") or _ZERO
            if member == "containerResource":
                res["container"] = _m(src).get("container") or ""
            out[member] = res
    if (src := metric.get("external")) is not None:
        current, ident = _m(_m(src).get("current")), _m(_m(src).get("metric"))
        ext: dict[str, Any] = {"metricName": ident.get("name") or ""}
        _put(ext, "metricSelector", ident.get("selector"))
        ext["currentValue"] = current.get("value") or _ZERO
        _put(ext, "currentAverageValue", current.get("averageValue"))
        out["external"] = ext
    return out


def _is_cpu(metric: Mapping[str, Any]) -> bool:
    return metric.get("type") == "Resource" and _m(metric.get("resource")).get("name") == "cpu" \
        and metric.get("resource") is not None


def _behavior_go(behavior: Mapping[str, Any]) -> dict[str, Any]:
    """The internal ``HorizontalPodAutoscalerBehavior`` as encoding/json writes it (no tags: Go names)."""
    def rules(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return None
        policies = value.get("policies")
        return {"StabilizationWindowSeconds": value.get("stabilizationWindowSeconds"),
                "SelectPolicy": value.get("selectPolicy"),
                "Policies": None if policies is None else [
                    {"Type": _m(p).get("type") or "", "Value": _m(p).get("value") or 0,
                     "PeriodSeconds": _m(p).get("periodSeconds") or 0} for p in policies]}
    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def hpa_v2_to_v1(hpa: Mapping[str, Any]) -> dict[str, Any]:
    spec, status = _m(hpa.get("spec")), _m(hpa.get("status"))
    metrics = [_m(m) for m in spec.get("metrics") or ()]
    out_spec: dict[str, Any] = {"scaleTargetRef": _ref(_m(spec.get("scaleTargetRef")))}
    _put(out_spec, "minReplicas", spec.get("minReplicas"))
    out_spec["maxReplicas"] = spec.get("maxReplicas") or 0
    for metric in metrics:
        if _is_cpu(metric):
            _put(out_spec, "targetCPUUtilizationPercentage",
                 _m(_m(metric.get("resource")).get("target")).get("averageUtilization"))
            break
    out_status: dict[str, Any] = {}
    _put(out_status, "observedGeneration", status.get("observedGeneration"))
    _put(out_status, "lastScaleTime", status.get("lastScaleTime"))
    out_status["currentReplicas"] = status.get("currentReplicas") or 0
    out_status["desiredReplicas"] = status.get("desiredReplicas") or 0
    current_metrics = [_m(m) for m in status.get("currentMetrics") or ()]
    for metric in current_metrics:
        if _is_cpu(metric):
            utilization = _m(_m(metric.get("resource")).get("current")).get("averageUtilization")
            if utilization is not None:
                out_status["currentCPUUtilizationPercentage"] = utilization
    meta = _meta_without_round_trip(_m(hpa.get("metadata")))
    added: dict[str, str] = {}
    others = [_spec_to_v1(m) for m in metrics
              if not (_is_cpu(m) and _m(_m(m.get("resource")).get("target")).get("averageUtilization") is not None)]
    if others:
        added[METRICS] = _json_dumps(others)
    if current_metrics:
        added[CURRENT_METRICS] = _json_dumps([_status_to_v1(m) for m in current_metrics])
    if isinstance(spec.get("behavior"), Mapping):
        added[BEHAVIOR] = _json_dumps(_behavior_go(spec["behavior"]))
    conditions = status.get("conditions") or []
    if conditions:
        added[CONDITIONS] = _json_dumps([_condition_v1(c) for c in conditions])
    if added:
        meta["annotations"] = {**_m(meta.get("annotations")), **added}
    out: dict[str, Any] = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": meta,
                           "spec": out_spec, "status": out_status}
    return out


# -- v1 -> v2 ----------------------------------------------------------------------------------------


def _target_ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ref[k] for k in ("kind", "name", "apiVersion") if ref.get(k) not in (None, "")} | \
        {"kind": ref.get("kind") or "", "name": ref.get("name") or ""}


def _ident(name: Any, selector: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name or ""}
    _put(out, "selector", selector)
    return out


def _spec_to_v2(metric: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type") or ""}
    if (src := metric.get("object")) is not None:
        src = _m(src)
        target: dict[str, Any] = {"type": "Value" if src.get("averageValue") is None else "AverageValue",
                                  "value": src.get("targetValue") or _ZERO}
        _put(target, "averageValue", src.get("averageValue"))
        out["object"] = {"describedObject": _target_ref(_m(src.get("target"))),
                         "target": target, "metric": _ident(src.get("metricName"), src.get("selector"))}
    if (src := metric.get("pods")) is not None:
        src = _m(src)
        out["pods"] = {"metric": _ident(src.get("metricName"), src.get("selector")),
                       "target": {"type": "AverageValue", "averageValue": src.get("targetAverageValue") or _ZERO}}
    for member in ("resource", "containerResource"):
        if (src := metric.get(member)) is not None:
            src = _m(src)
            utilization = src.get("targetAverageUtilization")
            target = {"type": "AverageValue" if utilization is None else "Utilization"}
            _put(target, "averageUtilization", utilization)
            _put(target, "averageValue", src.get("targetAverageValue"))
            res: dict[str, Any] = {"name": src.get("name") or "", "target": target}
            if member == "containerResource":
                res["container"] = src.get("container") or ""
            out[member] = res
    if (src := metric.get("external")) is not None:
        src = _m(src)
        target = {"type": "AverageValue" if src.get("targetValue") is None else "Value"}
        _put(target, "value", src.get("targetValue"))
        _put(target, "averageValue", src.get("targetAverageValue"))
        out["external"] = {"metric": _ident(src.get("metricName"), src.get("metricSelector")), "target": target}
    return out


def _status_to_v2(metric: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type") or ""}
    if (src := metric.get("object")) is not None:
        src = _m(src)
        current: dict[str, Any] = {"value": src.get("currentValue") or _ZERO}
        _put(current, "averageValue", src.get("averageValue"))
        out["object"] = {"metric": _ident(src.get("metricName"), src.get("selector")), "current": current,
                         "describedObject": _target_ref(_m(src.get("target")))}
    if (src := metric.get("pods")) is not None:
        src = _m(src)
        out["pods"] = {"metric": _ident(src.get("metricName"), src.get("selector")),
                       "current": {"averageValue": src.get("currentAverageValue") or _ZERO}}
    for member in ("resource", "containerResource"):
        if (src := metric.get(member)) is not None:
            src = _m(src)
            current = {"averageValue": src.get("currentAverageValue") or _ZERO}
            _put(current, "averageUtilization", src.get("currentAverageUtilization"))
            res: dict[str, Any] = {"name": src.get("name") or "", "current": current}
            if member == "containerResource":
                res["container"] = src.get("container") or ""
            out[member] = res
    if (src := metric.get("external")) is not None:
        src = _m(src)
        current = {"value": src.get("currentValue") or _ZERO}
        _put(current, "averageValue", src.get("currentAverageValue"))
        out["external"] = {"metric": _ident(src.get("metricName"), src.get("metricSelector")), "current": current}
    return out


def _folded(value: Any) -> dict[str, Any]:
    """A JSON object's keys lower-cased: encoding/json matches field names case-insensitively."""
    return {str(k).lower(): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def _behavior_v2(raw: Any) -> dict[str, Any] | None:
    behavior = _folded(raw)
    out: dict[str, Any] = {}
    for go_name, name in (("scaleup", "scaleUp"), ("scaledown", "scaleDown")):
        rules = behavior.get(go_name)
        if not isinstance(rules, Mapping):
            continue
        rules = _folded(rules)
        converted: dict[str, Any] = {}
        _put(converted, "stabilizationWindowSeconds", rules.get("stabilizationwindowseconds"))
        _put(converted, "selectPolicy", rules.get("selectpolicy"))
        if isinstance(rules.get("policies"), list):
            converted["policies"] = [{"type": p.get("type") or "", "value": p.get("value") or 0,
                                      "periodSeconds": p.get("periodseconds") or 0}
                                     for p in map(_folded, rules["policies"])]
        out[name] = converted
    return out or None  # an empty behavior is not moved to the field


def hpa_v1_to_v2(hpa: Mapping[str, Any]) -> dict[str, Any]:
    spec, status = _m(hpa.get("spec")), _m(hpa.get("status"))
    annotations = _m(_m(hpa.get("metadata")).get("annotations"))
    out_spec: dict[str, Any] = {"scaleTargetRef": _target_ref(_m(spec.get("scaleTargetRef")))}
    _put(out_spec, "minReplicas", spec.get("minReplicas"))
    out_spec["maxReplicas"] = spec.get("maxReplicas") or 0
    metrics: list[dict[str, Any]] = []
    others = _json_loads(annotations.get(METRICS))
    if isinstance(others, list):
        metrics.extend(_spec_to_v2(_m(m)) for m in others)
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        metrics.append({"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}})
    if (behavior := _behavior_v2(_json_loads(annotations.get(BEHAVIOR)))) is not None:
        out_spec["behavior"] = behavior
    out_status: dict[str, Any] = {}
    _put(out_status, "observedGeneration", status.get("observedGeneration"))
    _put(out_status, "lastScaleTime", status.get("lastScaleTime"))
    _put(out_status, "currentReplicas", status.get("currentReplicas"))
    out_status["desiredReplicas"] = status.get("desiredReplicas") or 0
    if status.get("currentCPUUtilizationPercentage") is not None:
        out_status["currentMetrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    current = _json_loads(annotations.get(CURRENT_METRICS))
    if isinstance(current, list):
        out_status["currentMetrics"] = [_status_to_v2(_m(m)) for m in current]
    if not metrics:  # v1's implicit default, applied here where the annotation's metrics are known
        metrics = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    out_spec["metrics"] = metrics
    conditions = _json_loads(annotations.get(CONDITIONS))
    if isinstance(conditions, list):
        out_status["conditions"] = conditions
    out: dict[str, Any] = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                           "metadata": _meta_without_round_trip(_m(hpa.get("metadata"))), "spec": out_spec}
    if status or out_status != {"desiredReplicas": 0}:
        out["status"] = out_status
    return out
