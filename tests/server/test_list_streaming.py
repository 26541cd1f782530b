"""A large list body is streamed in parts: byte for byte the single-buffer body, one revision throughout."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest

from kubeloop.api import KindRegistry
from kubeloop.server import App, collection_prefix
from kubeloop.server._list import BODY_PART, ListResult, list_body, list_body_parts
from kubeloop.store import KeyValue, SqliteStore

from ._uvicorn import serve

CM = "/api/v1/namespaces/default/configmaps"
CONFIGMAPS = KindRegistry().by_kind("", "ConfigMap")


def reference_body(head_meta: dict[str, Any], values: list[bytes]) -> bytes:
    """The list body as it was rendered in one buffer before streaming (the wire format to keep)."""
    head = orjson.dumps({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": head_meta})
    return head[:-1] + b',"items":[' + b",".join(values) + b"]}"


def untyped(value: bytes) -> bytes:
    """A stored built-in object as a list item: without kind and apiVersion (kubernetes#3030)."""
    obj = orjson.loads(value)
    del obj["apiVersion"], obj["kind"]
    return orjson.dumps(obj)


def result_of(values: list[bytes], **extra: Any) -> ListResult:
    prefix = collection_prefix(CONFIGMAPS, "default")
    items = [KeyValue(f"{prefix}c{i:04d}", v, i + 1, i + 1) for i, v in enumerate(values)]
    return ListResult(items, 42, **extra)


@pytest.mark.parametrize("count", [0, 1, 2, 7, 300])
@pytest.mark.parametrize("part_size", [1, 50, 333, 4096, BODY_PART])
def test_parts_join_to_the_single_buffer_body_with_the_announced_length(count: int, part_size: int) -> None:
    values = [orjson.dumps({"metadata": {"name": f"c{i:04d}"}, "data": {"k": "v" * (i % 97)}}) for i in range(count)]
    length, parts = list_body_parts(CONFIGMAPS, result_of(values), part_size=part_size)
    chunks = list(parts)
    expected = reference_body({"resourceVersion": "42"}, values)
    assert b"".join(chunks) == expected
    assert length == len(expected)
    assert all(chunks), "no empty part"
    if count and part_size == 1:
        assert len(chunks) == count + 1, "one part per item, then the closing bracket"


def test_continue_and_remaining_count_are_in_the_streamed_head() -> None:
    values = [b'{"metadata":{"name":"a"}}', b'{"metadata":{"name":"b"}}']
    result = result_of(values, continue_token="tok", remaining=3)
    length, parts = list_body_parts(CONFIGMAPS, result, part_size=10)
    body = b"".join(parts)
    assert body == reference_body({"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3}, values)
    assert length == len(body) and list_body(CONFIGMAPS, result) == body


async def _fill(client: httpx.AsyncClient, count: int, size: int) -> None:
    async def one(i: int) -> None:
        r = await client.post(CM, json={"metadata": {"name": f"c{i:04d}"}, "data": {"blob": "x" * size}})
        assert r.status_code == 201, r.text

    await asyncio.gather(*(one(i) for i in range(count)))


# httpx's default is 5 s for each of connect, read, write and the pool: beside the churning writer on a loaded
# machine a 900 KB list can take longer (a PoolTimeout flaked here). pytest-timeout guards against hangs.
NO_TIMEOUT = httpx.Timeout(None)

async def _raw_get(url: str, path: str, params: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=NO_TIMEOUT) as http:
        return await http.get(path, params=params)


async def test_a_list_larger_than_a_part_is_the_stored_objects_over_http(app: App, store: SqliteStore) -> None:
    async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=NO_TIMEOUT) as http:
        await _fill(http, 120, 4000)  # about 500 KB: more than one part
        # Uncompressed (httpx asks for gzip by default; test_response_compression covers that answer).
        r = await http.get(CM, headers={"Accept-Encoding": "identity"})
    assert r.status_code == 200 and int(r.headers["content-length"]) == len(r.content) > BODY_PART
    rv = int(r.json()["metadata"]["resourceVersion"])
    stored = await store.range(collection_prefix(CONFIGMAPS, "default"), revision=rv)
    assert all(kv.value.startswith(b'{"apiVersion":"v1","kind":"ConfigMap",') for kv in stored.items)
    items = [untyped(kv.value) for kv in stored.items]
    assert r.content == reference_body({"resourceVersion": str(rv)}, items)


async def test_a_streamed_list_is_one_revision_while_writes_happen(app: App, store: SqliteStore) -> None:
    async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=NO_TIMEOUT) as http:
        await _fill(http, 150, 6000)
        stop = asyncio.Event()

        async def churn() -> None:
            i = 0
            while not stop.is_set():
                name = f"c{i % 150:04d}"
                r = await http.patch(f"{CM}/{name}", json={"data": {"n": str(i)}},
                                     headers={"Content-Type": "application/merge-patch+json"})
                assert r.status_code == 200, r.text
                await http.post(CM, json={"metadata": {"name": f"new-{i}"}})
                await http.delete(f"{CM}/new-{i}")
                i += 1

        writer = asyncio.create_task(churn())
        try:
            await asyncio.sleep(0.05)
            listed = [await _raw_get(url, CM) for _ in range(3)]
            paged: list[httpx.Response] = [await _raw_get(url, CM, {"limit": "60"})]
            while token := paged[-1].json()["metadata"].get("continue"):
                paged.append(await _raw_get(url, CM, {"limit": "60", "continue": token}))
        finally:
            stop.set()
            await writer
        for r in listed:
            rv = r.json()["metadata"]["resourceVersion"]
            again = await http.get(CM, params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
            assert again.content == r.content, "the streamed list is exactly the state at its revision"
        first_rv = paged[0].json()["metadata"]["resourceVersion"]
        assert {p.json()["metadata"]["resourceVersion"] for p in paged} == {first_rv}
        at_rv = await http.get(CM, params={"resourceVersion": first_rv, "resourceVersionMatch": "Exact"})
    assert store.revision > int(first_rv), "writes happened while listing"
    assert [i for p in paged for i in p.json()["items"]] == at_rv.json()["items"]
    assert len(paged) == 3


@pytest.mark.parametrize("size", [10, 3000], ids=["small", "large"])
@pytest.mark.parametrize("typed_first", [True, False], ids=["kind-first", "kind-elsewhere"])
def test_built_in_items_lose_kind_and_api_version_whatever_their_size_and_key_order(size: int, typed_first: bool) -> None:
    def stored(i: int) -> bytes:
        rest = {"metadata": {"name": f"c{i:04d}", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}]}, "data": {"k": "v" * size}}
        typed = {"apiVersion": "v1", "kind": "ConfigMap"}
        return orjson.dumps({**typed, **rest} if typed_first else {**rest, **typed})

    values = [stored(i) for i in range(40)]
    length, parts = list_body_parts(CONFIGMAPS, result_of(values), part_size=4096)
    body = b"".join(parts)
    assert body == reference_body({"resourceVersion": "42"}, [untyped(v) for v in values]) and length == len(body)
    item = orjson.loads(body)["items"][3]
    assert "kind" not in item and "apiVersion" not in item
    assert item["metadata"]["ownerReferences"][0]["kind"] == "ConfigMap", "nested kinds stay"
