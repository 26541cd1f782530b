"""The ``authorizer`` of admission CEL expressions: upstream's authz library over any decision function.

k8s.io/apiserver ``pkg/cel/library/authz.go`` (1.32) gives ValidatingAdmissionPolicy expressions and
webhook ``matchConditions`` an ``authorizer`` (the request's user) and ``authorizer.requestResource``:

- ``authorizer.path(p)`` a PathCheck (``path must not be empty``), ``authorizer.group(g)`` a GroupCheck,
  ``GroupCheck.resource(r)`` a ResourceCheck (``resource must not be empty``), refined by
  ``.subresource(s)``, ``.namespace(ns)``, ``.name(n)``, ``.fieldSelector(f)``, ``.labelSelector(l)``;
- ``authorizer.serviceAccount(ns, name)`` the same authorizer for that ServiceAccount's user
  (``system:serviceaccount:NS:NAME`` in ``system:serviceaccounts`` and ``system:serviceaccounts:NS``;
  ``Invalid service account name`` / ``Invalid service account namespace``);
- ``check(verb)`` asks the server's authorizer (a resource request with API version ``*``, or a
  non-resource request for a PathCheck, the verb as given) and is a Decision: ``allowed()``,
  ``reason()``, ``errored()``, ``error()`` (``""`` without an error);
- ``authorizer.requestResource`` the ResourceCheck of the request itself (its group, resource,
  subresource, namespace and name).

The values travel as small tagged maps (the engine carries no Python object; see
:mod:`kubeloop.api._cel_library`); :func:`authorizer_functions` binds the receiver functions to one
``decide(query) -> (allowed, reason, error)``, the caller's authorizer, for the evaluations of one
request. A function called on another receiver is ``no such overload``, as cel-go's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubeloop.api._cel_opaque import TYPE_KEY, CelFunctionError
from kubeloop.api._validation import is_dns1123_label, is_dns1123_subdomain

__all__ = ["AUTHORIZER_FUNCTIONS", "Decide", "authorizer_functions", "authorizer_value"]

# decide(query) -> (allowed, reason, error text or ""); query: user (name, uid, groups, extra), verb,
# resourceRequest, and group, resource, subresource, namespace, name, fieldSelector, labelSelector, or path.
Decide = Callable[[Mapping[str, Any]], tuple[bool, str, str]]

# The library's function names, declared in every admission expression's environment.
AUTHORIZER_FUNCTIONS = frozenset({
    "path", "group", "serviceAccount", "resource", "subresource", "namespace", "name", "fieldSelector",
    "labelSelector", "check", "allowed", "reason", "errored", "error"})

_AUTHORIZER, _PATH, _GROUP, _RESOURCE, _DECISION = (
    "authorizer", "authorizer.PathCheck", "authorizer.GroupCheck", "authorizer.ResourceCheck", "authorizer.Decision")


def _user(name: str, uid: str = "", groups: tuple[str, ...] | list[str] = (),
          extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "uid": uid, "groups": list(groups), "extra": dict(extra or {})}


def _resource_check(user: Mapping[str, Any], group: str, resource: str, **fields: str) -> dict[str, Any]:
    check = {TYPE_KEY: _RESOURCE, "user": user, "group": group, "resource": resource, "subresource": "",
             "namespace": "", "name": "", "fieldSelector": "", "labelSelector": ""}
    check.update(fields)
    return check


def authorizer_value(name: str, uid: str = "", groups: tuple[str, ...] | list[str] = (),
                     extra: Mapping[str, Any] | None = None, *,
                     request_resource: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``authorizer`` for a user; ``request_resource`` (group, resource, subresource, namespace, name) also
    sets ``authorizer.requestResource`` (``NewResourceAuthorizerVal``)."""
    user = _user(name, uid, groups, extra)
    value: dict[str, Any] = {TYPE_KEY: _AUTHORIZER, "user": user}
    if request_resource is not None:
        value["requestResource"] = _resource_check(user, str(request_resource.get("group") or ""), **{
            key: str(request_resource.get(key) or "") for key in ("resource", "subresource", "namespace", "name")})
    return value


def _receiver(value: Any, kind: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or value.get(TYPE_KEY) != kind:
        raise CelFunctionError("no such overload")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise CelFunctionError("no such overload")
    return value


def authorizer_functions(decide: Decide) -> dict[str, Callable[..., Any]]:
    """The receiver functions of the library, each check answered by ``decide``."""

    def path(authz: Any, value: Any) -> dict[str, Any]:
        user = _receiver(authz, _AUTHORIZER)["user"]
        if not _text(value).strip():
            raise CelFunctionError("path must not be empty")
        return {TYPE_KEY: _PATH, "user": user, "path": value}

    def group(authz: Any, value: Any) -> dict[str, Any]:
        return {TYPE_KEY: _GROUP, "user": _receiver(authz, _AUTHORIZER)["user"], "group": _text(value)}

    def service_account(authz: Any, namespace: Any, name: Any) -> dict[str, Any]:
        _receiver(authz, _AUTHORIZER)
        if is_dns1123_subdomain(_text(name)):  # ValidateServiceAccountName
            raise CelFunctionError("Invalid service account name")
        if is_dns1123_label(_text(namespace)):  # ValidateNamespaceName
            raise CelFunctionError("Invalid service account namespace")
        return {TYPE_KEY: _AUTHORIZER, "user": _user(
            f"system:serviceaccount:{namespace}:{name}", groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}"))}

    def resource(check: Any, value: Any) -> dict[str, Any]:
        found = _receiver(check, _GROUP)
        if not _text(value).strip():
            raise CelFunctionError("resource must not be empty")
        return _resource_check(found["user"], found["group"], value)

    def refine(field: str) -> Callable[[Any, Any], dict[str, Any]]:
        def refined(check: Any, value: Any) -> dict[str, Any]:
            return {**_receiver(check, _RESOURCE), field: _text(value)}
        return refined

    def check(target: Any, verb: Any) -> dict[str, Any]:
        kind = target.get(TYPE_KEY) if isinstance(target, Mapping) else None
        if kind == _PATH:
            query = {"user": target["user"], "verb": _text(verb), "resourceRequest": False, "path": target["path"]}
        else:
            found = _receiver(target, _RESOURCE)
            query = {**{k: v for k, v in found.items() if k != TYPE_KEY}, "verb": _text(verb), "resourceRequest": True}
        allowed, reason, error = decide(query)
        return {TYPE_KEY: _DECISION, "allowed": allowed, "reason": reason, "error": error}

    def decision_field(field: str, convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def read(decision: Any) -> Any:
            return convert(_receiver(decision, _DECISION)[field])
        return read

    return {
        "path": path, "group": group, "serviceAccount": service_account, "resource": resource,
        "subresource": refine("subresource"), "namespace": refine("namespace"), "name": refine("name"),
        "fieldSelector": refine("fieldSelector"), "labelSelector": refine("labelSelector"), "check": check,
        "allowed": decision_field("allowed", bool), "reason": decision_field("reason", str),
        "errored": decision_field("error", bool), "error": decision_field("error", str),
    }
