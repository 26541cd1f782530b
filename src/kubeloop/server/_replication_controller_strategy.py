"""The core/v1 ReplicationController and PodTemplate strategies (k/k ``pkg/registry/core/{replicationcontroller,
podtemplate}/strategy.go``, release 1.32).

ReplicationControllers, as ReplicaSets: the zero status (``replicas: 0``) and generation 1 on create; an
update keeps the status and moves the generation when the spec changed (compared as
``apiequality.Semantic.DeepEqual`` does); ``DropDisabledTemplateFields`` on both; ``ValidateReplicationController``
on create, the strategy's ``ValidateUpdate`` on update and on ``/scale`` (ScaleREST updates through the main
strategy), ``ValidateReplicationControllerStatusUpdate`` on ``/status``, whose update keeps the stored spec
(:mod:`kubeloop.api._replication_controller_validation`). Warnings: on create the name as a DNS label (it
prefixes pod names) and ``GetWarningsForPodTemplate`` under ``spec.template``; on update the template's
warnings when the generation moved; none on ``/status``.

PodTemplates: generation 1 on create, moved when ``template`` changed (not ``spec``: a PodTemplate has
none); ``DropDisabledTemplateFields`` on the template; ``ValidatePodTemplate`` / ``ValidatePodTemplateUpdate``;
``GetWarningsForPodTemplate`` under ``template`` on create, and on an update that moved the generation.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._pod_drop_disabled import drop_disabled_template_fields
from kubeloop.api._pod_warnings import pod_template_warnings
from kubeloop.api._quantity_fields import quantities_by_value
from kubeloop.api._replication_controller_validation import (
    as_template_owner,
    validate_pod_template_object,
    validate_replication_controller,
    validate_replication_controller_status_update,
    validate_replication_controller_update,
)
from kubeloop.server._strategy import _DecodesQuantities, _meta, _pod_name_warnings
from kubeloop.server._workload_strategy import PodTemplateOwnerStrategy

__all__ = ["PodTemplateStrategy", "ReplicationControllerStrategy"]


class ReplicationControllerStrategy(PodTemplateOwnerStrategy):
    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *super().warnings_on_create(obj)]

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_replication_controller(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_replication_controller_status_update(new, old)
        return validate_replication_controller_update(new, old)


def _under_template(warning: str) -> str:
    """A workload's ``spec.template...`` warning path as a PodTemplate's ``template...``."""
    return warning[len("spec."):] if warning.startswith("spec.template") else warning


class PodTemplateStrategy(_DecodesQuantities):
    warns = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)  # generation 1
        drop_disabled_template_fields(as_template_owner(obj), None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        drop_disabled_template_fields(as_template_owner(new), as_template_owner(old))  # before the generation
        super().prepare_for_update(new, old)

    def _spec_changed(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        if new.get("template") == old.get("template"):
            return False
        group, kind = self.info.group, self.info.kind
        return quantities_by_value(group, kind, new).get("template") != quantities_by_value(group, kind, old).get("template")

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_pod_template_object(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return validate_pod_template_object(new, old)

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [_under_template(w) for w in pod_template_warnings(as_template_owner(obj))]

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if _meta(new).get("generation") == _meta(old).get("generation"):
            return []
        return [_under_template(w) for w in pod_template_warnings(as_template_owner(new))]
