"""The request-security chain in front of the API: authentication, impersonation, authorization, self reviews.

``secure(app, tokens=..., authorizer=...)`` returns one ASGI app, a :class:`SecurityChain`, that runs,
in kube-apiserver's order (``pkg/server/config.go`` ``DefaultBuildHandlerChain``): bearer-token
authentication (401, as :class:`~kubeloop.server._authn.AuthenticationMiddleware`, then, for a token
that is not a static one, ``token_authenticator``: the bound ServiceAccount tokens), then impersonation
(500/403, as :class:`~kubeloop.server._authz_impersonate.ImpersonationMiddleware`), then authorization
(403, as :class:`~kubeloop.server._authz.AuthorizationMiddleware`), then the reviews (as
:class:`~kubeloop.server._authz_reviews.SelfReviewMiddleware`), then ``app``. Each of those middlewares
still works alone; the chain runs the same checks (the same functions) in one layer, so a request pays
for one ASGI hop, and the common request (the only ``Authorization`` header is ``Bearer <known token>``,
no ``Impersonate-*`` header) is authenticated with one lookup in the request's header map
(:func:`~kubeloop.server._http.header_map`, remembered per distinct header list, as the app's
``Request`` reads it too).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from kubeloop.api import Unauthorized
from kubeloop.server._authn import USER_SCOPE_KEY, User, authenticate, bearer_token, canonical_bearer_headers
from kubeloop.server._authz import Authorizer, authorize_request
from kubeloop.server._authz_impersonate import impersonate, is_impersonating
from kubeloop.server._authz_reviews import (
    LOCAL_REVIEW_SUFFIX,
    REVIEW_PATHS,
    SelfReviewMiddleware,
    is_review_path,
)
from kubeloop.server._http import ASGIApp, Receive, Scope, Send, header_map, send_error

__all__ = ["SecurityChain", "secure"]

_IMPERSONATE_PREFIX = "\nimpersonate-"
# A bearer token that is not a static one -> its user, or None (the bound ServiceAccount tokens).
TokenAuthenticator = Callable[[str], Awaitable["User | None"]]


class SecurityChain:
    """Wraps ``app``: only authenticated, authorized requests reach it, as the impersonated user if any."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: Mapping[str, User],
        authorizer: Authorizer,
        token_authenticator: TokenAuthenticator | None = None,
    ) -> None:
        self.app = app
        self.tokens = dict(tokens)
        self.token_authenticator = token_authenticator
        self.authorizer = authorizer
        state = getattr(app, "state", None)  # the app's admission expressions ask the same authorizer
        if state is not None and getattr(state, "authorizer", False) is None:
            state.authorizer = authorizer
        self._reviews = SelfReviewMiddleware(app, authorizer=authorizer, tokens=self.tokens)
        # Authorization header value -> (user, is a master): the spelling clients send.
        self._bearer: dict[str | None, tuple[User, bool]] = {
            value: (user, user.is_master) for value, user in canonical_bearer_headers(self.tokens).items()
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        headers = header_map(scope)
        known = self._bearer.get(headers.get("authorization"))
        if known is not None:
            user, master = known
        else:
            found = authenticate(self.tokens, scope.get("headers", ()), scope.get("path", ""))
            if found is None and self.token_authenticator is not None:
                # Not a static token: maybe a bound ServiceAccount token (upstream's union authenticator).
                token = bearer_token(scope.get("headers", ()))
                if token:
                    found = await self.token_authenticator(token)
            if found is None:
                await send_error(send, Unauthorized("Unauthorized"))
                return
            user, master = found, found.is_master
        scope[USER_SCOPE_KEY] = user
        # A name that only contains the prefix after a newline takes the exact check, and passes.
        if _IMPERSONATE_PREFIX in headers.names and is_impersonating(scope.get("headers", ())):
            if not await impersonate(self.authorizer, scope, send):
                return
            user = scope[USER_SCOPE_KEY]
            master = user.is_master
        if not master and not await authorize_request(self.authorizer, scope, user, send):
            return
        # The path alone rules out a review for almost every request, without a call.
        path = scope.get("path", "")
        if (path in REVIEW_PATHS or path.endswith(LOCAL_REVIEW_SUFFIX)) and kind == "http" and is_review_path(path):
            await self._reviews.answer(scope, receive, send)
            return
        await self.app(scope, receive, send)


def secure(
    app: ASGIApp,
    *,
    tokens: Mapping[str, User],
    authorizer: Authorizer,
    token_authenticator: TokenAuthenticator | None = None,
) -> ASGIApp:
    return SecurityChain(app, tokens=tokens, authorizer=authorizer, token_authenticator=token_authenticator)
