"""The ``networking.k8s.io/v1`` registries' strategies: Ingress, IngressClass, NetworkPolicy (Kubernetes 1.32).

Contract, as upstream's ``pkg/registry/networking/{ingress,ingressclass,networkpolicy}/strategy.go``:

- every kind has ``metadata.generation`` 1 on create, one more on an update that changes ``spec`` (the
  generic strategy's ``tracks_generation``);
- an Ingress is created with the empty status Go writes (``{"loadBalancer": {}}``); an update of the main
  resource keeps the stored status, and ``/status`` changes only the status (the generic strategy), validated
  by ``ValidateIngressStatusUpdate``; a create that sets the deprecated ``kubernetes.io/ingress.class``
  annotation but no ``spec.ingressClassName`` is answered with upstream's warning (``WarningsOnCreate``; no
  update warns);
- a NetworkPolicy update reports each spec error twice, as upstream's (see ``validate_update``);
- the rules themselves are :mod:`kubeloop.api._ingress_validation` and
  :mod:`kubeloop.api._network_policy_validation`. NetworkPolicy has no status in 1.32 (its status field left
  with the ``NetworkPolicyStatus`` gate), IngressClass never had one.

kubeloop has no data plane: nothing acts on these objects (no ingress controller, no policy enforcement).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._ingress_validation import (
    INGRESS_CLASS_ANNOTATION,
    validate_ingress_class,
    validate_ingress_class_update,
    validate_ingress_create,
    validate_ingress_status,
    validate_ingress_update,
)
from kubeloop.api._network_policy_validation import validate_network_policy
from kubeloop.server._strategy import GenericStrategy

__all__ = ["IngressClassStrategy", "IngressStrategy", "NetworkPolicyStrategy"]


class IngressStrategy(GenericStrategy):
    empty_status: dict[str, Any] | None = {"loadBalancer": {}}
    warns = True

    def prepare_for_create(self, obj: dict[str, Any]) -> list[str] | None:
        super().prepare_for_create(obj)
        obj["status"] = {"loadBalancer": {}}
        return None

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_ingress_create(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_ingress_status(new)
        return validate_ingress_update(new, old)

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        annotations = (meta or {}).get("annotations")
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        if (isinstance(annotations, dict) and INGRESS_CLASS_ANNOTATION in annotations
                and (spec or {}).get("ingressClassName") is None):
            return [f'annotation "{INGRESS_CLASS_ANNOTATION}" is deprecated, please use \'spec.ingressClassName\' '
                    "instead"]
        return []


class IngressClassStrategy(GenericStrategy):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_ingress_class(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return validate_ingress_class_update(new, old)


class NetworkPolicyStrategy(GenericStrategy):
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_network_policy(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        # The strategy's ValidateUpdate appends ValidateNetworkPolicy and ValidateNetworkPolicyUpdate, and both
        # run ValidateNetworkPolicySpec: each spec error is a cause twice (the message names it once).
        errs = validate_network_policy(new, old)
        return [*errs, *errs]
