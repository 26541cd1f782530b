"""Watches with selectors share the decoding of each event: with several of them on one resource, each
event's objects are decoded once (kept on the event the store hands to all of them), and every watcher
still gets exactly the events and bytes of cacher.go convertToWatchEvent: ADDED when the object starts
matching, MODIFIED while it matches, DELETED (its previous state at the event's resourceVersion) when it
stops, DELETED with the last state when a matching object is deleted."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from kubeloop.server import App

from ._asgi import Stream, stream

MERGE = {"content-type": "application/merge-patch+json"}
Selector = Callable[[dict[str, Any]], bool]


def _app(obj: dict[str, Any]) -> str | None:
    labels: dict[str, str] = obj["metadata"].get("labels") or {}
    return labels.get("app")


# Query -> the same rule in plain Python, judged on decoded objects.
SELECTORS: list[tuple[str, Selector]] = [
    ("labelSelector=app%3Dx", lambda o: _app(o) == "x"),
    ("labelSelector=app%3Dy", lambda o: _app(o) == "y"),
    ("labelSelector=app+in+%28x%2Cy%29", lambda o: _app(o) in ("x", "y")),
    ("labelSelector=app%21%3Dx", lambda o: _app(o) != "x"),
    ("labelSelector=app", lambda o: _app(o) is not None),
    ("fieldSelector=metadata.name%3Da", lambda o: o["metadata"]["name"] == "a"),
    ("labelSelector=app%3Dx&fieldSelector=metadata.name%21%3Dc",
     lambda o: _app(o) == "x" and o["metadata"]["name"] != "c"),
    ("labelSelector=app%3Dx", lambda o: _app(o) == "x"),  # a second watcher with the same selector
]


def _cm(name: str, app: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}},
            "data": {"k": "v"}}


async def _setup(client: httpx.AsyncClient, namespace: str) -> tuple[str, dict[str, bytes]]:
    """Objects ``a`` (app=x) and ``b`` (app=y); the revision after them and their stored bytes."""
    if namespace != "default":
        assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": namespace}})).status_code == 201
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    stored = {}
    for name, app in (("a", "x"), ("b", "y")):
        assert (await client.post(path, json=_cm(name, app))).status_code == 201
        stored[name] = (await client.get(f"{path}/{name}")).content
    return orjson.loads(stored["b"])["metadata"]["resourceVersion"], stored


async def _writes(client: httpx.AsyncClient, namespace: str) -> int:
    """Objects entering, leaving and staying in the selectors, created and deleted; the number of writes."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    answers = [
        await client.patch(f"{path}/a", content=b'{"metadata":{"labels":{"app":"y"}}}', headers=MERGE),  # x -> y
        await client.patch(f"{path}/a", content=b'{"data":{"k":"w"}}', headers=MERGE),  # stays y
        await client.patch(f"{path}/b", content=b'{"metadata":{"labels":{"app":"x"}}}', headers=MERGE),  # y -> x
        await client.post(path, json=_cm("c", "x")),
        await client.delete(f"{path}/a"),
        await client.patch(f"{path}/c", content=b'{"metadata":{"labels":{"app":null}}}', headers=MERGE),  # leaves
        await client.delete(f"{path}/c"),
        await client.delete(f"{path}/b"),
    ]
    assert [r.status_code for r in answers] == [200, 200, 200, 201, 200, 200, 200, 200]
    return len(answers)


def _split(line: bytes) -> tuple[str, bytes]:
    kind, _, rest = line.partition(b'","object":')
    assert kind.startswith(b'{"type":"') and rest.endswith(b"}\n")
    return kind[len(b'{"type":"'):].decode(), rest[:-2]


def _expected(reference: list[bytes], initial: dict[str, bytes], selector: Selector) -> list[bytes]:
    """The lines a watcher with ``selector`` gets, from the unfiltered watcher's lines (convertToWatchEvent)."""
    last = dict(initial)
    out = []
    for line in reference:
        kind, raw = _split(line)
        obj = orjson.loads(raw)
        name = obj["metadata"]["name"]
        before = last.get(name)
        last[name] = raw
        if kind == "DELETED":
            if selector(obj):
                out.append(line)
            continue
        now = selector(obj)
        was = before is not None and selector(orjson.loads(before))
        if now:
            out.append(b'{"type":"' + (b"MODIFIED" if was else b"ADDED") + b'","object":' + raw + b"}\n")
        elif was:
            assert before is not None
            gone = orjson.loads(before)
            gone["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
            out.append(b'{"type":"DELETED","object":' + orjson.dumps(gone) + b"}\n")
    return out


async def test_several_selector_watchers_each_get_exactly_their_events_and_bytes(
    app: App, client: httpx.AsyncClient
) -> None:
    rv, initial = await _setup(client, "default")
    path = "/api/v1/namespaces/default/configmaps"
    async with contextlib.AsyncExitStack() as stack:
        everything = await stack.enter_async_context(stream(app, path, f"watch=1&resourceVersion={rv}"))
        watchers: list[Stream] = [
            await stack.enter_async_context(stream(app, path, f"watch=1&resourceVersion={rv}&{query}"))
            for query, _ in SELECTORS
        ]
        writes = await _writes(client, "default")
        reference = await everything.lines(writes)
        seen = []
        for watcher, (_, selector) in zip(watchers, SELECTORS, strict=True):
            expected = _expected(reference, initial, selector)
            seen.append((await watcher.lines(len(expected)), expected))
    for got, expected in seen:
        assert got == expected
    kinds = [[_split(line)[0] for line in got] for got, _ in seen]
    # app=x: a leaves, b enters, c is created, c leaves, b is deleted.
    assert kinds[0] == ["DELETED", "ADDED", "ADDED", "DELETED", "DELETED"]
    # app=y: a enters, a changes, b leaves, a is deleted.
    assert kinds[1] == ["ADDED", "MODIFIED", "DELETED", "DELETED"]
    assert seen[0][0] == seen[-1][0], "two watchers with one selector get the same bytes"


async def test_an_event_is_decoded_once_whatever_the_number_of_selector_watchers(
    app: App, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real: Callable[[Any], Any] = orjson.loads
    decoded: list[bytes] = []

    def loads(data: Any) -> Any:
        if isinstance(data, bytes) and b'"kind":"ConfigMap"' in data:
            decoded.append(data)
        return real(data)

    async def decodes(namespace: str, count: int) -> int:
        """ConfigMap decodes while ``count`` watchers with selector app=x see the writes."""
        rv, _ = await _setup(client, namespace)
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        async with contextlib.AsyncExitStack() as stack:
            query = f"watch=1&resourceVersion={rv}&labelSelector=app%3Dx"
            streams = [await stack.enter_async_context(stream(app, path, query)) for _ in range(count)]
            decoded.clear()
            monkeypatch.setattr(orjson, "loads", loads)
            await _writes(client, namespace)
            for s in streams:
                assert len(await s.lines(5)) == 5  # a leaves, b enters, c enters, c leaves, b deleted
            monkeypatch.setattr(orjson, "loads", real)
        return len(decoded)

    alone = await decodes("one", 1)
    many = await decodes("many", 6)
    assert alone > 0
    assert many == alone, f"6 watchers decoded {many} times, one watcher {alone}"
