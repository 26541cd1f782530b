"""A create whose managedFields entry the decode walk built (a flat ConfigMap or ServiceAccount body, see
``kubeloop.api._flat_entry``) answers exactly what the field manager's own walk gives: the same status,
body byte for byte (the entry included), and warnings, over generated bodies with nested maps, nulls,
duplicate keys, unknown fields, empty maps and unicode, under each ``fieldValidation``.

Upstream records a create's entry in ``handlers/create.go`` (``fieldmanager.UpdateNoErrors`` before
mutating admission); the walk is only a cheaper way to the same FieldsV1.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from kubernetes import client as k8s

from kubeloop.api import SystemClock
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, _field_validation, create_app
from kubeloop.store import SqliteStore

from ._uvicorn import serve

COLLECTIONS = {"ConfigMap": "/api/v1/namespaces/default/configmaps",
               "ServiceAccount": "/api/v1/namespaces/default/serviceaccounts"}
JSON = {"content-type": "application/json"}


@contextlib.contextmanager
def general_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Creates without the walk's entry: no kind gets a plan, so the hook builds every entry itself."""
    _field_validation._go_structs.clear()
    with monkeypatch.context() as patched:
        patched.setattr(_field_validation, "create_keeps_decoded_body", lambda info: False)
        yield
    _field_validation._go_structs.clear()


# -- generated bodies ----------------------------------------------------------------------------------------

_KEYS = ["a", "b", "app.kubernetes.io/name", "k-1", "x_y", "Z.z"]
_ODD_KEYS = ["é", "日本", "a b", ""]  # not valid label or data keys: a 422 on both paths
_TEXT = ["", "v", "é", "日本語", "\u2028", "a\"b", "\\", "null", "{}", "v" * 40]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.55:
        return rng.choice(_TEXT)
    if roll < 0.65:
        return None
    if roll < 0.72:
        return rng.randint(-3, 3)
    if roll < 0.76:
        return rng.random() < 0.5
    if roll < 0.88 and depth < 2:
        return _map(rng, depth + 1)
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 2))] if depth < 2 else "deep"


def _map(rng: random.Random, depth: int = 0, *, strings: bool = False) -> dict[str, Any]:
    keys = _KEYS + (_ODD_KEYS if rng.random() < 0.1 else [])
    return {rng.choice(keys): rng.choice(_TEXT) if strings else _value(rng, depth) for _ in range(rng.randint(0, 3))}


def _body(rng: random.Random, kind: str) -> dict[str, Any]:
    flat = rng.random() < 0.6  # most bodies flat, the fast path's; the rest anything
    meta: dict[str, Any] = {"name": "NAME"}
    if rng.random() < 0.1:
        meta["generateName"] = ""  # a value scalar at its zero: the decode drops it (kubeloop.api._go_pointers)
    for field in ("labels", "annotations"):
        if rng.random() < 0.5:
            meta[field] = _map(rng, strings=flat) if flat or rng.random() < 0.7 else _value(rng)
    if not flat:
        for field, value in (("generateName", "g-"), ("finalizers", ["example.com/f"]), ("bogus", {"x": 1}),
                             ("namespace", None), ("uid", "u")):
            if rng.random() < 0.15:
                meta[field] = value
    body: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": meta}
    if kind == "ConfigMap":
        if rng.random() < 0.8:
            body["data"] = _map(rng, strings=flat) if flat or rng.random() < 0.7 else _value(rng)
        if rng.random() < 0.2:
            body["immutable"] = rng.random() < 0.5 if flat else _value(rng)
        if not flat and rng.random() < 0.2:
            body["binaryData"] = {"b": "AAAA"}
    else:
        if rng.random() < 0.3:
            body["automountServiceAccountToken"] = rng.random() < 0.5 if flat else _value(rng)
        if not flat and rng.random() < 0.3:
            body["secrets"] = [{"name": "s"}]
    if not flat and rng.random() < 0.3:
        body["bogus"] = _value(rng)
    items = list(body.items())
    rng.shuffle(items)
    return dict(items)


def _encode(value: Any, rng: random.Random) -> bytes:
    """``value`` as JSON, now and then with a key of a map sent twice (the first sending loses, as in Go)."""
    if isinstance(value, dict):
        members = [orjson.dumps(k) + b":" + _encode(v, rng) for k, v in value.items()]
        if value and rng.random() < 0.15:
            key = rng.choice(list(value))
            members.insert(0, orjson.dumps(key) + b":" + _encode(_value(rng), rng))
        return b"{" + b",".join(members) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_encode(v, rng) for v in value) + b"]"
    return orjson.dumps(value)


def _normalised(response: httpx.Response, name: str) -> tuple[int, list[str], bytes]:
    text = response.content.replace(name.encode(), b"NAME")
    if response.status_code == 201:
        obj = orjson.loads(text)
        obj["metadata"]["uid"] = obj["metadata"]["resourceVersion"] = ""
        text = orjson.dumps(obj)
    return response.status_code, response.headers.get_list("warning"), text


async def test_creates_answer_what_the_field_managers_own_walk_gives(
        client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261201)
    created_flat = 0
    for i in range(160):
        kind = rng.choice(sorted(COLLECTIONS))
        raw = _encode(_body(rng, kind), rng)
        query = rng.choice(["", "?fieldValidation=Strict", "?fieldValidation=Warn", "?fieldValidation=Ignore"])
        url = COLLECTIONS[kind] + query
        fast_name, general_name = f"zfast{i:03}", f"zslow{i:03}"
        fast = await client.post(url, content=raw.replace(b'"NAME"', f'"{fast_name}"'.encode()), headers=JSON)
        with general_path(monkeypatch):
            general = await client.post(url, content=raw.replace(b'"NAME"', f'"{general_name}"'.encode()),
                                        headers=JSON)
        assert _normalised(fast, fast_name) == _normalised(general, general_name), raw
        if fast.status_code == 201 and fast.json()["metadata"].get("managedFields"):
            created_flat += 1
    assert created_flat > 40, "most generated bodies are created, with an entry"


async def test_a_flat_configmaps_entry_owns_its_data_and_labels_key_by_key(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "2", "a": "1"},
            "metadata": {"name": "x", "labels": {"app": "x"}, "annotations": {"note": "é"}}}
    r = await client.post(COLLECTIONS["ConfigMap"], json=body, headers={"user-agent": "kubectl/v1.32.0 (linux/amd64)"})
    assert r.status_code == 201, r.text
    (entry,) = r.json()["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl" and entry["operation"] == "Update"
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}},
                                 "f:metadata": {"f:annotations": {".": {}, "f:note": {}}, "f:labels": {".": {}, "f:app": {}}}}


# -- a real client ------------------------------------------------------------------------------------------------

def _create_with_kubernetes_client(url: str, name: str) -> dict[str, Any]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        core = k8s.CoreV1Api(api_client)
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": name, "labels": {"app": "web"}}, "data": {"k": "v", "j": "日本"}},
            field_manager="tool")
        response = core.read_namespaced_config_map(name, "default", _preload_content=False)
        result: dict[str, Any] = orjson.loads(response.data)
        return result


async def test_the_kubernetes_clients_create_gets_the_entry_the_general_path_gives(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    app: App = create_app(store=store, clock=SystemClock(), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    async with serve(app) as url:
        fast = await asyncio.to_thread(_create_with_kubernetes_client, url, "fast")
        with general_path(monkeypatch):
            general = await asyncio.to_thread(_create_with_kubernetes_client, url, "general")
    (fast_entry,), (general_entry,) = fast["metadata"]["managedFields"], general["metadata"]["managedFields"]
    assert fast_entry["manager"] == general_entry["manager"] == "tool"
    assert orjson.dumps(fast_entry["fieldsV1"]) == orjson.dumps(general_entry["fieldsV1"])
    assert fast_entry["fieldsV1"] == {"f:data": {".": {}, "f:j": {}, "f:k": {}},
                                      "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
