"""Fixtures for client tests: an in-memory fake API server (tests/client/_fakeapi.py) reached in-process."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeloop.api import KindRegistry
from kubeloop.client import Client
from kubeloop.testing import FakeClock

# pytest runs with --import-mode=importlib: make the helper modules of this folder importable.
sys.path.insert(0, str(Path(__file__).parent))
from _fakeapi import WIDGETS, FakeApi


@pytest.fixture
def registry() -> KindRegistry:
    reg = KindRegistry()
    reg.add(WIDGETS)
    return reg


@pytest.fixture
def api(registry: KindRegistry) -> FakeApi:
    return FakeApi(registry)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def client(api: FakeApi, clock: FakeClock) -> AsyncIterator[Client]:
    async with Client.from_asgi(api, clock=clock) as c:
        yield c
