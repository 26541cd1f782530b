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
    client: httpx.AsyncClient, store: SqliteStore, body: Any, content_type: str, query: str = ""
) -> tuple[httpx.Response, int]:
    """PUT ``body`` (PATCH it, for a patch ``content_type``) over a fresh ConfigMap ``a`` while another writer commits (a label) between the
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

    if content_type in ("application/json", "application/json-patch+json", "application/merge-patch+json",
                        "application/strategic-merge-patch+json"):
        content = orjson.dumps(body)
    else:
        content = yaml.safe_dump(body).encode()
    method = "PUT" if "patch" not in content_type else "PATCH"
    store.update = beaten_once  # type: ignore[method-assign]
    try:
        updated = await client.request(method, f"{CM}/a{query}", content=content,
                                       headers={"content-type": content_type})
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


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object without what differs between two objects written alike (name, uid, version)."""
    meta = dict(obj["metadata"])
    for field in ("name", "uid", "resourceVersion"):
        meta.pop(field, None)
    return {**obj, "metadata": meta}


# Bodies whose JSON nulls the typed decode leaves at their Go zero values (handlers/update.go decodes the
# body once, before GuaranteedUpdate; every attempt starts from that object, never from the bytes again).
_NULL_BODIES = [
    {"metadata": {"name": "a", "labels": None, "annotations": {"x": None}}, "data": {"k": None, "j": "2"},
     "binaryData": None, "immutable": None},
    {"metadata": {"name": "a", "finalizers": None, "ownerReferences": None}, "data": None},
]


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
@pytest.mark.parametrize("shape", range(len(_NULL_BODIES)))
async def test_a_put_retried_after_a_lost_race_stores_what_an_unraced_put_stores(
    client: httpx.AsyncClient, store: SqliteStore, content_type: str, shape: int
) -> None:
    """A retried PUT of a body with nulls drops them as its first attempt did (the nulls become Go zero
    values in the typed decode): the stored object is the one an unraced PUT of the same body stores."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", **_NULL_BODIES[shape]}
    assert (await client.post(CM, json={"metadata": {"name": "b"}, "data": {"k": "1"}})).status_code == 201
    other = orjson.loads(orjson.dumps(body))
    other["metadata"]["name"] = "b"
    content = orjson.dumps(other) if content_type == "application/json" else yaml.safe_dump(other).encode()
    unraced = await client.put(f"{CM}/b", content=content, headers={"content-type": content_type})
    assert unraced.status_code == 200, unraced.text

    raced, attempts = await _put_losing_one_race(client, store, body, content_type)

    assert raced.status_code == 200, raced.text
    assert attempts == 2
    stored = orjson.loads(await _stored(client, "a"))
    assert b"null" not in await _stored(client, "a")
    assert _comparable(stored) == _comparable(orjson.loads(await _stored(client, "b")))
    assert raced.json() == stored


# Patches whose result holds nulls or whose nulls remove fields; each attempt applies the patch to a fresh
# read (handlers/patch.go applyPatch inside GuaranteedUpdate), so a retried one must store what one does
# unraced.
_NULL_PATCHES = [
    ("application/json-patch+json", [{"op": "add", "path": "/data", "value": {"k": None, "j": "2"}},
                                     {"op": "add", "path": "/binaryData", "value": None},
                                     {"op": "add", "path": "/immutable", "value": None}]),
    ("application/merge-patch+json", {"data": {"k": None, "j": "2"}, "binaryData": None, "immutable": None}),
    ("application/strategic-merge-patch+json", {"data": {"k": None, "j": "2"}, "binaryData": None}),
    ("application/apply-patch+yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                                      "data": {"k": None, "j": "2"}, "binaryData": None, "immutable": None}),
]


@pytest.mark.parametrize("shape", range(len(_NULL_PATCHES)))
async def test_a_patch_retried_after_a_lost_race_stores_what_an_unraced_patch_stores(
    client: httpx.AsyncClient, store: SqliteStore, shape: int
) -> None:
    """Every attempt of a PATCH decodes and applies the patch afresh, dropping the result's nulls as the
    first did; the raced object differs from the unraced one only by the other writer's label."""
    content_type, patch = _NULL_PATCHES[shape]
    # The apply takes data.k from its creator: structured-merge-diff keeps the applied null (typed/merge.go
    # ruleKeepRHS), which modifies a field another manager owns, a conflict without force.
    query = "?fieldManager=m&force=true" if content_type == "application/apply-patch+yaml" else ""
    assert (await client.post(CM, json={"metadata": {"name": "b"}, "data": {"k": "1"}})).status_code == 201
    if isinstance(patch, dict) and "metadata" in patch:
        unraced_patch: Any = {**patch, "metadata": {"name": "b"}}
    else:
        unraced_patch = patch
    unraced = await client.patch(f"{CM}/b{query}", content=orjson.dumps(unraced_patch),
                                 headers={"content-type": content_type})
    assert unraced.status_code == 200, unraced.text

    raced, attempts = await _put_losing_one_race(client, store, patch, content_type, query)

    assert raced.status_code == 200, raced.text
    assert attempts == 2
    stored_bytes = await _stored(client, "a")
    stored = orjson.loads(stored_bytes)
    assert b"null" not in stored_bytes
    assert stored["metadata"]["labels"] == {"other": "yes"}, "a patch keeps the other writer's change"
    expected = orjson.loads(await _stored(client, "b"))
    for field in ("data", "binaryData", "immutable"):
        assert stored.get(field) == expected.get(field)
    assert raced.json() == stored
