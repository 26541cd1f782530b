"""User impersonation (``Impersonate-User``, ``Impersonate-Group``, ``Impersonate-Uid``, ``Impersonate-Extra-*``).

An ASGI middleware placed between authentication and authorization, as kube-apiserver's
``filters/impersonation.go``:

- Without impersonation headers the request passes untouched.
- Each impersonated value needs verb ``impersonate`` from the authorizer for the requesting user:
  ``users/NAME`` (or ``serviceaccounts/NAME`` in its namespace for ``system:serviceaccount:NS:NAME``),
  ``groups/NAME``, ``uids/UID`` and ``userextras/KEY`` (the last two in ``authentication.k8s.io``). A
  denial is the upstream 403 for that check. ``system:masters`` may impersonate anyone.
- Groups or extras without ``Impersonate-User`` are a 500, as upstream answers.
- The impersonated user replaces ``scope["kubeloop.user"]``: its groups are exactly the impersonated
  ones (a service account gets its two service-account groups when none are given), plus
  ``system:authenticated`` unless ``system:authenticated`` or ``system:unauthenticated`` is among them
  (``system:unauthenticated`` instead, for ``system:anonymous``). The headers are removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote

from kubeloop.api import InternalError
from kubeloop.server._authn import USER_SCOPE_KEY, User
from kubeloop.server._authz import Attributes, Authorizer, forbidden_error
from kubeloop.server._http import ASGIApp, Receive, Scope, Send, send_error

__all__ = ["ImpersonationMiddleware", "impersonate", "is_impersonating"]

_USER = b"impersonate-user"
_GROUP = b"impersonate-group"
_UID = b"impersonate-uid"
_EXTRA = b"impersonate-extra-"
_AUTHENTICATION_GROUP = "authentication.k8s.io"


class ImpersonationMiddleware:
    def __init__(self, app: ASGIApp, *, authorizer: Authorizer) -> None:
        self.app = app
        self.authorizer = authorizer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not is_impersonating(scope.get("headers", ())) or await impersonate(self.authorizer, scope, send):
            await self.app(scope, receive, send)


def is_impersonating(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a request carries any ``Impersonate-*`` header."""
    return any(name.lower().startswith(b"impersonate-") for name, _ in headers)


async def impersonate(authorizer: Authorizer, scope: Scope, send: Send) -> bool:
    """Apply a request's impersonation headers to ``scope`` (user replaced, headers removed); or answer
    the request (500 without a user to impersonate, 403 for a check ``authorizer`` denies) and say False."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    username = ""
    uid = ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    kept: list[tuple[bytes, bytes]] = []
    for name, raw in headers:
        lower = name.lower()
        value = raw.decode("latin-1").strip()
        if lower == _USER:
            username = value
        elif lower == _GROUP:
            groups.append(value)
        elif lower == _UID:
            uid = value
        elif lower.startswith(_EXTRA):
            key = unquote(lower[len(_EXTRA) :].decode("latin-1"))
            extra.setdefault(key, []).append(value)
        else:
            kept.append((name, raw))
    if not username:
        await send_error(
            send, InternalError("Internal error occurred: requested impersonation without impersonating a user")
        )
        return False
    requester: User = scope[USER_SCOPE_KEY]
    for check in _checks(requester, username, groups, uid, extra):
        decision = await authorizer.authorize(check)
        if not decision.allowed:
            await send_error(send, forbidden_error(check, decision.reason))
            return False
    scope[USER_SCOPE_KEY] = _impersonated(username, uid, groups, extra)
    scope["headers"] = kept
    return True


def _checks(requester: User, username: str, groups: list[str], uid: str, extra: dict[str, list[str]]) -> list[Attributes]:
    def attrs(resource: str, name: str, *, group: str = "", namespace: str = "", sub: str = "") -> Attributes:
        return Attributes(
            user=requester,
            verb="impersonate",
            resource_request=True,
            api_group=group,
            resource=resource,
            subresource=sub,
            namespace=namespace,
            name=name,
        )

    checks: list[Attributes] = []
    sa = _service_account(username)
    if sa is not None:
        checks.append(attrs("serviceaccounts", sa[1], namespace=sa[0]))
    else:
        checks.append(attrs("users", username))
    checks.extend(attrs("groups", g) for g in groups)
    if uid:
        checks.append(attrs("uids", uid, group=_AUTHENTICATION_GROUP))
    for key, values in extra.items():
        checks.extend(attrs("userextras", v, group=_AUTHENTICATION_GROUP, sub=key) for v in values)
    return checks


def _service_account(username: str) -> tuple[str, str] | None:
    parts = username.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] and parts[2] and parts[3]:
        return parts[2], parts[3]
    return None


def _impersonated(username: str, uid: str, groups: list[str], extra: dict[str, list[str]]) -> User:
    result = list(groups)
    sa = _service_account(username)
    if sa is not None and not groups:
        result = ["system:serviceaccounts", f"system:serviceaccounts:{sa[0]}"]
    if username == "system:anonymous":
        if "system:unauthenticated" not in result:
            result.append("system:unauthenticated")
    elif "system:authenticated" not in result and "system:unauthenticated" not in result:
        result.append("system:authenticated")
    return User(username, uid, tuple(result), {k: tuple(v) for k, v in extra.items()})
