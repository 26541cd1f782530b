"""The real kubeloop API server (SQLite store, ASGI app) reached in-process by the real Client.

Faults are injected by *wrapping*, never by patching or faking the server:

* :class:`kubeloop.testing.FaultyApp` (public test support) wraps the real ASGI app: it records every
  request, answers scripted error statuses (with ``Retry-After``), cuts open watch streams (a clean
  end, a dropped connection, or an ``ERROR`` 410 event as a real apiserver sends when a watcher's
  version is too old), and counts requests in flight so tests can wait until the server is quiet.
* :class:`FlakyClient` is a ``Client`` whose calls fail while ``down`` is set and that records its writes.

Timing: the store commits in a worker thread, so a write takes real (if tiny) time. Tests on a
:class:`FakeClock` therefore wait for the server to be *quiet* (:func:`settle`) between steps of fake
time, rather than for a fixed number of event-loop turns, which is what made earlier tests flaky.
Wall time only bounds these waits; no test asserts on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubeloop.api import AlreadyExists, ApiError, KindRegistry, ResourceInfo, ServiceUnavailable
from kubeloop.client import Client
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock, FaultyApp

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

    async def delete(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check()
        self.writes.append(("delete", args[1], kwargs))
        return await super().delete(*args, **kwargs)


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {
                "status": {},
                "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
            },
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "replicas": {"type": "integer"},
                    }},
                    "status": {"type": "object", "properties": {
                        "ready": {"type": "boolean"}, "replicas": {"type": "integer"},
                    }},
                },
            }},
        }],
    },
}  # fmt: skip
WIDGETS = ResourceInfo(
    "example.com", "v1", "Widget", "widgets", "widget", True, status_subresource=True, custom=True
)


async def install_widgets(client: Client) -> ResourceInfo:
    """Create the Widget CRD and wait until the server serves it."""
    await client.create(kind("apiextensions.k8s.io", "CustomResourceDefinition"), WIDGET_CRD)
    limit = time.monotonic() + WAIT_LIMIT
    while True:
        try:
            await client.list(WIDGETS, namespace="")
            return WIDGETS
        except ApiError:
            if time.monotonic() > limit:
                raise
            await asyncio.sleep(0.001)


@dataclass
class Cluster:
    """A fresh real server: ``cluster.client()`` opens clients on it (closed at the end)."""

    app: FaultyApp
    server: App
    store: SqliteStore
    clock: FakeClock
    clients: list[Client] = field(default_factory=list)

    def client(self, cls: type[Client] = Client, **kwargs: Any) -> Any:
        c = cls.from_asgi(self.app, clock=self.clock, **kwargs)
        self.clients.append(c)
        return c

    __call__ = client

    async def settle(self) -> None:
        await settle(self.app)

    async def run_for(self, seconds: float, step: float = 0.25) -> None:
        await run_for(self.clock, self.app, seconds, step)


@asynccontextmanager
async def real_cluster(
    tmp_path: Path, clock: FakeClock | None = None, *, namespaces: tuple[str, ...] = ("ns",)
) -> AsyncIterator[Cluster]:
    """Yield a :class:`Cluster` over a fresh real server; ``namespaces`` are created first."""
    clock = clock if clock is not None else FakeClock()
    store = await SqliteStore.open(tmp_path / "kubeloop.db")
    server = create_app(store=store, clock=clock, rng=random.Random(7), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await server.startup()
    cluster = Cluster(FaultyApp(server, clock=clock), server, store, clock)
    try:
        admin = cluster.client()
        for ns in namespaces:
            with contextlib.suppress(AlreadyExists):  # system namespaces exist from the start
                await admin.create(kind("", "Namespace"), {"metadata": {"name": ns}})
        yield cluster
    finally:
        for c in cluster.clients:
            await c.close()
        await server.shutdown()
        await store.close()


def cluster_fixtures(*namespaces: str) -> tuple[Any, Any]:
    """The fixtures ``cluster`` (:func:`real_cluster` on a fresh FakeClock, ``namespaces`` created)
    and ``client`` (a client of it), for a test module to bind where it uses them:
    ``cluster, client = cluster_fixtures("ns", "kube-system")``."""

    @pytest.fixture
    async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
        async with real_cluster(tmp_path, FakeClock(), namespaces=namespaces) as c:
            yield c

    @pytest.fixture
    def client(cluster: Cluster) -> Client:
        c: Client = cluster.client()
        return c

    return cluster, client


# -- waiting without sleeping on the wall clock -------------------------------------------------

WAIT_LIMIT = 20.0  # wall-clock seconds: a safety bound for a stuck test, never an assertion


async def settle(app: FaultyApp, *, quiet_turns: int = 40) -> None:
    """Return once no (non-watch) request has been in flight for ``quiet_turns`` loop turns."""
    await app.settle(quiet_turns=quiet_turns)


async def run_for(clock: FakeClock, app: FaultyApp, seconds: float, step: float = 0.25) -> None:
    """Let fake time pass in small steps, letting in-process round-trips complete in between."""
    await settle(app)
    for _ in range(round(seconds / step)):
        await clock.advance(step)
        await settle(app)


async def eventually(cond: Callable[[], bool], *, what: str = "condition") -> None:
    """Let the loop (and the store's commit thread) run until ``cond()`` holds."""
    limit = time.monotonic() + WAIT_LIMIT
    turns = 0
    while not cond():
        turns += 1
        if turns % 50 == 0:
            if time.monotonic() > limit:
                raise AssertionError(f"{what} never became true")
            await asyncio.sleep(0.0005)
        else:
            await asyncio.sleep(0)
