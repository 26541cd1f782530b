"""What every start of ``kubeloop up`` makes: the system namespaces and the default RBAC objects.

A first start creates them; a restart only reads them (upstream reads before it creates: the
system-namespaces controller's ``createNamespaceIfNeeded``, the RBAC bootstrap's reconcile), so it
rewrites nothing, and re-creates only what is missing. Through the same functions ``kubeloop up``
runs (``App.startup`` and ``cli._bootstrap.bootstrap``) on a SQLite store that is closed and reopened.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from kubeloop.api import SystemClock
from kubeloop.cli._bootstrap import asgi_call, bootstrap
from kubeloop.server import (
    ENVTEST_DISABLED_ADMISSION_PLUGINS,
    SYSTEM_NAMESPACES,
    AdmissionAttributes,
    bootstrap_rbac_objects,
    create_app,
)
from kubeloop.store import SqliteStore


def _path(obj: dict[str, Any]) -> str:
    plural = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}[obj["kind"]]
    return f"/apis/rbac.authorization.k8s.io/v1/{plural}/{obj['metadata']['name']}"


async def _start(data_dir: Path, *, creates: list[str] | None = None) -> tuple[SqliteStore, Any]:
    store = await SqliteStore.open(data_dir / "kubeloop.db")
    app = create_app(store=store, clock=SystemClock(), rng=random.Random(1), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    if creates is not None:

        async def record(attributes: AdmissionAttributes, obj: Any, old: Any) -> None:
            if attributes.operation == "CREATE":
                creates.append(f"{attributes.resource.plural}/{attributes.name}")

        app.admission.append(record)
    await app.startup()
    await bootstrap(app)
    return store, app


async def _versions(app: Any) -> dict[str, str]:
    paths = [f"/api/v1/namespaces/{name}" for name in SYSTEM_NAMESPACES]
    paths += [_path(obj) for obj in bootstrap_rbac_objects()]
    versions = {}
    for path in paths:
        status, body = await asgi_call(app, "GET", path)
        assert status == 200, (path, status)
        versions[path] = body["metadata"]["resourceVersion"]
    return versions


async def _stop(store: SqliteStore, app: Any) -> None:
    await app.shutdown()
    await store.close()


async def test_a_restart_rewrites_no_bootstrap_object_and_recreates_a_missing_one(tmp_path: Path) -> None:
    store, app = await _start(tmp_path)
    first = await _versions(app)
    assert len(first) == len(SYSTEM_NAMESPACES) + len(bootstrap_rbac_objects())
    removed = _path(bootstrap_rbac_objects()[0])
    status, _ = await asgi_call(app, "DELETE", removed)
    assert status == 200
    revision = store.revision
    await _stop(store, app)

    creates: list[str] = []
    store, app = await _start(tmp_path, creates=creates)
    try:
        assert creates == [removed.split("/v1/")[1]]  # the others are read, not created and refused
        again = await _versions(app)
        assert store.revision == revision + 1  # the one re-create; nothing else was written
        assert {p: v for p, v in again.items() if p != removed} == {p: v for p, v in first.items() if p != removed}
        assert int(again[removed]) == revision + 1
    finally:
        await _stop(store, app)


async def test_a_first_start_creates_every_system_namespace_active(tmp_path: Path) -> None:
    store, app = await _start(tmp_path)
    try:
        status, body = await asgi_call(app, "GET", "/api/v1/namespaces")
        assert status == 200
        assert {ns["metadata"]["name"] for ns in body["items"]} == set(SYSTEM_NAMESPACES)
        assert all(ns["status"]["phase"] == "Active" for ns in body["items"])
    finally:
        await _stop(store, app)

