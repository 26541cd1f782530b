"""The official ``kubernetes`` client's replace that loses a race inside the server (another writer commits
between the PUT's read and its compare-and-swap) stores what an unraced replace of the same body stores:
the retry starts from the body as decoded once, its nulls already at their Go zero values (apiserver
handlers/update.go decodes before GuaranteedUpdate retries)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient

from kubeloop.server import App
from kubeloop.server._state import renderer

from ._patchable import patchable_store
from ._uvicorn import serve

KEY = "/registry/core/configmaps/default/a"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Any]:
    """The app's real store, whose ``update`` the race replaces (see ``_patchable``)."""
    async with patchable_store(tmp_path) as s:
        yield s


def _replace_both(url: str) -> dict[str, bytes]:
    """Create ``a`` and ``b``, then replace each with the same body holding nulls; the stored objects as read
    back. The dynamic client sends a dict body's ``None`` values as JSON nulls (the typed ``CoreV1Api``
    validates the body into its model first, which drops them)."""
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        core = k8s.CoreV1Api(api_client)
        configmaps = DynamicClient(api_client).resources.get(api_version="v1", kind="ConfigMap")
        for name in ("b", "a"):
            core.create_namespaced_config_map("default", {"metadata": {"name": name}, "data": {"k": "1"}})
        out: dict[str, bytes] = {}
        for name in ("b", "a"):  # ``a`` last: the race is armed for it
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": None, "annotations": {"x": None}, "finalizers": None,
                                 "ownerReferences": None},
                    "data": {"k": None, "j": "2"}, "binaryData": None, "immutable": None}
            configmaps.replace(body=body, namespace="default")
            response = core.read_namespaced_config_map(name, "default", _preload_content=False)
            out[name] = response.data
    return out


async def test_kubernetes_client_replace_retried_after_a_lost_race_stores_what_an_unraced_one_does(
    real_app: App, store: Any
) -> None:
    original_update = store.update
    attempts = 0

    async def beaten_once(key: str, render: Any, *, expected_revision: int | None) -> Any:
        nonlocal attempts
        if key == KEY:  # a's replace: its one write through ``update``
            attempts += 1
            if attempts == 1:  # another writer commits between this PUT's read and its compare-and-swap
                kv = await store.get(key)
                assert kv is not None
                other = orjson.loads(kv.value)
                other["metadata"]["labels"] = {"other": "yes"}
                await original_update(key, renderer(other), expected_revision=expected_revision)
        return await original_update(key, render, expected_revision=expected_revision)

    store.update = beaten_once
    try:
        async with serve(real_app) as url:
            out = await asyncio.to_thread(_replace_both, url)
    finally:
        store.update = original_update
    assert attempts == 2, "the replace of a lost one race and was retried once"
    raced, unraced = orjson.loads(out["a"]), orjson.loads(out["b"])
    assert b"null" not in out["a"]
    assert raced["data"] == unraced["data"] == {"j": "2", "k": ""}, "a null string is Go's zero value, \"\""
    for obj in (raced, unraced):
        for field in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields"):
            obj["metadata"].pop(field, None)
    assert raced == unraced
