"""The protocol kubeloop serves HTTPS with (`kubeloop.cli._serving`): uvicorn's httptools protocol whose
writes are corked for one event-loop turn and whose keep-alive check is one per server.

Every test runs a real uvicorn on a real port over TLS, as ``kubeloop apiserver`` does."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httptools
import orjson
import uvicorn
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.cli._bootstrap import bootstrap
from kubeloop.cli._cluster import _bind, _uvicorn_server
from kubeloop.cli._serving import FLUSH_BYTES, HttpProtocol, split_target, uvicorn_config
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, TlsMaterial, create_app, ensure_tls
from kubeloop.server._metrics import STATUS_KEY
from kubeloop.store import SqliteStore

App = Callable[[Any, Any, Any], Awaitable[None]]


@contextlib.asynccontextmanager
async def serving(app: App, tls: TlsMaterial, server: Any = None) -> AsyncIterator[tuple[int, Any]]:
    """``app`` served by uvicorn with kubeloop's settings (or by ``server``) on a free port."""
    sock = _bind("127.0.0.1", 0)
    server = server or _uvicorn_server(app, tls.cert, tls.key)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                await asyncio.sleep(0.005)
        yield sock.getsockname()[1], server
    finally:
        server.should_exit = True
        await task
        sock.close()


async def connect(port: int, tls: TlsMaterial) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    context = ssl.create_default_context(cafile=str(tls.ca_cert))
    return await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")


@contextlib.asynccontextmanager
async def real_api(tmp_path: Path) -> AsyncIterator[Any]:
    """kubeloop's own app on a fresh SQLite store, started and bootstrapped; shut down after."""
    store = await SqliteStore.open(tmp_path / "db")
    core = create_app(store=store, disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await core.startup()
    try:
        await bootstrap(core)
        yield core
    finally:
        await core.shutdown()
        await store.close()


def fixed(body: bytes, *, extra: list[tuple[bytes, bytes]] | None = None) -> App:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)), *(extra or [])]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


class RecordCounter:
    """A TLS client over a raw socket that counts the TLS records each response arrives in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tls: TlsMaterial) -> None:
        self.reader, self.writer = reader, writer
        context = ssl.create_default_context(cafile=str(tls.ca_cert))
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")

    async def handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                await self._pump()
        await self._flush()

    async def request(self, raw: bytes, *, until: bytes) -> tuple[bytes, int]:
        """Send ``raw``; read until the plaintext ends with ``until``; returns it and its record count."""
        self.tls.write(raw)
        await self._flush()
        plain, records, wire = b"", 0, b""
        while not plain.endswith(until):
            chunk = await self.reader.read(65536)
            assert chunk, "connection closed"
            wire += chunk
            while len(wire) >= 5 and len(wire) >= 5 + int.from_bytes(wire[3:5], "big"):
                size = 5 + int.from_bytes(wire[3:5], "big")
                self.incoming.write(wire[:size])
                wire = wire[size:]
                records += 1
                with contextlib.suppress(ssl.SSLWantReadError):
                    while data := self.tls.read(65536):
                        plain += data
        return plain, records

    async def _pump(self) -> None:
        await self._flush()
        self.incoming.write(await self.reader.read(65536))

    async def _flush(self) -> None:
        if data := self.outgoing.read():
            self.writer.write(data)
            await self.writer.drain()


async def test_a_responses_head_and_body_arrive_in_one_tls_record(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    body = orjson.dumps({"kind": "ConfigMap", "data": {"k": "v" * 700}})
    async with serving(fixed(body), tls) as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = RecordCounter(reader, writer, tls)
        async with asyncio.timeout(10):
            await client.handshake()
            # The first answer may share its read with the session tickets; count from the second.
            await client.request(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", until=body)
            for _ in range(3):
                answer, records = await client.request(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", until=body)
                assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\n" + body)
                assert records == 1
        writer.close()


async def _answers(app: App, tls: TlsMaterial, server: Any, count: int) -> list[bytes]:
    """What ``server`` (serving ``app``) answers to ``GET /0`` ... ``GET /<count-1>``, one connection
    each, ``Connection: close``, without the date header."""
    got = []
    async with serving(app, tls, server) as (port, _):
        for n in range(count):
            reader, writer = await connect(port, tls)
            writer.write(b"GET /%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % n)
            async with asyncio.timeout(10):
                got.append(_without_date(await reader.read()))
            writer.close()
    return got


def _without_date(raw: bytes) -> bytes:
    return re.sub(rb"date: [^\r]*\r\n", b"", raw)


async def test_every_byte_is_uvicorns_own_for_random_responses(tmp_path: Path) -> None:
    """The same app under uvicorn's own httptools protocol and under kubeloop's answers the same bytes
    (the Date header aside), for random mixes of fixed-length, chunked, multi-part and empty responses."""
    tls = ensure_tls(tmp_path)
    rng = random.Random(20261129)
    cases: list[tuple[int, list[tuple[bytes, bytes]], list[bytes]]] = []
    for _ in range(40):
        parts = [rng.randbytes(rng.choice([0, 1, 17, 600, 5000, 70_000])) for _ in range(rng.randint(1, 4))]
        headers = [(b"content-type", b"application/json")]
        if rng.random() < 0.6:
            headers.append((b"content-length", b"%d" % sum(map(len, parts))))
        if rng.random() < 0.2:
            headers.append((b"x-kubernetes-pf-flowschema-uid", b"abc"))
        cases.append((rng.choice([200, 201, 404, 409]), headers, parts))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        status, headers, parts = cases[int(scope["path"].strip("/"))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for n, part in enumerate(parts):
            if n % 2:
                await asyncio.sleep(0)  # some parts in a later turn
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    ours = await _answers(app, tls, _uvicorn_server(app, tls.cert, tls.key), len(cases))
    assert ours == await _answers(app, tls, uvicorn.Server(config), len(cases))


async def test_a_streamed_response_sends_each_part_before_the_next_is_produced(tmp_path: Path) -> None:
    """A watch (chunked) and a streamed list (known length, many parts): the app only produces the next
    part after the client has received the previous one, so corking that held parts back would hang."""
    tls = ensure_tls(tmp_path)
    received: asyncio.Queue[int] = asyncio.Queue()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        chunked = scope["path"] == "/watch"
        headers = [(b"content-type", b"application/json")]
        if not chunked:
            headers.append((b"content-length", b"%d" % (5 * 8)))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for n in range(5):
            await send({"type": "http.response.body", "body": b"part %2d\n" % n, "more_body": True})
            assert await received.get() == n  # the client got part n
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async with serving(app, tls) as (port, _):
        for path in (b"/watch", b"/list"):
            reader, writer = await connect(port, tls)
            writer.write(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
            seen = b""
            async with asyncio.timeout(10):
                for n in range(5):
                    while b"part %2d\n" % n not in seen:
                        seen += await reader.read(65536)
                    received.put_nowait(n)
            writer.close()


async def test_the_real_api_streams_watch_events_before_the_watch_ends(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    async with real_api(tmp_path) as core, serving(core, tls) as (port, _):
        reader, writer = await connect(port, tls)
        writer.write(b"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\r\n")
        other_reader, other = await connect(port, tls)
        seen = b""
        async with asyncio.timeout(20):
            for n in range(3):
                body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{n}"}})
                other.write(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                while b'"name":"c%d"' % n not in seen:  # the event, while the watch stays open
                    seen += await reader.read(65536)
        assert b"transfer-encoding: chunked" in seen
        writer.close()
        other.close()
        del other_reader


async def test_the_real_api_answers_a_large_list_whole_and_identical_to_in_process(tmp_path: Path) -> None:
    from kubeloop.cli._bootstrap import asgi_call

    tls = ensure_tls(tmp_path)
    async with real_api(tmp_path) as core:
        for n in range(300):
            obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{n}"}, "data": {"k": "v" * 900}}
            status, _ = await asgi_call(core, "POST", "/api/v1/namespaces/default/configmaps", obj)
            assert status == 201
        async with serving(core, tls) as (port, _):
            reader, writer = await connect(port, tls)
            writer.write(b"GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            async with asyncio.timeout(20):
                raw = await reader.read()
            writer.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        length = int(re.search(rb"content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        assert len(body) == length > 300 * 900
        listed = orjson.loads(body)
        assert [item["metadata"]["name"] for item in listed["items"]] == sorted(f"c{n}" for n in range(300))


async def test_a_connection_the_server_closes_delivers_every_byte_written_first(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    body = b"x" * 3000

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/close":  # the app asks for the close
            await fixed(body, extra=[(b"connection", b"close")])(scope, receive, send)
            return
        # the app fails half-way: uvicorn closes the connection after what was sent
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"6000")]})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        raise RuntimeError("half-way")

    async with serving(app, tls) as (port, _):
        for path, expect in ((b"/close", b"connection: close\r\n\r\n" + body), (b"/fail", b"\r\n\r\n" + body)):
            reader, writer = await connect(port, tls)
            writer.write(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
            async with asyncio.timeout(10):
                raw = await reader.read()  # to the end: the server closed
            assert raw.startswith(b"HTTP/1.1 200 OK\r\n") and raw.endswith(expect)
            writer.close()


async def test_a_slow_reader_pauses_the_writer_and_loses_or_reorders_nothing(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    parts = 200
    part = 64 * 1024
    buffered: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        [protocol] = server.server_state.connections
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"%d" % (parts * part))]})
        for n in range(parts):
            await send({"type": "http.response.body", "body": n.to_bytes(4, "big") * (part // 4), "more_body": True})
            buffered.append(protocol.transport.get_write_buffer_size())
        await send({"type": "http.response.body", "body": b""})

    async with serving(app, tls) as (port, server):
        reader, writer = await connect(port, tls)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.sleep(0.2)  # not reading: the server's buffers fill and it must wait
        async with asyncio.timeout(30):
            await reader.readuntil(b"\r\n\r\n")
            body = await reader.readexactly(parts * part)
        writer.close()
    assert body == b"".join(n.to_bytes(4, "big") * (part // 4) for n in range(parts))
    high_water, _ = (512 * 1024, None)  # uvloop's TLS write high-water mark
    assert max(buffered) < high_water + FLUSH_BYTES + part  # uvicorn waited instead of buffering 12.5 MiB


async def test_an_idle_keep_alive_connection_is_closed_after_the_timeout_and_a_busy_one_is_not(
    tmp_path: Path,
) -> None:
    tls = ensure_tls(tmp_path)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/slow":
            await asyncio.sleep(0.6)  # longer than the keep-alive timeout: a request in flight is not idle
        await fixed(b"ok")(scope, receive, send)

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.timeout_keep_alive = 0.2
    async with serving(app, tls, uvicorn.Server(config)) as (port, server):
        reader, writer = await connect(port, tls)
        async with asyncio.timeout(10):
            writer.write(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await reader.readuntil(b"ok")).startswith(b"HTTP/1.1 200 OK")
            [protocol] = server.server_state.connections
            assert isinstance(protocol, HttpProtocol) and protocol.timeout_keep_alive_task is None
            assert await reader.read() == b""  # then idle: closed by the server
        writer.close()
        async with asyncio.timeout(10):
            while server.server_state.connections:
                await asyncio.sleep(0.01)


# ---------------------------------------------------------------------------------------------- requests


def _observed(scope: dict[str, Any]) -> dict[str, Any]:
    """What an app sees of a request, without what differs between two servers and connections (and the
    status kubeloop's serving layer adds for the app's metrics, tested in test_serving)."""
    seen = {k: v for k, v in scope.items() if k not in ("client", "server", "state", "asgi", STATUS_KEY)}
    seen["headers"] = [tuple(h) for h in scope["headers"]]
    return seen


def _joined(seen: Any) -> Any:
    """A request's (scope, receive() messages) with the messages' bodies joined; anything else as is."""
    if not isinstance(seen, tuple):
        return seen
    scope, messages = seen
    assert all(m.get("more_body") for m in messages[:-1]) and not messages[-1].get("more_body")
    return scope, {m["type"] for m in messages}, b"".join(m.get("body", b"") for m in messages)


# Raw requests, each sent as the listed writes (a pause between them), on one connection the server
# closes after its (last) answer, so the client reads to the end rather than for a while.
REQUESTS: list[list[bytes]] = [
    [b"GET /api/v1/pods?limit=5&watch=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"GET /a%20b/%2Fc?x=%20 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Mixed-Case: Value\r\n\r\n"],
    [b"GET /? HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"GET http://example.com/abs/path?q=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"POST /body HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"a\": 1}\n"],
    [b"POST /split HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 10\r\n\r\n01234", b"56789"],
    [b"POST /chunked HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", b"4\r\ndefg\r\n0\r\n\r\n"],
    [b"POST /continue HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n", b"body"],
    [b"POST /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 200000\r\n\r\n" + b"b" * 100_000, b"c" * 100_000],
    [b"HEAD /head HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"GET /pipelined/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /pipelined/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"GET /error HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"GET /silent HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"GET /bad-header HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"],
    [b"GET /old HTTP/1.0\r\nHost: x\r\nConnection: close\r\n\r\n"],
]


async def test_requests_reach_the_app_and_are_answered_exactly_as_under_uvicorns_own_protocol(tmp_path: Path) -> None:
    """The same requests under uvicorn's httptools protocol and under kubeloop's: the app sees the same
    scope and the same receive() messages, and the client the same bytes (the Date header aside), for
    bodies whole, split, chunked and large (flow control), 100-continue, HEAD, HTTP/1.0, pipelining, an
    absolute URL, percent-encoding, and apps that fail, answer nothing or send a bad header."""
    tls = ensure_tls(tmp_path)
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        messages = []
        while True:
            message = await receive()
            messages.append(message)
            if not message.get("more_body"):
                break
        seen.append((_observed(scope), messages))
        path = scope["path"]
        if path == "/error":
            raise RuntimeError("the app fails")
        if path == "/silent":
            return
        if path == "/bad-header":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"x-bad", b"a\r\nb")]})
            return
        body = orjson.dumps({"path": path, "size": sum(len(m.get("body", b"")) for m in messages)})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"Content-Type", b"application/json"), (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})
        after = await receive()  # once the response is complete
        seen.append(after)

    async def run(server: Any) -> tuple[list[bytes], list[Any]]:
        seen.clear()
        answers = []
        async with serving(app, tls, server) as (port, _):
            for writes in REQUESTS:
                reader, writer = await connect(port, tls)
                for n, data in enumerate(writes):
                    if n:
                        await asyncio.sleep(0.05)
                    writer.write(data)
                    await writer.drain()
                async with asyncio.timeout(10):
                    answer = await reader.read()  # to the end: every request asks for the close
                answers.append(_without_date(answer))
                writer.close()
        return answers, list(seen)

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await run(uvicorn.Server(config))
    ours = await run(_uvicorn_server(app, tls.cert, tls.key))
    # How a body spread over several writes falls into receive() messages depends on when each TLS
    # record is read, under either protocol: on a loaded machine the pause between writes can pass
    # before the server reads the first. So the messages compare joined (same body, same message
    # types, only the last without more_body).
    assert [_joined(s) for s in ours[1]] == [_joined(s) for s in theirs[1]]
    assert ours[0] == theirs[0]
    assert any(b"100 Continue" in answer for answer in ours[0])
    assert sum(answer.count(b"HTTP/1.1 200 OK") for answer in ours[0]) == 13  # all but the three failing apps


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="/?#=&%:@!$'()*+,;-._~abcAZ09", max_size=30).map(lambda s: ("/" + s).encode()))
def test_a_request_target_splits_as_httptools_parse_url_splits_it(target: bytes) -> None:
    try:
        parsed = httptools.parse_url(target)
    except httptools.HttpParserInvalidURLError:
        return  # not a target llhttp lets through
    assert split_target(target) == (parsed.path, parsed.query or b"")


async def test_a_body_the_app_has_not_asked_for_pauses_reading_past_uvicorns_high_water_mark(tmp_path: Path) -> None:
    from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT

    tls = ensure_tls(tmp_path)
    go = asyncio.Event()
    size = 8 * HIGH_WATER_LIMIT

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await go.wait()
        body = b""
        while True:
            message = await receive()
            body += message["body"]
            if not message["more_body"]:
                break
        assert body == bytes(range(256)) * (size // 256)
        await fixed(b"%d" % len(body))(scope, receive, send)

    async with serving(app, tls) as (port, server):
        reader, writer = await connect(port, tls)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size + bytes(range(256)) * (size // 256))
        async with asyncio.timeout(10):
            while not server.server_state.connections:
                await asyncio.sleep(0.01)
            [protocol] = server.server_state.connections
            while not protocol.flow.read_paused:  # the buffered body passed the mark: reading stops
                await asyncio.sleep(0.01)
            assert HIGH_WATER_LIMIT < protocol.cycle.body_size < size
            go.set()
            answer = await reader.readuntil(b"%d" % size)
        assert answer.startswith(b"HTTP/1.1 200 OK")
        writer.close()


async def test_a_requests_task_is_one_of_the_servers_tasks_until_its_app_returns(tmp_path: Path) -> None:
    """uvicorn's shutdown waits for ``server_state.tasks`` (and ``limit_concurrency`` counts them): each
    request's task is there while its app runs, whether the app answers, fails or answers nothing, and
    for pipelined requests, and leaves when the app returns."""
    tls = ensure_tls(tmp_path)
    running: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        [protocol] = server.server_state.connections
        running.append(asyncio.current_task() in protocol.tasks)
        await asyncio.sleep(0)
        running.append(asyncio.current_task() in protocol.tasks)
        if scope["path"] == "/error":
            raise RuntimeError("the app fails")
        if scope["path"] != "/silent":
            await fixed(b"ok")(scope, receive, send)

    async with serving(app, tls) as (port, server):
        for raw in (b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    b"GET /error HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    b"GET /silent HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"):
            reader, writer = await connect(port, tls)
            writer.write(raw)
            async with asyncio.timeout(10):
                await reader.read()
                while server.server_state.tasks:
                    await asyncio.sleep(0.01)
            writer.close()
    assert running == [True] * 10


async def test_parts_written_in_one_turn_on_many_connections_all_go_out_in_that_turn(tmp_path: Path) -> None:
    """One flush per loop turn serves every connection written to in it: apps on eight connections
    write a part in the same turn, and each waits for its client to have it before finishing."""
    tls = ensure_tls(tmp_path)
    go = asyncio.Event()
    received = {n: asyncio.Event() for n in range(8)}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        n = int(scope["path"].strip("/"))
        await go.wait()  # every app wakes in the same turn
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"part %d\n" % n, "more_body": True})
        await received[n].wait()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async with serving(app, tls) as (port, server):
        clients = [await connect(port, tls) for _ in received]
        for n, (_, writer) in enumerate(clients):
            writer.write(b"GET /%d HTTP/1.1\r\nHost: x\r\n\r\n" % n)
        async with asyncio.timeout(10):
            while len(server.server_state.tasks) < len(clients):
                await asyncio.sleep(0.01)
            go.set()
            for n, (reader, _) in enumerate(clients):
                seen = b""
                while b"part %d\n" % n not in seen:
                    seen += await reader.read(65536)
                received[n].set()
            for reader, _ in clients:
                assert (await reader.readuntil(b"0\r\n\r\n")).endswith(b"0\r\n\r\n")
        for _, writer in clients:
            writer.close()


async def test_response_headers_are_checked_and_rendered_exactly_as_uvicorn_does_every_time(tmp_path: Path) -> None:
    """Headers drawn again and again from one pool (so most are seen before), under uvicorn's own
    protocol and under kubeloop's: the same bytes, or the same closed connection for a header uvicorn
    refuses. The pool has mixed case, empty and non-ASCII values, tabs, every framing header in several
    forms, names and values uvicorn refuses, a bad length, and headers as lists."""
    tls = ensure_tls(tmp_path)
    rng = random.Random(20261130)
    pool: list[Any] = [
        (b"Content-Type", b"application/json"), (b"CACHE-control", b"no-cache, private"), (b"x-tab", b"a\tb"),
        (b"x-high", b"\xff\x80"), (b"x-empty", b""), (b"", b"empty name"), [b"X-List", b"v"],
        (b"Transfer-Encoding", b"Chunked"), (b"transfer-encoding", b"gzip"),
        (b"Connection", b"keep-alive, Close"), (b"connection", b"keep-alive"), (b"content-length", b"abc"),
        (b"x bad", b"v"), (b"x:bad", b"v"), (b"x\x00", b"v"), (b"x-v", b"a\r\nb"), (b"x-v", b"\x7f"),
        (b"x-v", b"a\x00b"), (b"x-long", b"l" * 300),
    ]
    cases: list[tuple[list[Any], bytes]] = []
    for _ in range(60):
        body = rng.randbytes(rng.choice([0, 5, 20]))
        headers = rng.sample(pool, rng.randint(0, 4))
        if rng.random() < 0.7:
            length = len(body) if rng.random() < 0.9 else len(body) + 1
            headers.insert(rng.randint(0, len(headers)), (b"Content-Length", b"%d" % length))
        cases.append((headers, body))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers, body = cases[int(scope["path"].strip("/"))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await _answers(app, tls, uvicorn.Server(config), len(cases))
    ours = await _answers(app, tls, _uvicorn_server(app, tls.cert, tls.key), len(cases))
    assert ours == theirs
    assert 10 < sum(answer.startswith(b"HTTP/1.1 200 OK") for answer in ours) < 50  # answered and refused


async def test_header_names_and_values_as_bytearrays_are_answered_as_uvicorn_answers_them(tmp_path: Path) -> None:
    """ASGI header names and values are byte strings, which an app may give as bytearrays: the same
    bytes as under uvicorn's own protocol, framing headers and refused values included (on the compiled
    build too, whose functions check the types they declare)."""
    tls = ensure_tls(tmp_path)
    cases: list[list[Any]] = [
        [(bytearray(b"Content-Type"), bytearray(b"application/json")), (b"content-length", bytearray(b"2"))],
        [(bytearray(b"Content-Length"), b"2"), (b"x-v", bytearray(b"a\tb"))],
        [[bytearray(b"Connection"), bytearray(b"keep-alive, close")], (bytearray(b"transfer-encoding"), b"chunked")],
        [(b"x-v", bytearray(b"a\r\nb"))],
        [(bytearray(b"x v"), b"v")],
    ]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = cases[int(scope["path"].strip("/"))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await _answers(app, tls, uvicorn.Server(config), len(cases))
    ours = await _answers(app, tls, _uvicorn_server(app, tls.cert, tls.key), len(cases))
    assert ours == theirs
    assert [answer.startswith(b"HTTP/1.1 200 OK") for answer in ours] == [True, True, True, False, False]


async def test_a_chunked_requests_trailers_join_its_own_headers_as_under_uvicorn_not_the_next_requests(
    tmp_path: Path,
) -> None:
    """A trailer is a header after the body: under uvicorn it joins the request's own ``scope["headers"]``.
    It must never reach the next request on the connection (a trailing ``Authorization`` would be that
    request's credentials)."""
    tls = ensure_tls(tmp_path)
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        seen.append((scope["path"], [tuple(h) for h in scope["headers"]]))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    raw = (
        b"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
        b"X-Trailer: 1\r\nAuthorization: Bearer t\r\n\r\n"
        b"GET /b HTTP/1.1\r\nHost: y\r\nConnection: close\r\n\r\n"
    )

    async def run(server: Any) -> tuple[bytes, list[Any]]:
        seen.clear()
        async with serving(app, tls, server) as (port, _):
            reader, writer = await connect(port, tls)
            writer.write(raw)
            async with asyncio.timeout(10):
                answer = await reader.read()
            writer.close()
        return _without_date(answer), list(seen)

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await run(uvicorn.Server(config))
    ours = await run(_uvicorn_server(app, tls.cert, tls.key))
    assert ours == theirs
    assert ours[1] == [
        ("/a", [(b"host", b"x"), (b"transfer-encoding", b"chunked"), (b"x-trailer", b"1"), (b"authorization", b"Bearer t")]),
        ("/b", [(b"host", b"y"), (b"connection", b"close")]),
    ]
