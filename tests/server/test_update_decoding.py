"""How often a write decodes the stored object: a PUT, whose body replaces it, decodes it once (for the
strategy, the managedFields bookkeeping and the no-op comparison), never a second time for a transform
that ignores it. Counted on the real app by watching ``orjson.loads`` for the stored bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from kubeloop.server._state import renderer
from kubeloop.store import SqliteStore

from ._patchable import patchable_store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Any]:
    """The app's real store, whose ``update`` the race tests replace (see ``_patchable``)."""
    async with patchable_store(tmp_path) as s:
        yield s


CM = "/api/v1/namespaces/default/configmaps"


def _counting(monkeypatch: pytest.MonkeyPatch, value: bytes) -> list[int]:
    """A list whose length is the number of ``orjson.loads(value)`` calls from now on."""
    calls: list[int] = []
    real: Callable[[Any], Any] = orjson.loads

    def loads(data: Any) -> Any:
        if data == value:
            calls.append(1)
        return real(data)

    monkeypatch.setattr(orjson, "loads", loads)
    return calls


async def _stored(client: httpx.AsyncClient, name: str) -> bytes:
    response = await client.get(f"{CM}/{name}")
    assert response.status_code == 200
    return response.content  # a built-in kind is served as the stored bytes


async def test_put_decodes_the_stored_object_once(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "1"}})).status_code == 201
    stored = await _stored(client, "a")
    decodes = _counting(monkeypatch, stored)

    updated = await client.put(f"{CM}/a", json={"metadata": {"name": "a"}, "data": {"k": "2"}})

    assert updated.status_code == 200
    assert updated.json()["data"] == {"k": "2"}
    assert len(decodes) == 1


async def test_an_unchanged_put_decodes_the_stored_object_once(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "1"}})).status_code == 201
    stored = await _stored(client, "a")
    decodes = _counting(monkeypatch, stored)

    same = await client.put(f"{CM}/a", json={"metadata": {"name": "a"}, "data": {"k": "1"}})

    assert same.status_code == 200
    assert same.content == stored  # a no-op answers the stored bytes
    assert len(decodes) == 1


async def test_a_patch_still_works_on_its_own_copy_of_the_stored_object(client: httpx.AsyncClient) -> None:
    created = await client.post(CM, json={"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "1"}})
    assert created.status_code == 201
    patched = await client.patch(f"{CM}/a", json={"metadata": {"labels": {"y": "2"}}, "data": {"k": "2"}},
                                 headers={"content-type": "application/merge-patch+json"})
    assert patched.status_code == 200
    body = patched.json()
    assert body["metadata"]["labels"] == {"x": "1", "y": "2"} and body["data"] == {"k": "2"}
    assert await _stored(client, "a") == patched.content


async def _put_losing_one_race(
    client: httpx.AsyncClient, store: SqliteStore, body: dict[str, Any], content_type: str, query: str = ""
) -> tuple[httpx.Response, int]:
    """PUT ``body`` over a fresh ConfigMap ``a`` while another writer commits (a label) between the
    PUT's read and its first compare-and-swap; the answer and the number of attempts."""
    assert (await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "1"}})).status_code == 201
    original_update = store.update
    attempts = 0

    async def beaten_once(key: str, render: Any, *, expected_revision: int | None) -> Any:
        nonlocal attempts
        attempts += 1
        if attempts == 1:  # another writer commits between this PUT's read and its compare-and-swap
            kv = await store.get(key)
            assert kv is not None
            other = orjson.loads(kv.value)
            other["metadata"]["labels"] = {"other": "yes"}
            await original_update(key, renderer(other), expected_revision=expected_revision)
        return await original_update(key, render, expected_revision=expected_revision)

    content = orjson.dumps(body) if content_type == "application/json" else yaml.safe_dump(body).encode()
    store.update = beaten_once  # type: ignore[method-assign]
    try:
        updated = await client.put(f"{CM}/a{query}", content=content, headers={"content-type": content_type})
    finally:
        store.update = original_update  # type: ignore[method-assign]
    return updated, attempts


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
async def test_an_unconditional_put_that_loses_a_race_starts_again_from_the_body_as_sent(
    client: httpx.AsyncClient, store: SqliteStore, content_type: str
) -> None:
    """The first attempt changes the decoded body in place (resourceVersion, uid, managedFields...); the
    retry after the lost race must start from the request's body, or its copied resourceVersion would make
    it a 409 (registry/store.go GuaranteedUpdate retries an unconditional update on a fresh read)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "2"}}
    updated, attempts = await _put_losing_one_race(client, store, body, content_type)

    assert updated.status_code == 200, updated.text
    assert attempts == 2
    stored = orjson.loads(await _stored(client, "a"))
    assert stored["data"] == {"k": "2"}
    assert "labels" not in stored["metadata"], "a PUT replaces the object: the other writer's label is gone"
    assert updated.json() == stored


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
@pytest.mark.parametrize("validation", ["Ignore", "Warn"])
async def test_a_put_retried_after_a_lost_race_still_drops_the_bodys_unknown_fields(
    client: httpx.AsyncClient, store: SqliteStore, content_type: str, validation: str
) -> None:
    """The retry starts from the body as decoded, undeclared fields already dropped (upstream decodes the
    body once, before GuaranteedUpdate): not from the request's bytes, which still carry them."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "bogus": "x"}, "data": {"k": "2"},
            "bogus": 1}
    updated, attempts = await _put_losing_one_race(client, store, body, content_type, f"?fieldValidation={validation}")

    assert updated.status_code == 200, updated.text
    assert attempts == 2
    stored = orjson.loads(await _stored(client, "a"))
    assert stored["data"] == {"k": "2"}
    assert "bogus" not in stored
    assert "bogus" not in stored["metadata"]
