"""Self reviews: ``kubectl auth can-i`` (with ``--list``) and ``kubectl auth whoami``.

An ASGI middleware that answers three create-only virtual resources itself and passes everything else
to the wrapped app (they are never stored, as upstream's ``pkg/registry/authorization`` and
``pkg/registry/authentication`` REST storages):

- ``POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews``: evaluates ``spec.resourceAttributes``
  or ``spec.nonResourceAttributes`` for the calling user with the server's authorizer and answers 201
  with the review and ``status: {allowed, denied?, reason?}``.
- ``POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`` (``kubectl auth can-i --list``): the
  calling user's rules in ``spec.namespace`` when the authorizer can list them
  (:class:`~kubeloop.server._authz.RuleResolver`), else ``incomplete: true``.
- ``POST /apis/authentication.k8s.io/v1/selfsubjectreviews``: answers 201 with
  ``status.userInfo{username, uid, groups, extra}`` of the calling user.

Bodies are JSON, or protobuf (kubectl's typed clients send protobuf; apimachinery reference section 0
surprise 3) decoded by :func:`kubeloop.api.decode_protobuf_object`.
Answers are JSON, which kubectl accepts. A malformed body is a 400 Status.
"""

from __future__ import annotations

from typing import Any

import kubeloop.api
from kubeloop.api import PROTOBUF_MEDIA_TYPE, ApiError, BadRequest, decode_protobuf_object
from kubeloop.server._authn import USER_SCOPE_KEY, User
from kubeloop.server._authz import Attributes, Authorizer, RuleResolver
from kubeloop.server._http import ASGIApp, Receive, Request, Scope, Send, decode_json, send_error, send_json

__all__ = ["ACCESS_REVIEW_PATH", "RULES_REVIEW_PATH", "SELF_REVIEW_PATH", "SELF_REVIEW_PATHS", "SelfReviewMiddleware", "is_self_review"]

ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
RULES_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
SELF_REVIEW_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
# Every path this middleware answers (a POST to one of them).
SELF_REVIEW_PATHS = frozenset((ACCESS_REVIEW_PATH, RULES_REVIEW_PATH, SELF_REVIEW_PATH))


def is_self_review(scope: Scope) -> bool:
    """Whether a request is one of the self reviews (a POST to one of their paths)."""
    return scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path", "") in SELF_REVIEW_PATHS


class SelfReviewMiddleware:
    def __init__(self, app: ASGIApp, *, authorizer: Authorizer) -> None:
        self.app = app
        self.authorizer = authorizer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if is_self_review(scope):
            await self.answer(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a self review (a request :func:`is_self_review` accepts)."""
        path = scope.get("path", "")
        user: User = scope[USER_SCOPE_KEY]
        try:
            request = Request(scope, receive)
            body = _decode(request.content_type, await request.body())
            if path == ACCESS_REVIEW_PATH:
                answer = await self._access_review(user, body)
            elif path == RULES_REVIEW_PATH:
                answer = await self._rules_review(user, body)
            else:
                answer = _self_review(user)
        except ApiError as error:
            await send_error(send, error)
            return
        await send_json(send, 201, answer)

    async def _access_review(self, user: User, body: dict[str, Any]) -> dict[str, Any]:
        spec = body.get("spec")
        if not isinstance(spec, dict):
            raise BadRequest("SelfSubjectAccessReview has no spec")
        resource = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        if isinstance(resource, dict):
            attributes = Attributes(
                user=user,
                verb=str(resource.get("verb") or ""),
                resource_request=True,
                api_group=str(resource.get("group") or ""),
                api_version=str(resource.get("version") or ""),
                resource=str(resource.get("resource") or ""),
                subresource=str(resource.get("subresource") or ""),
                namespace=str(resource.get("namespace") or ""),
                name=str(resource.get("name") or ""),
            )
        elif isinstance(non_resource, dict):
            attributes = Attributes(
                user=user,
                verb=str(non_resource.get("verb") or ""),
                resource_request=False,
                path=str(non_resource.get("path") or ""),
            )
        else:
            # apiserver pkg/apis/authorization/validation: exactly one of the two is required.
            raise kubeloop.api.invalid(
                "SelfSubjectAccessReview",
                "",
                [
                    kubeloop.api.FieldError.invalid(
                        "spec.resourceAttributes",
                        None,
                        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                    )
                ],
                group="authorization.k8s.io",
            )
        decision = await self.authorizer.authorize(attributes)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }


    async def _rules_review(self, user: User, body: dict[str, Any]) -> dict[str, Any]:
        raw_spec = body.get("spec")
        spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
        namespace = str(spec.get("namespace") or "")
        status: dict[str, Any]
        if isinstance(self.authorizer, RuleResolver):
            resource_rules, non_resource_rules = await self.authorizer.rules_for(user, namespace)
            status = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}
        else:
            status = {"resourceRules": [], "nonResourceRules": [], "incomplete": True,
                      "evaluationError": "the authorizer cannot list rules"}  # fmt: skip
        return {
            "kind": "SelfSubjectRulesReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }


def _self_review(user: User) -> dict[str, Any]:
    info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    if user.extra:
        info["extra"] = {k: list(v) for k, v in user.extra.items()}
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": info},
    }


def _decode(content_type: str, body: bytes) -> dict[str, Any]:
    if content_type == PROTOBUF_MEDIA_TYPE:
        decoded = decode_protobuf_object(body)
    else:
        decoded = decode_json(body) if body else {}
    if not isinstance(decoded, dict):
        raise BadRequest("the request body must be an object")
    return decoded
