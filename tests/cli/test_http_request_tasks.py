"""The tasks that run requests under kubeloop's protocol (`kubeloop.cli._serving`): one per connection,
running its requests one after another, where uvicorn's own protocol starts one per request, with the
same behaviour seen from the app, the client and uvicorn's server: the context each app starts in,
requests that overlap, the server's tasks, lost connections, shutdown and cancellation.

Every test runs a real uvicorn on a real port over TLS, as ``kubeloop apiserver`` does; the comparisons
run the same scenario under uvicorn's own httptools protocol."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn

from kubeloop.cli._serving import uvicorn_config
from kubeloop.server import TlsMaterial, ensure_tls

from .test_http_protocol import _without_date, connect, fixed, serving

App = Callable[[Any, Any, Any], Awaitable[None]]


def _servers(app: App, tls: TlsMaterial, **settings: Any) -> dict[str, Any]:
    """uvicorn's own httptools protocol and kubeloop's, each in a server with kubeloop's settings and
    ``settings``."""
    servers = {}
    for name in ("uvicorn", "kubeloop"):
        config = uvicorn_config(app, cert=tls.cert, key=tls.key)
        if name == "uvicorn":
            config.http = "httptools"
        for setting, value in settings.items():
            setattr(config, setting, value)
        servers[name] = uvicorn.Server(config)
    return servers


async def _answer(reader: asyncio.StreamReader, body: bytes) -> bytes:
    async with asyncio.timeout(10):
        return await reader.readuntil(body)


async def test_a_connections_requests_run_one_after_another_in_one_task(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    tasks: list[tuple[str, asyncio.Task[Any] | None]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        tasks.append((scope["path"], asyncio.current_task()))
        await fixed(b"ok")(scope, receive, send)

    async with serving(app, tls) as (port, _):
        first, second = await connect(port, tls), await connect(port, tls)
        for path in (b"/a1", b"/b1", b"/a2", b"/b2", b"/a3"):
            reader, writer = first if path.startswith(b"/a") else second
            writer.write(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
            await _answer(reader, b"ok")
        for _, writer in (first, second):
            writer.close()
    by_path = dict(tasks)
    assert by_path["/a1"] is by_path["/a2"] is by_path["/a3"]
    assert by_path["/b1"] is by_path["/b2"] is not by_path["/a1"]
    assert all(task is not None and task.done() for _, task in tasks)  # ended with their connections


async def test_a_request_that_arrives_while_the_app_before_still_runs_runs_at_once(tmp_path: Path) -> None:
    """The first app answers, then waits for the second request's app: the second runs at once, in a
    task of its own (as under uvicorn), which then runs the connection's next request."""
    tls = ensure_tls(tmp_path)
    second_ran = asyncio.Event()
    tasks: dict[str, asyncio.Task[Any] | None] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        tasks[scope["path"]] = asyncio.current_task()
        await fixed(b"ok")(scope, receive, send)
        if scope["path"] == "/first":
            await second_ran.wait()  # after its response: the connection is free for the next request
        else:
            second_ran.set()

    async with serving(app, tls) as (port, server):
        reader, writer = await connect(port, tls)
        for path in (b"/first", b"/second", b"/third"):
            writer.write(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
            await _answer(reader, b"ok")
        async with asyncio.timeout(10):
            while server.server_state.tasks:
                await asyncio.sleep(0.01)
        writer.close()
    assert tasks["/first"] is not tasks["/second"]
    assert tasks["/second"] is tasks["/third"]


_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


async def test_each_app_starts_in_the_context_uvicorns_protocol_gives_it(tmp_path: Path) -> None:
    """Every app reads a context variable, then sets it to its path: with and without uvicorn's
    ``reset_contextvars``, each sees what it sees under uvicorn's own protocol (the server's value, or
    nothing with the setting; an earlier request's only where uvicorn's own shows it: a pipelined
    request's task is made in the context of the task before), for requests one after another on one
    connection, on two connections, pipelined, and after an app that ends after its response."""
    tls = ensure_tls(tmp_path)
    seen: list[tuple[str, str]] = []
    go_on = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope["path"], _seen.get()))
        if scope["path"] != "/read":
            _seen.set(scope["path"])
        await fixed(b"ok")(scope, receive, send)
        if scope["path"] == "/tail":
            await go_on.wait()

    async def scenario(server: Any) -> list[tuple[str, str]]:
        seen.clear()
        go_on.clear()
        _seen.set("server")  # the serving task starts with a copy of this context
        async with serving(app, tls, server) as (port, _):
            first, second = await connect(port, tls), await connect(port, tls)
            for reader, writer in (first, first, second, first, first):
                writer.write(b"GET /read HTTP/1.1\r\nHost: x\r\n\r\n")
                await _answer(reader, b"ok")
            for reader, writer in (first, second, first, first):
                writer.write(b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
                await _answer(reader, b"ok")
            reader, writer = first
            writer.write(b"GET /pipelined HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n")
            await _answer(reader, b"ok")
            await _answer(reader, b"ok")
            writer.write(b"GET /tail HTTP/1.1\r\nHost: x\r\n\r\n")
            await _answer(reader, b"ok")
            for path in (b"/after-tail", b"/three"):
                writer.write(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
                await _answer(reader, b"ok")
            go_on.set()
            for _, writer in (first, second):
                writer.close()
        return list(seen)

    for reset in (False, True):
        servers = _servers(app, tls, reset_contextvars=reset)
        theirs = await scenario(servers["uvicorn"])
        assert await scenario(servers["kubeloop"]) == theirs
        assert theirs[0] == ("/read", "unset" if reset else "server")
        assert len(theirs) == 14
        assert ("/two", "unset" if reset else "/pipelined") in theirs  # uvicorn's: the task before's copy


async def test_an_app_waiting_for_its_body_gets_a_disconnect_when_the_connection_is_lost(tmp_path: Path) -> None:
    """The app sees the same messages as under uvicorn's own protocol, the request's task ends, and so
    does the task of a connection that waits for its next request when the client goes."""
    tls = ensure_tls(tmp_path)
    messages: list[Any] = []
    tasks: list[asyncio.Task[Any] | None] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        tasks.append(asyncio.current_task())
        if scope["path"] == "/idle":
            await fixed(b"ok")(scope, receive, send)
            return
        messages.append(await receive())  # the part sent
        messages.append(await receive())  # the client is gone

    async def scenario(server: Any) -> list[Any]:
        messages.clear()
        tasks.clear()
        async with serving(app, tls, server) as (port, running):
            idle_reader, idle = await connect(port, tls)
            idle.write(b"GET /idle HTTP/1.1\r\nHost: x\r\n\r\n")
            await _answer(idle_reader, b"ok")
            _, writer = await connect(port, tls)
            writer.write(b"POST /wait HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
            async with asyncio.timeout(10):
                while not messages:
                    await asyncio.sleep(0.01)
                writer.close()
                idle.close()
                while running.server_state.connections or not all(task and task.done() for task in tasks):
                    await asyncio.sleep(0.01)
            assert not running.server_state.tasks
        return list(messages)

    servers = _servers(app, tls)
    theirs = await scenario(servers["uvicorn"])
    assert await scenario(servers["kubeloop"]) == theirs
    assert theirs[-1] == {"type": "http.disconnect"}


async def test_shutdown_lets_requests_in_flight_finish_and_closes_idle_connections(tmp_path: Path) -> None:
    """uvicorn's graceful shutdown, as under its own protocol: an idle keep-alive connection is closed
    at once, a request in flight is answered (with ``connection: close``) and its connection closed,
    and the server waits for it."""
    tls = ensure_tls(tmp_path)
    release = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/slow":
            await release.wait()
        await fixed(b"ok")(scope, receive, send)

    async def scenario(server: Any) -> tuple[bytes, bytes]:
        release.clear()
        async with serving(app, tls, server) as (port, running):
            idle_reader, idle = await connect(port, tls)
            idle.write(b"GET /idle HTTP/1.1\r\nHost: x\r\n\r\n")
            await _answer(idle_reader, b"ok")
            busy_reader, busy = await connect(port, tls)
            busy.write(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            async with asyncio.timeout(10):
                while not running.server_state.tasks:
                    await asyncio.sleep(0.01)
                running.should_exit = True
                closed = await idle_reader.read()  # closed by the server, nothing more sent
                release.set()
                answer = await busy_reader.read()  # answered, then closed
            idle.close()
            busy.close()
        return closed, _without_date(answer)

    servers = _servers(app, tls)
    theirs = await scenario(servers["uvicorn"])
    assert await scenario(servers["kubeloop"]) == theirs
    assert theirs[0] == b"" and b"connection: close\r\n" in theirs[1] and theirs[1].endswith(b"ok")


async def test_an_app_still_running_past_the_graceful_shutdown_timeout_is_cancelled_and_answered_500(
    tmp_path: Path,
) -> None:
    tls = ensure_tls(tmp_path)
    cancelled: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(scope["path"])
            raise

    async def scenario(server: Any) -> bytes:
        async with serving(app, tls, server) as (port, running):
            reader, writer = await connect(port, tls)
            writer.write(b"GET /forever HTTP/1.1\r\nHost: x\r\n\r\n")
            async with asyncio.timeout(10):
                while not running.server_state.tasks:
                    await asyncio.sleep(0.01)
            running.should_exit = True
        async with asyncio.timeout(10):
            answer = await reader.read()
            while running.server_state.tasks:
                await asyncio.sleep(0.01)
        writer.close()
        return _without_date(answer)

    servers = _servers(app, tls, timeout_graceful_shutdown=0.2)
    theirs = await scenario(servers["uvicorn"])
    assert await scenario(servers["kubeloop"]) == theirs
    assert theirs.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert cancelled == ["/forever", "/forever"]


async def test_a_connections_task_cancelled_before_its_first_step_leaves_the_servers_tasks(tmp_path: Path) -> None:
    """uvicorn's shutdown cancels the server's tasks; one cancelled in the very turn its request
    arrived never runs, and still leaves the set the shutdown and ``limit_concurrency`` read (as under
    uvicorn's own protocol, whose request tasks leave it through a done callback)."""
    tls = ensure_tls(tmp_path)
    paths: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        paths.append(scope["path"])
        await fixed(b"ok")(scope, receive, send)

    async with serving(app, tls) as (port, server):
        _, writer = await connect(port, tls)
        async with asyncio.timeout(10):
            while not server.server_state.connections:
                await asyncio.sleep(0.01)
        [protocol] = server.server_state.connections
        protocol.data_received(b"GET /cancelled HTTP/1.1\r\nHost: x\r\n\r\n")  # as the transport would
        [task] = server.server_state.tasks
        task.cancel()
        async with asyncio.timeout(10):
            while server.server_state.tasks:
                await asyncio.sleep(0.01)
        assert task.cancelled()
        writer.close()
    assert paths == []  # the app never ran


async def test_limit_concurrency_counts_requests_in_flight_not_connections_waiting_for_one(tmp_path: Path) -> None:
    """uvicorn answers 503 once the server's connections or its tasks reach ``limit_concurrency``. With
    a limit of 3 and two connections, the tasks running apps count, the task of a connection waiting for
    its next request does not: the same answers as under uvicorn's own protocol."""
    tls = ensure_tls(tmp_path)
    release = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await fixed(b"ok")(scope, receive, send)
        if scope["path"] == "/tail":
            await release.wait()  # still running after its response

    async def scenario(server: Any) -> list[bytes]:
        release.clear()
        statuses = []
        async with serving(app, tls, server) as (port, running):
            idle_reader, idle = await connect(port, tls)
            idle.write(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
            statuses.append((await _answer(idle_reader, b"ok")).split(b"\r\n")[0])
            reader, writer = await connect(port, tls)
            for path in (b"/tail", b"/tail", b"/fast", b"/tail"):  # two apps running, then three
                writer.write(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
                statuses.append((await _answer(reader, b"ok")).split(b"\r\n")[0])
            writer.write(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
            async with asyncio.timeout(10):
                statuses.append((await reader.read()).split(b"\r\n")[0])  # refused, and closed
            release.set()
            async with asyncio.timeout(10):
                while running.server_state.tasks:
                    await asyncio.sleep(0.01)
            writer.close()
            idle.close()
        return statuses

    servers = _servers(app, tls, limit_concurrency=3)
    theirs = await scenario(servers["uvicorn"])
    assert await scenario(servers["kubeloop"]) == theirs
    assert theirs == [b"HTTP/1.1 200 OK"] * 5 + [b"HTTP/1.1 503 Service Unavailable"]


async def test_no_connection_task_outlives_the_servers_shutdown_even_if_its_client_does_not_read(
    tmp_path: Path,
) -> None:
    """A connection whose client does not read its last response stays open past uvicorn's shutdown
    (its transport waits to send what it holds): the task waiting for that connection's next request
    ends with the shutdown all the same."""
    tls = ensure_tls(tmp_path)
    tasks: list[asyncio.Task[Any] | None] = []
    body = b"x" * (16 * 1024 * 1024)  # more than the socket buffers hold

    async def app(scope: Any, receive: Any, send: Any) -> None:
        tasks.append(asyncio.current_task())
        await fixed(body)(scope, receive, send)

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.timeout_graceful_shutdown = 0.2
    async with serving(app, tls, uvicorn.Server(config)) as (port, server):
        _, writer = await connect(port, tls)
        writer.write(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")  # and never read
        async with asyncio.timeout(10):
            while not tasks or server.server_state.tasks:  # answered: the app returned
                await asyncio.sleep(0.01)
    [task] = tasks
    assert task is not None
    async with asyncio.timeout(10):
        while not task.done():
            await asyncio.sleep(0.01)
    assert server.server_state.connections  # still open: the client has not read
    writer.transport.abort()
