"""RBAC decisions and Forbidden messages (k/k rbac evaluation_helpers.go, apiserver responsewriters/errors.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kubeloop.server._authn import User
from kubeloop.server._authz import Attributes, forbidden_error, request_attributes
from kubeloop.server._authz_bootstrap import bootstrap_rbac_objects
from kubeloop.server._authz_rbac import RbacAuthorizer

BOB = User("bob", groups=("devs", "system:authenticated"))
RBAC = "rbac.authorization.k8s.io"


def role(name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": "Role" if namespace else "ClusterRole", "metadata": meta, "rules": rules}


def binding(name: str, kind: str, ref: str, subjects: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": ref},
        "subjects": subjects,
    }


def authorizer(objects: list[dict[str, Any]]) -> RbacAuthorizer:
    plural = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
              "ClusterRoleBinding": "clusterrolebindings"}

    async def lister(resource: str) -> Sequence[dict[str, Any]]:
        return [o for o in objects if plural[o["kind"]] == resource]

    return RbacAuthorizer(lister=lister)


def req(method: str, path: str, query: str = "", user: User = BOB) -> Attributes:
    return request_attributes(user, method, path, query)


READ_CM = role("cm-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}], "default")
BOB_READS_CM = binding("b", "Role", "cm-reader", [{"kind": "User", "name": "bob"}], "default")


async def test_role_binding_grants_only_inside_its_namespace() -> None:
    a = authorizer([READ_CM, BOB_READS_CM])
    assert (await a.authorize(req("GET", "/api/v1/namespaces/default/configmaps/x"))).allowed
    assert (await a.authorize(req("GET", "/api/v1/namespaces/default/configmaps", "watch=true"))).allowed
    assert not (await a.authorize(req("GET", "/api/v1/namespaces/other/configmaps/x"))).allowed
    assert not (await a.authorize(req("DELETE", "/api/v1/namespaces/default/configmaps/x"))).allowed
    assert not (await a.authorize(req("GET", "/api/v1/configmaps"))).allowed


async def test_system_masters_may_do_anything_without_any_rbac_objects() -> None:
    admin = User("admin", groups=("system:masters", "system:authenticated"))
    assert (await authorizer([]).authorize(req("DELETE", "/api/v1/nodes", user=admin))).allowed


async def test_group_and_service_account_subjects_match() -> None:
    cr = role("pods", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}])
    a = authorizer([
        cr,
        binding("g", "ClusterRole", "pods", [{"kind": "Group", "name": "devs"}]),
        binding("sa", "ClusterRole", "pods", [{"kind": "ServiceAccount", "name": "ctl"}], "team"),
    ])
    assert (await a.authorize(req("POST", "/api/v1/namespaces/x/pods"))).allowed
    sa = User("system:serviceaccount:team:ctl", groups=("system:serviceaccounts",))
    assert (await a.authorize(req("GET", "/api/v1/namespaces/team/pods", user=sa))).allowed
    assert not (await a.authorize(req("GET", "/api/v1/namespaces/other/pods", user=sa))).allowed


async def test_subresources_need_their_own_rule_or_a_star_subresource_rule() -> None:
    only_pods = role("p", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}])
    any_status = role("s", [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"]}])
    a = authorizer([only_pods, binding("p", "ClusterRole", "p", [{"kind": "User", "name": "bob"}])])
    assert not (await a.authorize(req("PUT", "/api/v1/namespaces/d/pods/x/status"))).allowed
    b = authorizer([any_status, binding("s", "ClusterRole", "s", [{"kind": "User", "name": "bob"}])])
    assert (await b.authorize(req("PUT", "/apis/apps/v1/namespaces/d/deployments/x/status"))).allowed
    assert not (await b.authorize(req("PUT", "/apis/apps/v1/namespaces/d/deployments/x"))).allowed


async def test_resource_names_restrict_to_named_requests() -> None:
    named = role("n", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"], "resourceNames": ["a"]}])
    a = authorizer([named, binding("n", "ClusterRole", "n", [{"kind": "User", "name": "bob"}])])
    assert (await a.authorize(req("GET", "/api/v1/namespaces/d/configmaps/a"))).allowed
    assert not (await a.authorize(req("GET", "/api/v1/namespaces/d/configmaps/b"))).allowed
    assert not (await a.authorize(req("GET", "/api/v1/namespaces/d/configmaps"))).allowed
    # A list pinned to one name by a field selector carries that name (requestinfo.go).
    assert (await a.authorize(req("GET", "/api/v1/namespaces/d/configmaps", "fieldSelector=metadata.name%3Da"))).allowed


async def test_non_resource_urls_match_exactly_or_by_prefix_star() -> None:
    anon = User("system:anonymous", groups=("system:unauthenticated",))
    a = authorizer(bootstrap_rbac_objects())
    assert (await a.authorize(req("GET", "/readyz", user=anon))).allowed
    assert not (await a.authorize(req("GET", "/api", user=anon))).allowed
    assert (await a.authorize(req("GET", "/apis/apps/v1"))).allowed
    assert not (await a.authorize(req("POST", "/apis/apps/v1"))).allowed


async def test_missing_role_is_named_in_the_denial_reason() -> None:
    a = authorizer([binding("x", "ClusterRole", "ghost", [{"kind": "User", "name": "bob"}])])
    decision = await a.authorize(req("GET", "/api/v1/nodes"))
    assert not decision.allowed
    assert decision.reason == f'RBAC: clusterrole.{RBAC} "ghost" not found'


@pytest.mark.parametrize(
    ("method", "path", "message", "details"),
    [
        (
            "GET", "/api/v1/namespaces/default/configmaps/foo",
            'configmaps "foo" is forbidden: User "bob" cannot get resource "configmaps" in API group "" in the namespace "default"',
            {"kind": "configmaps", "name": "foo"},
        ),
        (
            "GET", "/api/v1/nodes",
            'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope',
            {"kind": "nodes"},
        ),
        (
            "PUT", "/apis/apps/v1/namespaces/d/deployments/web/status",
            'deployments.apps "web" is forbidden: User "bob" cannot update resource "deployments/status" in API group "apps" in the namespace "d"',
            {"kind": "deployments", "name": "web", "group": "apps"},
        ),
        ("GET", "/healthz", 'forbidden: User "bob" cannot get path "/healthz"', None),
    ],
)
def test_forbidden_messages_are_upstreams(method: str, path: str, message: str, details: dict[str, str] | None) -> None:
    status = forbidden_error(req(method, path)).to_status()
    assert status["code"] == 403 and status["reason"] == "Forbidden"
    assert status["message"] == message
    assert status.get("details") == details
