"""Every RBAC change applies to the very next request, through the real app, store and security chain.

The authorizer keeps compiled rules per subject and snapshot; each grant, revocation and rebinding
(Role and ClusterRole rules, RoleBindings, ClusterRoleBindings; created, updated or deleted) must be
seen by the next request of a user who is not a master, as must a role deleted from under its binding
(the denial then names it, as k/k ``rbac.go``'s ``VisitRulesFor`` errors). Upstream reads RBAC through
informers and may lag; kubeloop does not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import User

from ._rbac import rbac_clients

RBAC = "/apis/rbac.authorization.k8s.io/v1"
GROUP = "rbac.authorization.k8s.io"
ROBOT = User("system:serviceaccount:default:robot",
             groups=("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"))
CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with rbac_clients(tmp_path, ROBOT) as (admin, robot):
        assert (await admin.post(CM, json={"metadata": {"name": "x"}})).status_code == 201
        yield admin, robot


def role(name: str, resources: list[str], verbs: list[str], *, kind: str = "Role") -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name},
            "rules": [{"apiGroups": ["", "apps"], "resources": resources, "verbs": verbs}]}  # fmt: skip


def binding(name: str, kind: str, ref: str, subjects: list[dict[str, str]], *, binding_kind: str = "RoleBinding") -> dict[str, Any]:
    return {"kind": binding_kind, "metadata": {"name": name}, "roleRef": {"apiGroup": GROUP, "kind": kind, "name": ref},
            "subjects": subjects}  # fmt: skip


SA = [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]


async def status(client: httpx.AsyncClient, path: str) -> int:
    return (await client.get(path)).status_code


async def replace(admin: httpx.AsyncClient, path: str, change: dict[str, Any]) -> None:
    current = (await admin.get(path)).json()
    r = await admin.put(path, json=current | change)
    assert r.status_code == 200, r.text


async def test_role_and_rolebinding_grant_revoke_and_rebind_apply_to_the_next_request(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    admin, robot = clients
    roles, bindings = f"{RBAC}/namespaces/default/roles", f"{RBAC}/namespaces/default/rolebindings"
    assert await status(robot, f"{CM}/x") == 403
    assert (await admin.post(roles, json=role("reader", ["configmaps"], ["get"]))).status_code == 201
    assert await status(robot, f"{CM}/x") == 403  # a role alone grants nothing
    assert (await admin.post(bindings, json=binding("robot", "Role", "reader", SA))).status_code == 201
    assert await status(robot, f"{CM}/x") == 200  # grant: the very next request
    assert await status(robot, CM) == 403  # list was not granted
    await replace(admin, f"{roles}/reader", {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]})
    assert await status(robot, f"{CM}/x") == 403  # the role's rules changed: get revoked ...
    assert await status(robot, CM) == 200  # ... list granted
    await replace(admin, f"{bindings}/robot", {"subjects": [{"kind": "User", "name": "someone-else"}]})
    assert await status(robot, CM) == 403  # rebound to another subject
    await replace(admin, f"{bindings}/robot", {"subjects": [{"kind": "Group", "name": "system:serviceaccounts:default"}]})
    assert await status(robot, CM) == 200  # rebound to one of the robot's groups
    for _ in range(3):  # writes to other kinds move the revision, not the decision
        assert (await admin.post(CM, json={"metadata": {"generateName": "o-"}})).status_code == 201
        assert await status(robot, CM) == 200
    assert (await admin.delete(f"{roles}/reader")).status_code == 200
    r = await robot.get(CM)  # the role deleted from under its binding: denied, and the reason names it
    assert r.status_code == 403
    assert r.json()["message"].endswith('RBAC: role.rbac.authorization.k8s.io "reader" not found')
    assert (await admin.post(roles, json=role("reader", ["configmaps"], ["list"]))).status_code == 201
    assert await status(robot, CM) == 200  # recreated under the same name: the binding applies again
    assert (await admin.delete(f"{bindings}/robot")).status_code == 200
    assert await status(robot, CM) == 403  # revoked: the binding is gone


async def test_clusterrole_and_clusterrolebinding_changes_apply_to_the_next_request(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    admin, robot = clients
    cluster_roles, cluster_bindings = f"{RBAC}/clusterroles", f"{RBAC}/clusterrolebindings"
    assert (await admin.post(cluster_roles, json=role("deploy-reader", ["deployments"], ["get", "list"], kind="ClusterRole"))).status_code == 201
    crb = binding("robot-deploy", "ClusterRole", "deploy-reader", SA, binding_kind="ClusterRoleBinding")
    assert await status(robot, DEPLOYMENTS) == 403
    assert (await admin.post(cluster_bindings, json=crb)).status_code == 201
    assert await status(robot, DEPLOYMENTS) == 200  # a ClusterRoleBinding: every namespace ...
    assert await status(robot, "/apis/apps/v1/namespaces/other/deployments") == 200
    assert await status(robot, "/apis/apps/v1/deployments") == 200  # ... and cluster-wide
    assert await status(robot, CM) == 403
    # Rules written into the ClusterRole (what upstream's aggregation controller does for an aggregated
    # ClusterRole) apply at once, in every namespace the subject was already decided in.
    await replace(admin, f"{cluster_roles}/deploy-reader", {"rules": [
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]},
    ]})  # fmt: skip
    assert await status(robot, CM) == 200
    assert await status(robot, "/api/v1/namespaces/other/configmaps") == 200
    # The same ClusterRole through a RoleBinding: only in that binding's namespace.
    assert (await admin.delete(f"{cluster_bindings}/robot-deploy")).status_code == 200
    assert await status(robot, DEPLOYMENTS) == 403
    rb = binding("robot-deploy", "ClusterRole", "deploy-reader", SA)
    assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=rb)).status_code == 201
    assert await status(robot, DEPLOYMENTS) == 200
    assert await status(robot, "/apis/apps/v1/namespaces/other/deployments") == 403
    assert await status(robot, "/apis/apps/v1/deployments") == 403
    assert (await admin.delete(f"{cluster_roles}/deploy-reader")).status_code == 200
    r = await robot.get(DEPLOYMENTS)
    assert r.status_code == 403
    assert r.json()["message"].endswith('RBAC: clusterrole.rbac.authorization.k8s.io "deploy-reader" not found')


async def test_a_review_answers_from_the_same_current_rules(clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    # kubectl auth can-i (SelfSubjectAccessReview) decides with the same authorizer, on the same
    # current rules as the requests themselves.
    admin, robot = clients
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "configmaps"}}}  # fmt: skip

    async def can_i() -> bool:
        r = await robot.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=review)
        assert r.status_code == 201, r.text
        return bool(r.json()["status"]["allowed"])

    assert not await can_i()
    assert (await admin.post(f"{RBAC}/namespaces/default/roles", json=role("reader", ["configmaps"], ["get"]))).status_code == 201
    assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("r", "Role", "reader", SA))).status_code == 201
    assert await can_i()
    assert await status(robot, f"{CM}/x") == 200
    assert (await admin.delete(f"{RBAC}/namespaces/default/rolebindings/r")).status_code == 200
    assert not await can_i()
    assert await status(robot, f"{CM}/x") == 403
