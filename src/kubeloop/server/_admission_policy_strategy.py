"""Registry rules of ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding.

As upstream (k/k ``pkg/registry/admissionregistration/validatingadmissionpolicy/strategy.go`` and
``validatingadmissionpolicybinding/strategy.go``, release-1.32):

- cluster-scoped, DNS-subdomain names; ``metadata.generation`` is 1 on create and moves with the spec;
- a policy's status starts empty (``{}``) and only ``/status`` changes it; an update through the main
  resource keeps the stored status; ``/status`` is validated by ``ValidateValidatingAdmissionPolicyStatusUpdate``;
- validation is :mod:`kubeloop.api._admission_policy_validation`: expressions are compiled when the
  object is written, so a policy that cannot run is refused with 422.

Not modelled: upstream's write-time authorization checks (a policy's author must be able to ``get`` its
``paramKind``, a binding's author its ``paramRef``), which need the request's user and the authorizer.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._admission_policy_validation import (
    validate_policy,
    validate_policy_binding,
    validate_policy_status,
    validate_policy_update,
)
from kubeloop.server._strategy import GenericStrategy

__all__ = ["PolicyBindingStrategy", "PolicyStrategy"]


class PolicyStrategy(GenericStrategy):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_policy(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_policy_status(new)
        return validate_policy_update(new, old)


class PolicyBindingStrategy(GenericStrategy):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_policy_binding(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return validate_policy_binding(new)
