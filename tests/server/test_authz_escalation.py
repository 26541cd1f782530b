"""RBAC escalation prevention through the real app, store and security chain (k/k registry/rbac/*/policybased)."""

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
BOB = User("bob", groups=("system:authenticated",))


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with rbac_clients(tmp_path, BOB) as (admin, bob):
        # bob may manage RBAC objects in "default" and read configmaps there.
        role = {"metadata": {"name": "rbac-manager"}, "rules": [
            {"apiGroups": [GROUP], "resources": ["roles", "rolebindings"], "verbs": ["create", "update", "get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        ]}  # fmt: skip
        assert (await admin.post(f"{RBAC}/namespaces/default/roles", json=role)).status_code == 201
        manager = binding("bob-manager", "Role", "rbac-manager") | {"subjects": [{"kind": "User", "name": "bob"}]}
        assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=manager)).status_code == 201
        yield admin, bob


def binding(name: str, kind: str, role: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role},
            "subjects": [{"kind": "User", "name": "alice"}]}  # fmt: skip


def role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": list(rules)}


async def test_a_user_may_grant_what_they_hold(clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    _, bob = clients
    r = await bob.post(f"{RBAC}/namespaces/default/roles",
                       json=role("reader", {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}))  # fmt: skip
    assert r.status_code == 201, r.text
    r = await bob.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("alice-reads", "Role", "reader"))
    assert r.status_code == 201, r.text


async def test_granting_more_than_held_is_forbidden_with_the_missing_rights(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    _, bob = clients
    r = await bob.post(f"{RBAC}/namespaces/default/roles", json=role(
        "too-much",
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "delete", "watch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]},
    ))  # fmt: skip
    assert r.status_code == 403
    assert r.json()["message"] == (
        'roles.rbac.authorization.k8s.io "too-much" is forbidden: user "bob" (groups=["system:authenticated"]) '
        "is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete" "watch"]}\n'
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["*"]}'
    )


async def test_binding_a_role_with_more_rights_is_forbidden_unless_bind_is_granted(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    admin, bob = clients
    r = await bob.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("alice-admin", "ClusterRole", "cluster-admin"))
    assert r.status_code == 403
    assert "is attempting to grant RBAC permissions not currently held" in r.json()["message"]
    missing = await bob.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("ghost", "ClusterRole", "ghost"))
    assert missing.status_code == 404
    assert missing.json()["message"] == 'clusterroles.rbac.authorization.k8s.io "ghost" not found'

    grant = role("may-bind-admin", {"apiGroups": [GROUP], "resources": ["clusterroles"], "verbs": ["bind"],
                                    "resourceNames": ["cluster-admin"]})  # fmt: skip
    assert (await admin.post(f"{RBAC}/namespaces/default/roles", json=grant)).status_code == 201
    bob_binds = binding("bob-binds", "Role", "may-bind-admin") | {"subjects": [{"kind": "User", "name": "bob"}]}
    assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=bob_binds)).status_code == 201
    r = await bob.post(f"{RBAC}/namespaces/default/rolebindings", json=binding("alice-admin", "ClusterRole", "cluster-admin"))
    assert r.status_code == 201, r.text


async def test_escalate_verb_allows_writing_any_rules(clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    admin, bob = clients
    grant = role("escalator", {"apiGroups": [GROUP], "resources": ["roles"], "verbs": ["escalate"]})
    assert (await admin.post(f"{RBAC}/namespaces/default/roles", json=grant)).status_code == 201
    bob_escalates = binding("bob-escalates", "Role", "escalator") | {"subjects": [{"kind": "User", "name": "bob"}]}
    assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=bob_escalates)).status_code == 201
    r = await bob.post(f"{RBAC}/namespaces/default/roles",
                       json=role("anything", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}))  # fmt: skip
    assert r.status_code == 201, r.text
