"""Fixtures shared by the runtime's manager tests: the real API server in-process
(tests/client/_realapi.py) on a FakeClock, with namespaces ``ns`` and ``kube-system``, and a client
of it. A module that needs other namespaces defines its own ``cluster``, which takes precedence."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeloop.client import Client
from kubeloop.testing import FakeClock

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _realapi import Cluster, real_cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with real_cluster(tmp_path, FakeClock(), namespaces=("ns", "kube-system")) as c:
        yield c


@pytest.fixture
def client(cluster: Cluster) -> Client:
    c: Client = cluster.client()
    return c
