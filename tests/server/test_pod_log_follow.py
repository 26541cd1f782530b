"""``follow=true``: the log response stays open while the container runs, and ends when it stops, when the
pod goes, or when the client does. Driven on the ASGI app directly (httpx's transport buffers a body);
no timers: every wait is on the app's own messages."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from kubeloop.server import App

from ._kubelet_fixtures import PODS, node, pod, running, set_status, terminated


class Call:
    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self.started = asyncio.Event()
        self.ended = asyncio.Event()
        self.disconnect = asyncio.Event()


@contextlib.asynccontextmanager
async def log_call(app: App, query: str) -> AsyncIterator[Call]:
    call = Call()
    path = f"{PODS}/p/log"
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query.encode(), "headers": [],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await call.disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            call.status = message["status"]
            call.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            call.started.set()
        else:
            call.body += message.get("body", b"")
            if not message.get("more_body", False):
                call.ended.set()

    task = asyncio.create_task(app(scope, receive, send))
    try:
        await call.started.wait()
        yield call
    finally:
        call.disconnect.set()
        await task


async def settle() -> None:
    """Let every ready task run (the watch's delivery of a committed write): loop turns, not time."""
    for _ in range(50):
        await asyncio.sleep(0)


async def running_pod(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    await set_status(client, "p", running("app", "kubeloop://1"))


async def test_follow_ends_when_the_container_stops(app: App, client: httpx.AsyncClient) -> None:
    await running_pod(client)
    async with log_call(app, "follow=true") as call:
        assert (call.status, call.headers["content-type"]) == (200, "text/plain")
        # Changes that leave the container running, and a pod whose name starts with this one's, keep it open.
        r = await client.patch(f"{PODS}/p", json={"metadata": {"labels": {"a": "b"}}},
                               headers={"content-type": "application/merge-patch+json"})
        assert r.status_code == 200
        await pod(client, "p2")
        await client.delete(f"{PODS}/p2", params={"gracePeriodSeconds": "0"})
        await settle()
        assert not call.ended.is_set()
        await set_status(client, "p", terminated("app", "kubeloop://1"), phase="Succeeded")
        await call.ended.wait()
        assert call.body == b""


async def test_follow_ends_when_the_container_restarts(app: App, client: httpx.AsyncClient) -> None:
    # The followed container is the one that ran when the request came: its successor is another log.
    await running_pod(client)
    async with log_call(app, "follow=1") as call:
        last = {"exitCode": 1, "reason": "Error", "startedAt": "2026-12-01T00:00:00Z",
                "finishedAt": "2026-12-01T00:00:10Z", "containerID": "kubeloop://1"}
        await set_status(client, "p", running("app", "kubeloop://2", restarts=1, last=last))
        await call.ended.wait()


async def test_follow_ends_when_the_pod_is_deleted(app: App, client: httpx.AsyncClient) -> None:
    await running_pod(client)
    async with log_call(app, "follow=true") as call:
        # A graceful delete leaves the pod (and its running container) until the kubelet stops it.
        r = await client.delete(f"{PODS}/p")
        assert r.status_code == 200
        await settle()
        assert not call.ended.is_set()
        r = await client.delete(f"{PODS}/p", params={"gracePeriodSeconds": "0"})
        assert r.status_code == 200
        await call.ended.wait()
        assert call.status == 200


async def test_follow_ends_when_the_client_goes(app: App, client: httpx.AsyncClient) -> None:
    await running_pod(client)
    async with log_call(app, "follow=true") as call:
        await settle()
        assert not call.ended.is_set()
    # log_call's exit disconnected and awaited the app: the handler returned and closed the body.
    assert call.ended.is_set()


async def test_following_a_stopped_or_previous_container_ends_at_once(app: App, client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    await set_status(client, "p", terminated("app", "kubeloop://1"), phase="Succeeded")
    async with log_call(app, "follow=true") as call:
        await call.ended.wait()
        assert (call.status, call.body) == (200, b"")
    last = {"exitCode": 1, "reason": "Error", "startedAt": "2026-12-01T00:00:00Z",
            "finishedAt": "2026-12-01T00:00:10Z", "containerID": "kubeloop://1"}
    await set_status(client, "p", running("app", "kubeloop://2", restarts=1, last=last))
    async with log_call(app, "follow=true&previous=true") as call:
        await call.ended.wait()
        assert call.status == 200


async def test_a_follow_error_is_a_status(app: App, client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    async with log_call(app, "follow=true") as call:
        await call.ended.wait()
        assert call.status == 400 and b'is not available' in call.body
