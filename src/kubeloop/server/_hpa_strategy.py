"""The HorizontalPodAutoscaler strategy (k/k ``pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go``,
release 1.32).

- Create: the status reset to the empty one (``desiredReplicas`` 0 is written: not omitempty in v2), no
  generation (the strategy keeps none), ``ValidateHorizontalPodAutoscaler``
  (:mod:`kubeloop.api._hpa_validation`).
- Update: the status kept from the stored object, ``ValidateHorizontalPodAutoscalerUpdate``.
- ``/status``: the spec kept, ``ValidateHorizontalPodAutoscalerStatusUpdate``.

Metric targets' and statuses' quantities are held in canonical form (the typed decode's, as
:mod:`kubeloop.api._quantity_fields` walks them). ``dropContainerMetricSources`` drops nothing: HPAContainerMetrics is GA (locked on) in 1.32.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._hpa_validation import validate_hpa, validate_hpa_status, validate_hpa_update
from kubeloop.server._strategy import _DecodesQuantities, _ZeroStatus

__all__ = ["HorizontalPodAutoscalerStrategy"]


class HorizontalPodAutoscalerStrategy(_DecodesQuantities, _ZeroStatus):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_hpa(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_hpa_status(new)
        return validate_hpa_update(new, old)
