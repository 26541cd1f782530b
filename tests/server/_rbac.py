"""A secured app with RBAC and escalation prevention over a real store, for RBAC tests through the
security chain: an admin client (``system:masters``) and one other user's client."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from kubeloop.cli._bootstrap import bootstrap
from kubeloop.server import (
    ENVTEST_DISABLED_ADMISSION_PLUGINS,
    RbacEscalationCheck,
    User,
    create_app,
    secure,
    store_rbac_authorizer,
)
from kubeloop.store import SqliteStore

ADMIN = User("admin", groups=("system:masters", "system:authenticated"))


@contextlib.asynccontextmanager
async def rbac_clients(tmp_path: Path, user: User) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """(admin's client, ``user``'s client) of a bootstrapped app authorizing with the store's RBAC."""
    store = await SqliteStore.open(tmp_path / "db")
    core = create_app(store=store, disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    authorizer = store_rbac_authorizer(store)
    core.admission.append(RbacEscalationCheck(authorizer))
    await core.startup()
    await bootstrap(core)
    app = secure(core, tokens={"a": ADMIN, "u": user}, authorizer=authorizer)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="https://k", headers={"Authorization": "Bearer a"}) as admin, \
                httpx.AsyncClient(transport=transport, base_url="https://k", headers={"Authorization": "Bearer u"}) as other:  # fmt: skip
            yield admin, other
    finally:
        await core.shutdown()
        await store.close()
