"""Answers over 128 KiB are gzipped when the client asks, as kube-apiserver 1.32 does.

Upstream: apiserver ``pkg/endpoints/handlers/responsewriters/writers.go`` (``SerializeObject``'s
``deferredResponseWriter``: ``defaultGzipThresholdBytes`` = 128 KiB, strictly more; ``negotiateContentEncoding``:
an exact ``gzip`` token of ``Accept-Encoding``; ``Content-Encoding: gzip`` and ``Vary: Accept-Encoding``).
Watch streams are served by the watch server, never compressed.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubeloop.server import App
from kubeloop.server._compression import GZIP_THRESHOLD_BYTES

from ._asgi import stream
from ._uvicorn import Kubectl, serve, write_kubeconfig

CM = "/api/v1/namespaces/default/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
GZIP = {"accept-encoding": "gzip"}
IDENTITY = {"accept-encoding": "identity"}


class RawAnswers:
    """Passes every request to ``app`` and keeps each answer's headers and body bytes as sent (before any
    client decodes them), by path."""

    def __init__(self, app: App) -> None:
        self._app = app
        self.answers: dict[str, list[tuple[dict[str, str], bytes]]] = {}

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        body: list[bytes] = []

        async def keep(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers.update({k.decode().lower(): v.decode() for k, v in message["headers"]})
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if not message.get("more_body", False):
                    self.answers.setdefault(scope["path"], []).append((headers, b"".join(body)))
            await send(message)

        await self._app(scope, receive, keep)


async def _fill(client: httpx.AsyncClient, count: int, size: int, namespace: str = "default",
                annotation: int = 0) -> None:
    async def one(i: int) -> None:
        meta: dict[str, Any] = {"name": f"c{i:03d}"}
        if annotation:
            meta["annotations"] = {"note": "n" * annotation}
        r = await client.post(f"/api/v1/namespaces/{namespace}/configmaps",
                              json={"metadata": meta, "data": {"blob": f"{i:03d}" + "x" * size}})
        assert r.status_code == 201, r.text

    await asyncio.gather(*(one(i) for i in range(count)))


async def _raw(app: App, path: str, headers: dict[str, str], query: str = "") -> tuple[dict[str, str], bytes]:
    """One GET's headers and body bytes as the app sent them (not decoded)."""
    raw = RawAnswers(app)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=raw), base_url="http://kubeloop") as http:
        r = await http.get(path + (f"?{query}" if query else ""), headers=headers)
        assert r.status_code == 200, r.text
    [(sent_headers, body)] = raw.answers[path]
    return sent_headers, body


async def test_a_list_over_128_kib_is_gzipped_when_asked_and_decodes_to_the_plain_list(
        app: App, client: httpx.AsyncClient) -> None:
    await _fill(client, 40, 5000)  # about 200 KB of JSON
    plain_headers, plain = await _raw(app, CM, IDENTITY)
    assert len(plain) > GZIP_THRESHOLD_BYTES
    assert "content-encoding" not in plain_headers and int(plain_headers["content-length"]) == len(plain)
    headers, body = await _raw(app, CM, GZIP)
    assert headers["content-encoding"] == "gzip" and headers["vary"] == "Accept-Encoding"
    assert headers["content-type"] == "application/json"
    assert "content-length" not in headers, "streamed compressed, as Go's net/http sends it chunked"
    assert gzip.decompress(body) == plain
    assert len(body) < len(plain) // 10


async def test_the_client_decodes_a_compressed_list(app: App, client: httpx.AsyncClient) -> None:
    await _fill(client, 40, 5000)
    r = await client.get(CM, headers=GZIP)
    assert r.headers["content-encoding"] == "gzip" and r.num_bytes_downloaded < len(r.content) // 10
    assert [item["metadata"]["name"] for item in r.json()["items"]] == [f"c{i:03d}" for i in range(40)]


@pytest.mark.parametrize("accept_encoding", ["gzip;q=1.0", "deflate", "br, x-gzip", ""])
async def test_only_an_exact_gzip_token_asks_for_compression(app: App, client: httpx.AsyncClient,
                                                            accept_encoding: str) -> None:
    # writers.go negotiateContentEncoding compares each trimmed token with "gzip": no quality values.
    await _fill(client, 40, 5000)
    headers, body = await _raw(app, CM, {"accept-encoding": accept_encoding})
    assert "content-encoding" not in headers and int(headers["content-length"]) == len(body) > GZIP_THRESHOLD_BYTES


@pytest.mark.parametrize("accept_encoding", ["gzip, deflate", "deflate,gzip", " br ,  gzip "])
async def test_gzip_anywhere_in_the_list_asks_for_compression(app: App, client: httpx.AsyncClient,
                                                             accept_encoding: str) -> None:
    await _fill(client, 40, 5000)
    headers, body = await _raw(app, CM, {"accept-encoding": accept_encoding})
    assert headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(body))["kind"] == "ConfigMapList"


async def test_the_threshold_is_strictly_more_than_128_kib(app: App, client: httpx.AsyncClient) -> None:
    # writers.go: gzip only when len(p) > defaultGzipThresholdBytes.
    r = await client.post(CM, json={"metadata": {"name": "edge"}, "data": {"blob": ""}})
    assert r.status_code == 201
    path = f"{CM}/edge"
    # The served object grows with the blob byte for byte; its other fields (resourceVersion) may change
    # width between writes, so the blob is adjusted until the object is exactly ``size`` bytes.
    for size, squeezed in ((GZIP_THRESHOLD_BYTES, False), (GZIP_THRESHOLD_BYTES + 1, True)):
        _, plain = await _raw(app, path, IDENTITY)
        blob_size = len((await client.get(path)).json()["data"]["blob"])
        while len(plain) != size:
            blob_size += size - len(plain)
            r = await client.patch(path, json={"data": {"blob": "y" * blob_size}},
                                   headers={"content-type": "application/merge-patch+json"})
            assert r.status_code == 200, r.text
            _, plain = await _raw(app, path, IDENTITY)
        headers, body = await _raw(app, path, GZIP)
        assert ("content-encoding" in headers) is squeezed, size
        assert (gzip.decompress(body) if squeezed else body) == plain
        if squeezed:
            assert headers["vary"] == "Accept-Encoding" and int(headers["content-length"]) == len(body)


async def test_small_answers_are_never_compressed(app: App, client: httpx.AsyncClient) -> None:
    await _fill(client, 3, 100)
    for path in (CM, f"{CM}/c000", "/api/v1", "/apis"):
        headers, body = await _raw(app, path, GZIP)
        assert "content-encoding" not in headers and "vary" not in headers, path
        assert int(headers["content-length"]) == len(body)
    raw = RawAnswers(app)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=raw), base_url="http://kubeloop") as http:
        r = await http.post(CM, json={"metadata": {"name": "new"}}, headers=GZIP)
    assert r.status_code == 201 and "content-encoding" not in raw.answers[CM][0][0]


async def test_tables_and_yaml_lists_over_the_threshold_are_gzipped(app: App, client: httpx.AsyncClient) -> None:
    await _fill(client, 40, 5000)
    headers, body = await _raw(app, CM, {**GZIP, "accept": TABLE}, query="includeObject=Object")
    assert headers["content-encoding"] == "gzip" and headers["content-type"].startswith("application/json;as=Table")
    table = json.loads(gzip.decompress(body))
    assert table["kind"] == "Table" and len(table["rows"]) == 40
    headers, body = await _raw(app, CM, {**GZIP, "accept": "application/yaml"})
    assert headers["content-encoding"] == "gzip" and headers["content-type"] == "application/yaml"
    assert len(yaml.safe_load(gzip.decompress(body))["items"]) == 40


async def test_a_large_object_write_answer_and_deletecollection_are_gzipped(app: App, client: httpx.AsyncClient) -> None:
    # Every answer written by SerializeObject goes through the deferred writer, writes' included.
    raw = RawAnswers(app)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=raw), base_url="http://kubeloop") as http:
        big = {"metadata": {"name": "big"}, "data": {"blob": "z" * (GZIP_THRESHOLD_BYTES + 10)}}
        r = await http.post(CM, json=big, headers=GZIP)
        assert r.status_code == 201 and r.json()["data"] == big["data"]
        r = await http.delete(CM, headers=GZIP)
        assert r.status_code == 200 and [i["metadata"]["name"] for i in r.json()["items"]] == ["big"]
    (created_headers, created), (deleted_headers, _) = raw.answers[CM]
    assert created_headers["content-encoding"] == "gzip" and len(created) < GZIP_THRESHOLD_BYTES // 10
    assert deleted_headers["content-encoding"] == "gzip"


async def test_a_watch_is_never_compressed(app: App, client: httpx.AsyncClient) -> None:
    await _fill(client, 40, 5000)
    async with stream(app, CM, "watch=true", headers=GZIP) as s:
        events = await s.events(40, timeout=60)
        assert s.headers.get("content-encoding") is None and "vary" not in s.headers
    assert {e["object"]["metadata"]["name"] for e in events} == {f"c{i:03d}" for i in range(40)}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_get_configmaps_in_every_namespace_receives_the_list_gzipped(
        app: App, client: httpx.AsyncClient, tmp_path: Path) -> None:
    for namespace in ("one", "two"):
        r = await client.post("/api/v1/namespaces", json={"metadata": {"name": namespace}})
        assert r.status_code == 201, r.text
        # Annotations are in a Table row's partial metadata: kubectl's default Table is large too.
        await _fill(client, 20, 6000, namespace, annotation=4000)
    raw = RawAnswers(app)
    async with serve(raw) as url:  # type: ignore[arg-type]
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, url)
        # kubectl's Go transport asks for gzip itself and decodes the answer.
        _, out, _ = await Kubectl(kubeconfig).run("get", "cm", "-A", "-o", "name", "--chunk-size=0")
        _, table, _ = await Kubectl(kubeconfig).run("get", "cm", "-A", "--chunk-size=0")
    names = out.split()
    assert sorted(names) == sorted([f"configmap/c{i:03d}" for i in range(20)] * 2)
    assert sum(1 for line in table.splitlines() if line.startswith(("one ", "two "))) == 40
    answers = raw.answers["/api/v1/configmaps"]
    assert len(answers) == 2  # ``-o name``: the objects; then kubectl's Table (rows and partial metadata)
    for headers, body in answers:
        assert headers["content-encoding"] == "gzip" and headers["vary"] == "Accept-Encoding"
        assert len(gzip.decompress(body)) > GZIP_THRESHOLD_BYTES > len(body)
    assert answers[1][0]["content-type"].startswith("application/json;as=Table")
