"""Validation of a PriorityClass (``scheduling.k8s.io/v1``), as upstream's registry validates it.

:func:`validate_priority_class` and :func:`validate_priority_class_update` return one :class:`FieldError`
per problem with upstream's path, type and text (k/k ``pkg/apis/scheduling/validation/validation.go``
``ValidatePriorityClass`` / ``ValidatePriorityClassUpdate``, and ``pkg/apis/scheduling/v1/helpers.go``
``IsKnownSystemPriorityClass``):

- a name starting with ``system-`` must be one of :data:`SYSTEM_PRIORITY_CLASSES`, with that class's
  value and ``globalDefault`` (false); any other class may not have a value above
  :data:`HIGHEST_USER_DEFINABLE_PRIORITY`;
- ``preemptionPolicy``, when set, is ``PreemptLowerPriority`` or ``Never`` (``ValidatePreemptionPolicy``);
- on update, ``value`` and ``preemptionPolicy`` may not change.

ObjectMeta (a DNS subdomain name, cluster-scoped) is checked by the generic write path. That at most one
class is the global default is not validation: the Priority admission plugin enforces it. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError

__all__ = [
    "DEFAULT_PREEMPTION_POLICY",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_PRIORITY_CLASSES",
    "SYSTEM_PRIORITY_CLASS_PREFIX",
    "validate_priority_class",
    "validate_priority_class_update",
]

# pkg/apis/scheduling/types.go.
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"
_PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]

# pkg/apis/scheduling/v1/helpers.go systemPriorityClasses, in upstream's order: name -> (value, description).
# The kube-apiserver's post-start hook creates them; validation only admits these names with these values.
SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
}


def _known_system_class_error(name: str, value: Any, global_default: Any) -> str | None:
    """IsKnownSystemPriorityClass's error, or ``None`` when the class is that system class exactly."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if bool(global_default):
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def _value(pc: Mapping[str, Any]) -> Any:
    # An int32 without omitempty: absent reads as 0, as the typed decode leaves it.
    value = pc.get("value")
    return 0 if value is None else value


def validate_priority_class(pc: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePriorityClass, without its ObjectMeta part."""
    errs: list[FieldError] = []
    meta = pc.get("metadata")
    name = str((meta if isinstance(meta, Mapping) else {}).get("name") or "")
    value = _value(pc)
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        reason = _known_system_class_error(name, value, pc.get("globalDefault"))
        if reason is not None:
            errs.append(FieldError.forbidden(
                "metadata.name",
                f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use "
                f"only. error: {reason}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(FieldError.forbidden(
            "value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = pc.get("preemptionPolicy")
    if policy is not None:
        if policy == "":
            errs.append(FieldError.required("preemptionPolicy"))
        elif policy not in _PREEMPTION_POLICIES:
            errs.append(FieldError.not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES))
    return errs


def validate_priority_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePriorityClassUpdate, without its ObjectMeta part: value and preemptionPolicy are immutable."""
    errs: list[FieldError] = []
    if _value(new) != _value(old):
        errs.append(FieldError.forbidden("value", "may not be changed in an update."))
    policy = new.get("preemptionPolicy")
    if policy != old.get("preemptionPolicy"):
        # ValidateImmutableField prints the new value; field.Error prints a nil pointer as the string "null".
        errs.append(FieldError.invalid("preemptionPolicy", "null" if policy is None else policy, "field is immutable"))
    return errs
