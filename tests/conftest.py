"""Suite-wide guards: no test may leak asyncio tasks; tests marked ``interpreted`` skip on the compiled build."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubeloop import _build


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
