"""The store-backed RBAC authorizer re-reads roles and bindings only when one of them changed, and
every grant or revocation takes effect on the next request (k/k RBAC reads through informers)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeloop.server._authn import User
from kubeloop.server._authz import Decision, request_attributes
from kubeloop.server._authz_rbac import (
    RbacAuthorizer,
    RbacSnapshot,
    StoreChanges,
    evaluate,
    store_lister,
    store_rbac_authorizer,
)
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


async def test_a_write_while_the_objects_are_read_is_seen_by_the_next_decision(store: SqliteStore) -> None:
    # The watch starts before the lists are read: a binding written after its list was read (so the
    # snapshot lacks it) is still caught, and the next request reads again.
    await _put_role(store)
    read = store_lister(store)
    written: list[str] = []

    async def lister(plural: str) -> Sequence[Any]:
        objects = await read(plural)
        if plural == "clusterrolebindings" and not written:
            written.append(plural)
            await _put_binding(store)  # rolebindings were listed already
        return objects

    authorizer = RbacAuthorizer(lister=lister, changes=StoreChanges(store))
    assert not (await authorizer.authorize(READ_CM)).allowed  # decided on what was read
    assert (await authorizer.authorize(READ_CM)).allowed


async def test_requests_during_a_refresh_wait_for_it_instead_of_deciding_on_the_old_snapshot(
    store: SqliteStore,
) -> None:
    await _put_role(store)
    read = store_lister(store)
    gate = asyncio.Event()
    gate.set()

    async def lister(plural: str) -> Sequence[Any]:
        await gate.wait()
        return await read(plural)

    authorizer = RbacAuthorizer(lister=lister, changes=StoreChanges(store))
    assert not (await authorizer.authorize(READ_CM)).allowed
    await _put_binding(store)
    gate.clear()
    first = asyncio.create_task(authorizer.authorize(READ_CM))  # refreshes: blocked in the lister
    await asyncio.sleep(0)
    second = asyncio.create_task(authorizer.authorize(READ_CM))
    await asyncio.sleep(0)
    assert not second.done()  # waits for the refresh, not the old snapshot's "no"
    gate.set()
    assert (await first).allowed and (await second).allowed


async def test_a_watch_that_fell_behind_means_changed(tmp_path: Path) -> None:
    small = await SqliteStore.open(tmp_path / "small", watch_buffer=2)
    try:
        authorizer = store_rbac_authorizer(small)
        assert not (await authorizer.authorize(READ_CM)).allowed
        for i in range(3):  # RBAC writes past the watch's buffer, no request in between
            await small.create(f"/registry/{RBAC}/clusterroles/c{i}", _value({"kind": "ClusterRole"}))
        await _put_role(small)
        await _put_binding(small)
        assert (await authorizer.authorize(READ_CM)).allowed
        await small.create("/registry/configmaps/default/x", _value({"kind": "ConfigMap"}))
        assert (await authorizer.authorize(READ_CM)).allowed
    finally:
        await small.close()
