"""The ``authorizer`` of admission CEL expressions, answered by the server's own authorizer.

ValidatingAdmissionPolicy expressions and webhook ``matchConditions`` may ask what a user may do
(:mod:`kubeloop.api._cel_authorizer`, upstream's ``pkg/cel/library/authz.go``). Upstream answers with the
API server's authorizer (``admissionauthorizer.NewCachingAuthorizer`` over it: one answer per question
per request); here :func:`request_authorizer` binds the checks to ``ServerState.authorizer``:

- none (a server built without the security chain, which lets every request through): every check is
  allowed, with no reason, as kube-apiserver's ``AlwaysAllow`` mode answers;
- an RBAC authorizer: its snapshot, read once per request before the expressions run (CEL functions are
  synchronous), decides each check as a request would be decided (``system:masters`` allowed);
- any other authorizer cannot answer synchronously: each check is an errored decision (``errored()``
  true, ``allowed()`` false) with a message that says so.

The user is the request's (``system:anonymous`` when the server knows none). Only a request whose
expressions read ``authorizer`` pays for any of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.server._authn import ANONYMOUS, User
from kubeloop.server._authz import Attributes
from kubeloop.server._authz_rbac import RbacAuthorizer, decide
from kubeloop.server._state import ServerState

__all__ = ["request_authorizer"]

_UNAVAILABLE = "the server's authorizer cannot answer admission expressions (kubeloop answers with RBAC only)"


def _user_of(query: Mapping[str, Any]) -> User:
    user = query.get("user") or {}
    extra = user.get("extra") or {}
    return User(str(user.get("name") or ""), uid=str(user.get("uid") or ""),
                groups=tuple(str(g) for g in user.get("groups") or ()),
                extra={str(k): tuple(str(x) for x in v) for k, v in extra.items()})


def _attributes(query: Mapping[str, Any]) -> Attributes:
    user = _user_of(query)
    if not query.get("resourceRequest"):
        return Attributes(user, str(query.get("verb") or ""), False, path=str(query.get("path") or ""))
    return Attributes(user, str(query.get("verb") or ""), True, api_group=str(query.get("group") or ""),
                      api_version="*", resource=str(query.get("resource") or ""),
                      subresource=str(query.get("subresource") or ""), namespace=str(query.get("namespace") or ""),
                      name=str(query.get("name") or ""))


async def request_authorizer(state: ServerState, user: Any, request: Mapping[str, Any]
                             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``authorizer`` for ``user`` (with ``requestResource`` from ``request``, an AdmissionRequest as
    unstructured JSON), and the CEL functions that answer its checks."""
    # The CEL engine, imported only by a request whose expressions read ``authorizer`` (the API server
    # starts without it: tests/cli/test_startup_imports.py).
    from kubeloop.api._cel_admission import with_authorizer
    from kubeloop.api._cel_authorizer import authorizer_value

    who = user if isinstance(user, User) else ANONYMOUS
    resource = request.get("resource") or {}
    value = authorizer_value(who.name, who.uid, who.groups, {k: list(v) for k, v in who.extra.items()},
                             request_resource={"group": resource.get("group") or "",
                                               "resource": resource.get("resource") or "",
                                               "subresource": request.get("subResource") or "",
                                               "namespace": request.get("namespace") or "",
                                               "name": request.get("name") or ""})
    authorizer = state.authorizer
    if authorizer is None:
        return value, with_authorizer(lambda query: (True, "", ""))
    if not isinstance(authorizer, RbacAuthorizer):
        return value, with_authorizer(lambda query: (False, "", _UNAVAILABLE))
    snapshot = await authorizer.snapshot()
    answers: dict[tuple[Any, ...], tuple[bool, str, str]] = {}  # the caching authorizer: once per question

    def answer(query: Mapping[str, Any]) -> tuple[bool, str, str]:
        attributes = _attributes(query)
        key = (attributes.user.name, attributes.user.groups, *attributes[1:])
        found = answers.get(key)
        if found is None:
            if attributes.user.is_master:
                found = (True, "", "")
            else:
                decision = decide(snapshot, attributes)
                found = (decision.allowed, decision.reason, "")
            answers[key] = found
        return found

    return value, with_authorizer(answer)
