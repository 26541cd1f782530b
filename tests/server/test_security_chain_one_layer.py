"""The one-layer security chain answers exactly as the four middlewares composed in kube-apiserver's order.

``secure()`` runs authentication, impersonation, authorization and self reviews in one ASGI layer with
a fast lookup for the common ``Authorization: Bearer <token>`` request. Every request, on the fast
path or not (other spellings of the header, repeats, unknown tokens, anonymous public paths,
impersonation in any letter case, non-master users, self reviews, websockets), must get the same
status, headers and body, and reach the app as the same user with the same headers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.server._authn import USER_SCOPE_KEY, AuthenticationMiddleware, User
from kubeloop.server._authz import AuthorizationMiddleware
from kubeloop.server._authz_bootstrap import bootstrap_rbac_objects
from kubeloop.server._authz_chain import SecurityChain, secure
from kubeloop.server._authz_impersonate import ImpersonationMiddleware
from kubeloop.server._authz_rbac import RbacAuthorizer
from kubeloop.server._authz_reviews import SelfReviewMiddleware
from kubeloop.server._http import ASGIApp

ADMIN = User("kubernetes-admin", groups=("system:masters", "system:authenticated"))
BOB = User("bob", "u-bob", groups=("system:authenticated",))
TOKENS = {"admin-token": ADMIN, "bob-token": BOB, "has space": BOB, "a,b": ADMIN, "": ADMIN}
RBAC = "rbac.authorization.k8s.io"
OBJECTS: list[dict[str, Any]] = [
    *bootstrap_rbac_objects(),
    {"kind": "Role", "metadata": {"name": "cm", "namespace": "default"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]},
    {"kind": "RoleBinding", "metadata": {"name": "bob-cm", "namespace": "default"},
     "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "cm"}, "subjects": [{"kind": "User", "name": "bob"}]},
    {"kind": "ClusterRole", "metadata": {"name": "impersonate-eve"},
     "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["eve"]}]},
    {"kind": "ClusterRoleBinding", "metadata": {"name": "bob-impersonates-eve"},
     "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "impersonate-eve"},
     "subjects": [{"kind": "User", "name": "bob"}]},
]
PLURALS = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
           "ClusterRoleBinding": "clusterrolebindings"}


async def lister(resource: str) -> Sequence[dict[str, Any]]:
    return [o for o in OBJECTS if PLURALS[o["kind"]] == resource]


async def echo(scope: Any, receive: Any, send: Any) -> None:
    user: User = scope[USER_SCOPE_KEY]
    body = orjson.dumps({"name": user.name, "uid": user.uid, "groups": list(user.groups),
                         "extra": {k: list(v) for k, v in user.extra.items()},
                         "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]]})
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def composed(app: ASGIApp) -> ASGIApp:
    authorizer = RbacAuthorizer(lister=lister)
    inner: ASGIApp = SelfReviewMiddleware(app, authorizer=authorizer)
    inner = AuthorizationMiddleware(inner, authorizer=authorizer)
    inner = ImpersonationMiddleware(inner, authorizer=authorizer)
    return AuthenticationMiddleware(inner, tokens=TOKENS)


async def call(app: ASGIApp, kind: str, method: str, path: str, headers: list[tuple[bytes, bytes]],
               body: bytes) -> list[dict[str, Any]]:
    scope = {"type": kind, "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": list(headers)}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)
    return sent


AUTHORIZATION = st.sampled_from([
    b"Bearer admin-token", b"Bearer bob-token", b"bearer bob-token", b"BEARER admin-token", b"Bearer  bob-token",
    b"Bearer bob-token ", b"Bearer admin-token extra", b"Bearer has space", b"Bearer a,b", b"Bearer ", b"Bearer",
    b"Basic Ym9iOnB3", b"Bearer nobody", b"",
])
AUTH_NAME = st.sampled_from([b"authorization", b"Authorization", b"AUTHORIZATION"])
IMPERSONATE = st.sampled_from([
    (b"impersonate-user", b"bob"), (b"Impersonate-User", b"eve"), (b"IMPERSONATE-USER", b"system:anonymous"),
    (b"impersonate-group", b"system:masters"), (b"Impersonate-Uid", b"1234"),
    (b"impersonate-extra-scopes", b"view"), (b"impersonate-user", b"system:serviceaccount:ns1:robot"),
    (b"x-not-impersonate-user", b"alice"),
])
OTHER = st.sampled_from([(b"accept", b"application/json"), (b"user-agent", b"kubectl"), (b"x-a\nimpersonate-b", b"1")])
PATHS = st.sampled_from([
    "/api/v1/namespaces/default/configmaps/a", "/api/v1/namespaces/default/configmaps", "/api/v1/nodes", "/api",
    "/readyz", "/healthz/ping", "/version", "/metrics", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    "/apis/authentication.k8s.io/v1/selfsubjectreviews", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
])
REVIEW = orjson.dumps({"kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {
    "namespace": "default", "verb": "list", "resource": "configmaps"}}})


@settings(max_examples=400, deadline=None)
@given(
    kind=st.sampled_from(["http", "http", "websocket"]),
    method=st.sampled_from(["GET", "POST", "DELETE"]),
    path=PATHS,
    authorization=st.lists(st.tuples(AUTH_NAME, AUTHORIZATION), max_size=2),
    impersonation=st.lists(IMPERSONATE, max_size=3),
    other=st.lists(OTHER, max_size=2),
    order=st.randoms(use_true_random=False),
)
async def test_one_layer_answers_as_the_composed_middlewares(
    kind: str, method: str, path: str, authorization: list[tuple[bytes, bytes]],
    impersonation: list[tuple[bytes, bytes]], other: list[tuple[bytes, bytes]], order: Any,
) -> None:
    headers = [*authorization, *impersonation, *other]
    order.shuffle(headers)
    chain = secure(echo, tokens=TOKENS, authorizer=RbacAuthorizer(lister=lister))
    assert isinstance(chain, SecurityChain)
    fast = await call(chain, kind, method, path, headers, REVIEW)
    slow = await call(composed(echo), kind, method, path, headers, REVIEW)
    assert fast == slow


async def test_the_common_request_and_each_exception_to_it() -> None:
    chain = secure(echo, tokens=TOKENS, authorizer=RbacAuthorizer(lister=lister))
    cm = "/api/v1/namespaces/default/configmaps/a"

    async def answer(path: str, *headers: tuple[bytes, bytes], method: str = "GET") -> tuple[int, Any]:
        sent = await call(chain, "http", method, path, list(headers), REVIEW)
        return sent[0]["status"], orjson.loads(sent[1]["body"])

    status, body = await answer(cm, (b"authorization", b"Bearer admin-token"))
    assert (status, body["name"]) == (200, "kubernetes-admin")
    status, body = await answer(cm, (b"authorization", b"bearer bob-token"))  # another spelling: the general parse
    assert (status, body["name"]) == (200, "bob")
    status, body = await answer(cm, (b"authorization", b"Bearer bob-token"), (b"authorization", b"Bearer admin-token"))
    assert (status, body["name"]) == (200, "bob")  # the first header counts, as upstream
    status, body = await answer(cm, (b"authorization", b"Bearer a,b"))
    assert (status, body["name"]) == (200, "kubernetes-admin")
    status, body = await answer(cm, (b"authorization", b"Bearer nobody"))
    assert (status, body["reason"]) == (401, "Unauthorized")
    status, body = await answer("/readyz")
    assert (status, body["name"]) == (200, "system:anonymous")
    status, body = await answer("/api/v1/nodes", (b"authorization", b"Bearer bob-token"))
    assert status == 403
    assert body["message"] == 'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope'
    status, body = await answer("/api/v1/nodes", (b"authorization", b"Bearer admin-token"),
                                (b"Impersonate-User", b"bob"))
    assert status == 403
    status, body = await answer("/api", (b"authorization", b"Bearer bob-token"), (b"impersonate-user", b"eve"))
    assert (status, body["name"], body["headers"]) == (200, "eve", [["authorization", "Bearer bob-token"]])
    status, body = await answer("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                (b"authorization", b"Bearer bob-token"), method="POST")
    assert (status, body["status"]["userInfo"]["username"]) == (201, "bob")
