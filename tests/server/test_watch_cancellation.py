"""A watch handler that is cancelled (its client went away, the server stops) ends, whatever it was
waiting on at that moment; in particular while it reaps the store-batch task its own timer beat."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, create_app
from kubeloop.store import SqliteStore


class ManualClock:
    """A clock whose sleepers wake only when the test fires them, with no extra scheduling steps."""

    def __init__(self) -> None:
        self.sleepers: list[asyncio.Future[None]] = []

    def now(self) -> float:
        return 1_700_000_000.0

    def monotonic(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.sleepers.append(future)
        await future

    def fire(self) -> bool:
        pending = [f for f in self.sleepers if not f.done()]
        for future in pending:
            future.set_result(None)
        return bool(pending)


def _watch_request(path: str, query: str) -> tuple[dict[str, Any], Any, Any]:
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": query.encode(), "headers": [],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }  # fmt: skip
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never says goodbye: only cancellation ends it
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        return None

    return scope, receive, send


@pytest.mark.parametrize("steps_after_timer", range(8))
async def test_watch_cancelled_while_reaping_its_batch_task_ends(tmp_path: Path, steps_after_timer: int) -> None:
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    clock = ManualClock()
    app = create_app(store=store, clock=clock, rng=random.Random(7), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    try:
        scope, receive, send = _watch_request("/api/v1/namespaces/default/configmaps",
                                              "watch=true&resourceVersion=1&allowWatchBookmarks=true")
        handler = asyncio.create_task(app(scope, receive, send))
        for _ in range(200):  # the watch arms its bookmark timer
            await asyncio.sleep(0)
            if clock.sleepers:
                break
        assert clock.fire()  # the timer wins: the handler now cancels and reaps its batch task
        for _ in range(steps_after_timer):
            await asyncio.sleep(0)
        handler.cancel()
        for _ in range(50):
            if handler.done():
                break
            await asyncio.sleep(0)
        assert handler.done(), "the cancelled watch handler kept running"
        assert handler.cancelled()
    finally:
        await app.shutdown()
        await store.close()

