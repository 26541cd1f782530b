"""Whether a request falls under a ValidatingAdmissionPolicy's ``matchConstraints`` or a binding's ``matchResources``.

Upstream's ``generic.Matcher.Matches`` (k8s.io/apiserver ``pkg/admission/plugin/policy/generic/matching.go``)
with the rule matcher of ``pkg/admission/plugin/webhook/predicates/rules/rules.go``, in its order:

1. ``namespaceSelector``: a cluster-scoped request that is not for a Namespace always matches; a
   Namespace request is judged by the namespace's own labels (the new object, or the old one on
   DELETE); any other request by the labels of its namespace (read by the caller); an empty selector
   matches everything;
2. ``objectSelector``: matches when the labels of the new object or of the old object match (an empty
   selector matches everything);
3. ``excludeResourceRules``: any rule that matches excludes the request;
4. ``resourceRules``: some rule must match: operation (or ``*``), API group, version, resource with its
   subresource (``pods``, ``pods/status``, ``pods/*``, ``*/status``, ``*``, ``*/*``), scope (``Cluster``
   also takes Namespace requests, ``Namespaced`` never does) and, when listed, ``resourceNames``.

``matchPolicy: Equivalent`` also matches the same resource under another version or group upstream
(``deployments`` in ``extensions/v1beta1``); kubeloop serves one version of each built-in resource, so the
exact match is what either policy sees here. Pure functions over plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kubeloop.api import BadRequest, LabelSelector, label_selector_from_dict

__all__ = ["MatchRequest", "matches", "selector_of"]


class MatchRequest(NamedTuple):
    """What the matcher reads of a request."""

    operation: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None
    # The labels of the request's namespace (None: a cluster-scoped request, or not read).
    namespace_labels: Mapping[str, str] | None


_selectors: dict[str, LabelSelector] = {}


def selector_of(selector: Any) -> LabelSelector:
    """A ``metav1.LabelSelector`` (validated when its object was written) as a selector; a nil one matches
    nothing, as ``LabelSelectorAsSelector``."""
    if not isinstance(selector, Mapping):
        return LabelSelector.nothing()
    if not selector:
        return LabelSelector.everything()
    try:
        return label_selector_from_dict(selector)
    except BadRequest:
        return LabelSelector.nothing()


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _is_namespace(request: MatchRequest) -> bool:
    return request.group == "" and request.resource == "namespaces"


def _namespace_matches(selector: Any, request: MatchRequest) -> bool:
    if not request.namespace and not _is_namespace(request):
        return True
    chosen = selector_of(selector)
    if chosen.empty:
        return True
    if _is_namespace(request):
        labels = _labels(request.obj if request.obj is not None else request.old)
        return chosen.matches(labels or {})
    return chosen.matches(request.namespace_labels or {})


def _object_matches(selector: Any, request: MatchRequest) -> bool:
    chosen = selector_of(selector)
    if chosen.empty:
        return True
    return any(labels is not None and chosen.matches(labels) for labels in (_labels(request.obj), _labels(request.old)))


def _any(items: Any, wanted: str) -> bool:
    return isinstance(items, list) and any(item == "*" or item == wanted for item in items)


def _scope_matches(scope: Any, request: MatchRequest) -> bool:
    if scope is None or scope == "*":
        return True
    if scope == "Namespaced":
        return not _is_namespace(request) and bool(request.namespace)
    if scope == "Cluster":
        return _is_namespace(request) or not request.namespace
    return False


def _resource_matches(resources: Any, request: MatchRequest) -> bool:
    for entry in resources if isinstance(resources, list) else ():
        resource, _, sub = str(entry).partition("/")
        if (resource == "*" or resource == request.resource) and (sub == "*" or sub == request.subresource):
            return True
    return False


def _rule_matches(rule: Any, request: MatchRequest) -> bool:
    if not isinstance(rule, Mapping):
        return False
    if not (_scope_matches(rule.get("scope"), request) and _any(rule.get("operations"), request.operation)
            and _any(rule.get("apiGroups"), request.group) and _any(rule.get("apiVersions"), request.version)
            and _resource_matches(rule.get("resources"), request)):
        return False
    names = rule.get("resourceNames")
    return not names or (isinstance(names, list) and request.name in names)


def matches(match: Mapping[str, Any], request: MatchRequest) -> bool:
    """Whether ``request`` falls under the match block ``match`` (policy or binding)."""
    if not _namespace_matches(match.get("namespaceSelector"), request):
        return False
    if not _object_matches(match.get("objectSelector"), request):
        return False
    excluded = match.get("excludeResourceRules")
    if isinstance(excluded, list) and any(_rule_matches(rule, request) for rule in excluded):
        return False
    rules = match.get("resourceRules")
    if not rules:
        return True
    return isinstance(rules, list) and any(_rule_matches(rule, request) for rule in rules)
