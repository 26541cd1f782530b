"""The reviews: ``kubectl auth can-i`` (with ``--list``), ``kubectl auth whoami``, and the delegated
authentication and authorization that proxies and webhooks ask the API server for.

An ASGI middleware that answers six create-only kinds itself (they are never stored, as upstream's
``pkg/registry/authorization`` and ``pkg/registry/authentication`` REST storages; discovery lists them from
:data:`kubeloop.api.REVIEW_RESOURCES`) and passes everything else to the wrapped app. A review path with
another method than POST answers go-restful's 405. Each answer is 201 with the review and its ``status``:

- ``POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews``: evaluates ``spec.resourceAttributes``
  or ``spec.nonResourceAttributes`` for the calling user with the server's authorizer:
  ``status: {allowed, denied?, reason?}``.
- ``POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`` (``kubectl auth can-i --list``): the
  calling user's rules in ``spec.namespace`` when the authorizer can list them
  (:class:`~kubeloop.server._authz.RuleResolver`), else ``incomplete: true``.
- ``POST /apis/authentication.k8s.io/v1/selfsubjectreviews``: ``status.userInfo{username, uid, groups,
  extra}`` of the calling user.
- ``POST /apis/authorization.k8s.io/v1/subjectaccessreviews`` and
  ``POST /apis/authorization.k8s.io/v1/namespaces/<ns>/localsubjectaccessreviews``: the same evaluation
  for the user, groups, uid and extra the spec names (``pkg/registry/authorization/subjectaccessreview``
  and ``localsubjectaccessreview``): 422 for upstream's ``ValidateSubjectAccessReview`` /
  ``ValidateLocalSubjectAccessReview`` errors (``pkg/apis/authorization/validation``: exactly one of the
  attribute kinds, a user or a group, an empty ``metadata`` but for a local review's namespace, which
  ``spec.resourceAttributes.namespace`` must equal; no non-resource attributes in a local review; a
  selector given with both or neither of ``rawSelector`` and ``requirements``, or a requirement that is not
  well formed), and 400 when a local
  review's ``metadata.namespace`` is not the URL's, as the create handler's check answers.
- ``POST /apis/authentication.k8s.io/v1/tokenreviews`` (``pkg/registry/authentication/tokenreview``): 400
  ``token is required for TokenReview in authentication`` without a token; else the token is
  authenticated as a request bearing it would be, for ``spec.audiences`` (default: the server's API
  audiences): a bound ServiceAccount token must be meant for one of them, a static token (audience
  agnostic, ``authenticator.WrapAudienceAgnosticToken``) only when they meet the API audiences.
  ``status: {authenticated, user, audiences}``, or ``{user: {}, error: "invalid bearer token"}``
  (``bearertoken``'s error for a token no authenticator accepts).

Each review is created through upstream's generic create handler (apiserver ``handlers/create.go``), so its
query is a ``CreateOptions`` (a bad ``fieldValidation``, ``dryRun`` or ``fieldManager`` is the 422 every
create answers) and its body is decoded as any create's: JSON, or protobuf (kubectl's typed clients send
protobuf; apimachinery reference section 0 surprise 3) decoded by :func:`kubeloop.api.decode_protobuf_object`;
a JSON value of the wrong type is upstream's 400 (``<Kind> in version "v1" cannot be handled as a <Kind>:
json: cannot unmarshal ...``); unknown and duplicate fields follow ``fieldValidation``
(:mod:`kubeloop.server._field_validation`: a ``Warning`` header each under Warn, the default; the 400
``strict decoding error: unknown field "spec.usr"`` under Strict; nothing under Ignore) and are left out of the
answer, which echoes the decoded review. Answers are JSON, which every client accepts. An access review's
``status.reason`` is the authorizer's: an authorizer that can say why it allows (an
:class:`~kubeloop.server._authz.Explainer`, as RBAC is) is asked through ``explain``, so an allow names its
binding as upstream's RBAC does; the ``system:masters`` allow has none, as upstream's privileged group's.
A selector's ``requirements`` are checked one by one, as metav1 validation checks them. Not modelled: the exact
``%#v`` of owner references and managed fields in the ``metadata`` error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import kubeloop.api
from kubeloop.api import (
    PROTOBUF_MEDIA_TYPE,
    ApiError,
    BadRequest,
    FieldError,
    MethodNotAllowed,
    decode_protobuf_object,
    validate_field_selector_requirement,
    validate_label_selector_requirement,
)
from kubeloop.api._errors import GoSyntax
from kubeloop.server._authn import USER_SCOPE_KEY, User, user_info
from kubeloop.server._authz import Attributes, Authorizer, Explainer, RuleResolver
from kubeloop.server._field_validation import duplicate_texts, strict_decoding_error
from kubeloop.server._http import (
    ASGIApp,
    Receive,
    Request,
    Scope,
    Send,
    decode_json,
    send_error,
    send_json,
    warning_headers,
)
from kubeloop.server._options import parse_write_options

if TYPE_CHECKING:
    from kubeloop.server._service_account_tokens import ServiceAccountTokens

__all__ = [
    "ACCESS_REVIEW_PATH",
    "REVIEW_PATHS",
    "RULES_REVIEW_PATH",
    "SELF_REVIEW_PATH",
    "SUBJECT_ACCESS_REVIEW_PATH",
    "TOKEN_REVIEW_PATH",
    "SelfReviewMiddleware",
    "is_review_path",
    "is_self_review",
]

ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
RULES_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
SELF_REVIEW_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
# Every fixed path this middleware answers; the namespaced local reviews are matched by LOCAL_REVIEW.
REVIEW_PATHS = frozenset((ACCESS_REVIEW_PATH, RULES_REVIEW_PATH, SELF_REVIEW_PATH, SUBJECT_ACCESS_REVIEW_PATH,
                          TOKEN_REVIEW_PATH))
LOCAL_REVIEW_SUFFIX = "/localsubjectaccessreviews"
LOCAL_REVIEW = re.compile(r"/apis/authorization\.k8s\.io/v1/namespaces/([^/]+)/localsubjectaccessreviews")
_AUTHORIZATION = "authorization.k8s.io"
_AUTHENTICATION = "authentication.k8s.io"
_DEFINITIONS = {
    "SelfSubjectAccessReview": "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    "SelfSubjectRulesReview": "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    "SelfSubjectReview": "io.k8s.api.authentication.v1.SelfSubjectReview",
    "SubjectAccessReview": "io.k8s.api.authorization.v1.SubjectAccessReview",
    "LocalSubjectAccessReview": "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
    "TokenReview": "io.k8s.api.authentication.v1.TokenReview",
}

_REVIEWS = {info.kind: info for info in kubeloop.api.REVIEW_RESOURCES}


def is_review_path(path: str) -> bool:
    """Whether ``path`` is one of the reviews' (any method)."""
    return path in REVIEW_PATHS or (path.endswith(LOCAL_REVIEW_SUFFIX) and LOCAL_REVIEW.fullmatch(path) is not None)


def is_self_review(scope: Scope) -> bool:
    """Whether a request is for one of the reviews: an HTTP request to one of their paths, any method (the
    middleware answers the others' methods with 405, as upstream's create-only routes)."""
    return scope["type"] == "http" and is_review_path(scope.get("path", ""))


class SelfReviewMiddleware:
    """Answers the reviews (see the module docstring); ``tokens`` (the static bearer tokens) and
    ``accounts`` (the ServiceAccount token authenticator, by default the app's) serve the TokenReviews."""

    def __init__(self, app: ASGIApp, *, authorizer: Authorizer, tokens: Mapping[str, User] | None = None,
                 accounts: ServiceAccountTokens | None = None) -> None:  # fmt: skip
        self.app = app
        self.authorizer = authorizer
        self.tokens = dict(tokens or {})
        self.accounts = accounts if accounts is not None else getattr(app, "service_account_tokens", None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if is_self_review(scope):
            await self.answer(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a review (a request :func:`is_self_review` accepts)."""
        path = scope.get("path", "")
        warnings: list[str] = []
        try:
            if scope.get("method") != "POST":
                raise MethodNotAllowed(
                    "the server does not allow this method on the requested resource",
                    details={"causes": [{"reason": "UnexpectedServerResponse", "message": "405: Method Not Allowed"}]})
            user: User = scope[USER_SCOPE_KEY]
            request = Request(scope, receive)
            directive = parse_write_options(request.query, kind="CreateOptions").field_validation or "Warn"
            raw = await request.body()

            def body(kind: str) -> dict[str, Any]:
                return _decode(request.content_type, raw, kind, directive, warnings)

            if path == ACCESS_REVIEW_PATH:
                answer = await self._access_review(user, body("SelfSubjectAccessReview"))
            elif path == RULES_REVIEW_PATH:
                answer = await self._rules_review(user, body("SelfSubjectRulesReview"))
            elif path == SELF_REVIEW_PATH:
                body("SelfSubjectReview")
                answer = _self_review(user)
            elif path == SUBJECT_ACCESS_REVIEW_PATH:
                answer = await self._subject_access_review(body("SubjectAccessReview"), namespace=None)
            elif path == TOKEN_REVIEW_PATH:
                answer = await self._token_review(body("TokenReview"))
            else:
                match = LOCAL_REVIEW.fullmatch(path)
                assert match is not None
                answer = await self._subject_access_review(body("LocalSubjectAccessReview"), namespace=match.group(1))
        except ApiError as error:
            await send_error(send, error, warnings=warnings)
            return
        await send_json(send, 201, answer, headers=warning_headers(warnings) if warnings else None)

    async def _access_review(self, user: User, body: dict[str, Any]) -> dict[str, Any]:
        spec = _dict(body.get("spec"))
        errors = _attribute_errors(spec)
        errors.extend(_metadata_errors(body, "must be empty"))
        if errors:
            raise kubeloop.api.invalid("SelfSubjectAccessReview", "", errors, group=_AUTHORIZATION)
        status = await self._evaluate(_attributes(user, spec))
        return {"kind": "SelfSubjectAccessReview", "apiVersion": f"{_AUTHORIZATION}/v1",
                "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}  # fmt: skip

    async def _evaluate(self, attributes: Attributes) -> dict[str, Any]:
        authorizer = self.authorizer
        if isinstance(authorizer, Explainer):
            decision = await authorizer.explain(attributes)
        else:
            decision = await authorizer.authorize(attributes)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    async def _subject_access_review(self, body: dict[str, Any], *, namespace: str | None) -> dict[str, Any]:
        """A SubjectAccessReview (``namespace`` None) or a LocalSubjectAccessReview in ``namespace``."""
        kind = "SubjectAccessReview" if namespace is None else "LocalSubjectAccessReview"
        spec = _dict(body.get("spec"))
        metadata = _dict(body.get("metadata"))
        if namespace is not None:
            # The create handler's EnsureObjectNamespaceMatchesRequestNamespace, before the REST storage.
            given = metadata.get("namespace") or ""
            if given and given != namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
            metadata = {**metadata, "namespace": namespace}
            body = {**body, "metadata": metadata}
        else:
            metadata = {k: v for k, v in metadata.items() if k != "namespace"}  # cleared for a cluster-scoped kind
            body = {**body, "metadata": metadata}
        errors = _attribute_errors(spec)
        if not spec.get("user") and not spec.get("groups"):
            errors.append(FieldError.invalid("spec.user", spec.get("user") or "",
                                             "at least one of user or group must be specified"))
        if namespace is None:
            errors.extend(_metadata_errors(body, "must be empty"))
        else:
            errors.extend(_metadata_errors(body, "must be empty except for namespace"))
            resource = spec.get("resourceAttributes")
            if isinstance(resource, dict) and (resource.get("namespace") or "") != namespace:
                errors.append(FieldError.invalid("spec.resourceAttributes.namespace", resource.get("namespace") or "",
                                                 "must match metadata.namespace"))
            if spec.get("nonResourceAttributes") is not None:
                errors.append(FieldError.invalid("spec.nonResourceAttributes",
                                                 _go_struct("NonResourceAttributes", spec["nonResourceAttributes"]),
                                                 "disallowed on this kind of request"))
        if errors:
            raise kubeloop.api.invalid(kind, "", errors, group=_AUTHORIZATION)
        extra = {str(k): tuple(str(v) for v in vs) for k, vs in _dict(spec.get("extra")).items() if isinstance(vs, list)}
        subject = User(str(spec.get("user") or ""), str(spec.get("uid") or ""),
                       tuple(str(g) for g in spec.get("groups") or ()), extra)
        status = await self._evaluate(_attributes(subject, spec))
        answer_meta: dict[str, Any] = {"creationTimestamp": None}
        if namespace is not None:
            answer_meta = {"namespace": namespace, "creationTimestamp": None}
        return {"kind": kind, "apiVersion": f"{_AUTHORIZATION}/v1", "metadata": answer_meta, "spec": spec,
                "status": status}  # fmt: skip

    async def _token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        spec = _dict(body.get("spec"))
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise BadRequest("token is required for TokenReview in authentication")
        implicit = tuple(self.accounts.audiences) if self.accounts is not None else ()
        asked = tuple(str(a) for a in spec.get("audiences") or ())
        audiences = asked or implicit
        status: dict[str, Any]
        found = await self._authenticate(token, audiences, implicit)
        if found is None:
            status = {"user": {}, "error": "invalid bearer token"}
        else:
            user, matched = found
            status = {"authenticated": True, "user": user_info(user)}
            if matched:
                status["audiences"] = matched
        return {"kind": "TokenReview", "apiVersion": f"{_AUTHENTICATION}/v1", "metadata": {"creationTimestamp": None},
                "spec": spec, "status": status}  # fmt: skip

    async def _authenticate(self, token: str, audiences: tuple[str, ...],
                            implicit: tuple[str, ...]) -> tuple[User, list[str]] | None:  # fmt: skip
        """The user of ``token`` for ``audiences`` and the audiences it is good for, or None."""
        static = self.tokens.get(token)
        if static is not None:
            # Audience agnostic: good for the API audiences the request names (all of them by default).
            matched = [a for a in audiences if a in implicit] if implicit else []
            if implicit and not matched:
                return None
            return static, matched
        if self.accounts is None:
            return None
        return await self.accounts.review(token, audiences)

    async def _rules_review(self, user: User, body: dict[str, Any]) -> dict[str, Any]:
        spec = _dict(body.get("spec"))
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
            "apiVersion": f"{_AUTHORIZATION}/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _attributes(user: User, spec: dict[str, Any]) -> Attributes:
    """``authorizationutil.AuthorizationAttributesFrom``: the spec's resource or non-resource attributes."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(
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
    non_resource = _dict(spec.get("nonResourceAttributes"))
    return Attributes(user=user, verb=str(non_resource.get("verb") or ""), resource_request=False,
                      path=str(non_resource.get("path") or ""))  # fmt: skip


def _attribute_errors(spec: dict[str, Any]) -> list[FieldError]:
    """``ValidateSubjectAccessReviewSpec``'s checks of the attributes (1.32)."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errors: list[FieldError] = []
    if resource is not None and non_resource is not None:
        errors.append(FieldError.invalid("spec.nonResourceAttributes", _go_struct("NonResourceAttributes", non_resource),
                                         "cannot be specified in combination with resourceAttributes"))
    if resource is None and non_resource is None:
        errors.append(FieldError.invalid("spec.resourceAttributes", None,
                                         "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    if isinstance(resource, dict):
        for name in ("fieldSelector", "labelSelector"):
            selector = resource.get(name)
            if not isinstance(selector, dict):
                continue
            path = f"spec.resourceAttributes.{name}"
            raw, requirements = selector.get("rawSelector") or "", selector.get("requirements") or []
            if raw and requirements:
                errors.append(FieldError.invalid(f"{path}.rawSelector", raw, "may not specified at the same time as requirements"))
            if not raw and not requirements:
                errors.append(FieldError.required(f"{path}.requirements",
                                                  f"when {path} is specified, requirements or rawSelector is required"))
            if isinstance(requirements, list):
                # validateFieldSelectorAttributes / validateLabelSelectorAttributes: with
                # AllowUnknownOperatorInRequirement, as a newer client's operator only narrows the request.
                check = validate_label_selector_requirement if name == "labelSelector" else validate_field_selector_requirement
                for index, requirement in enumerate(requirements):
                    errors.extend(check(_dict(requirement), f"{path}.requirements[{index}]", allow_unknown_operator=True))
    return errors


_META_FIELDS = (("Name", "name", "s"), ("GenerateName", "generateName", "s"), ("Namespace", "namespace", "s"),
                ("SelfLink", "selfLink", "s"), ("UID", "uid", "s"), ("ResourceVersion", "resourceVersion", "s"),
                ("Generation", "generation", "i"))  # fmt: skip


def _metadata_errors(body: dict[str, Any], detail: str) -> list[FieldError]:
    """``metadata`` must be empty (its ``managedFields`` aside; a local review's ``namespace`` aside, which
    the caller checked): the value shown as Go's ``%#v`` of the ``ObjectMeta``."""
    metadata = _dict(body.get("metadata"))
    rest = {k: v for k, v in metadata.items()
            if k not in ("managedFields", "creationTimestamp") and v not in (None, "", 0, {}, [])}  # fmt: skip
    if detail.endswith("namespace"):
        rest.pop("namespace", None)
    if metadata.get("creationTimestamp"):
        rest["creationTimestamp"] = metadata["creationTimestamp"]
    if not rest:
        return []
    return [FieldError.invalid("metadata", GoSyntax(_object_meta(metadata)), detail)]


def _go_string_map(value: Any) -> str:
    if not isinstance(value, dict) or not value:
        return "map[string]string(nil)" if not isinstance(value, dict) else "map[string]string{}"
    return "map[string]string{" + ", ".join(f"{_q(k)}:{_q(v)}" for k, v in sorted(value.items())) + "}"


def _q(value: Any) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _object_meta(meta: dict[str, Any]) -> str:
    """Go's ``%#v`` of a ``metav1.ObjectMeta`` for the fields a review's metadata may carry (the scalars,
    labels, annotations and finalizers; owner references and managed fields shown by count only)."""
    parts = []
    for go, key, shape in _META_FIELDS:
        value = meta.get(key)
        parts.append(f"{go}:{int(value) if isinstance(value, int) else 0}" if shape == "i" else f"{go}:{_q(value or '')}")
    parts.append("CreationTimestamp:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)")
    parts.append("DeletionTimestamp:<nil>")
    parts.append("DeletionGracePeriodSeconds:(*int64)(nil)")
    parts.append(f"Labels:{_go_string_map(meta.get('labels'))}")
    parts.append(f"Annotations:{_go_string_map(meta.get('annotations'))}")
    owners = meta.get("ownerReferences")
    parts.append(f"OwnerReferences:[]v1.OwnerReference{{...{len(owners)}}}" if owners else "OwnerReferences:[]v1.OwnerReference(nil)")
    finalizers = meta.get("finalizers")
    parts.append("Finalizers:[]string{" + ", ".join(_q(f) for f in finalizers) + "}" if finalizers
                 else "Finalizers:[]string(nil)")  # fmt: skip
    managed = meta.get("managedFields")
    parts.append(f"ManagedFields:[]v1.ManagedFieldsEntry{{...{len(managed)}}}" if managed
                 else "ManagedFields:[]v1.ManagedFieldsEntry(nil)")  # fmt: skip
    return "v1.ObjectMeta{" + ", ".join(parts) + "}"


def _go_struct(name: str, value: Any) -> Any:
    """A non-nil attributes pointer as ``field.Error`` prints it (its struct, ``%#v``)."""
    if not isinstance(value, dict):
        return None
    fields = ", ".join(f"{k[:1].upper()}{k[1:]}:{_q(v)}" for k, v in (("path", value.get("path") or ""),
                                                                       ("verb", value.get("verb") or "")))
    return GoSyntax(f"authorization.{name}{{{fields}}}")


def _self_review(user: User) -> dict[str, Any]:
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": f"{_AUTHENTICATION}/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": user_info(user)},
    }


def _decode(content_type: str, body: bytes, kind: str, directive: str, warnings: list[str]) -> dict[str, Any]:
    """The review's body decoded into its Go struct (``create.go``'s decode): a type error is a 400; the
    unknown fields are dropped, and they and a JSON body's duplicate keys are handled by ``directive``
    (Strict: a 400; Warn: appended to ``warnings``; Ignore: nothing)."""
    if content_type == PROTOBUF_MEDIA_TYPE:
        decoded = decode_protobuf_object(body)
        texts: list[str] = []  # a protobuf body holds declared fields only
    else:
        decoded = decode_json(body) if body else {}
        texts = duplicate_texts(body, directive, decoded) if body else []
    if not isinstance(decoded, dict):
        raise BadRequest("the request body must be an object")
    from kubeloop.api._go_decode import decode, go_struct

    walked = decode(decoded, go_struct(_DEFINITIONS[kind]))
    if walked.error is not None:
        raise BadRequest(f'{kind} in version "v1" cannot be handled as a {kind}: {walked.error}')
    walked.drop_unknown()
    texts.extend(f'unknown field "{path}"' for path in walked.unknown)
    if texts and directive == "Strict":
        raise strict_decoding_error(_REVIEWS[kind], decoded, texts)
    if directive == "Warn":
        warnings.extend(texts)
    return decoded
