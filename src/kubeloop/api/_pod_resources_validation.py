"""Validation of a container's resource requirements, as upstream's ``ValidateContainerResourceRequirements``
does it.

:func:`resources_errors` returns one :class:`FieldError` per problem with upstream's path, type and text
(k/k ``pkg/apis/core/validation/validation.go``: ``validateResourceRequirements``,
``validateContainerResourceName`` / ``validateResourceName``, ``ValidateNonnegativeQuantity``;
``pkg/apis/core/helper``: ``IsStandardResourceName``, ``IsNativeResource``, ``IsExtendedResourceName``,
``IsOvercommitAllowed``): known names (a standard container resource, or a domain-qualified one),
values not below zero, each request at most its limit, and, for resources that may not be
overcommitted (extended resources, hugepages), a limit equal to the request; hugepages need cpu or
memory beside them. Quantities are read in the canonical form the decode already wrote (so a value
prints as upstream's ``Quantity.String()``). Not checked: the integer rule for extended resources and
hugepage divisibility, resource claims (DRA). Parsed quantities and comparisons are remembered in
bounded tables, as the same few spellings fill most manifests.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import mapping_of
from kubeloop.api._quantity import Quantity, QuantityError, parse_quantity
from kubeloop.api._validation import is_qualified_name

__all__ = ["resources_errors"]

_NEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
# helper.standardResources (the names a resource list may use without a domain).
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
})
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})  # standardContainerResources


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    return not _is_native(name) and not name.startswith("requests.") and not is_qualified_name("requests." + name)


def _resource_name_errors(name: str, path: str) -> list[FieldError]:
    """validateContainerResourceName (validateResourceName first)."""
    if name in _CONTAINER_RESOURCES:
        return []
    if messages := is_qualified_name(name):
        return [FieldError.invalid(path, name, m) for m in messages]
    errs: list[FieldError] = []
    if "/" not in name:
        hugepages = name.startswith("hugepages-")
        if name not in _STANDARD_RESOURCES and not hugepages:
            errs.append(FieldError.invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in _CONTAINER_RESOURCES and not hugepages:
            errs.append(FieldError.invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(FieldError.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


# Quantities already parsed, and comparisons already made (canonical text repeats from pod to pod;
# each table is cleared when full: bounded caches).
_PARSED: dict[str, Quantity | None] = {}
_COMPARED: dict[tuple[str, str], int] = {}
_CACHE_LIMIT = 4096


def _compare(a: Quantity, b: Quantity) -> int:
    key = (a.text, b.text)
    result = _COMPARED.get(key)
    if result is None:
        if len(_COMPARED) >= _CACHE_LIMIT:
            _COMPARED.clear()
        result = _COMPARED[key] = a.compare(b)
    return result


def _quantity(value: Any) -> Quantity | None:
    if not isinstance(value, str):
        return None
    if value in _PARSED:
        return _PARSED[value]
    try:
        parsed: Quantity | None = parse_quantity(value.strip())
    except QuantityError:
        parsed = None
    if len(_PARSED) >= _CACHE_LIMIT:
        _PARSED.clear()
    _PARSED[value] = parsed
    return parsed


def resources_errors(resources: Any, path: str) -> list[FieldError]:
    """ValidateContainerResourceRequirements: names, non-negative values, requests within limits."""
    requirements = mapping_of(resources)
    limits, requests = mapping_of(requirements.get("limits")), mapping_of(requirements.get("requests"))
    if not limits and not requests:
        return []
    errs: list[FieldError] = []
    limit_path, request_path = f"{path}.limits", f"{path}.requests"
    parsed_limits: dict[str, Quantity] = {}
    for name, value in limits.items():
        p = f"{limit_path}[{name}]"
        errs.extend(_resource_name_errors(name, p))
        if (quantity := _quantity(value)) is not None:
            parsed_limits[name] = quantity
            if quantity.sign() < 0:
                errs.append(FieldError.invalid(p, quantity.text, _NEGATIVE))
    for name, value in requests.items():
        p = f"{request_path}[{name}]"
        errs.extend(_resource_name_errors(name, p))
        quantity = _quantity(value)
        if quantity is None:
            continue
        if quantity.sign() < 0:
            errs.append(FieldError.invalid(p, quantity.text, _NEGATIVE))
        overcommit = _is_native(name) and not name.startswith("hugepages-")  # helper.IsOvercommitAllowed
        limit = parsed_limits.get(name)
        if limit is not None and limit.text != quantity.text:  # the same canonical text is the same value
            order = _compare(quantity, limit)
            if not overcommit and order != 0:
                errs.append(FieldError.invalid(request_path, quantity.text, f"must be equal to {name} limit of {limit.text}"))
            elif order > 0:
                errs.append(FieldError.invalid(request_path, quantity.text,
                                               f"must be less than or equal to {name} limit of {limit.text}"))
        elif limit is None and name not in limits and not overcommit:
            errs.append(FieldError.required(limit_path, "Limit must be set for non overcommitable resources"))
    names = {*limits, *requests}
    if any(n.startswith("hugepages-") for n in names) and not names & {"cpu", "memory"}:
        errs.append(FieldError.forbidden(path, "HugePages require cpu or memory"))
    return errs
