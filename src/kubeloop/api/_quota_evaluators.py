"""What an object costs a ResourceQuota: usage, the quota resources each kind answers for, scopes.

Shared by the ResourceQuota admission plugin (which charges a write) and the resource quota controller
(which recounts every object), so both count alike. Upstream: k/k ``pkg/quota/v1/evaluator/core``
(``pods.go``, ``services.go``, ``persistent_volume_claims.go``, ``registry.go``) and
``staging/src/k8s.io/apiserver/pkg/quota/v1/generic`` (``evaluator.go``: the object count evaluator
every other resource gets, ``count/<resource>[.<group>]``; ``Matches``).

- :func:`usage` is an object's usage; :func:`matching_resources` the subset of quota resource names
  its kind's evaluator tracks; :func:`handles` whether a write of that kind can change usage at all
  (pods: CREATE only, as InPlacePodVerticalScaling is off in 1.32; services and claims: CREATE and
  UPDATE; every other kind: CREATE).
- :func:`quota_matches` is ``evaluator.Matches`` (:func:`scopes_match` its scope half): the quota's ``status.hard`` names something the
  evaluator tracks, and every scope (``spec.scopes`` as ``Exists`` selectors, then
  ``spec.scopeSelector.matchExpressions``) matches the object. Only pods have scopes; for every other
  kind a scoped quota matches nothing (``MatchesNoScopeFunc``).
- :func:`pod_constraints` is the pod evaluator's ``Constraints``: when a quota tracks cpu or memory,
  every container must state the matching request or limit (``must specify ...``).
- :func:`pod_is_counted` is ``QuotaV1Pod``: a terminal pod, or one past its deletion grace period,
  costs only its ``count/pods``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubeloop.api._clock import parse_time
from kubeloop.api._quota_math import Amount, ResourceList, amount, parse_list, pod_limits, pod_requests
from kubeloop.api._validation import is_qualified_name

__all__ = [
    "handles",
    "matching_resources",
    "object_count_name",
    "pod_constraints",
    "pod_is_counted",
    "quota_matches",
    "scope_selectors",
    "scopes_match",
    "usage",
]

Obj = Mapping[str, Any]
ONE = Amount(Fraction(1))

# registry.go legacyObjectCountAliases: the pre-"count/" names of four object counts.
_ALIASES = {("", "configmaps"): "configmaps", ("", "resourcequotas"): "resourcequotas",
            ("", "replicationcontrollers"): "replicationcontrollers", ("", "secrets"): "secrets"}
_POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
})
_POD_PREFIXES = ("hugepages-", "requests.hugepages-")
_SERVICE_RESOURCES = frozenset({"count/services", "services", "services.loadbalancers", "services.nodeports"})
_PVC_RESOURCES = frozenset({"persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage"})
_STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
# pods.go validationSet: the resources every container must state when a quota tracks them.
_VALIDATION_SET = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})


def object_count_name(group: str, plural: str) -> str:
    """``ObjectCountQuotaResourceNameFor``: ``count/pods``, ``count/deployments.apps``."""
    return f"count/{plural}.{group}" if group else f"count/{plural}"


def _is_extended(name: str) -> bool:
    """helper.IsExtendedResourceName: domain-qualified, not ``kubernetes.io/``, and ``requests.`` + it qualifies."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _kind(group: str, plural: str) -> str:
    if group == "":
        if plural == "pods":
            return "pods"
        if plural == "services":
            return "services"
        if plural == "persistentvolumeclaims":
            return "pvcs"
    return "generic"


def handles(group: str, plural: str, operation: str) -> bool:
    """Whether a write of ``operation`` to that resource can change quota usage (``evaluator.Handles``)."""
    kind = _kind(group, plural)
    if kind in ("services", "pvcs"):
        return operation in ("CREATE", "UPDATE")
    return operation == "CREATE"


def matching_resources(group: str, plural: str, names: Iterable[str]) -> list[str]:
    """The quota resource names among ``names`` that this resource's evaluator tracks."""
    kind = _kind(group, plural)
    out: list[str] = []
    for name in names:
        if kind == "pods":
            tracked = (name in _POD_RESOURCES or name.startswith(_POD_PREFIXES)
                       or (name.startswith("requests.") and _is_extended(name[len("requests."):])))
        elif kind == "services":
            tracked = name in _SERVICE_RESOURCES
        elif kind == "pvcs":
            tracked = name in _PVC_RESOURCES or (
                _STORAGE_CLASS_SUFFIX in name
                and name.endswith((_STORAGE_CLASS_SUFFIX + "requests.storage",
                                   _STORAGE_CLASS_SUFFIX + "persistentvolumeclaims")))
        else:
            tracked = name == object_count_name(group, plural) or name == _ALIASES.get((group, plural))
        if tracked:
            out.append(name)
    return out


def pod_is_counted(pod: Obj, now: float) -> bool:
    """``QuotaV1Pod``: not terminal, and not past the end of its deletion grace period."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Failed", "Succeeded"):
        return False
    meta = pod.get("metadata") or {}
    deleted, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if deleted and isinstance(grace, int):
        try:
            if now > parse_time(str(deleted)) + grace:
                return False
        except ValueError:
            return True
    return True


def _pod_compute(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """podComputeUsageHelper."""
    out: ResourceList = {"pods": ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = value
        if _is_extended(name):
            out[f"requests.{name}"] = value
    return out


def _pvc_usage(claim: Obj) -> ResourceList:
    out: ResourceList = {"persistentvolumeclaims": ONE, "count/persistentvolumeclaims": ONE}
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    spec = claim.get("spec") or {}
    storage_class = annotations.get(_STORAGE_CLASS_ANNOTATION)
    if storage_class is None:
        storage_class = spec.get("storageClassName")
    if storage_class:
        out[f"{storage_class}{_STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = ONE
    requested = amount(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
    # getStorageUsage (RecoverVolumeExpansionFailure, beta in 1.32): the larger of request and allocation.
    allocated = amount(((claim.get("status") or {}).get("allocatedResources") or {}).get("storage"))
    if allocated is not None and (requested is None or allocated.value > requested.value):
        requested = allocated
    if requested is not None:
        out["requests.storage"] = requested
        if storage_class:
            out[f"{storage_class}{_STORAGE_CLASS_SUFFIX}requests.storage"] = requested
    return out


def _service_usage(service: Obj) -> ResourceList:
    out: ResourceList = {"count/services": ONE, "services": ONE}
    spec = service.get("spec") or {}
    ports = [p for p in spec.get("ports") or () if isinstance(p, Mapping)]
    kind = spec.get("type")
    if kind == "NodePort":
        out["services.nodeports"] = Amount(Fraction(len(ports)))
    elif kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is False:
            out["services.nodeports"] = Amount(Fraction(sum(1 for p in ports if p.get("nodePort"))))
        else:
            out["services.nodeports"] = Amount(Fraction(len(ports)))
        out["services.loadbalancers"] = ONE
    return out


def usage(group: str, plural: str, obj: Obj, now: float) -> ResourceList:
    """What ``obj`` costs (``evaluator.Usage``) at ``now`` (seconds since the epoch)."""
    kind = _kind(group, plural)
    if kind == "pods":
        out: ResourceList = {"count/pods": ONE}
        if pod_is_counted(obj, now):
            out.update(_pod_compute(pod_requests(obj), pod_limits(obj)))
        return out
    if kind == "services":
        return _service_usage(obj)
    if kind == "pvcs":
        return _pvc_usage(obj)
    out = {object_count_name(group, plural): ONE}
    alias = _ALIASES.get((group, plural))
    if alias is not None:
        out[alias] = ONE
    return out


def scope_selectors(quota: Obj) -> list[Obj]:
    """getScopeSelectorsFromQuota: each of ``spec.scopes`` as an ``Exists`` requirement, then the selector's."""
    spec = quota.get("spec") or {}
    out: list[Obj] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()]
    selector = spec.get("scopeSelector") or {}
    out.extend(e for e in selector.get("matchExpressions") or () if isinstance(e, Mapping))
    return out


def _best_effort(pod: Obj) -> bool:
    """qos.GetPodQOS is BestEffort: no container states a cpu or memory request or limit above zero."""
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            resources = (container.get("resources") or {}) if isinstance(container, Mapping) else {}
            for which in ("requests", "limits"):
                for name, value in (resources.get(which) or {}).items():
                    parsed = amount(value)
                    if name in ("cpu", "memory") and parsed is not None and parsed.value > 0:
                        return False
    return True


def _cross_namespace_affinity(pod: Obj) -> bool:
    """usesCrossNamespacePodAffinity: an affinity term with a namespace selector or other namespaces."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
        terms += [w.get("podAffinityTerm") or {} for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
        for term in terms:
            if term.get("namespaceSelector") is not None or term.get("namespaces"):
                return True
    return False


def _selector_matches(requirement: Obj, labels: Mapping[str, str]) -> bool:
    key = str(requirement.get("scopeName") or "")
    operator, values = requirement.get("operator"), list(requirement.get("values") or ())
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def _pod_matches_scope(requirement: Obj, pod: Obj) -> bool:
    """podMatchesScopeFunc."""
    scope = requirement.get("scopeName")
    spec = pod.get("spec") or {}
    if scope in ("Terminating", "NotTerminating"):
        deadline = spec.get("activeDeadlineSeconds")
        terminating = isinstance(deadline, int) and deadline >= 0
        return terminating if scope == "Terminating" else not terminating
    if scope in ("BestEffort", "NotBestEffort"):
        return _best_effort(pod) if scope == "BestEffort" else not _best_effort(pod)
    if scope == "PriorityClass":
        name = spec.get("priorityClassName") or ""
        if requirement.get("operator") == "Exists":
            return bool(name)
        return _selector_matches(requirement, {"PriorityClass": name} if name else {})
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False


def scopes_match(quota: Obj, group: str, plural: str, obj: Obj) -> bool:
    """Every scope of the quota matches ``obj`` (a quota without scopes matches everything; only pods have
    scopes, so a scoped quota matches no other kind: ``MatchesNoScopeFunc``)."""
    selectors = scope_selectors(quota)
    if _kind(group, plural) != "pods":
        return not selectors
    return all(_pod_matches_scope(s, obj) for s in selectors)


def quota_matches(quota: Obj, group: str, plural: str, obj: Obj) -> bool:
    """``evaluator.Matches``: the quota's ``status.hard`` names a resource of this kind and its scopes match."""
    hard = (quota.get("status") or {}).get("hard") or {}
    return bool(matching_resources(group, plural, hard)) and scopes_match(quota, group, plural, obj)


def pod_constraints(required: Iterable[str], pod: Obj) -> str | None:
    """The pod evaluator's ``Constraints``: ``must specify ...`` naming, per missing resource, the containers
    that leave it unstated; ``None`` when every container states what the quota tracks."""
    wanted = set(required) & _VALIDATION_SET
    if not wanted:
        return None
    missing: dict[str, set[str]] = {}
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            if not isinstance(container, Mapping):
                continue
            resources = container.get("resources") or {}
            stated = set(_pod_compute(parse_list(resources.get("requests")), parse_list(resources.get("limits"))))
            for name in wanted - stated:
                missing.setdefault(name, set()).add(str(container.get("name") or ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing))
