"""The client's HTTP/1.1 transport over real sockets: keep-alive reuse (TLS included), every body
framing, streaming, a stale kept-alive connection, timeouts, cancellation and the connection bound.

The server here is a scripted HTTP/1.1 peer (``asyncio.start_server``) so that each test can send
exactly the bytes a framing or failure needs; the kubeloop server is exercised over this transport
by the kubeconfig and benchmark paths."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson
import pytest
from _certs import make_pki

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.client import Client, ConnectionFailed
from kubeloop.client._transport import HTTP11Transport, ResponseBody

_CM = KindRegistry().by_kind("", "ConfigMap")
assert _CM is not None
CM: ResourceInfo = _CM
Reader = asyncio.StreamReader
Writer = asyncio.StreamWriter


@dataclass
class Peer:
    url: str
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    requests: list[tuple[int, bytes, bytes]] = field(default_factory=list)  # (connection, head, body)


async def read_request(reader: Reader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
        if name.lower() == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not chunked:
        return head, await reader.readexactly(length)
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return head, body
        body += chunk[:-2]


def ok(body: bytes, *extra: str) -> bytes:
    headers = "".join(f"{h}\r\n" for h in extra)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{headers}\r\n".encode() + body


Script = Callable[[Peer, int, Reader, Writer], Awaitable[None]]


@contextlib.asynccontextmanager
async def peer(script: Script, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[Peer]:
    state = Peer(url="")
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: Reader, writer: Writer) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        state.connections += 1
        state.open_now += 1
        state.most_open = max(state.most_open, state.open_now)
        try:
            await script(state, state.connections, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            state.open_now -= 1
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    state.url = f"{'https' if tls else 'http'}://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield state
    finally:
        server.close()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()


async def echo_forever(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
    """Answer every request on the connection with a ConfigMap naming the connection it came on."""
    while True:
        head, body = await read_request(reader)
        state.requests.append((conn, head, body))
        writer.write(ok(orjson.dumps({"metadata": {"name": f"conn-{conn}"}, "echo": body.decode()})))
        await writer.drain()


async def test_requests_reuse_one_kept_alive_tls_connection(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
    async with peer(echo_forever, tls=server_ctx) as state, Client.from_url(state.url, ca_file=str(pki.ca_cert)) as client:
        names = [(await client.get(CM, "a", namespace="x"))["metadata"]["name"] for _ in range(5)]
        created = await client.create(CM, {"metadata": {"name": "b"}, "data": {"k": "v"}}, namespace="x")
    assert names == ["conn-1"] * 5
    assert state.connections == 1
    assert orjson.loads(created["echo"]) == {"metadata": {"name": "b"}, "data": {"k": "v"}}
    assert b"content-length: " in state.requests[-1][1].lower()


async def test_tls_verification_rejects_a_server_whose_name_is_not_in_its_certificate(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki.client_cert, pki.client_key)  # a certificate without 127.0.0.1
    async with peer(echo_forever, tls=server_ctx) as state, Client.from_url(state.url, ca_file=str(pki.ca_cert)) as client:
        with pytest.raises(ConnectionFailed, match="TLS failure"):
            await client.get(CM, "a", namespace="x")


async def test_chunked_and_close_delimited_bodies_are_read_whole() -> None:
    payload = orjson.dumps({"metadata": {"name": "chunky"}, "data": {"k": "v" * 5000}})

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        await read_request(reader)
        if conn == 1:
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for i in range(0, len(payload), 700):
                part = payload[i : i + 700]
                writer.write(b"%x\r\n%b\r\n" % (len(part), part))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            await read_request(reader)  # the connection was kept: a second request arrives on it
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + payload)
        else:
            raise AssertionError("a kept-alive connection should have been reused")

    async with peer(script) as state, Client.from_url(state.url) as client:
        first = await client.get(CM, "chunky", namespace="x")
        second = await client.get(CM, "chunky", namespace="x")
    assert first == second == orjson.loads(payload)


async def test_a_watch_streams_each_event_before_the_response_ends() -> None:
    first_seen = asyncio.Event()

    def event(name: str, rv: int) -> bytes:
        obj = {"metadata": {"name": name, "resourceVersion": str(rv)}}
        line = orjson.dumps({"type": "ADDED", "object": obj}) + b"\n"
        return b"%x\r\n%b\r\n" % (len(line), line)

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + event("a", 1))
        await writer.drain()
        await first_seen.wait()  # the second event is only sent once the client has the first
        writer.write(event("b", 2) + b"0\r\n\r\n")
        await writer.drain()

    async with peer(script) as state, Client.from_url(state.url) as client:
        names = []
        async for ev in client.watch(CM, namespace="x"):
            names.append(ev.object["metadata"]["name"])
            first_seen.set()
    assert names == ["a", "b"]


async def test_a_get_on_a_connection_the_server_dropped_is_retried_on_a_new_one_but_a_post_is_not() -> None:
    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        head, _ = await read_request(reader)
        writer.write(ok(orjson.dumps({"metadata": {"name": f"conn-{conn}"}})))
        await writer.drain()
        await read_request(reader)  # the next request on a kept-alive connection: hang up unanswered
        state.requests.append((conn, head, b""))

    async with peer(script) as state, Client.from_url(state.url) as client:
        assert (await client.get(CM, "a", namespace="x"))["metadata"]["name"] == "conn-1"
        assert (await client.get(CM, "a", namespace="x"))["metadata"]["name"] == "conn-2"
        with pytest.raises(ConnectionFailed):
            await client.create(CM, {"metadata": {"name": "b"}}, namespace="x")
    assert state.connections == 2


async def test_a_streamed_request_body_is_sent_chunked() -> None:
    async def parts() -> AsyncIterator[bytes]:
        for part in (b'{"metadata":', b' {"name": "s"}}'):
            yield part

    async with peer(echo_forever) as state, httpx.AsyncClient(transport=HTTP11Transport(), base_url=state.url) as http:
        response = await http.post("/api/v1/namespaces/x/configmaps", content=parts())
    assert orjson.loads(response.json()["echo"]) == {"metadata": {"name": "s"}}
    assert b"transfer-encoding: chunked" in state.requests[0][1].lower()


async def test_a_server_that_does_not_answer_is_a_read_timeout() -> None:
    async def silent(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        await read_request(reader)
        await asyncio.sleep(30)

    async with peer(silent) as state, httpx.AsyncClient(transport=HTTP11Transport(), base_url=state.url, timeout=0.2) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get("/api")


async def test_a_response_abandoned_mid_body_closes_its_connection() -> None:
    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        if conn == 1:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 10)
            await writer.drain()
            await reader.read()  # until the client hangs up
            return
        await echo_forever(state, conn, reader, writer)

    async with peer(script) as state, httpx.AsyncClient(transport=HTTP11Transport(), base_url=state.url) as http:
        async with http.stream("GET", "/slow") as response:
            async for _ in response.aiter_raw():
                break
        second = await http.get("/next")
    assert second.json()["metadata"]["name"] == "conn-2"
    assert state.connections == 2


async def test_more_concurrent_requests_than_connections_wait_for_one() -> None:
    async with peer(echo_forever) as state, httpx.AsyncClient(transport=HTTP11Transport(max_connections=2), base_url=state.url) as http:
        answers = await asyncio.gather(*(http.get(f"/r{i}") for i in range(12)))
    assert all(a.status_code == 200 for a in answers)
    assert state.most_open <= 2
    assert len(state.requests) == 12


async def test_a_request_waiting_for_a_connection_reuses_the_one_released_rather_than_reconnecting() -> None:
    # At the bound, a released kept-alive connection is the waiter's to reuse: closing it to open a
    # new one would cost a TCP (and TLS) handshake per request for as long as the pool stays full.
    async with peer(echo_forever) as state, httpx.AsyncClient(transport=HTTP11Transport(max_connections=2), base_url=state.url) as http:
        answers = await asyncio.gather(*(http.get(f"/r{i}") for i in range(12)))
    assert [a.status_code for a in answers] == [200] * 12
    assert state.connections == 2


async def test_a_refused_connection_is_a_connection_failure() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with Client.from_url(f"http://127.0.0.1:{port}") as client:
        with pytest.raises(ConnectionFailed, match="connection failed"):
            await client.get(CM, "a", namespace="x")


async def test_a_request_cancelled_while_woken_for_a_connection_hands_it_to_the_next_waiter() -> None:
    transport = HTTP11Transport(max_connections=1)
    async with peer(echo_forever) as state, httpx.AsyncClient(transport=transport, base_url=state.url, timeout=2) as http:
        async with http.stream("GET", "/hold") as held:
            assert held.status_code == 200
            cancelled = asyncio.create_task(http.get("/cancelled"))
            third = asyncio.create_task(http.get("/third"))
            for _ in range(100):
                if len(transport._waiters) == 2:
                    break
                await asyncio.sleep(0)
            assert len(transport._waiters) == 2
        cancelled.cancel()  # woken by the release above, but cancelled before it could run
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert (await third).status_code == 200


async def test_a_watch_cut_mid_stream_is_a_connection_failure_after_the_events_before_the_cut() -> None:
    line = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1"}}}) + b"\n"

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%b\r\n" % (len(line), line))
        await writer.drain()
        writer.transport.abort()

    async with peer(script) as state, Client.from_url(state.url) as client:
        names = []
        with pytest.raises(ConnectionFailed, match="mid-response"):
            async for ev in client.watch(CM, namespace="x"):
                names.append(ev.object["metadata"]["name"])
    assert names == ["a"]


async def test_a_gzip_encoded_answer_is_decoded() -> None:
    payload = orjson.dumps({"metadata": {"name": "zipped"}, "data": {"k": "v" * 1000}})

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        head, _ = await read_request(reader)
        state.requests.append((conn, head, b""))
        writer.write(ok(gzip.compress(payload), "Content-Encoding: gzip"))
        await writer.drain()

    async with peer(script) as state, Client.from_url(state.url) as client:
        assert await client.get(CM, "zipped", namespace="x") == orjson.loads(payload)
    assert b"accept-encoding: gzip" in state.requests[0][1].lower()


def test_the_transport_runs_on_uvloop_with_tls_keep_alive_and_a_streamed_watch(tmp_path: Path) -> None:
    """uvloop's transports are not ``asyncio.Transport`` subclasses; the example and kopf run on uvloop."""
    uvloop = pytest.importorskip("uvloop")
    pki = make_pki(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
    line = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "w", "resourceVersion": "1"}}}) + b"\n"

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        while True:
            head, _ = await read_request(reader)
            if b"watch=true" in head:
                chunk = b"%x\r\n%b\r\n" % (len(line), line)
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + b"0\r\n\r\n")
            else:
                writer.write(ok(orjson.dumps({"metadata": {"name": f"conn-{conn}"}})))
            await writer.drain()

    async def scenario() -> tuple[list[str], list[str], int]:
        async with peer(script, tls=server_ctx) as state, Client.from_url(state.url, ca_file=str(pki.ca_cert)) as c:
            names = [(await c.get(CM, "a", namespace="x"))["metadata"]["name"] for _ in range(3)]
            watched = [ev.object["metadata"]["name"] async for ev in c.watch(CM, namespace="x")]
            return names, watched, state.connections

    names, watched, connections = uvloop.run(scenario())
    assert names == ["conn-1"] * 3
    assert watched == ["w"]
    assert connections == 1


def big_list(items: int) -> bytes:
    """A ConfigMapList of about ``items`` KB, as kube-apiserver encodes one (items open with metadata)."""
    objects = [{"metadata": {"name": f"c{i:05d}"}, "data": {"k": "v" * 1000}} for i in range(items)]
    return orjson.dumps({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
                         "items": objects})


def serve_in_slices(payload: bytes) -> Script:
    """Every request answered with ``payload`` (Content-Length), written in slices with pauses between
    them, so the client has the head and part of the body before the rest arrives."""

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        while True:
            head, _ = await read_request(reader)
            state.requests.append((conn, head, b""))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload))
            for i in range(0, len(payload), 300_000):
                writer.write(payload[i : i + 300_000])
                await writer.drain()
                await asyncio.sleep(0.005)

    return script


@pytest.mark.parametrize("tls", [False, True])
async def test_a_large_body_is_read_whole_in_place_and_the_connection_is_kept(tmp_path: Path, tls: bool) -> None:
    payload = big_list(2500)  # 2.6 MB: over the in-place threshold
    server_ctx = None
    ca = None
    if tls:
        pki = make_pki(tmp_path)
        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
        ca = str(pki.ca_cert)
    async with peer(serve_in_slices(payload), tls=server_ctx) as state, Client.from_url(state.url, ca_file=ca) as client:
        listed = [await client.list(CM, namespace="x") for _ in range(3)]
    expected = orjson.loads(payload)
    for item in expected["items"]:
        item.update(apiVersion="v1", kind="ConfigMap")
    assert listed == [expected] * 3
    assert state.connections == 1, "the connection carried the next requests after each in-place body"


async def fetch(transport: HTTP11Transport, url: str) -> tuple[httpx.Response, ResponseBody]:
    """A GET straight through the transport: the response with its body unread, and that body."""
    response = await transport.handle_async_request(httpx.Request("GET", url))
    assert isinstance(response.stream, ResponseBody)
    return response, response.stream


async def test_read_whole_returns_the_body_received_in_place_and_none_for_a_small_or_chunked_one() -> None:
    payload = big_list(1500)

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload[:5000])
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.write(payload[5000:])
        await writer.drain()
        await read_request(reader)
        writer.write(ok(b'{"small":true}'))
        await writer.drain()
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%b\r\n0\r\n\r\n" % (len(payload), payload))
        await writer.drain()
        await asyncio.sleep(1)

    transport = HTTP11Transport()
    async with peer(script) as state:
        _, body = await fetch(transport, state.url + "/big")
        whole = await body.read_whole()
        small, body = await fetch(transport, state.url + "/small")
        assert await body.read_whole() is None
        assert await small.aread() == b'{"small":true}'
        chunked, body = await fetch(transport, state.url + "/chunked")
        assert await body.read_whole() is None
        assert await chunked.aread() == payload
        await transport.aclose()
    assert isinstance(whole, bytearray) and whole == payload
    assert state.connections == 1


async def test_a_large_body_cut_mid_way_is_a_connection_failure() -> None:
    payload = big_list(2000)

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload[:4000])
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.write(payload[4000 : len(payload) // 2])
        await writer.drain()
        writer.transport.abort()

    async with peer(script) as state, Client.from_url(state.url) as client:
        with pytest.raises(ConnectionFailed, match="mid-response"):
            await client.list(CM, namespace="x")


async def test_a_large_body_that_stops_arriving_is_a_read_timeout() -> None:
    payload = big_list(1500)

    async def script(state: Peer, conn: int, reader: Reader, writer: Writer) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload[:4000])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(payload[4000:-10])
        await writer.drain()
        await asyncio.sleep(30)

    transport = HTTP11Transport()
    async with peer(script) as state:
        request = httpx.Request("GET", state.url + "/stalls", extensions={"timeout": {"read": 0.3}})
        response = await transport.handle_async_request(request)
        assert isinstance(response.stream, ResponseBody)
        with pytest.raises(httpx.ReadTimeout):
            await response.stream.read_whole()
        await response.aclose()
        await transport.aclose()


def test_a_large_body_is_read_in_place_on_uvloop_over_tls(tmp_path: Path) -> None:
    uvloop = pytest.importorskip("uvloop")
    pki = make_pki(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
    payload = big_list(2500)

    async def scenario() -> tuple[list[bytes | None], int]:
        transport = HTTP11Transport(ssl_context=ssl.create_default_context(cafile=str(pki.ca_cert)))
        async with peer(serve_in_slices(payload), tls=server_ctx) as state:
            bodies: list[bytes | None] = []
            for _ in range(2):
                _, body = await fetch(transport, state.url + "/big")
                whole = await body.read_whole()
                bodies.append(bytes(whole) if whole is not None else None)
            await transport.aclose()
            return bodies, state.connections

    bodies, connections = uvloop.run(scenario())
    assert bodies == [payload, payload]
    assert connections == 1


@pytest.mark.parametrize("header", [("x-a", "one\r\nx-injected: 1"), ("x-a", "one\ntwo"), ("x-a", "one\rtwo")])
async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent(header: tuple[str, str]) -> None:
    # A CR or LF in a header would let it smuggle another header (or a request) onto the wire.
    async with peer(echo_forever) as state, httpx.AsyncClient(transport=HTTP11Transport(), base_url=state.url) as http:
        with pytest.raises(httpx.LocalProtocolError, match="invalid header b'x-a'"):
            await http.get("/r", headers=[header])
        answer = await http.get("/r", headers=[("x-a", "fine")])
    assert answer.status_code == 200
    assert len(state.requests) == 1
    assert b"x-a: fine" in state.requests[0][1]


def _contexts_of_idle_connections(transport: HTTP11Transport) -> list[ssl.SSLContext]:
    """The TLS context each pooled connection was made with (read from its SSL object)."""
    return [conn._transport.get_extra_info("ssl_object").context  # type: ignore[union-attr]
            for conns in transport._idle.values() for conn in conns]  # fmt: skip


async def test_concurrent_tls_connections_share_the_clients_one_context(tmp_path: Path) -> None:
    # A controller manager starts some twenty watches at once, each on its own connection: one context
    # (its CA loaded once) serves them all.
    pki = make_pki(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
    async with peer(echo_forever, tls=server_ctx) as state, Client.from_url(state.url, ca_file=str(pki.ca_cert)) as client:
        answers = await asyncio.gather(*(client.get(CM, f"cm-{i}", namespace="x") for i in range(4)))
        transport = client._transport
        assert isinstance(transport, HTTP11Transport)
        contexts = _contexts_of_idle_connections(transport)
    assert state.connections == 4
    assert sorted(a["metadata"]["name"] for a in answers) == [f"conn-{i}" for i in range(1, 5)]
    assert len(contexts) == 4 and all(c is contexts[0] for c in contexts)


async def test_without_a_context_the_default_one_is_made_once_for_every_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default context loads the system's CAs (tens of milliseconds): once per transport, not per
    # connection. SSL_CERT_FILE makes the test CA the system's, so the default context verifies the peer.
    pki = make_pki(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca_cert))
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki.server_cert, pki.server_key)
    transport = HTTP11Transport()
    async with peer(echo_forever, tls=server_ctx) as state:
        answers = await asyncio.gather(*(fetch(transport, state.url + f"/r{i}") for i in range(3)))
        for response, body in answers:
            assert response.status_code == 200
            assert b"conn-" in b"".join([chunk async for chunk in body])  # read to the end: kept alive
        contexts = _contexts_of_idle_connections(transport)
        await transport.aclose()
    assert state.connections == 3
    assert len(contexts) == 3 and all(c is contexts[0] for c in contexts)
