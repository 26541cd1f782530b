"""Fixtures for the API server: a real SQLite store, the ASGI app, an in-process HTTP client."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from kubeloop.api import SystemClock
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = await SqliteStore.open(tmp_path / "kubeloop.db")
    yield s
    await s.close()


@pytest.fixture
async def app(store: SqliteStore, clock: FakeClock) -> AsyncIterator[App]:
    application = create_app(store=store, clock=clock, rng=random.Random(7), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await application.startup()
    yield application
    await application.shutdown()


@pytest.fixture
async def real_app(store: SqliteStore) -> App:
    """For tests with real clients (kubectl, the kubernetes package), which time their requests with the wall
    clock: the server uses it too. A module that needs other admission plugins defines its own."""
    return create_app(store=store, clock=SystemClock(), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)


@pytest.fixture
async def client(app: App) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kubeloop") as c:
        yield c
