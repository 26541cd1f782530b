"""Registry rules of LimitRange and ResourceQuota (core/v1).

k/k ``pkg/registry/core/limitrange/strategy.go``: no status; ``ValidateLimitRange`` on create and update.
``pkg/registry/core/resourcequota/strategy.go``: ``PrepareForCreate`` clears the status (``{}``), a
main-resource update keeps the stored status and the ``/status`` strategy keeps the stored spec (the
generic rules, as the kind has a status subresource); ``ValidateResourceQuota`` on create,
``ValidateResourceQuotaUpdate`` (scopes immutable) on update, ``ValidateResourceQuotaStatusUpdate`` on
``/status``. Quantities are decoded in canonical form like every built-in kind's (``_DecodesQuantities``).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._limit_range_validation import validate_limit_range
from kubeloop.api._resource_quota_validation import (
    validate_resource_quota,
    validate_resource_quota_status_update,
    validate_resource_quota_update,
)
from kubeloop.server._strategy import _DecodesQuantities

__all__ = ["LimitRangeStrategy", "ResourceQuotaStrategy"]


class LimitRangeStrategy(_DecodesQuantities):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_limit_range(obj)


class ResourceQuotaStrategy(_DecodesQuantities):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_resource_quota(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_resource_quota_status_update(new)
        return validate_resource_quota_update(new, old)
