"""Authorization: request attributes, the ``Authorizer`` seam, and the middleware that enforces it.

Contract:

- :func:`request_attributes` derives what a request does (verb, API group, resource, subresource,
  namespace, name, or a non-resource path) with the server's own request parser
  (:func:`kubeloop.server._requestinfo.parse_request_info`, upstream's ``RequestInfoFactory``), so
  routing and authorization never disagree about what a request is.
- An :class:`Authorizer` answers one question (``authorize(attributes) -> Decision``).
- :class:`AuthorizationMiddleware` wraps any ASGI app; it needs ``scope["kubeloop.user"]`` (set by
  authentication) and answers a denied request with the upstream ``403`` ``Status`` (messages of
  apiserver ``endpoints/handlers/responsewriters/errors.go``, see :func:`forbidden_error`). Members of
  ``system:masters`` pass without asking the authorizer, as kube-apiserver's privileged-group
  authorizer, which precedes every authorization mode, lets them (``pkg/kubeapiserver/authorizer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable
from urllib.parse import parse_qs

from kubeloop.api import Forbidden, qualified_resource
from kubeloop.server._authn import USER_SCOPE_KEY, User
from kubeloop.server._http import ASGIApp, Receive, Scope, Send, query_params, send_error
from kubeloop.server._requestinfo import RequestInfo, parse_request_info, request_info

__all__ = [
    "AllowAll",
    "Attributes",
    "AuthorizationMiddleware",
    "Authorizer",
    "Decision",
    "Explainer",
    "RuleResolver",
    "authorize_request",
    "forbidden_error",
    "go_quote",
    "request_attributes",
]



class Attributes(NamedTuple):
    """What a request asks to do (apiserver ``authorizer.Attributes``). Immutable (a named tuple: one is
    built for every request of a user who is not a master, where a frozen dataclass's construction cost
    several times as much)."""

    user: User
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


class Authorizer(Protocol):
    async def authorize(self, attributes: Attributes) -> Decision: ...


@runtime_checkable
class Explainer(Protocol):
    """An authorizer that can also say why it allows a request (the access reviews' ``status.reason``)."""

    async def explain(self, attributes: Attributes) -> Decision: ...


@runtime_checkable
class RuleResolver(Protocol):
    """An authorizer that can also list a user's rules (SelfSubjectRulesReview)."""

    async def rules_for(self, user: User, namespace: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]: ...


def request_attributes(user: User, method: str, path: str, query: str = "") -> Attributes:
    """The attributes of ``method path?query`` made by ``user`` (the server's one request parser)."""
    info = parse_request_info(method, path, parse_qs(query, keep_blank_values=True) if query else {})
    return _attributes(user, path, info)


def _attributes(user: User, path: str, info: RequestInfo) -> Attributes:
    # Positional, in field order (user, verb, resource_request, path, api_group, api_version, resource,
    # subresource, namespace, name): keywords cost a named tuple's constructor about twice as much.
    return Attributes(user, info.verb, info.is_resource_request, path, info.api_group, info.api_version,
                      info.resource, info.subresource, info.namespace, info.name)


def forbidden_error(attributes: Attributes, reason: str = "") -> Forbidden:
    """The 403 kube-apiserver answers for a denied request (``ForbiddenStatusError``)."""
    user = attributes.user.name
    if not attributes.resource_request:
        text = f"User {go_quote(user)} cannot {attributes.verb} path {go_quote(attributes.path)}"
    else:
        resource = attributes.resource
        if attributes.subresource:
            resource = f"{resource}/{attributes.subresource}"
        text = f"User {go_quote(user)} cannot {attributes.verb} resource {go_quote(resource)} in API group {go_quote(attributes.api_group)}"
        text += (
            f" in the namespace {go_quote(attributes.namespace)}" if attributes.namespace else " at the cluster scope"
        )
    if reason:
        text = f"{text}: {reason}"
    if not attributes.resource_request or not attributes.resource:
        return Forbidden(f"forbidden: {text}", details={})
    qualified = qualified_resource(attributes.resource, attributes.api_group)
    details: dict[str, str] = {"kind": attributes.resource}
    if attributes.name:
        details["name"] = attributes.name
        message = f"{qualified} {go_quote(attributes.name)} is forbidden: {text}"
    else:
        message = f"{qualified} is forbidden: {text}"
    if attributes.api_group:
        details["group"] = attributes.api_group
    return Forbidden(message, details=details)


def go_quote(text: str) -> str:
    """Go's ``%q`` for the plain strings that appear in these messages."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class AuthorizationMiddleware:
    """Wraps ``app``: requests the ``authorizer`` denies get 403 and never reach it."""

    def __init__(self, app: ASGIApp, *, authorizer: Authorizer) -> None:
        self.app = app
        self.authorizer = authorizer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        user: User = scope[USER_SCOPE_KEY]
        if user.is_master or await authorize_request(self.authorizer, scope, user, send):
            await self.app(scope, receive, send)


async def authorize_request(authorizer: Authorizer, scope: Scope, user: User, send: Send) -> bool:
    """Whether ``authorizer`` lets ``user`` make the request of ``scope``; a denial is answered (403)."""
    path = scope.get("path", "/")
    # Parsed once: the app routes by this same value and reads the same query (both kept in the scope).
    info = request_info(scope, scope.get("method", "GET"), path, query_params(scope))
    attributes = _attributes(user, path, info)
    decision = await authorizer.authorize(attributes)
    if not decision.allowed:
        await send_error(send, forbidden_error(attributes, decision.reason))
        return False
    return True


class AllowAll:
    """An authorizer that allows everything (tests and single-user embedded use)."""

    async def authorize(self, attributes: Attributes) -> Decision:
        return Decision(True)
