"""What serving layer round 2 changed, held against uvicorn's own httptools protocol and real clients:

- the scope is copied from a per-connection template (``HttpProtocol._scope``): the same keys in the same
  order with the same values as uvicorn's, a dict of its own per request;
- the hand-off to the connection's waiting task, the origin-form split, the cycle's ``send`` (head and
  body in one function) and the corked writes (``write``/``write_last`` without their inner calls) are
  inline: the same bytes for pipelined requests whose bodies arrive whole, split across reads, chunked,
  with ``100-continue``, as HEAD, with repeated headers, ending in ``Connection: close``;
- the store writes a batch with the INSERT of one of eight padded sizes (``store/_sqlite``): many creates
  through kubectl and the ``kubernetes`` client land whole.

Every request runs through a real uvicorn over TLS."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import uvicorn

from kubeloop.cli._cluster import _uvicorn_server
from kubeloop.cli._serving import uvicorn_config
from kubeloop.server import ensure_tls
from kubeloop.server._metrics import STATUS_KEY

from .test_http_protocol import _without_date, connect, serving


def _request(rng: random.Random, n: int) -> bytes:
    """One random request of a pipelined stream: GET, HEAD or POST (a fixed-length body, a chunked one,
    or one behind ``Expect: 100-continue``), with a repeated header and odd header case now and then."""
    method = rng.choice([b"GET", b"HEAD", b"POST", b"POST", b"PUT"])
    target = rng.choice([b"/api/v1/namespaces/ns/configmaps", b"/a%20b/c", b"/x?watch=1&limit=5", b"/?"])
    lines = [b"%s %s/%d HTTP/1.1" % (method, target, n), b"Host: x"]
    if rng.random() < 0.3:
        lines += [b"Impersonate-Group: one", b"X-Other: a", b"Impersonate-Group: two"]
    if rng.random() < 0.3:
        lines.append(b"CONTENT-type: application/json")
    body = b""
    if method in (b"POST", b"PUT"):
        payload = bytes(rng.randrange(32, 127) for _ in range(rng.choice([0, 1, 17, 900, 5000])))
        kind = rng.choice(["length", "length", "chunked", "continue"])
        if kind == "chunked":
            lines.append(b"Transfer-Encoding: chunked")
            cut = len(payload) // 2
            parts = [p for p in (payload[:cut], payload[cut:]) if p]
            body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        else:
            if kind == "continue":
                lines.append(b"Expect: 100-continue")
            lines.append(b"Content-Length: %d" % len(payload))
            body = payload
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _stream(seed: int, count: int) -> bytes:
    rng = random.Random(seed)
    requests = [_request(rng, n) for n in range(count)]
    last = b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    return b"".join(requests) + last


def _observed(scope: dict[str, Any]) -> dict[str, Any]:
    """The scope as the app sees it, its key order included, less what differs between two servers (and the
    status kubeloop's serving layer adds for the app's metrics, tested in test_serving)."""
    seen = {k: v for k, v in scope.items() if k not in ("client", "server", "headers", STATUS_KEY)}
    seen["keys"] = [key for key in scope if key != STATUS_KEY]
    seen["headers"] = [tuple(h) for h in scope["headers"]]
    seen["client"] = (scope["client"][0], type(scope["client"][1]).__name__)
    seen["server"] = scope["server"][0]
    return seen


async def _answers(server: Any, app: Any, tls: Any, data: bytes, seed: int) -> bytes:
    """``data`` written to one connection in random slices (each its own TLS record, most their own
    read), and everything the server answers until it closes."""
    rng = random.Random(seed)
    async with serving(app, tls, server) as (port, _):
        reader, writer = await connect(port, tls)
        at = 0
        while at < len(data):
            step = rng.choice([1, 7, 60, 700, 4000, len(data)])
            writer.write(data[at : at + step])
            await writer.drain()
            at += step
            if rng.random() < 0.2:
                await asyncio.sleep(0.01)
        async with asyncio.timeout(30):
            answer = await reader.read()
        writer.close()
    return _without_date(answer)


def _app(seen: list[Any]) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen.append((_observed(scope), body))
        scope["mutated"] = True  # a scope is the request's own: the next request's has no such key
        answer = orjson.dumps({"path": scope["path"], "size": len(body), "n": len(seen)})
        if (scope["path"] + scope["query_string"].decode()).endswith("3"):  # streamed: chunked, in two parts
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": answer, "more_body": True})
            await send({"type": "http.response.body", "body": b"!"})
            return
        await send({"type": "http.response.start", "status": 201 if scope["method"] == "POST" else 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]})
        await send({"type": "http.response.body", "body": answer})

    return app


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_pipelined_requests_split_across_reads_are_answered_as_uvicorn_answers_them(
    tmp_path: Path, seed: int
) -> None:
    tls = ensure_tls(tmp_path)
    data = _stream(seed, 40)
    theirs_seen: list[Any] = []
    ours_seen: list[Any] = []
    config = uvicorn_config(_app(theirs_seen), cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await _answers(uvicorn.Server(config), _app(theirs_seen), tls, data, seed)
    ours = await _answers(_uvicorn_server(_app(ours_seen), tls.cert, tls.key), _app(ours_seen), tls, data, seed)
    assert ours == theirs
    assert ours_seen == theirs_seen
    assert len(ours_seen) == 41 and all("mutated" not in scope for scope, _ in ours_seen)
    assert ours.count(b"HTTP/1.1 100 Continue") == data.count(b"100-continue") > 0
    assert ours.count(b"transfer-encoding: chunked") > 0 and ours.endswith(b'{"path":"/last","size":0,"n":41}')


async def test_each_request_on_a_connection_gets_a_scope_of_its_own_with_uvicorns_values(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    scopes: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        scopes.append(scope)
        scope["state"]["seen"] = len(scopes)  # the state, too, is the request's own copy
        scope["asgi"]["extra"] = True
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async with serving(app, tls) as (port, _):
        reader, writer = await connect(port, tls)
        writer.write(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2?q HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(30):
            answer = await reader.read()
        writer.close()
    assert answer.count(b"HTTP/1.1 200 OK") == 2
    first, second = scopes
    assert first is not second and first["headers"] is not second["headers"]
    assert first["asgi"] is not second["asgi"] and second["asgi"] == {"version": "3.0", "spec_version": "2.3", "extra": True}
    assert first["state"] == {"seen": 1} and second["state"] == {"seen": 2}
    assert (first["path"], first["query_string"], second["path"], second["query_string"]) == ("/1", b"", "/2", b"q")
    # uvicorn's keys in its order, then the status the app's metrics read (test_serving).
    assert list(first) == list(second) == ["type", "asgi", "http_version", "server", "client", "scheme", "root_path",
                                           "headers", "state", "method", "path", "raw_path", "query_string",
                                           STATUS_KEY]
    assert first["scheme"] == "https" and first["client"] == second["client"] and first["server"][1] == port


@pytest.mark.slow
def test_many_creates_through_kubectl_and_the_kubernetes_client_land_whole(tmp_path: Path) -> None:
    """``kubeloop apiserver`` as served: kubectl creates 150 ConfigMaps in one apply and the ``kubernetes``
    client 40 more from threads at once (batches of many sizes through the padded INSERTs); every one is
    listed, read back and in the store once after a restart."""
    from concurrent.futures import ThreadPoolExecutor

    from kubernetes import client, config

    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(tmp_path), KUBECONFIG=str(data / "kubeconfig"))

    def start() -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-m", "kubeloop.cli", "apiserver", "--port", "0", "--data-dir", str(data)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if re.search(r"https://\S+", line) and "ready" in line.lower():
                return proc
        raise AssertionError("kubeloop apiserver did not start")

    def stop(proc: subprocess.Popen[str]) -> None:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()

    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"k-{i}"}, "data": {"i": str(i)}}
             for i in range(150)]
    manifest = tmp_path / "many.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    proc = start()
    try:
        done = subprocess.run(["kubectl", "create", "-f", str(manifest)], env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        with config.new_client_from_config(str(data / "kubeconfig")) as api_client:
            api = client.CoreV1Api(api_client)

            def create(i: int) -> str:
                body = {"metadata": {"name": f"c-{i}"}, "data": {"i": str(i)}}
                return str(api.create_namespaced_config_map("default", body).metadata.name)

            with ThreadPoolExecutor(8) as pool:
                assert sorted(pool.map(create, range(40))) == sorted(f"c-{i}" for i in range(40))
    finally:
        stop(proc)
    proc = start()  # what was answered is on disk
    try:
        with config.new_client_from_config(str(data / "kubeconfig")) as api_client:
            api = client.CoreV1Api(api_client)
            listed = {m.metadata.name: m.data for m in api.list_namespaced_config_map("default").items}
            assert api.read_namespaced_config_map("k-149", "default").data == {"i": "149"}
    finally:
        stop(proc)
    expected = {f"k-{i}": {"i": str(i)} for i in range(150)} | {f"c-{i}": {"i": str(i)} for i in range(40)}
    assert {name: d for name, d in listed.items() if name in expected} == expected
