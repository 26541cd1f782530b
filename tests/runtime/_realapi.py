"""The real kubeloop API server (SQLite store, ASGI app) reached in-process by the real Client.

``FlakyClient`` injects faults by wrapping (it is a ``Client`` whose calls fail while ``down`` is set),
never by patching the server.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kubeloop.api import AlreadyExists, KindRegistry, ResourceInfo, ServiceUnavailable
from kubeloop.client import Client
from kubeloop.server import create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

KINDS = KindRegistry()


def kind(group: str, name: str) -> ResourceInfo:
    info = KINDS.by_kind(group, name)
    assert info is not None
    return info


class FlakyClient(Client):
    """A Client that answers 503 for every call while ``down`` is true, and records its writes
    (``(verb, body, keyword arguments)``)."""

    down = False

    @property
    def writes(self) -> list[tuple[str, Any, dict[str, Any]]]:
        if not hasattr(self, "_writes"):
            self._writes: list[tuple[str, Any, dict[str, Any]]] = []
        return self._writes

    def _check(self) -> None:
        if self.down:
            raise ServiceUnavailable("injected: the API server is unreachable")

    async def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        return await super().get(*args, **kwargs)

    async def create(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("create", args[1], kwargs))
        return await super().create(*args, **kwargs)

    async def update(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("update", args[1], kwargs))
        return await super().update(*args, **kwargs)

    async def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("patch", args[2], kwargs))
        return await super().patch(*args, **kwargs)


@asynccontextmanager
async def real_cluster(
    tmp_path: Path, clock: FakeClock, *, namespaces: tuple[str, ...] = ("ns",)
) -> AsyncIterator[Any]:
    """Yield an ``open_client()`` factory over a fresh real server; namespaces are created first."""
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    app = create_app(store=store, clock=clock, rng=random.Random(7))
    await app.startup()
    clients: list[Client] = []

    def open_client(cls: type[Client] = Client) -> Any:
        c = cls.from_asgi(app, clock=clock)
        clients.append(c)
        return c

    try:
        admin = open_client()
        for ns in namespaces:
            with contextlib.suppress(AlreadyExists):  # system namespaces exist from the start
                await admin.create(kind("", "Namespace"), {"metadata": {"name": ns}})
        yield open_client
    finally:
        for c in clients:
            await c.close()
        await app.shutdown()
        await store.close()
