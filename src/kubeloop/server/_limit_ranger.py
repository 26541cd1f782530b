"""The LimitRanger admission plugin: a namespace's LimitRanges default and bound pods and claims.

Upstream: k/k ``plugin/pkg/admission/limitranger/admission.go`` (enabled by default in kube-apiserver,
ordered after NamespaceLifecycle and before Priority), a plugin of both phases over CREATE and UPDATE.

- **What it looks at** (``DefaultLimitRangerActions.SupportsAttributes``): pods and
  persistentvolumeclaims, never a subresource, and not a pod UPDATE (containers cannot change after
  create). A write whose stored object is being deleted is let through. Each LimitRange of the
  namespace is applied in turn (here in name order; upstream's lister order is unspecified).
- **Mutating, pods** (``PodMutateLimitFunc``): every container and init container gets, for each
  resource it leaves unset, the ``default`` (limit) and ``defaultRequest`` (request) of the range's
  Container items, and the pod is annotated ``kubernetes.io/limit-ranger: LimitRanger plugin set:
  cpu, memory request for container app; cpu limit for container app`` (resources sorted).
- **Validating** (``PodValidateLimitFunc``, ``PersistentVolumeClaimValidateLimitFunc``): a Container
  item bounds each container's requests and limits (``min``, ``max``, ``maxLimitRequestRatio``), a
  Pod item the pod's totals (containers summed, init containers as their maximum, sidecars added; no
  overhead, as LimitRanger's own ``podRequests``),
  a PersistentVolumeClaim item the claim's requests (min; max on the request only). Values compare in
  thousandths (``MilliValue``) unless one passes ``MaxMilliValue``, then as whole numbers, as upstream's
  ``requestLimitEnforcedValues``. A range's failures are one 403 Forbidden, ``pods "x" is forbidden:
  maximum cpu usage per Container is 1, but limit is 2`` (several: ``[a, b]``, duplicates once, as
  ``utilerrors.NewAggregate``).

The ranges are read through :class:`~kubeloop.server._namespaced_objects.NamespacedObjects`: a create in
a namespace without LimitRanges costs a dict lookup.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.api._pod_resources_validation import _milli_value, _quantity, _whole_value
from kubeloop.api._quantity import Quantity
from kubeloop.api._quota_math import pod_limits, pod_requests, render
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin, Operation, ValidatingPlugin
from kubeloop.server._namespaced_objects import Entry, NamespacedObjects
from kubeloop.server._priority_admission import _forbidden
from kubeloop.store import Store

__all__ = ["ANNOTATION", "LimitRanger", "aggregate_message"]

PREFIX = "/registry/core/limitranges/"
ANNOTATION = "kubernetes.io/limit-ranger"
_MAX_MILLI = (2**63 - 1) // 1000  # resource.MaxMilliValue
Obj = Mapping[str, Any]


def aggregate_message(messages: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as it is, several deduplicated in ``[...]``."""
    if len(messages) == 1:
        return messages[0]
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _supported(attributes: AdmissionAttributes, old: dict[str, Any] | None) -> bool:
    if attributes.subresource:
        return False
    if attributes.resource.plural == "pods" and attributes.operation == "UPDATE":
        return False
    return not (old is not None and (old.get("metadata") or {}).get("deletionTimestamp"))


def _items(ranges: dict[str, Entry]) -> list[dict[str, Any]]:
    return [ranges[name][1] for name in sorted(ranges)]


def _limits_of(limit_range: Obj) -> list[Obj]:
    limits = (limit_range.get("spec") or {}).get("limits")
    return [item for item in limits if isinstance(item, Mapping)] if isinstance(limits, list) else []


# -- mutation ---------------------------------------------------------------------------------------


def _merge_container(container: dict[str, Any], requests: Obj, limits: Obj, prefix: str, notes: list[str]) -> None:
    """mergeContainerResources: the defaults the container leaves unset, noted for the annotation."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = container["resources"] = {}
    set_limits = _fill(resources, "limits", limits)
    set_requests = _fill(resources, "requests", requests)
    name = container.get("name") or ""
    if set_requests:
        notes.append(f"{', '.join(sorted(set_requests))} request for {prefix} {name}")
    if set_limits:
        notes.append(f"{', '.join(sorted(set_limits))} limit for {prefix} {name}")


def _fill(resources: dict[str, Any], key: str, defaults: Obj) -> list[str]:
    if not defaults:
        return []
    listed = resources.get(key)
    if not isinstance(listed, dict):
        listed = {}
    added = [name for name in defaults if name not in listed]
    if added:
        for name in added:
            listed[name] = defaults[name]
        resources[key] = listed
    return added


def _default_pod(limit_range: Obj, pod: dict[str, Any]) -> None:
    """PodMutateLimitFunc: defaultContainerResourceRequirements, then mergePodResourceRequirements."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for item in _limits_of(limit_range):
        if item.get("type") == "Container":
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    spec = pod.get("spec")
    if not isinstance(spec, dict) or (not requests and not limits):
        return
    notes: list[str] = []
    for key, prefix in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(key) or ():
            if isinstance(container, dict):
                _merge_container(container, requests, limits, prefix, notes)
    if notes:
        meta = pod["metadata"]
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = meta["annotations"] = {}
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


# -- validation -------------------------------------------------------------------------------------


def _values(request: Quantity | None, limit: Quantity | None, enforced: Quantity) -> tuple[int, int, int]:
    """requestLimitEnforcedValues: thousandths when none passes MaxMilliValue, else whole numbers."""
    whole = [_whole_value(q) if q is not None else 0 for q in (request, limit, enforced)]
    if all(value <= _MAX_MILLI for value in whole):
        return (_milli_value(request) if request else 0, _milli_value(limit) if limit else 0, _milli_value(enforced))
    return whole[0], whole[1], whole[2]


def _min(kind: str, name: str, enforced: Quantity, requests: Obj, limits: Obj) -> str | None:
    request, limit = _quantity(requests.get(name)), _quantity(limits.get(name))
    observed_request, observed_limit, floor = _values(request, limit, enforced)
    if name not in requests:
        return f"minimum {name} usage per {kind} is {enforced.text}.  No request is specified"
    if observed_request < floor:
        return f"minimum {name} usage per {kind} is {enforced.text}, but request is {_text(requests[name])}"
    if name in limits and observed_limit < floor:
        return f"minimum {name} usage per {kind} is {enforced.text}, but limit is {_text(limits[name])}"
    return None


def _max(kind: str, name: str, enforced: Quantity, requests: Obj, limits: Obj) -> str | None:
    request, limit = _quantity(requests.get(name)), _quantity(limits.get(name))
    observed_request, observed_limit, ceiling = _values(request, limit, enforced)
    if name not in limits:
        return f"maximum {name} usage per {kind} is {enforced.text}.  No limit is specified"
    if observed_limit > ceiling:
        return f"maximum {name} usage per {kind} is {enforced.text}, but limit is {_text(limits[name])}"
    if name in requests and observed_request > ceiling:
        return f"maximum {name} usage per {kind} is {enforced.text}, but request is {_text(requests[name])}"
    return None


def _max_request(kind: str, name: str, enforced: Quantity, requests: Obj) -> str | None:
    """maxRequestConstraint (claims: the max bounds the request only)."""
    observed_request, _, ceiling = _values(_quantity(requests.get(name)), None, enforced)
    if name not in requests:
        return f"maximum {name} usage per {kind} is {enforced.text}.  No request is specified"
    if observed_request > ceiling:
        return f"maximum {name} usage per {kind} is {enforced.text}, but request is {_text(requests[name])}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, requests: Obj, limits: Obj) -> str | None:
    request, limit = _quantity(requests.get(name)), _quantity(limits.get(name))
    observed_request, observed_limit, _ = _values(request, limit, enforced)
    if name not in requests or observed_request == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced.text}, but no request is specified "
                "or request is 0")
    if name not in limits or observed_limit == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced.text}, but no limit is specified "
                "or limit is 0")
    observed = observed_limit / observed_request
    shown = observed
    allowed = float(_whole_value(enforced))
    if _whole_value(enforced) <= _MAX_MILLI:
        observed, allowed = observed * 1000, float(_milli_value(enforced))
    if observed > allowed:
        return f"{name} max limit to request ratio per {kind} is {enforced.text}, but provided ratio is {shown:f}"
    return None


def _text(value: Any) -> str:
    parsed = _quantity(value)
    return parsed.text if parsed is not None else str(value)


def _bounded(item: Obj, kind: str, requests: Obj, limits: Obj, errors: list[str]) -> None:
    for key, check in (("min", _min), ("max", _max), ("maxLimitRequestRatio", _ratio)):
        listed = item.get(key) or {}
        for name in sorted(listed):
            enforced = _quantity(listed[name])
            if enforced is not None and (message := check(kind, name, enforced, requests, limits)) is not None:
                errors.append(message)


def _resources(container: Obj, key: str) -> Obj:
    resources = container.get("resources")
    found = resources.get(key) if isinstance(resources, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _pod_errors(limit_range: Obj, pod: Obj) -> list[str]:
    """PodValidateLimitFunc."""
    errors: list[str] = []
    spec = pod.get("spec") or {}
    for item in _limits_of(limit_range):
        if item.get("type") == "Container":
            for key in ("containers", "initContainers"):
                for container in spec.get(key) or ():
                    if isinstance(container, Mapping):
                        _bounded(item, "Container", _resources(container, "requests"), _resources(container, "limits"),
                                 errors)
        elif item.get("type") == "Pod":
            # LimitRanger's own podRequests/podLimits: no pod overhead, unlike the quota's.
            _bounded(item, "Pod", render(pod_requests(pod, with_overhead=False)),
                     render(pod_limits(pod, with_overhead=False)), errors)
    return errors


def _claim_errors(limit_range: Obj, claim: Obj) -> list[str]:
    """PersistentVolumeClaimValidateLimitFunc: limits of a claim are not user input."""
    errors: list[str] = []
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    for item in _limits_of(limit_range):
        if item.get("type") != "PersistentVolumeClaim":
            continue
        for name in sorted(item.get("min") or {}):
            enforced = _quantity(item["min"][name])
            if enforced is not None and (message := _min("PersistentVolumeClaim", name, enforced, requests, {})):
                errors.append(message)
        for name in sorted(item.get("max") or {}):
            enforced = _quantity(item["max"][name])
            if enforced is not None and (message := _max_request("PersistentVolumeClaim", name, enforced, requests)):
                errors.append(message)
    return errors


class LimitRanger(MutatingPlugin, ValidatingPlugin):
    """Defaults and bounds pods' and claims' resources from the namespace's LimitRanges."""

    def __init__(self, store: Store) -> None:
        self.ranges = NamespacedObjects(store, PREFIX)

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        return (operation in ("CREATE", "UPDATE") and resource.group == ""
                and resource.plural in ("pods", "persistentvolumeclaims"))

    def mutate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if obj is None or attributes.resource.plural != "pods" or not _supported(attributes, old):
            return None
        ranges = self.ranges.current(attributes.namespace)
        if ranges is None:
            return self._load_and_default(attributes, obj)
        for limit_range in _items(ranges):
            _default_pod(limit_range, obj)
        return None

    async def _load_and_default(self, attributes: AdmissionAttributes, obj: dict[str, Any]) -> None:
        for limit_range in _items(await self.ranges.load(attributes.namespace)):
            _default_pod(limit_range, obj)

    def validate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if obj is None or not _supported(attributes, old):
            return None
        ranges = self.ranges.current(attributes.namespace)
        if ranges is None:
            return self._load_and_validate(attributes, obj)
        self._check(attributes, obj, ranges)
        return None

    async def _load_and_validate(self, attributes: AdmissionAttributes, obj: dict[str, Any]) -> None:
        self._check(attributes, obj, await self.ranges.load(attributes.namespace))

    def _check(self, attributes: AdmissionAttributes, obj: dict[str, Any], ranges: dict[str, Entry]) -> None:
        check = _pod_errors if attributes.resource.plural == "pods" else _claim_errors
        for limit_range in _items(ranges):
            errors = check(limit_range, obj)
            if errors:
                raise _forbidden(attributes, obj, aggregate_message(errors))
