"""Requests that arrive after the store closed (a server shutting down) get a 503 Status, not a 500.

Seen on ``kubeloop up`` stopping while its controller manager re-opened watches: every such request
logged an internal error with a traceback."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from kubeloop.store import SqliteStore


@pytest.mark.parametrize("path", [
    "/api/v1/namespaces/default/configmaps?watch=true",
    "/apis/coordination.k8s.io/v1/leases?watch=true&resourceVersion=1",
])
async def test_a_request_after_the_store_closed_is_a_503_status_without_a_traceback(
        client: httpx.AsyncClient, store: SqliteStore, path: str, caplog: pytest.LogCaptureFixture) -> None:
    created = await client.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "kept"}})
    assert created.status_code == 201
    await store.close()
    with caplog.at_level(logging.ERROR):
        answer = await client.get(path)
    assert answer.status_code == 503
    status = answer.json()
    assert status["kind"] == "Status" and status["reason"] == "ServiceUnavailable" and status["code"] == 503
    assert "shutting down" in status["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_write_after_the_store_closed_is_a_503_and_stores_nothing(
        client: httpx.AsyncClient, store: SqliteStore, tmp_path: Path) -> None:
    await store.close()
    answer = await client.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "late"}})
    assert answer.status_code == 503, answer.text
    assert answer.json()["reason"] == "ServiceUnavailable"
    reopened = await SqliteStore.open(tmp_path / "kubeloop.db")  # the fixture's database
    try:
        assert await reopened.get("/registry/core/configmaps/default/late") is None
        assert (await reopened.range("/registry/core/configmaps/default/")).items == []  # nothing of the refused write
    finally:
        await reopened.close()
