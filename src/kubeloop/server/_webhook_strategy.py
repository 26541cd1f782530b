"""Registry rules of ValidatingWebhookConfiguration and MutatingWebhookConfiguration.

As upstream (k/k ``pkg/registry/admissionregistration/validatingwebhookconfiguration/strategy.go`` and its
mutating twin): cluster-scoped, DNS-subdomain names; ``metadata.generation`` is 1 on create and grows by
one on an update that changes ``webhooks``; validation is :mod:`kubeloop.api._webhook_configuration`
(``ValidateXWebhookConfiguration`` on create, ``...Update`` with the stored object on update).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._webhook_configuration import validate_webhook_configuration
from kubeloop.server._strategy import GenericStrategy

__all__ = ["WebhookConfigurationStrategy"]


class WebhookConfigurationStrategy(GenericStrategy):
    @property
    def _mutating(self) -> bool:
        return self.info.kind == "MutatingWebhookConfiguration"

    def prepare_for_create(self, obj: dict[str, Any]) -> list[str] | None:
        super().prepare_for_create(obj)
        obj["metadata"]["generation"] = 1
        return None

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        generation = (old.get("metadata") or {}).get("generation")
        if new.get("webhooks") != old.get("webhooks"):
            new["metadata"]["generation"] = int(generation or 0) + 1

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_webhook_configuration(obj, mutating=self._mutating)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return validate_webhook_configuration(new, old, mutating=self._mutating)
