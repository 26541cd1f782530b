"""Errors come back as the kubeloop.api tree; Retry-After is honoured; no httpx/ssl error escapes."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import httpx
import pytest
from _realapi import FaultyApp, settle

from kubeloop.api import (
    ApiError,
    Conflict,
    InternalError,
    KindRegistry,
    NotFound,
    ServiceUnavailable,
    SystemClock,
    TooManyRequests,
)
from kubeloop.client import Backoff, Client, ConnectionFailed, retry_on_conflict
from kubeloop.testing import FakeClock

CM = KindRegistry().by_kind("", "ConfigMap")
assert CM is not None


async def test_429_with_retry_after_is_retried_after_that_many_seconds(
    client: Client, app: FaultyApp, clock: FakeClock
) -> None:
    app.fail("GET", 429, retry_after=3, times=1, reason="TooManyRequests")
    await client.create(CM, {"metadata": {"name": "a"}})
    task = asyncio.create_task(client.get(CM, "a"))
    await settle(app)
    assert not task.done()
    await clock.advance(2.9)
    assert not task.done()
    await clock.advance(0.2)
    assert (await task)["metadata"]["name"] == "a"


async def test_5xx_with_retry_after_is_retried_too(client: Client, app: FaultyApp, clock: FakeClock) -> None:
    app.fail("POST", 503, retry_after=1, times=2)
    before = len(app.requests)
    task = asyncio.create_task(client.create(CM, {"metadata": {"name": "a"}}))
    for _ in range(2):
        await settle(app)
        await clock.advance(1)
    assert (await task)["metadata"]["name"] == "a"
    assert [r.method for r in app.requests[before:]] == ["POST", "POST", "POST"]


async def test_an_error_without_retry_after_is_raised_at_once(client: Client, app: FaultyApp) -> None:
    app.fail("GET", 503)
    before = len(app.requests)
    with pytest.raises(ServiceUnavailable):
        await client.get(CM, "a")
    assert len(app.requests) - before == 1


async def test_when_retries_run_out_the_error_carries_retry_after(app: FaultyApp, clock: FakeClock) -> None:
    app.fail("GET", 429, retry_after=1, times=5, reason="TooManyRequests")
    requests_before = len(app.requests)
    async with Client(Client.from_asgi(app).transport, base_url="https://kubeloop.local", clock=clock, max_retries=2) as client:
        task = asyncio.create_task(client.get(CM, "a"))
        for _ in range(3):
            await settle(app)
            await clock.advance(1)
        with pytest.raises(TooManyRequests) as info:
            await task
    assert info.value.retry_after_seconds == 1
    assert len(app.requests) - requests_before == 3


async def test_a_non_status_error_body_still_maps_by_code() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"404 page not found"})

    async with Client.from_asgi(app) as client:
        with pytest.raises(NotFound, match="404 page not found"):
            await client.get(CM, "a")


async def test_an_app_that_crashes_is_a_connection_failure_not_an_app_exception() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async with Client.from_asgi(app) as client:
        with pytest.raises(ConnectionFailed):
            await client.get(CM, "a")


async def _closed_port() -> int:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port: int = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    return port


async def test_no_httpx_or_ssl_exception_escapes_any_public_method() -> None:
    port = await _closed_port()
    async with Client.from_url(f"http://127.0.0.1:{port}") as client:
        obj = {"metadata": {"name": "a"}}
        calls = [
            client.get(CM, "a"), client.list(CM), client.list_all(CM), client.create(CM, obj),
            client.update(CM, obj), client.patch(CM, "a", {}), client.apply(CM, obj, field_manager="m"),
            client.delete(CM, "a"), client.scale(CM, "a", 1),
        ]
        for call in calls:
            with pytest.raises(ConnectionFailed) as info:
                await call
            assert isinstance(info.value, ServiceUnavailable)
            assert not isinstance(info.value.__cause__, (httpx.HTTPError, ssl.SSLError))
        with pytest.raises(ConnectionFailed):
            async for _ in client.watch(CM):
                pass


async def test_a_tls_handshake_failure_is_a_connection_failure(tmp_path: Any) -> None:
    from _certs import make_pki

    pki = make_pki(tmp_path)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.server_cert, pki.server_key)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        async with Client.from_url(f"https://127.0.0.1:{port}") as client:  # system CAs: not trusted
            with pytest.raises(ConnectionFailed, match=r"TLS|CERTIFICATE|certificate"):
                await client.get(CM, "a")
    finally:
        server.close()
        await server.wait_closed()


async def test_retry_on_conflict_rereads_and_retries_then_succeeds(
    client: Client, app: FaultyApp, clock: FakeClock
) -> None:
    created = await client.create(CM, {"metadata": {"name": "a"}, "data": {"n": "0"}})
    stale = dict(created)
    await client.patch(CM, "a", {"data": {"n": "1"}})  # someone else wrote: `stale` now conflicts
    attempts = 0

    async def bump() -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        obj = stale if attempts == 1 else await client.get(CM, "a")
        obj = {**obj, "data": {"n": str(int(obj["data"]["n"]) + 1)}}
        return await client.update(CM, obj)

    task = asyncio.create_task(retry_on_conflict(bump, clock=clock))
    await settle(app)
    await clock.advance(0.011)
    assert (await task)["data"] == {"n": "2"}
    assert attempts == 2


async def test_retry_on_conflict_keeps_every_increment_of_two_real_concurrent_writers(
    client: Client, clock: FakeClock
) -> None:
    await client.create(CM, {"metadata": {"name": "counter"}, "data": {"n": "0"}})
    first_round = asyncio.Barrier(2)  # both writers read the same version before either writes
    conflicts = 0

    async def increment(first: list[bool]) -> None:
        async def once() -> dict[str, Any]:
            nonlocal conflicts
            obj = await client.get(CM, "counter")
            if first:
                first.clear()
                await first_round.wait()
            obj["data"]["n"] = str(int(obj["data"]["n"]) + 1)
            try:
                return await client.update(CM, obj)
            except Conflict:
                conflicts += 1
                raise

        await retry_on_conflict(once, backoff=Backoff(steps=100, duration=0.001, jitter=1.0), clock=SystemClock())

    async def writer() -> None:
        first = [True]
        for _ in range(10):
            await increment(first)

    await asyncio.gather(writer(), writer())
    assert (await client.get(CM, "counter"))["data"]["n"] == "20"  # no lost update
    assert conflicts >= 1


async def test_retry_on_conflict_makes_five_attempts_and_raises_the_last_conflict(clock: FakeClock) -> None:
    calls = 0

    async def always_conflicts() -> None:
        nonlocal calls
        calls += 1
        raise Conflict(f"conflict #{calls}")

    task = asyncio.create_task(retry_on_conflict(always_conflicts, clock=clock))
    for _ in range(4):
        for _ in range(10):
            await asyncio.sleep(0)
        assert clock.sleepers == 1
        await clock.advance(0.011)  # DefaultRetry: 10 ms + up to 10% jitter
    with pytest.raises(Conflict, match="conflict #5"):
        await task
    assert calls == 5


async def test_retry_on_conflict_does_not_retry_other_errors(clock: FakeClock) -> None:
    calls = 0

    async def fails() -> None:
        nonlocal calls
        calls += 1
        raise InternalError("nope")

    with pytest.raises(ApiError):
        await retry_on_conflict(fails, clock=clock)
    assert calls == 1
