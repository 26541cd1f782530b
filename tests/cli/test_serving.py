"""The HTTPS server `kubeloop up` and `kubeloop apiserver` run: what an app behind it sees of a request."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeloop.cli._cluster import _bind, _uvicorn_server
from kubeloop.server import ensure_tls

Connect = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


@contextlib.asynccontextmanager
async def serving(app: Any, tmp_path: Path) -> AsyncIterator[Connect]:
    """``app`` behind the server ``kubeloop up`` runs (TLS on a free port); yields a function that opens a
    connection to it."""
    tls = ensure_tls(tmp_path)
    sock = _bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = _uvicorn_server(app, tls.cert, tls.key)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    context = ssl.create_default_context(cafile=str(tls.ca_cert))

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")

    try:
        async with asyncio.timeout(10):
            while not server.started:
                await asyncio.sleep(0.01)
        yield connect
    finally:
        server.should_exit = True
        await task


async def echo_peer(scope: Any, receive: Any, send: Any) -> None:
    body = orjson.dumps({"client": scope["client"][0], "scheme": scope["scheme"]})
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


async def test_forwarded_headers_do_not_change_the_peer_the_app_sees(tmp_path: Path) -> None:
    async with serving(echo_peer, tmp_path) as connect:
        reader, writer = await connect()
        writer.write(b"GET /x HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 10.1.2.3\r\n"
                     b"X-Forwarded-Proto: http\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(10):
            answer = await reader.read()
        writer.close()
    body = answer.split(b"\r\n\r\n", 1)[1]
    assert orjson.loads(body) == {"client": "127.0.0.1", "scheme": "https"}


async def test_an_upgrade_request_is_served_as_plain_http_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # kubectl exec asks for SPDY/3.1 (or a WebSocket): no upgrade is taken, the app answers the request
    # (kubeloop's is a Status saying simulated containers run no process), and the console stays quiet
    # (uvicorn's own protocol warns twice and advises installing a WebSocket library).
    answers = []
    async with serving(echo_peer, tmp_path) as connect:
        uvicorn_log = logging.getLogger("uvicorn.error")  # uvicorn's config stops it propagating to caplog's
        uvicorn_log.addHandler(caplog.handler)
        try:
            with caplog.at_level(logging.DEBUG):
                for upgrade in (b"SPDY/3.1", b"websocket"):
                    reader, writer = await connect()
                    writer.write(b"POST /api/v1/namespaces/default/pods/p/exec?command=ls HTTP/1.1\r\n"
                                 b"Host: localhost\r\nConnection: Upgrade\r\nUpgrade: " + upgrade +
                                 b"\r\nContent-Length: 0\r\n\r\n")
                    async with asyncio.timeout(10):
                        head = await reader.readuntil(b"\r\n\r\n")
                        answers.append((head, await reader.readexactly(int(head.split(b"content-length: ")[1]
                                                                               .split(b"\r\n")[0]))))
                    writer.close()
        finally:
            uvicorn_log.removeHandler(caplog.handler)
    for head, body in answers:
        assert head.startswith(b"HTTP/1.1 200 ") and orjson.loads(body) == {"client": "127.0.0.1", "scheme": "https"}
    assert len(answers) == 2
    assert not [r for r in caplog.records if "upgrade" in r.getMessage().lower() or "WebSocket" in r.getMessage()]


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_the_serving_process_still_collects_cycles_automatically_after_gc_tuning() -> None:
    import gc
    import weakref

    from kubeloop.cli._cluster import GC_YOUNG_THRESHOLD, _tune_gc

    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    try:
        _tune_gc()
        assert gc.get_threshold()[0] == GC_YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0  # what start-up built is out of every collection
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        keep = [[] for _ in range(GC_YOUNG_THRESHOLD * 2)]  # allocations alone trigger a collection
        assert gone() is None
        del keep
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        if not enabled:
            gc.disable()


async def test_the_serving_layer_tells_the_app_the_status_it_sent(tmp_path: Path) -> None:
    # The app's request metrics read the status from the scope (STATUS_KEY) rather than wrapping send: the
    # serving layer puts 0 there with each request and the status once the head is written.
    from kubeloop.server._metrics import STATUS_KEY

    seen: list[tuple[Any, Any]] = []

    async def teapot(scope: Any, receive: Any, send: Any) -> None:
        before = scope.get(STATUS_KEY)
        await send({"type": "http.response.start", "status": 418, "headers": [(b"content-length", b"2")]})
        seen.append((before, scope.get(STATUS_KEY)))
        await send({"type": "http.response.body", "body": b"hi"})

    async with serving(teapot, tmp_path) as connect:
        reader, writer = await connect()
        writer.write(b"GET /x HTTP/1.1\r\nHost: localhost\r\n\r\nGET /y HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(10):
            answer = await reader.read()
        writer.close()
    assert answer.count(b"HTTP/1.1 418 ") == 2
    assert seen == [(0, 418), (0, 418)]  # each request starts from 0 on the one connection
