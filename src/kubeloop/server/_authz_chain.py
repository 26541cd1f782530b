"""The request-security chain in front of the API: authentication, impersonation, authorization, self reviews.

``secure(app, tokens=..., authorizer=...)`` returns one ASGI app that runs, in kube-apiserver's order
(``pkg/server/config.go`` ``DefaultBuildHandlerChain``): bearer-token authentication (401), then
impersonation (403 when not allowed), then authorization (403), then the two self-review endpoints,
then ``app``. Every layer is an ASGI app wrapping the next, so each can be used or tested alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubeloop.server._authn import AuthenticationMiddleware, User
from kubeloop.server._authz import AuthorizationMiddleware, Authorizer
from kubeloop.server._authz_impersonate import ImpersonationMiddleware
from kubeloop.server._authz_reviews import SelfReviewMiddleware
from kubeloop.server._http import ASGIApp

__all__ = ["secure"]


def secure(app: ASGIApp, *, tokens: Mapping[str, User], authorizer: Authorizer) -> ASGIApp:
    inner: ASGIApp = SelfReviewMiddleware(app, authorizer=authorizer)
    inner = AuthorizationMiddleware(inner, authorizer=authorizer)
    inner = ImpersonationMiddleware(inner, authorizer=authorizer)
    return AuthenticationMiddleware(inner, tokens=tokens)
