"""CRD lifecycle through the core write path and a real SQLite store (the HTTP app wires the same seams).

Create a CRD -> the controller serves its versions and writes NamesAccepted/Established -> custom
objects are pruned, defaulted and validated (422 per bad field) -> a restart rebuilds the served
kinds -> deleting the CRD deletes its objects, then the CRD (cleanup finalizer).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeloop.api import BadRequest, Invalid, KindRegistry
from kubeloop.server._crd import CrdController
from kubeloop.server._delete import delete_object
from kubeloop.server._options import DeleteOptions
from kubeloop.server._rest import WriteRequest, create_object
from kubeloop.server._state import ServerState
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "maximum": 10},
                                    "color": {"type": "string", "default": "blue"},
                                },
                            },
                            "status": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                        },
                    }
                },
            }
        ],
    },
}


async def new_state(path: Path) -> tuple[ServerState, CrdController]:
    store = await SqliteStore.open(path)
    state = ServerState(store=store, clock=FakeClock(), kinds=KindRegistry(), rng=random.Random(1))
    controller = CrdController(state)
    await controller.start()
    return state, controller


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[ServerState, CrdController]]:
    state, controller = await new_state(tmp_path / "db.sqlite")
    yield state, controller
    await controller.stop()
    await state.store.close()


async def eventually(check: Any) -> Any:
    for _ in range(200):
        result = check()
        if result:
            return result
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


class _FailAfter(logging.Filter):
    """Turns the controller's third logged failure into an exception that ends its task."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.seen.append(record.getMessage())
        if len(self.seen) >= 3:
            raise RuntimeError(f"the CRD controller keeps retrying: {self.seen}")
        return True


async def test_a_controller_started_after_its_store_closed_ends_its_watch_instead_of_spinning(tmp_path: Path) -> None:
    # An App restarted by a late request (a leaked informer in a failed test) after its store closed:
    # the watch retried StoreClosed without awaiting anything, so the loop never ran again (a hang).
    store = await SqliteStore.open(tmp_path / "db.sqlite")
    await store.close()
    controller = CrdController(ServerState(store=store, clock=FakeClock(), kinds=KindRegistry(), rng=random.Random(1)))
    logger, failures = logging.getLogger("kubeloop.server._crd"), _FailAfter()
    logger.addFilter(failures)
    try:
        await controller.start()
        task = controller._task
        assert task is not None
        for _ in range(3):
            await asyncio.sleep(0)
        assert task.done() and task.exception() is None, failures.seen
        assert failures.seen == []
    finally:
        logger.removeFilter(failures)
        await controller.stop()


def crd_request(state: ServerState, name: str = "") -> WriteRequest:
    info = state.kinds.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert info is not None
    return WriteRequest(info, "", name)


async def create_crd(state: ServerState) -> None:
    await create_object(state, crd_request(state), orjson.loads(orjson.dumps(CRD)))
    await eventually(lambda: state.kinds.get("example.com", "v1", "widgets"))


def widget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": spec}


async def test_created_crd_is_served_and_established(cluster: tuple[ServerState, CrdController]) -> None:
    state, _ = cluster
    await create_crd(state)
    info = state.kinds.get("example.com", "v1", "widgets")
    assert info is not None and info.custom and info.status_subresource

    async def established() -> bool:
        kv = await state.store.get(
            "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
        )
        assert kv is not None
        conditions = orjson.loads(kv.value)["status"].get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    for _ in range(200):
        if await established():
            break
        await asyncio.sleep(0.01)
    assert await established()


async def test_custom_objects_are_pruned_defaulted_and_validated(
    cluster: tuple[ServerState, CrdController],
) -> None:
    state, controller = cluster
    await create_crd(state)
    info = state.kinds.get("example.com", "v1", "widgets")
    assert info is not None
    body = widget(size=3, bogus=1)
    assert controller.unknown_fields(info, body, "Warn") == ['unknown field "spec.bogus"']
    with pytest.raises(BadRequest, match=r'strict decoding error: unknown field "spec\.bogus"'):
        controller.unknown_fields(info, body, "Strict")
    body["status"] = {"ok": True}
    code, raw = await create_object(state, WriteRequest(info, "default"), body)
    stored = orjson.loads(raw)
    assert code == 201
    assert stored["spec"] == {"size": 3, "color": "blue"}
    assert "status" not in stored and stored["metadata"]["generation"] == 1
    with pytest.raises(Invalid) as caught:
        await create_object(
            state, WriteRequest(info, "default"), widget(size="big") | {"metadata": {"name": "w2"}}
        )
    assert caught.value.causes == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "string": spec.size in body must be of type integer: "string"',
            "field": "spec.size",
        }
    ]
    with pytest.raises(Invalid) as caught:
        await create_object(
            state, WriteRequest(info, "default"), {**widget(size=11), "metadata": {"name": "w3"}}
        )
    assert caught.value.message.startswith('Widget.example.com "w3" is invalid: spec.size: Invalid value: 11')


async def test_restart_serves_the_same_kinds(tmp_path: Path) -> None:
    state, controller = await new_state(tmp_path / "db.sqlite")
    await create_crd(state)
    await controller.stop()
    await state.store.close()
    state, controller = await new_state(tmp_path / "db.sqlite")
    try:
        assert state.kinds.get("example.com", "v1", "widgets") is not None
        assert controller.schema("example.com", "v1", "Widget") is not None
    finally:
        await controller.stop()
        await state.store.close()


async def test_deleting_the_crd_deletes_its_objects_then_itself(
    cluster: tuple[ServerState, CrdController],
) -> None:
    state, _ = cluster
    await create_crd(state)
    info = state.kinds.get("example.com", "v1", "widgets")
    assert info is not None
    await create_object(state, WriteRequest(info, "default"), widget(size=1))
    key = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
    kv = await state.store.get(key)
    assert (
        kv is not None
        and "customresourcecleanup.apiextensions.k8s.io" in orjson.loads(kv.value)["metadata"]["finalizers"]
    )

    crd_info = crd_request(state).info
    await delete_object(state, crd_info, "", "widgets.example.com", DeleteOptions())
    for _ in range(300):
        if await state.store.get(key) is None:
            break
        await asyncio.sleep(0.01)
    assert await state.store.get(key) is None
    assert (await state.store.range("/registry/example.com/widgets/")).items == []
    assert state.kinds.get("example.com", "v1", "widgets") is None
