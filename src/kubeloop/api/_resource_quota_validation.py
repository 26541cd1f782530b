"""Validation of ResourceQuota (core/v1), as upstream's ``ValidateResourceQuota`` family does it.

k/k ``pkg/apis/core/validation/validation.go``: ``ValidateResourceQuota`` (spec and status),
``ValidateResourceQuotaSpec`` (``spec.hard``: ``ValidateResourceQuotaResourceName`` and
``ValidateResourceQuantityValue``; ``validateResourceQuotaScopes``; ``validateScopeSelector``),
``ValidateResourceQuotaUpdate`` (scopes are immutable) and ``ValidateResourceQuotaStatusUpdate``; the
name sets of ``pkg/apis/core/helper`` (``IsStandardQuotaResourceName``, ``IsStandardResourceQuotaScope``,
``IsResourceQuotaScopeValidForResource``). Metadata is checked by the generic write path. Entries of a
map are checked in name order (Go's map order is random; one fixed order keeps messages stable).
:func:`resource_name_errors` (``validateResourceName``) serves LimitRange validation too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import mapping_of, objects_of
from kubeloop.api._pod_resources_validation import _quantity, _quantity_value_errors
from kubeloop.api._pv_source_validation import raw_invalid
from kubeloop.api._validation import is_qualified_name

__all__ = [
    "resource_name_errors",
    "validate_resource_quota",
    "validate_resource_quota_status_update",
    "validate_resource_quota_update",
]

# helper.standardResources.
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers", "configmaps",
})
# helper.standardQuotaResources.
_QUOTA_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
    "replicationcontrollers", "resourcequotas", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers",
})
_QUOTA_HUGEPAGES = ("hugepages-", "requests.hugepages-")  # IsQuotaHugePageResourceName
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
# helper.standardResourceQuotaScopes (VolumeAttributesClass is behind a gate that is off in 1.32).
SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity")
_POD_COMPUTE = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"})
_EXISTS_ONLY = ("BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity")
_CONFLICTING = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_INVALID_QUOTA_RESOURCE = "must be a standard resource for quota"


def resource_name_errors(name: str, path: str) -> list[FieldError]:
    """validateResourceName: a qualified name, standard unless it has a domain."""
    if messages := is_qualified_name(name):
        return [FieldError.invalid(path, name, m) for m in messages]
    if "/" not in name and name not in _STANDARD_RESOURCES and not name.startswith(_QUOTA_HUGEPAGES):
        return [FieldError.invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def _quota_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """ValidateResourceQuotaResourceName."""
    errs = resource_name_errors(name, path)
    if "/" not in name and name not in _QUOTA_RESOURCES and not name.startswith(_QUOTA_HUGEPAGES):
        errs.append(FieldError.invalid(path, name, _INVALID_QUOTA_RESOURCE))
    return errs


def _resource_list_errors(resources: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    listed = mapping_of(resources)
    for name in sorted(listed):
        p = f"{path}[{name}]"
        errs.extend(_quota_resource_name_errors(name, p))
        quantity = _quantity(listed[name])
        if quantity is not None:
            errs.extend(_quantity_value_errors(name, quantity, p))
    return errs


def _is_container_resource(name: str) -> bool:
    """helper.IsStandardContainerResourceName."""
    return name in _CONTAINER_RESOURCES or name.startswith("hugepages-")


def _scope_valid_for(scope: Any, name: str) -> bool:
    """helper.IsResourceQuotaScopeValidForResource."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return name == "pods" or name in _POD_COMPUTE
    if scope == "BestEffort":
        return name == "pods"
    return True


def _go_string(value: Any) -> str:
    return '"' + str(value or "").replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_slice(type_name: str, values: list[Any] | None) -> str:
    """Go's ``%#v`` of a slice of a string type (``nil`` when the JSON had none)."""
    if values is None:
        return f"[]{type_name}(nil)"
    return f"[]{type_name}{{" + ", ".join(_go_string(v) for v in values) + "}"


def _go_selector(selector: Mapping[str, Any]) -> str:
    """Go's ``%#v`` of the (dereferenced) ``*core.ScopeSelector``."""
    items = []
    for _, r in objects_of(selector.get("matchExpressions")):
        values = r.get("values") if isinstance(r.get("values"), list) else None
        items.append(f"core.ScopedResourceSelectorRequirement{{ScopeName:{_go_string(r.get('scopeName'))}, "
                     f"Operator:{_go_string(r.get('operator'))}, Values:{_go_slice('string', values)}}}")
    expressions = selector.get("matchExpressions")
    inner = ("[]core.ScopedResourceSelectorRequirement(nil)" if not isinstance(expressions, list)
             else "[]core.ScopedResourceSelectorRequirement{" + ", ".join(items) + "}")
    return f"core.ScopeSelector{{MatchExpressions:{inner}}}"


def _scopes_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """validateResourceQuotaScopes."""
    scopes = spec.get("scopes")
    if not isinstance(scopes, list) or not scopes:
        return []
    raw = _go_slice("core.ResourceQuotaScope", scopes)
    hard = sorted(mapping_of(spec.get("hard")))
    errs: list[FieldError] = []
    for scope in scopes:
        if scope not in SCOPES:
            errs.append(raw_invalid("spec.scopes", raw, "unsupported scope"))
        errs.extend(raw_invalid("spec.scopes", raw, "unsupported scope applied to resource")
                    for name in hard if _is_container_resource(name) and not _scope_valid_for(scope, name))
    errs.extend(raw_invalid("spec.scopes", raw, "conflicting scopes")
                for pair in _CONFLICTING if all(s in scopes for s in pair))
    return errs


def _scope_selector_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """validateScopeSelector / validateScopedResourceSelectorRequirement."""
    selector = spec.get("scopeSelector")
    if not isinstance(selector, Mapping):
        return []
    path = "spec.scopeSelector.matchExpressions"
    hard = sorted(mapping_of(spec.get("hard")))
    errs: list[FieldError] = []
    seen: list[Any] = []
    for _, requirement in objects_of(selector.get("matchExpressions")):
        scope, operator = requirement.get("scopeName") or "", requirement.get("operator") or ""
        values = requirement.get("values") or []
        if scope not in SCOPES:
            errs.append(FieldError.invalid(f"{path}.scopeName", scope, "unsupported scope"))
        errs.extend(raw_invalid(path, _go_selector(selector), "unsupported scope applied to resource")
                    for name in hard if _is_container_resource(name) and not _scope_valid_for(scope, name))
        if scope in _EXISTS_ONLY and operator != "Exists":
            errs.append(FieldError.invalid(
                f"{path}.operator", operator,
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                "ResourceQuotaScopeCrossNamespacePodAffinity"))
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(FieldError.required(
                    f"{path}.values", "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(raw_invalid(f"{path}.values", _go_slice("string", list(values)),
                                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
        else:
            errs.append(FieldError.invalid(f"{path}.operator", operator, "not a valid selector operator"))
        seen.append(scope)
    scopes = spec.get("scopes") if isinstance(spec.get("scopes"), list) else None
    errs.extend(raw_invalid(path, _go_slice("core.ResourceQuotaScope", scopes), "conflicting scopes")
                for pair in _CONFLICTING if all(s in seen for s in pair))
    return errs


def _spec_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """ValidateResourceQuotaSpec."""
    return [*_resource_list_errors(spec.get("hard"), "spec.hard"), *_scopes_errors(spec), *_scope_selector_errors(spec)]


def _status_errors(status: Mapping[str, Any]) -> list[FieldError]:
    """ValidateResourceQuotaStatus."""
    return [*_resource_list_errors(status.get("hard"), "status.hard"),
            *_resource_list_errors(status.get("used"), "status.used")]


def validate_resource_quota(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateResourceQuota, but metadata: the spec and the status."""
    return [*_spec_errors(mapping_of(obj.get("spec"))), *_status_errors(mapping_of(obj.get("status")))]


def validate_resource_quota_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateResourceQuotaUpdate, but metadata: the spec, and ``spec.scopes`` unchanged as a set."""
    spec = mapping_of(new.get("spec"))
    errs = _spec_errors(spec)
    new_scopes = spec.get("scopes") if isinstance(spec.get("scopes"), list) else None
    old_spec = mapping_of(old.get("spec"))
    old_scopes = old_spec.get("scopes") if isinstance(old_spec.get("scopes"), list) else None
    if set(map(str, new_scopes or [])) != set(map(str, old_scopes or [])):
        errs.append(raw_invalid("spec.scopes", _go_slice("core.ResourceQuotaScope", new_scopes),
                                "field is immutable"))
    return errs


def validate_resource_quota_status_update(new: Mapping[str, Any]) -> list[FieldError]:
    """ValidateResourceQuotaStatusUpdate, but metadata: the status's hard and used lists."""
    return _status_errors(mapping_of(new.get("status")))
