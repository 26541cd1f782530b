"""The security chain end to end in-process: authn -> impersonation -> RBAC -> self reviews -> app."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import orjson

from kubeloop.server._authn import USER_SCOPE_KEY, User
from kubeloop.server._authz_bootstrap import bootstrap_rbac_objects
from kubeloop.server._authz_chain import secure
from kubeloop.server._authz_rbac import RbacAuthorizer

ADMIN = User("kubernetes-admin", groups=("system:masters", "system:authenticated"))
BOB = User("bob", groups=("system:authenticated",))
TOKENS = {"admin-token": ADMIN, "bob-token": BOB}
RBAC = "rbac.authorization.k8s.io"

OBJECTS: list[dict[str, Any]] = [
    *bootstrap_rbac_objects(),
    {"kind": "Role", "metadata": {"name": "cm", "namespace": "default"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]},
    {"kind": "RoleBinding", "metadata": {"name": "bob-cm", "namespace": "default"},
     "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "cm"}, "subjects": [{"kind": "User", "name": "bob"}]},
]
PLURALS = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
           "ClusterRoleBinding": "clusterrolebindings"}


async def lister(resource: str) -> Sequence[dict[str, Any]]:
    return [o for o in OBJECTS if PLURALS[o["kind"]] == resource]


async def echo_user(scope: Any, receive: Any, send: Any) -> None:
    user: User = scope[USER_SCOPE_KEY]
    body = orjson.dumps({"name": user.name, "groups": list(user.groups)})
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def client(token: str | None) -> httpx.AsyncClient:
    app = secure(echo_user, tokens=TOKENS, authorizer=RbacAuthorizer(lister=lister))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://k", headers=headers)


async def test_allowed_request_reaches_the_app_and_denied_one_is_403() -> None:
    async with client("bob-token") as c:
        assert (await c.get("/api/v1/namespaces/default/configmaps/a")).status_code == 200
        r = await c.delete("/api/v1/namespaces/default/configmaps/a")
    assert r.status_code == 403
    assert r.json()["message"] == (
        'configmaps "a" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "default"'
    )
    assert r.headers["x-content-type-options"] == "nosniff"


async def test_admin_may_impersonate_and_then_has_only_the_impersonated_rights() -> None:
    async with client("admin-token") as c:
        r = await c.get("/api/v1/namespaces/default/configmaps/a", headers={"Impersonate-User": "bob"})
        assert r.json() == {"name": "bob", "groups": ["system:authenticated"]}
        r = await c.get("/api/v1/nodes", headers={"Impersonate-User": "bob"})
        assert r.status_code == 403
        r = await c.get("/api/v1/nodes", headers=[("Impersonate-User", "eve"), ("Impersonate-Group", "system:masters")])
        assert r.status_code == 200
        assert r.json()["groups"] == ["system:masters", "system:authenticated"]


async def test_non_admin_cannot_impersonate() -> None:
    async with client("bob-token") as c:
        r = await c.get("/api/v1/namespaces/default/configmaps/a", headers={"Impersonate-User": "alice"})
    assert r.status_code == 403
    assert r.json()["message"] == (
        'users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope'
    )


async def test_self_subject_access_review_answers_for_the_caller() -> None:
    def review(verb: str, resource: str, namespace: str = "default") -> dict[str, Any]:
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "group": "",
                                                "resource": resource}}}

    async with client("bob-token") as c:
        path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        yes = await c.post(path, content=orjson.dumps(review("list", "configmaps")))
        no = await c.post(path, content=orjson.dumps(review("create", "configmaps")))
        bad = await c.post(path, content=b"{not json")
        empty = await c.post(path, content=b'{"spec": {}}')
    assert yes.status_code == 201
    assert yes.json()["status"]["allowed"] is True
    assert yes.json()["kind"] == "SelfSubjectAccessReview"
    assert no.json()["status"]["allowed"] is False
    assert bad.status_code == 400
    assert empty.status_code == 422


async def test_self_subject_review_reports_who_i_am() -> None:
    async with client("bob-token") as c:
        r = await c.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         content=b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}')
    assert r.status_code == 201
    assert r.json()["status"]["userInfo"] == {"username": "bob", "groups": ["system:authenticated"]}


async def test_anonymous_reaches_readyz_but_not_the_api() -> None:
    async with client(None) as c:
        assert (await c.get("/readyz")).status_code == 200
        assert (await c.get("/api")).status_code == 401


async def test_self_subject_rules_review_lists_the_callers_rules() -> None:
    path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    body = orjson.dumps({"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}})
    async with client("bob-token") as c:
        r = await c.post(path, content=body)
    assert r.status_code == 201
    status = r.json()["status"]
    assert status["incomplete"] is False
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]} in status["resourceRules"]
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} in status[
        "nonResourceRules"
    ]
    async with client("admin-token") as c:
        r = await c.post(path, content=body)
    # The admin's rules are its bindings' (cluster-admin's), each once: the privileged group lists none of its
    # own upstream (apiserver authorizerfactory/builtin.go), so `kubectl auth can-i --list` shows one [*] row.
    status = r.json()["status"]
    assert [rule for rule in status["resourceRules"] if rule["resources"] == ["*"]] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
    assert [rule for rule in status["nonResourceRules"] if rule["nonResourceURLs"] == ["*"]] == [
        {"verbs": ["*"], "nonResourceURLs": ["*"]}]


async def test_self_review_body_over_the_request_limit_is_413() -> None:
    # apiserver pkg/server/config.go MaxRequestBodyBytes (3 MiB), same limit as every other write.
    async with client("bob-token") as c:
        r = await c.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", content=b" " * (3 * 1024 * 1024 + 1))
    assert r.status_code == 413
    assert r.json()["reason"] == "RequestEntityTooLarge"


async def test_impersonated_service_accounts_and_anonymous_get_upstreams_implicit_groups() -> None:
    async with client("admin-token") as c:
        sa = await c.get("/api", headers={"Impersonate-User": "system:serviceaccount:ns1:robot"})
        named = await c.get("/api", headers=[("Impersonate-User", "system:serviceaccount:ns1:robot"),
                                             ("Impersonate-Group", "team")])
        anonymous = await c.get("/version", headers={"Impersonate-User": "system:anonymous"})
        unauthenticated = await c.get("/version", headers=[("Impersonate-User", "eve"),
                                                       ("Impersonate-Group", "system:unauthenticated")])
    assert sa.json() == {"name": "system:serviceaccount:ns1:robot",
                         "groups": ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]}
    assert named.json()["groups"] == ["team", "system:authenticated"]
    assert anonymous.json() == {"name": "system:anonymous", "groups": ["system:unauthenticated"]}
    assert unauthenticated.json()["groups"] == ["system:unauthenticated"]


async def test_impersonating_a_service_account_is_checked_in_its_namespace() -> None:
    async with client("bob-token") as c:
        r = await c.get("/api", headers={"Impersonate-User": "system:serviceaccount:ns1:robot"})
    assert r.status_code == 403
    assert r.json()["message"] == (
        'serviceaccounts "robot" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" '
        'in API group "" in the namespace "ns1"'
    )


async def test_impersonating_groups_without_a_user_is_500() -> None:
    async with client("admin-token") as c:
        r = await c.get("/api", headers={"Impersonate-Group": "system:masters"})
    assert r.status_code == 500
    assert r.json()["message"] == "Internal error occurred: requested impersonation without impersonating a user"


async def test_impersonation_headers_do_not_reach_the_app() -> None:
    seen: list[list[bytes]] = []

    async def record(scope: Any, receive: Any, send: Any) -> None:
        seen.append([name.lower() for name, _ in scope["headers"]])
        await echo_user(scope, receive, send)

    app = secure(record, tokens=TOKENS, authorizer=RbacAuthorizer(lister=lister))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://k") as c:
        r = await c.get("/api", headers=[("Authorization", "Bearer admin-token"), ("Impersonate-User", "bob"),
                                         ("Impersonate-Extra-Scopes", "view")])
    assert r.json()["name"] == "bob"
    assert not any(name.startswith(b"impersonate-") for name in seen[0])
