"""Bootstrap RBAC objects every cluster starts with, created through the API app itself.

On every start (upstream's apiserver does the same with its RBAC bootstrap post-start hook)
:func:`bootstrap` creates the default roles and bindings
(:func:`kubeloop.server.bootstrap_rbac_objects`) concurrently, so the writes share group commits.
The system namespaces come from the app's own start-up (``App.startup``).

Each is an in-process request to the app as the admin user (no socket): a ``GET``, and a ``POST`` only
if the object is missing, as upstream's bootstrap reads before it creates (k/k
``pkg/registry/rbac/rest/storage_rbac.go`` ``EnsureRBACPolicy``), so the objects get exactly the
defaults, validation and metadata of any other create, and a restart costs one read per object instead
of a create that fails. ``409 AlreadyExists`` means someone made it in between. Any other failure raises
``RuntimeError`` with a one-line reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from kubeloop.server import (
    ADMIN_USER,
    USER_SCOPE_KEY,
    User,
    bootstrap_rbac_objects,
)

__all__ = ["asgi_call", "bootstrap"]

Message = MutableMapping[str, Any]
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]
_ADMIN = User(ADMIN_USER, ADMIN_USER, ("system:masters", "system:authenticated"))


async def asgi_call(app: ASGIApp, method: str, path: str, body: Any = None, *, user: User = _ADMIN) -> tuple[int, Any]:
    """One request to ``app`` in-process, as ``user``; returns the status and the decoded JSON answer."""
    raw = orjson.dumps(body) if body is not None else b""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"accept", b"application/json"),
                    (b"user-agent", b"kubeloop-bootstrap")],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
        USER_SCOPE_KEY: user,
    }  # fmt: skip
    sent = False
    status = 0
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()  # a real client would now just wait for the answer
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))

    await app(scope, receive, send)
    data = b"".join(chunks)
    try:
        return status, orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        return status, data.decode(errors="replace")


def _collection(obj: dict[str, Any]) -> str:
    plural = {"Namespace": "namespaces", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
    api_version = obj["apiVersion"]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{prefix}/{plural[obj['kind']]}"


async def bootstrap(app: ASGIApp) -> None:
    objects = bootstrap_rbac_objects()

    async def create(obj: dict[str, Any]) -> None:
        collection = _collection(obj)
        status, _ = await asgi_call(app, "GET", f"{collection}/{obj['metadata']['name']}")
        if status == 200:
            return
        status, answer = await asgi_call(app, "POST", collection, obj)
        if status not in (200, 201, 409):
            message = answer.get("message") if isinstance(answer, dict) else answer
            raise RuntimeError(f"cannot create bootstrap {obj['kind']} {obj['metadata']['name']}: {status} {message}")

    await asyncio.gather(*(create(obj) for obj in objects))
