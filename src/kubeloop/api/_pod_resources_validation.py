"""Validation of a container's resource requirements, as upstream's ``ValidateContainerResourceRequirements``
does it.

:func:`resources_errors` returns one :class:`FieldError` per problem with upstream's path, type and text
(k/k ``pkg/apis/core/validation/validation.go``: ``validateResourceRequirements``,
``validateContainerResourceName`` / ``validateResourceName``, ``ValidateNonnegativeQuantity``;
``pkg/apis/core/helper``: ``IsStandardResourceName``, ``IsNativeResource``, ``IsExtendedResourceName``,
``IsOvercommitAllowed``): known names (a standard container resource, or a domain-qualified one),
values not below zero, each request at most its limit, and, for resources that may not be
overcommitted (extended resources, hugepages), a limit equal to the request; hugepages need cpu or
memory beside them. An extended resource (and any of ``helper.IsIntegerResourceName``'s) takes whole
numbers only (``ValidateResourceQuantityValue``: ``1500m`` is not one, ``3000m`` is), and a hugepage
quantity is a whole number of its pages (``validateResourceQuantityHugePageValue``, unless the stored
object already had one that is not: ``AllowIndivisibleHugePagesValues``). ``resources.claims`` must name
the pod's ``spec.resourceClaims`` (``validateResourceClaimNames``), which
:func:`pod_resource_claims_errors` checks (``validatePodResourceClaims``). Quantities are read in the
canonical form the decode already wrote (so a value prints as upstream's ``Quantity.String()``), and
exactly: upstream's int64 projection of values past about 9.2e15 (which wraps) is not modelled.
Parsed quantities and comparisons are remembered in bounded tables, as the same few spellings fill
most manifests.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, mapping_of, objects_of
from kubeloop.api._quantity import Quantity, QuantityError, parse_quantity
from kubeloop.api._validation import is_dns1123_label, is_qualified_name, name_is_dns1123_subdomain

__all__ = ["claim_names_of", "indivisible_hugepages_in", "pod_resource_claims_errors", "resources_errors"]

_NEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
# helper.standardResources (the names a resource list may use without a domain).
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
})
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})  # standardContainerResources
# helper.integerResources (besides extended resources, which are integers too).
_INTEGER_RESOURCES = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
                                "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})
_NOT_INTEGER = "must be an integer"  # isNotIntegerErrorMsg
_HUGEPAGES = "hugepages-"
_MAX_INT64 = 2**63 - 1


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


def _milli_value(q: Quantity) -> int:
    """``MilliValue``: the value in thousandths, rounded up away from zero."""
    digits = -q.exponent - 3
    sign = (q.unscaled > 0) - (q.unscaled < 0)
    if digits < -40:
        return sign * _MAX_INT64  # far past int64, where upstream's projection saturates: never built
    if digits <= 0:
        return q.unscaled * int(10**-digits)
    magnitude = abs(q.unscaled)
    if digits > len(str(magnitude)) + 1:
        return sign  # a nonzero value below one thousandth
    return sign * -(-magnitude // int(10**digits))


def _whole_value(q: Quantity) -> int:
    """``Value``: the value rounded up away from zero to a whole number."""
    milli = _milli_value(q)
    return (1 if milli >= 0 else -1) * int(-(-abs(milli) // 1000))


def _quantity_value_errors(name: str, quantity: Quantity, path: str) -> list[FieldError]:
    """ValidateResourceQuantityValue: not negative; a whole number for integer resources."""
    errs = [FieldError.invalid(path, quantity.text, _NEGATIVE)] if quantity.sign() < 0 else []
    if (name in _INTEGER_RESOURCES or _is_extended(name)) and _milli_value(quantity) % 1000:
        errs.append(FieldError.invalid(path, quantity.text, _NOT_INTEGER))
    return errs


def _hugepage_divisible(name: str, quantity: Quantity) -> bool:
    """helper.IsHugePageResourceValueDivisible: a whole number of pages of a whole number of bytes."""
    page = _quantity(name[len(_HUGEPAGES):])
    if page is None or page.sign() <= 0 or _milli_value(page) % 1000:
        return False
    return _whole_value(quantity) % _whole_value(page) == 0


def _hugepage_errors(name: str, quantity: Quantity, path: str, *, allow_indivisible: bool) -> list[FieldError]:
    """validateResourceQuantityHugePageValue."""
    if allow_indivisible or _hugepage_divisible(name, quantity):
        return []
    return [FieldError.invalid(path, quantity.text, f"{quantity.text} is not positive integer multiple of {name}")]


def indivisible_hugepages_in(spec: Any) -> bool:
    """``usesIndivisibleHugePagesValues``: a container of ``spec`` asks for part of a hugepage."""
    spec = mapping_of(spec)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for _, container in objects_of(spec.get(key)):
            resources = mapping_of(container.get("resources"))
            for kind in ("limits", "requests"):
                for name, value in mapping_of(resources.get(kind)).items():
                    if name.startswith(_HUGEPAGES) and (q := _quantity(value)) is not None and not _hugepage_divisible(name, q):
                        return True
    return False


def _claims_errors(claims: Any, claim_names: frozenset[str], path: str) -> list[FieldError]:
    """validateResourceClaimNames: each entry names a pod claim (and a request of it) once."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, claim in objects_of(claims):
        p = f"{path}[{i}]"
        name, request = go_text(claim.get("name")), go_text(claim.get("request"))
        if not name:
            errs.append(FieldError.required(p))
            continue
        if name in names:
            errs.append(FieldError.duplicate(p, name))  # every request of that claim is already referenced
        else:
            key = name
            if request:
                errs.extend(FieldError.invalid(f"{p}.request", request, m) for m in is_dns1123_label(request))
                key = f"{name}/{request}"
            if key in names:
                errs.append(FieldError.duplicate(p, key))
            elif not request:
                errs.extend(FieldError.duplicate(p, name) for seen in names if seen.partition("/")[0] == name and "/" in seen)
            names.add(key)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(claim_names)) if claim_names else " which is empty"
            errs.append(FieldError("not_found", p, detail, name))
    return errs


def claim_names_of(spec: Any) -> frozenset[str]:
    """gatherPodResourceClaimNames: the non-empty names of ``spec.resourceClaims``."""
    return frozenset(n for _, c in objects_of(mapping_of(spec).get("resourceClaims")) if (n := go_text(c.get("name"))))


def pod_resource_claims_errors(claims: Any, path: str) -> list[FieldError]:
    """validatePodResourceClaims: label names once, each with exactly one of a claim or a template name."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, claim in objects_of(claims):
        p = f"{path}[{i}]"
        name = go_text(claim.get("name"))
        if not name:
            errs.append(FieldError.required(f"{p}.name"))
        elif name in names:
            errs.append(FieldError.duplicate(f"{p}.name", name))
        else:
            errs.extend(FieldError.invalid(f"{p}.name", name, m) for m in is_dns1123_label(name))
            names.add(name)
        claim_name, template_name = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
        if claim_name is not None and template_name is not None:
            errs.append(FieldError.invalid(p, dict(claim), "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
        if claim_name is None and template_name is None:
            errs.append(FieldError.invalid(p, dict(claim), "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
        for key, value in (("resourceClaimName", claim_name), ("resourceClaimTemplateName", template_name)):
            if value is not None:
                errs.extend(FieldError.invalid(f"{p}.{key}", value, m) for m in name_is_dns1123_subdomain(go_text(value), False))
    return errs


def resources_errors(resources: Any, path: str, *, claim_names: frozenset[str] = frozenset(),
                     allow_indivisible_hugepages: bool = False) -> list[FieldError]:
    """ValidateContainerResourceRequirements: names, values, requests within limits, claims of the pod's
    ``claim_names``."""
    requirements = mapping_of(resources)
    limits, requests = mapping_of(requirements.get("limits")), mapping_of(requirements.get("requests"))
    claims = requirements.get("claims")
    if not limits and not requests:
        return _claims_errors(claims, claim_names, f"{path}.claims") if claims else []
    errs: list[FieldError] = []
    limit_path, request_path = f"{path}.limits", f"{path}.requests"
    parsed_limits: dict[str, Quantity] = {}
    for name, value in limits.items():
        p = f"{limit_path}[{name}]"
        errs.extend(_resource_name_errors(name, p))
        if (quantity := _quantity(value)) is not None:
            parsed_limits[name] = quantity
            errs.extend(_quantity_value_errors(name, quantity, p))
            if name.startswith(_HUGEPAGES):
                errs.extend(_hugepage_errors(name, quantity, p, allow_indivisible=allow_indivisible_hugepages))
    for name, value in requests.items():
        p = f"{request_path}[{name}]"
        errs.extend(_resource_name_errors(name, p))
        quantity = _quantity(value)
        if quantity is None:
            continue
        errs.extend(_quantity_value_errors(name, quantity, p))
        overcommit = _is_native(name) and not name.startswith(_HUGEPAGES)  # helper.IsOvercommitAllowed
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
        if name.startswith(_HUGEPAGES):
            errs.extend(_hugepage_errors(name, quantity, p, allow_indivisible=allow_indivisible_hugepages))
    names = {*limits, *requests}
    if any(n.startswith(_HUGEPAGES) for n in names) and not names & {"cpu", "memory"}:
        errs.append(FieldError.forbidden(path, "HugePages require cpu or memory"))
    if claims:
        errs.extend(_claims_errors(claims, claim_names, f"{path}.claims"))
    return errs
