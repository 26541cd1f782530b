"""Fixtures for the public test support: an ``InProcessCluster`` whose clients go through a ``FaultyApp``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeloop.testing import FakeClock, FaultyApp, InProcessCluster


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def faulty_cluster(tmp_path: Path, clock: FakeClock) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(
        tmp_path, clock=clock, namespaces=["team"], default_namespace="team", inject_http_faults=True
    ) as cluster:
        yield cluster


@pytest.fixture
def faults(faulty_cluster: InProcessCluster) -> FaultyApp:
    return faulty_cluster.http_faults
