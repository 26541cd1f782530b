"""An autoscaling/v2 HorizontalPodAutoscaler's defaults: k/k ``pkg/apis/autoscaling/v2/defaults.go`` (release 1.32).

``SetDefaults_HorizontalPodAutoscaler``: ``minReplicas`` 1; without metrics, one Resource metric, cpu at an
average utilization of 80% (``autoscaling.DefaultCPUUtilization``); then
``SetDefaults_HorizontalPodAutoscalerBehavior``: a ``behavior`` that is set gets both rule sets filled, each
field it leaves unset taken from the defaults (``copyHPAScalingRules``: selectPolicy, the stabilization
window and the policies, each replaced whole when given):

- scaleUp: stabilization 0 s, selectPolicy Max, policies Pods 4 per 15 s and Percent 100 per 15 s;
- scaleDown: no stabilization window (the controller's ``--horizontal-pod-autoscaler-downscale-stabilization``,
  300 s, applies), selectPolicy Max, policy Percent 100 per 15 s.

Mutates the object in place.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_CPU_UTILIZATION", "default_hpa", "scale_down_rules", "scale_up_rules"]

DEFAULT_CPU_UTILIZATION = 80


def _up() -> dict[str, Any]:
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _down() -> dict[str, Any]:
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _filled(given: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """``copyHPAScalingRules(given, defaults)``: each field the rules set replaces the default's."""
    if isinstance(given, dict):
        for key in ("selectPolicy", "stabilizationWindowSeconds", "policies"):
            if given.get(key) is not None:
                defaults[key] = given[key]
        # Fields the defaults do not know (none in 1.32) stay as given.
        return {**given, **defaults}
    return defaults


def scale_up_rules(given: Any) -> dict[str, Any]:
    """``GenerateHPAScaleUpRules``."""
    return _filled(given, _up())


def scale_down_rules(given: Any) -> dict[str, Any]:
    """``GenerateHPAScaleDownRules``."""
    return _filled(given, _down())


def default_hpa(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    metrics = spec.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = scale_up_rules(behavior.get("scaleUp"))
        behavior["scaleDown"] = scale_down_rules(behavior.get("scaleDown"))
