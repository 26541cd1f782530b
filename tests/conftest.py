"""Suite-wide guards: no test may leak asyncio tasks; tests marked ``interpreted`` skip on the compiled build;
under pytest-xdist an installed pytest-benchmark is told up front that its benchmarks are off; Hypothesis
never times anything (no deadline, no "input generation is slow" health check: on a loaded machine both
fail tests whose properties hold)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, settings

from kubeloop import _build

# The machines are shared and noisy; a wall-clock limit is no property of the code (tests' own @settings
# add to this profile, and keep their example counts).
settings.register_profile("kubeloop", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kubeloop")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # pytest-benchmark is no dependency of kubeloop, but some machines have it installed. Under pytest-xdist
    # (scripts/check runs ``-n auto``) it turns its benchmarks off and says so with a warning at start-up,
    # which the suite's ``error`` filter made an INTERNALERROR before any test ran. Turned off here first,
    # it does the same without the warning (pytest_benchmark/session.py: only an enabled session warns).
    # No test uses its fixture; the warning filters stay as they are (tests/testing/test_suite_warnings.py).
    xdist = config.getoption("dist", "no") != "no" or "PYTEST_XDIST_WORKER" in os.environ
    if xdist and hasattr(config.option, "benchmark_disable"):
        config.option.benchmark_disable = True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    compiled = _build.compiled_modules()
    if not compiled:
        return
    skip = pytest.mark.skip(reason=f"needs interpreted internals; this build compiles {len(compiled)} modules")
    for item in items:
        if item.get_closest_marker("interpreted") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
async def _no_leaked_tasks() -> AsyncIterator[None]:
    before = asyncio.all_tasks()
    yield
    await asyncio.sleep(0)
    leaked = [t for t in asyncio.all_tasks() - before if not t.done() and t is not asyncio.current_task()]
    for task in leaked:
        task.cancel()
    if leaked:
        await asyncio.gather(*leaked, return_exceptions=True)
        pytest.fail(f"test leaked {len(leaked)} asyncio task(s): {[t.get_coro() for t in leaked]}")
