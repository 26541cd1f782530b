"""The Pod strategy (k/k ``pkg/registry/core/pod/strategy.go``, release 1.32): create-time status and mutations,
the pod spec's validation and warnings, graceful delete.

Its own module so that the pod validation it runs (:mod:`kubeloop.api._pod_spec_validation` and the
modules that one loads) is imported by the first pod write: :func:`~kubeloop.server._strategy.strategy_for`
imports this module when a pod first needs its strategy, and the server's start-up writes no pod.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubeloop.api import Clock, FieldError, ResourceInfo, SystemClock, format_time
from kubeloop.api._pod_create_mutations import (
    apply_apparmor_version_skew,
    apply_scheduling_gated_condition,
    merge_pod_affinity_label_keys,
)
from kubeloop.api._pod_drop_disabled import drop_disabled_pod_fields
from kubeloop.api._pod_spec_validation import validate_pod_create
from kubeloop.api._pod_update_validation import validate_pod_status_update
from kubeloop.api._pod_warnings import pod_warnings
from kubeloop.api._quantity import QuantityError, parse_quantity
from kubeloop.server._pod_update import validate_pod_main_update
from kubeloop.server._strategy import _DecodesQuantities

__all__ = ["PodStrategy"]


class PodStrategy(_DecodesQuantities):
    """Pods: status Pending on create, then upstream's create-time mutations; graceful delete when
    scheduled and not finished.

    ``PrepareForCreate`` (release-1.32): status Pending with the QoS class, ``DropDisabledPodFields``
    (:mod:`kubeloop.api._pod_drop_disabled`), then ``applySchedulingGatedCondition``,
    ``mutatePodAffinity`` and ``applyAppArmorVersionSkew`` (:mod:`kubeloop.api._pod_create_mutations`),
    so validation sees the pod as it will be stored. ``PrepareForUpdate`` drops disabled fields too,
    against the stored pod. ``clock`` dates the SchedulingGated condition.
    """

    def __init__(self, info: ResourceInfo, *, clock: Clock | None = None) -> None:
        super().__init__(info)
        self.clock: Clock = clock if clock is not None else SystemClock()

    def prepare_for_create(self, obj: dict[str, Any]) -> list[str]:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "qosClass": _pod_qos(obj.get("spec"))}
        drop_disabled_pod_fields(obj, None)
        apply_scheduling_gated_condition(obj, format_time(self.clock.now()))
        merge_pod_affinity_label_keys(obj)
        return apply_apparmor_version_skew(obj)  # its warnings, recorded before validation as upstream's ctx does

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)  # status from old first, as upstream, then the drop
        drop_disabled_pod_fields(new, old)

    def prepare_for_ephemeral_containers(self, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        """The ``ephemeralcontainers`` subresource's PrepareForUpdate (``dropNonEphemeralContainerUpdates``):
        the stored pod with the request's ``spec.ephemeralContainers``; of the request's metadata,
        ``ResetObjectMetaForStatus`` puts back the stored deletionTimestamp, generation, labels, annotations,
        finalizers and ownerReferences. Then DropDisabledPodFields."""
        spec = dict(old.get("spec") or {})
        ephemeral = (new.get("spec") or {}).get("ephemeralContainers") if isinstance(new.get("spec"), dict) else None
        if ephemeral:
            spec["ephemeralContainers"] = ephemeral
        else:
            spec.pop("ephemeralContainers", None)
        result = {**old, "spec": spec}
        meta = dict(new.get("metadata") or {})
        old_meta = old.get("metadata") or {}
        for key in _RESET_FOR_STATUS:
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        result["metadata"] = meta
        drop_disabled_pod_fields(result, old)
        return result

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_pod_create(obj)

    # The pod strategy's WarningsOnCreate is GetWarningsForPod; its WarningsOnUpdate says nothing (upstream
    # skips the cost on what may be a busy path), which the generic hook already does.
    warns = True

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return pod_warnings(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        # ValidatePodStatusUpdate does not look at the spec (which /status cannot change).
        if subresource:
            if subresource == "ephemeralcontainers":
                from kubeloop.api._pod_ephemeral_validation import validate_pod_ephemeral_containers_update

                return validate_pod_ephemeral_containers_update(new, old)
            return validate_pod_status_update(new, old) if subresource == "status" else []
        return validate_pod_main_update(self.info, new, old)

    def graceful_period(self, obj: dict[str, Any], requested: int | None) -> int | None:
        # pod strategy CheckGracefulDelete: the option, else the pod's own period (default 30);
        # an unscheduled or finished pod is deleted at once.
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        assert isinstance(status, dict)
        if requested is not None:
            period = requested
        else:
            configured = spec.get("terminationGracePeriodSeconds")
            period = configured if isinstance(configured, int) else 30
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return period


# metav1.ResetObjectMetaForStatus: the metadata a subresource write may not change.
_RESET_FOR_STATUS = ("deletionTimestamp", "generation", "labels", "annotations", "finalizers", "ownerReferences")


def _pod_qos(spec: Any) -> str:
    """pkg/apis/core/helper/qos GetPodQOS: compares quantities by value, counts only those above zero.

    Runs before defaulting here, so a container's missing request reads as its limit (SetDefaults_Pod).
    """
    if not isinstance(spec, dict):
        return "BestEffort"
    containers = [c for key in ("containers", "initContainers") for c in spec.get(key) or [] if isinstance(c, dict)]
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in containers:
        resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
        assert isinstance(resources, dict)
        container_limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
        container_requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
        assert isinstance(container_limits, dict) and isinstance(container_requests, dict)
        container_requests = {**container_limits, **container_requests}
        for name, quantity in container_requests.items():
            if name in _QOS_RESOURCES and (value := _positive(quantity)) is not None:
                requests[name] = requests.get(name, Fraction(0)) + value
        found = set()
        for name, quantity in container_limits.items():
            if name in _QOS_RESOURCES and (value := _positive(quantity)) is not None:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + value
        if found != _QOS_RESOURCES:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# isSupportedQoSComputeResource: cpu and memory.
_QOS_RESOURCES = frozenset({"cpu", "memory"})
# Larger values are summed as this cap (no manifest reaches it; it keeps the sums small).
_QOS_CAP = Fraction(10**30)


def _positive(quantity: Any) -> Fraction | None:
    """The value of a quantity above zero, else ``None`` (``quantity.Cmp(zeroQuantity) == 1``)."""
    try:
        parsed = parse_quantity(quantity.strip()) if isinstance(quantity, str) else None
    except QuantityError:
        return None
    if parsed is None or parsed.sign() <= 0:
        return None
    return _QOS_CAP if parsed.exponent > 30 else min(parsed.value, _QOS_CAP)
