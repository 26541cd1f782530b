"""The store-backed RBAC authorizer re-reads roles and bindings only when one of them changed, and
every grant or revocation takes effect on the next request (k/k RBAC reads through informers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeloop.server._authn import User
from kubeloop.server._authz import request_attributes
from kubeloop.server._authz_rbac import store_rbac_authorizer
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
