"""The API server's start-up work runs as upstream's post-start hooks do: side by side.

k8s.io/apiserver ``pkg/server/hooks.go`` ``RunPostStartHooks`` starts every post-start hook in its own
goroutine, and ``/readyz`` waits for all of them. ``App.startup`` runs the system namespaces (then the
``kubernetes`` Service, which lives in ``default``) beside the system PriorityClasses, so a first
start's writes share group commits instead of each waiting for the one before.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from kubeloop.api import SystemClock
from kubeloop.cli._bootstrap import asgi_call
from kubeloop.server import SYSTEM_NAMESPACES, create_app

from ._patchable import patchable_store

PRIORITY_CLASSES = "/registry/scheduling.k8s.io/priorityclasses/"


async def test_the_system_priority_classes_are_written_while_a_system_namespace_is_still_being_created(
    tmp_path: Path,
) -> None:
    async with patchable_store(tmp_path) as store:
        priority_class_written = asyncio.Event()
        order: list[tuple[str, str]] = []  # ("create", key) when a write starts, ("created", key) when it is done
        create = store.inner.create

        async def create_holding_default(key: str, render: Any, *, guard: tuple[str, int] | None = None) -> Any:
            order.append(("create", key))
            if key.startswith(PRIORITY_CLASSES):
                priority_class_written.set()
            elif key == "/registry/core/namespaces/default":
                # Hooks run one after the other would never write a PriorityClass while this waits
                # (the test then hangs until pytest-timeout fails it).
                await priority_class_written.wait()
            created = await create(key, render, guard=guard)
            order.append(("created", key))
            return created

        store.create = create_holding_default
        app = create_app(store=store, clock=SystemClock(), rng=random.Random(1), server_address="127.0.0.1:6443")
        await app.startup()
        try:
            first_priority_class = min(i for i, (step, key) in enumerate(order) if key.startswith(PRIORITY_CLASSES))
            assert first_priority_class < order.index(("created", "/registry/core/namespaces/default"))
            # Everything the hooks make is there, the Service after its namespace.
            for name in SYSTEM_NAMESPACES:
                assert (await asgi_call(app, "GET", f"/api/v1/namespaces/{name}"))[0] == 200
            for name in ("system-cluster-critical", "system-node-critical"):
                assert (await asgi_call(app, "GET", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"))[0] == 200
            assert (await asgi_call(app, "GET", "/api/v1/namespaces/default/services/kubernetes"))[0] == 200
            assert order.index(("create", "/registry/core/services/default/kubernetes")) > order.index(
                ("created", "/registry/core/namespaces/default")
            )
        finally:
            await app.shutdown()
