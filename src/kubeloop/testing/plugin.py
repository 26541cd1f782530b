"""The pytest plugin (entry point ``pytest11`` named ``kubeloop``; disable with ``-p no:kubeloop``).

Installed with kubeloop, it offers three fixtures, every name prefixed ``kubeloop_`` so none can
shadow or be shadowed by a project's own fixtures, none ``autouse`` and no hooks, so loading it
changes nothing in a suite that does not ask for them:

* ``kubeloop_clock``: a fresh :class:`~kubeloop.testing.FakeClock`;
* ``kubeloop_cluster``: an :class:`~kubeloop.testing.InProcessCluster` on that clock, in the test's
  ``tmp_path``, its clients going through a :class:`~kubeloop.testing.FaultyApp`
  (``cluster.http_faults``) so a test can inject faults and wait until the server is quiet;
* ``kubeloop_grade``: :func:`~kubeloop.testing.grade` with its clusters in the test's ``tmp_path``:
  ``(await kubeloop_grade(controller, scenario)).assert_passed()``.

The async fixture needs an asyncio test runner: pytest-asyncio's fixture decorator is used when it
is installed (it works in its strict and auto modes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from kubeloop.testing._clock import FakeClock
from kubeloop.testing._cluster import InProcessCluster
from kubeloop.testing._grade import grade
from kubeloop.testing._subject import Report, Scenario

F = TypeVar("F", bound=Callable[..., Any])


def _async_fixture(fn: F) -> F:
    """pytest-asyncio's fixture decorator when installed (strict mode needs it), else pytest's."""
    try:
        import pytest_asyncio
    except ImportError:  # pragma: no cover - another runner (anyio, ...) must drive async fixtures then
        return cast(F, pytest.fixture(fn))
    return cast(F, pytest_asyncio.fixture(fn))

__all__ = ["kubeloop_clock", "kubeloop_cluster", "kubeloop_grade"]

Grade = Callable[..., Awaitable[Report]]


@pytest.fixture
def kubeloop_clock() -> FakeClock:
    """A fresh fake clock: time moves only when the test (or ``cluster.eventually``) advances it."""
    return FakeClock()


@_async_fixture
async def kubeloop_cluster(tmp_path: Path, kubeloop_clock: FakeClock) -> AsyncIterator[InProcessCluster]:
    """A fresh in-process cluster on ``kubeloop_clock`` (HTTP faults injectable: ``.http_faults``)."""
    async with InProcessCluster(tmp_path / "kubeloop-cluster", clock=kubeloop_clock, inject_http_faults=True) as cluster:
        yield cluster


@pytest.fixture
def kubeloop_grade(tmp_path: Path) -> Grade:
    """``await kubeloop_grade(controller, scenario, **options)``: :func:`~kubeloop.testing.grade`
    with its clusters under the test's ``tmp_path``."""

    async def run(controller: Any, scenario: Scenario, **options: Any) -> Report:
        options.setdefault("data_dir", tmp_path / "kubeloop-grade")
        return await grade(controller, scenario, **options)

    return run
