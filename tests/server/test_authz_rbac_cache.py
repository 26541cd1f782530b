"""The store-backed RBAC authorizer re-reads roles and bindings only when one of them changed, and
every grant or revocation takes effect on the next request (k/k RBAC reads through informers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeloop.server._authn import User
from kubeloop.server._authz import Decision, request_attributes
from kubeloop.server._authz_rbac import RbacSnapshot, evaluate, store_rbac_authorizer
from kubeloop.store import SqliteStore

RBAC = "rbac.authorization.k8s.io"
BOB = User("bob", groups=("system:authenticated",))
READ_CM = request_attributes(BOB, "GET", "/api/v1/namespaces/default/configmaps/x", "")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = await SqliteStore.open(tmp_path / "db")
    yield s
    await s.close()


def _value(obj: dict[str, Any]) -> Any:
    return lambda _revision: orjson.dumps(obj)


async def _put_role(store: SqliteStore) -> None:
    role = {"kind": "Role", "metadata": {"name": "r", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    await store.create(f"/registry/{RBAC}/roles/default/r", _value(role))


async def _put_binding(store: SqliteStore, user: str = "bob") -> None:
    binding = {"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "default"},
               "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"},
               "subjects": [{"kind": "User", "name": user}]}
    key = f"/registry/{RBAC}/rolebindings/default/b"
    current = await store.get(key)
    if current is None:
        await store.create(key, _value(binding))
    else:
        await store.update(key, _value(binding), expected_revision=current.mod_revision)


async def test_unrelated_writes_reuse_the_snapshot_and_rbac_changes_apply_at_once(store: SqliteStore) -> None:
    authorizer = store_rbac_authorizer(store)
    await _put_role(store)
    assert not (await authorizer.authorize(READ_CM)).allowed
    await _put_binding(store)
    assert (await authorizer.authorize(READ_CM)).allowed  # a new binding: read again
    before = await authorizer.snapshot()
    await store.create("/registry/configmaps/default/x", _value({"kind": "ConfigMap"}))
    assert await authorizer.snapshot() is before  # the revision moved, no RBAC object did
    await _put_binding(store, user="alice")
    assert not (await authorizer.authorize(READ_CM)).allowed  # an updated binding: read again
    await _put_binding(store)
    assert (await authorizer.authorize(READ_CM)).allowed
    await store.delete(f"/registry/{RBAC}/rolebindings/default/b", expected_revision=None)
    assert not (await authorizer.authorize(READ_CM)).allowed  # a deletion alone: read again


def test_decisions_over_one_snapshot_answer_as_over_a_fresh_one_whatever_was_asked_before() -> None:
    # The rules bound to a user are remembered per snapshot by name, groups and namespace: a
    # snapshot shared by many requests must decide each exactly as a snapshot never asked before.
    cm_reader = {"kind": "Role", "metadata": {"name": "r", "namespace": "default"},
                 "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    bindings = [
        {"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "default"},
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "bob"}]},
        {"kind": "RoleBinding", "metadata": {"name": "g", "namespace": "team"},
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "gone"}, "subjects": [{"kind": "Group", "name": "devs"}]},
    ]
    cluster_bindings = [
        {"kind": "ClusterRoleBinding", "metadata": {"name": "view"},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "missing"},
         "subjects": [{"kind": "Group", "name": "devs"}]},
    ]

    def fresh() -> RbacSnapshot:
        return RbacSnapshot.of(roles=[cm_reader], role_bindings=bindings, cluster_role_bindings=cluster_bindings)

    users = [BOB, User("bob", groups=("devs",)), User("alice", groups=("devs",)), User("alice")]
    paths = ["/api/v1/namespaces/default/configmaps/x", "/api/v1/namespaces/team/configmaps/x",
             "/api/v1/configmaps", "/api/v1/namespaces/default/secrets/x"]
    asked = [request_attributes(user, "GET", path, "") for user in users for path in paths]
    shared = fresh()
    for attributes in [*asked, *reversed(asked)]:
        assert evaluate(shared, attributes) == evaluate(fresh(), attributes), attributes
    assert evaluate(shared, asked[0]).allowed
    assert evaluate(shared, request_attributes(User("bob", groups=("devs",)), "GET", paths[1], "")) == Decision(
        False, 'RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, '
               'role.rbac.authorization.k8s.io "gone" not found]')
