"""What serving layer round 1 changed under kubeloop's protocol (`kubeloop.cli._serving`), held against
uvicorn's own httptools protocol and real clients:

- a response head seen before is one lookup (``_serving_cycle._HEADS``): the same bytes as uvicorn's,
  whatever the request's method, version, keep-alive and the app's status and body;
- a response's last bytes go to the transport with the head corked before them (``write_last``): one
  TLS record, and nothing lost or reordered for streamed, HEAD and failing responses;
- the server's TLS connections are :class:`~kubeloop.cli._serving.DirectSSLObject`, whose ``read``,
  ``write`` and ``pending`` are the C methods, under asyncio's loop and under uvloop's.

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

import pytest
import uvicorn
import uvloop

from kubeloop.cli._cluster import _bind, _uvicorn_server
from kubeloop.cli._serving import DirectSSLObject, uvicorn_config
from kubeloop.cli._serving_cycle import _HEADS
from kubeloop.server import ensure_tls

from .test_http_protocol import RecordCounter, _without_date, connect, serving

# A few heads an app sends again and again, and the statuses and bodies it sends them with.
HEADS: list[list[tuple[bytes, bytes]]] = [
    [(b"content-type", b"application/json"), (b"content-length", b"5"), (b"cache-control", b"no-cache, private")],
    [(b"Content-Type", b"text/plain"), (b"Connection", b"close"), (b"content-length", b"5")],
    [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")],
    [(b"content-type", b"application/json")],  # no length: chunked by uvicorn, unless HEAD, 204 or 304
    [(b"content-length", b"5"), (b"Transfer-Encoding", b"Chunked")],
    [],
]
STATUSES = [200, 201, 204, 304, 404]
BODIES = [b"hello", b"hell", b"hello!", b""]
METHODS = [b"GET", b"HEAD", b"POST"]
VERSIONS = [b"HTTP/1.1", b"HTTP/1.0"]


def _cases(seed: int, count: int) -> list[tuple[int, int, bytes, bytes, bytes, bool]]:
    """(head index, status, body, method, version, Connection: close) for ``count`` requests."""
    rng = random.Random(seed)
    return [
        (rng.randrange(len(HEADS)), rng.choice(STATUSES), rng.choice(BODIES), rng.choice(METHODS),
         rng.choice(VERSIONS), rng.random() < 0.3)
        for _ in range(count)
    ]  # fmt: skip


async def test_heads_seen_before_are_answered_byte_for_byte_as_uvicorn_answers_them(tmp_path: Path) -> None:
    """Each head of a small pool, sent again and again (new list objects, equal contents) with random
    statuses, bodies that match their length or not, methods, versions and ``Connection: close``, on
    keep-alive connections: the bytes uvicorn's own protocol answers, connection closes included."""
    tls = ensure_tls(tmp_path)
    cases = _cases(20261201, 120)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/end":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
            await send({"type": "http.response.body", "body": b"end"})
            return
        index, status, body, *_ = cases[int(scope["path"].strip("/"))]
        headers = [(bytes(name), bytes(value)) for name, value in HEADS[index]]  # a new list each time
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def run(server: Any) -> list[bytes]:
        # Each case on a connection of its own, followed by a pipelined request that closes it: all the
        # connection's bytes are read to its end, however the case's answer is framed (or broken off).
        answers = []
        async with serving(app, tls, server) as (port, _):
            for n, (_, _, _, method, version, close) in enumerate(cases):
                reader, writer = await connect(port, tls)
                connection = b"Connection: close\r\n" if close else b""
                writer.write(b"%s /%d %s\r\nHost: x\r\nContent-Length: 0\r\n%s\r\n" % (method, n, version, connection))
                writer.write(b"GET /end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                async with asyncio.timeout(10):
                    answers.append(_without_date(await reader.read()))
                writer.close()
        return answers

    _HEADS.clear()
    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await run(uvicorn.Server(config))
    ours = await run(_uvicorn_server(app, tls.cert, tls.key))
    assert ours == theirs
    assert len(_HEADS) >= 4  # the heads were kept, and answered from the table after their first time
    assert sum(answer.startswith(b"HTTP/1.1 ") for answer in ours) > 80
    assert sum(answer.endswith(b"\r\n\r\nend") for answer in ours) > 20  # keep-alive kept for the next request


async def test_a_kept_head_is_refused_again_when_its_length_is_bad(tmp_path: Path) -> None:
    """A head whose ``content-length`` is not a number is never kept: every response with it is
    refused as uvicorn refuses it (a 500 never sent, the connection closed)."""
    tls = ensure_tls(tmp_path)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"five")]})
        await send({"type": "http.response.body", "body": b"hello"})

    async def run(server: Any) -> list[bytes]:
        answers = []
        async with serving(app, tls, server) as (port, _):
            for _ in range(3):
                reader, writer = await connect(port, tls)
                writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                async with asyncio.timeout(10):
                    answers.append(_without_date(await reader.read()))
                writer.close()
        return answers

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await run(uvicorn.Server(config))
    assert await run(_uvicorn_server(app, tls.cert, tls.key)) == theirs
    assert not any(key == ((b"content-length", b"five"),) for key in _HEADS)


async def test_a_kept_head_and_its_body_arrive_in_one_tls_record_every_time(tmp_path: Path) -> None:
    """The head (from the table) and the body written last go out as one write: one TLS record per
    response, for a fixed-length and for a chunked one."""
    tls = ensure_tls(tmp_path)
    body = b"x" * 900

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/chunked":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": body})
            return
        headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async with serving(app, tls) as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = RecordCounter(reader, writer, tls)
        async with asyncio.timeout(10):
            await client.handshake()
            await client.request(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", until=body)  # may share a read with tickets
            for path, end in ((b"/a", body), (b"/chunked", b"0\r\n\r\n")) * 3:
                answer, records = await client.request(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path, until=end)
                assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
                assert records == 1
        writer.close()


async def _tls_objects_and_answer(tls: Any) -> tuple[list[Any], bytes]:
    """Serve an app on the running loop; GET it over TLS; the server's TLS objects and the answer."""
    objects: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        body = b"%d" % len(scope["headers"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})

    server = _uvicorn_server(app, tls.cert, tls.key)
    sock = _bind("127.0.0.1", 0)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                await asyncio.sleep(0.005)
            reader, writer = await connect(sock.getsockname()[1], tls)
            writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" * 2)
            answer = b""
            while answer.count(b"\r\n\r\n2") < 2:  # two answers: each request has two headers
                answer += await reader.read(65536)
            for connection in server.server_state.connections:
                objects.append(connection.transport.get_extra_info("ssl_object"))
            writer.close()
    finally:
        server.should_exit = True
        await task
        sock.close()
    return objects, answer


def _check_tls_objects(objects: list[Any], answer: bytes) -> None:
    assert objects and all(type(obj) is DirectSSLObject for obj in objects)
    for obj in objects:
        assert obj.read == obj._sslobj.read and obj.write == obj._sslobj.write
        assert obj.pending == obj._sslobj.pending
        assert obj.version() == "TLSv1.3"  # the Python methods still work
    assert _without_date(answer) == b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n2" * 2


async def test_the_servers_tls_connections_read_and_write_through_the_c_methods(tmp_path: Path) -> None:
    """Under asyncio's loop (this test's) and under uvloop's (as ``kubeloop apiserver`` serves): every
    connection's TLS object is a DirectSSLObject, and requests are read and answered through it."""
    tls = ensure_tls(tmp_path)
    _check_tls_objects(*await _tls_objects_and_answer(tls))
    _check_tls_objects(*await asyncio.to_thread(uvloop.run, _tls_objects_and_answer(tls)))


@pytest.mark.slow
def test_kubectl_and_the_kubernetes_client_against_the_real_server(tmp_path: Path) -> None:
    """``kubeloop apiserver`` (uvloop, the protocol, TLS as served): kubectl creates, gets (JSON and a
    table), lists, patches and deletes; the ``kubernetes`` client reads what kubectl wrote; a 404 and a
    409 come back as Status objects; a watch streams an event; all over keep-alive connections."""
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    proc = subprocess.Popen([sys.executable, "-m", "kubeloop.cli", "apiserver", "--port", "0", "--data-dir", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if re.search(r"https://\S+", line) and "ready" in line.lower():
                break
        else:
            raise AssertionError("kubeloop apiserver did not start")
        env.update(HOME=str(tmp_path), KUBECONFIG=str(data / "kubeconfig"))

        def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            done = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=120, check=False)
            if check:
                assert done.returncode == 0, done.stderr
            return done

        kubectl("create", "configmap", "one", "--from-literal=k=v")
        got = json.loads(kubectl("get", "configmap", "one", "-o", "json").stdout)
        assert got["data"] == {"k": "v"} and got["metadata"]["name"] == "one"
        assert "one" in kubectl("get", "configmaps").stdout  # a Table
        kubectl("patch", "configmap", "one", "--type", "merge", "-p", '{"data":{"k":"w"}}')
        again = kubectl("create", "configmap", "one", "--from-literal=k=v", check=False)
        assert again.returncode != 0 and 'configmaps "one" already exists' in again.stderr
        missing = kubectl("get", "configmap", "nope", check=False)
        assert missing.returncode != 0 and 'configmaps "nope" not found' in missing.stderr

        from kubernetes import client, config, watch

        with config.new_client_from_config(str(data / "kubeconfig")) as api_client:
            api = client.CoreV1Api(api_client)
            assert api.read_namespaced_config_map("one", "default").data == {"k": "w"}
            names = [item.metadata.name for item in api.list_namespaced_config_map("default").items]
            assert "one" in names
            watcher = watch.Watch()
            events = watcher.stream(api.list_namespaced_config_map, "default", resource_version="0", timeout_seconds=30)
            first = next(events)
            watcher.stop()
            events.close()
            assert first["type"] == "ADDED" and first["object"].metadata.name in names
            kubectl("delete", "configmap", "one")
            with pytest.raises(client.ApiException) as gone:
                api.read_namespaced_config_map("one", "default")
            assert gone.value.status == 404 and json.loads(gone.value.body)["reason"] == "NotFound"
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
