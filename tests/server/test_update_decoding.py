"""How often a write decodes the stored object: a PUT, whose body replaces it, decodes it once (for the
strategy, the managedFields bookkeeping and the no-op comparison), never a second time for a transform
that ignores it. Counted on the real app by watching ``orjson.loads`` for the stored bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

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
