"""The Endpoints and EndpointSlice registries' strategies: upstream's validation on create and update.

Contract: neither kind has a status or tracks generation; an Endpoints object must pass
``ValidateEndpoints``, an EndpointSlice ``ValidateEndpointSlice`` (and on update its ``addressType``
may not change), with upstream's messages (:mod:`kubeloop.api._endpoints_validation`).

Sources (k/k release-1.32): ``pkg/registry/core/endpoint/strategy.go``,
``pkg/registry/discovery/endpointslice/strategy.go``.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._endpoints_validation import (
    validate_endpoints,
    validate_endpointslice,
    validate_endpointslice_update,
)
from kubeloop.server._strategy import GenericStrategy

__all__ = ["EndpointSliceStrategy", "EndpointsStrategy"]


class EndpointsStrategy(GenericStrategy):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_endpoints(obj)


class EndpointSliceStrategy(GenericStrategy):
    """EndpointSlices: ``generation`` 1 on create, one more on an update that changes anything but
    metadata, or the labels (endpointslice strategy PrepareForCreate / PrepareForUpdate)."""

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
        changed = any(new.get(k) != old.get(k) for k in (set(new) | set(old)) - {"metadata", "apiVersion", "kind"})
        if changed or new_meta.get("labels") != old_meta.get("labels"):
            new["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_endpointslice(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return validate_endpointslice_update(new, old)
