"""Setting or changing a ClusterRole's ``aggregationRule`` needs cluster-admin authority, through the real app
(k/k ``pkg/registry/rbac/clusterrole/policybased/storage.go``: ``hasAggregationRule`` and ``fullAuthority``).

An aggregated role gathers whatever roles its selectors match (the ``clusterrole-aggregation``
controller writes them into its rules), so holding the role's own rules proves nothing.
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
BOB = User("bob", groups=("system:authenticated",))
REFUSED = 'clusterroles.rbac.authorization.k8s.io "{}" is forbidden: must have cluster-admin privileges to use the aggregationRule'


def cluster_role(name: str, *, aggregate: bool = False, rules: list[dict[str, Any]] | None = None,
                 labels: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    role: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "rules": rules or []}
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"gather": "me"}}]}
    return role


async def grant_bob(admin: httpx.AsyncClient, name: str, *rules: dict[str, Any]) -> None:
    assert (await admin.post(f"{RBAC}/clusterroles", json={"metadata": {"name": name}, "rules": list(rules)})).status_code == 201
    binding = {"metadata": {"name": name}, "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
               "subjects": [{"kind": "User", "name": "bob"}]}  # fmt: skip
    assert (await admin.post(f"{RBAC}/clusterrolebindings", json=binding)).status_code == 201


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with rbac_clients(tmp_path, BOB) as (admin, bob):
        # bob may write ClusterRoles and holds get/list on configmaps, but is no cluster admin.
        await grant_bob(admin, "bob-roles",
                        {"apiGroups": [GROUP], "resources": ["clusterroles"], "verbs": ["create", "update", "get"]},
                        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]})  # fmt: skip
        yield admin, bob


async def test_creating_an_aggregated_cluster_role_needs_cluster_admin(clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    admin, bob = clients
    held = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    r = await bob.post(f"{RBAC}/clusterroles", json=cluster_role("gatherer", aggregate=True, rules=held))
    assert r.status_code == 403, r.text
    assert r.json()["message"] == REFUSED.format("gatherer")
    assert r.json()["reason"] == "Forbidden" and r.json()["details"] == {"name": "gatherer", "group": GROUP, "kind": "clusterroles"}
    assert (await bob.post(f"{RBAC}/clusterroles", json=cluster_role("plain", rules=held))).status_code == 201
    assert (await admin.post(f"{RBAC}/clusterroles", json=cluster_role("gatherer", aggregate=True))).status_code == 201


async def test_changing_a_role_that_has_or_gets_an_aggregation_rule_needs_cluster_admin(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    admin, bob = clients
    assert (await bob.post(f"{RBAC}/clusterroles", json=cluster_role("mine"))).status_code == 201
    mine = (await bob.get(f"{RBAC}/clusterroles/mine")).json()
    # Adding an aggregationRule leaves the rules as they are, and is still refused.
    r = await bob.put(f"{RBAC}/clusterroles/mine", json={**mine, **cluster_role("mine", aggregate=True), "metadata": mine["metadata"]})
    assert r.status_code == 403 and r.json()["message"] == REFUSED.format("mine"), r.text

    assert (await admin.post(f"{RBAC}/clusterroles", json=cluster_role("gatherer", aggregate=True))).status_code == 201
    gatherer = (await bob.get(f"{RBAC}/clusterroles/gatherer")).json()
    relabelled = {**gatherer, "metadata": {**gatherer["metadata"], "labels": {"x": "y"}}}
    assert (await bob.put(f"{RBAC}/clusterroles/gatherer", json=relabelled)).status_code == 403
    dropped = {k: v for k, v in gatherer.items() if k != "aggregationRule"}  # the old object had one
    assert (await bob.put(f"{RBAC}/clusterroles/gatherer", json=dropped)).status_code == 403
    # Only what the garbage collector needs (ownerReferences, finalizers) may change.
    finalized = {**gatherer, "metadata": {**gatherer["metadata"], "finalizers": ["example.com/keep"]}}
    assert (await bob.put(f"{RBAC}/clusterroles/gatherer", json=finalized)).status_code == 200


async def test_full_authority_or_the_escalate_verb_may_aggregate(clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    admin, bob = clients
    await grant_bob(admin, "bob-escalates", {"apiGroups": [GROUP], "resources": ["clusterroles"], "verbs": ["escalate"]})
    assert (await bob.post(f"{RBAC}/clusterroles", json=cluster_role("by-escalate", aggregate=True))).status_code == 201
    assert (await admin.delete(f"{RBAC}/clusterrolebindings/bob-escalates")).status_code == 200
    assert (await bob.post(f"{RBAC}/clusterroles", json=cluster_role("refused", aggregate=True))).status_code == 403
    await grant_bob(admin, "bob-everything", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                    {"nonResourceURLs": ["*"], "verbs": ["*"]})  # fmt: skip
    assert (await bob.post(f"{RBAC}/clusterroles", json=cluster_role("by-authority", aggregate=True))).status_code == 201


async def test_relabelling_a_role_takes_holding_its_rules_since_a_label_can_feed_an_aggregated_role(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    # k/k clusterrole/policybased Update: only a GC-fields change skips ConfirmNoEscalation of the rules.
    admin, bob = clients
    secrets = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    assert (await admin.post(f"{RBAC}/clusterroles", json=cluster_role("secret-reader", rules=secrets))).status_code == 201
    reader = (await bob.get(f"{RBAC}/clusterroles/secret-reader")).json()
    relabelled = {**reader, "metadata": {**reader["metadata"], "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}}
    r = await bob.put(f"{RBAC}/clusterroles/secret-reader", json=relabelled)
    assert r.status_code == 403, r.text
    assert 'is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}' in r.json()["message"]
    finalized = {**reader, "metadata": {**reader["metadata"], "finalizers": ["example.com/keep"]}}
    assert (await bob.put(f"{RBAC}/clusterroles/secret-reader", json=finalized)).status_code == 200
    # A role whose rules bob holds may be relabelled.
    held = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    assert (await admin.post(f"{RBAC}/clusterroles", json=cluster_role("cm-reader", rules=held))).status_code == 201
    cm_reader = (await bob.get(f"{RBAC}/clusterroles/cm-reader")).json()
    cm_relabelled = {**cm_reader, "metadata": {**cm_reader["metadata"], "labels": {"team": "blue"}}}
    assert (await bob.put(f"{RBAC}/clusterroles/cm-reader", json=cm_relabelled)).status_code == 200
