"""kubeloop's own deletion-protection webhook (``kubeloop webhook``), called by kubeloop's API server.

The two sides of dynamic admission meet: the configuration ``kubeloop webhook --print-config`` prints,
installed into a server whose built-in DeletionProtection plugin is off, makes the server call the
webhook app for every DELETE, and the webhook's 403 reaches the client as upstream's ToStatusErr shapes it.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.cli._webhook import webhook_configuration
from kubeloop.server import App, create_app, ensure_tls, protection_webhook_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

from ._uvicorn import serve


@pytest.fixture
async def unguarded(store: SqliteStore, clock: FakeClock) -> AsyncIterator[App]:
    app = create_app(store=store, clock=clock, rng=random.Random(3),
                     disable_admission_plugins=("ServiceAccount", "DeletionProtection"))
    await app.startup()
    yield app
    await app.shutdown()


async def _lifespan_aware(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return
    await protection_webhook_app(scope, receive, send)


async def test_the_protection_webhook_refuses_a_protected_delete_through_the_server(
        unguarded: App, tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path / "hook")
    async with serve(_lifespan_aware, tls=tls) as url, \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=unguarded), base_url="http://kubeloop") as client:
        config = webhook_configuration(url=url + "/validate", ca_pem=tls.ca_cert.read_bytes())
        r = await client.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", json=config)
        assert r.status_code == 201, r.text
        cms = "/api/v1/namespaces/default/configmaps"
        protected = {"metadata": {"name": "keep", "annotations": {"kubeloop.dev/protect": "true"}}}
        assert (await client.post(cms, json=protected)).status_code == 201
        assert (await client.post(cms, json={"metadata": {"name": "scratch"}})).status_code == 201
        r = await client.delete(f"{cms}/keep")
        assert r.status_code == 403
        message = r.json()["message"]
        assert message.startswith('admission webhook "protect.kubeloop.dev" denied the request: configmaps "keep" is '
                                  "forbidden: it is protected by the annotation kubeloop.dev/protect=\"true\"")
        assert (await client.delete(f"{cms}/scratch")).status_code == 200
        assert (await client.get(f"{cms}/keep")).status_code == 200
