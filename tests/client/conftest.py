"""Fixtures for client tests: the real API server (SQLite store, ASGI app) in-process, wrapped by
``FaultyApp`` (tests/client/_realapi.py) to record requests and inject faults."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeloop.client import Client
from kubeloop.testing import FakeClock

# pytest runs with --import-mode=importlib: make the helper modules of this folder importable.
sys.path.insert(0, str(Path(__file__).parent))
from _realapi import Cluster, FaultyApp, real_cluster


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def cluster(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Cluster]:
    async with real_cluster(tmp_path, clock, namespaces=("team", "one", "two", "ns")) as c:
        yield c


@pytest.fixture
def app(cluster: Cluster) -> FaultyApp:
    return cluster.app


@pytest.fixture
def client(cluster: Cluster) -> Client:
    c: Client = cluster.client()
    return c
