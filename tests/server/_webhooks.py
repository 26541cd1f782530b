"""A real admission webhook for tests: an ASGI app on a TLS port, with a CA made for the test.

:func:`webhook_server` serves a :class:`RecordingWebhook`: it records every AdmissionReview it gets and
answers with ``answer(request)`` (a ``response`` dict; ``uid`` is filled in), or, for a request the
answer marks with :data:`HANG`, never answers until the test ends.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kubeloop.server import ensure_tls

from ._uvicorn import serve

HANG = {"hang": True}
Answer = Callable[[dict[str, Any]], dict[str, Any]]


def allow(request: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True}


def patch_response(operations: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(operations).encode()).decode(), **extra}


@dataclass
class RecordingWebhook:
    answer: Answer = allow
    reviews: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        review = orjson.loads(body)
        self.reviews.append(review)
        self.paths.append(scope["path"] + ("?" + scope["query_string"].decode() if scope["query_string"] else ""))
        response = self.answer(review["request"])
        if response is HANG:
            await self.released.wait()
            return
        out = {"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
               "response": {"uid": review["request"]["uid"], **response}}
        data = orjson.dumps(out)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [review["request"] for review in self.reviews]


@dataclass
class Served:
    url: str
    ca_bundle: str
    hook: RecordingWebhook

    def client_config(self, path: str = "/hook") -> dict[str, Any]:
        return {"url": self.url + path, "caBundle": self.ca_bundle}


@contextlib.asynccontextmanager
async def webhook_server(directory: Path, answer: Answer = allow) -> AsyncIterator[Served]:
    tls = ensure_tls(directory)
    hook = RecordingWebhook(answer)
    try:
        async with serve(hook, tls=tls) as url:  # type: ignore[arg-type]
            try:
                yield Served(url, base64.b64encode(tls.ca_cert.read_bytes()).decode(), hook)
            finally:
                hook.released.set()
    finally:
        hook.released.set()


def configuration(kind: str, name: str, *webhooks: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": list(webhooks)}


def webhook(name: str, client_config: dict[str, Any], *, operations: tuple[str, ...] = ("CREATE",),
            resources: tuple[str, ...] = ("configmaps",), groups: tuple[str, ...] = ("",),
            versions: tuple[str, ...] = ("v1",), **extra: Any) -> dict[str, Any]:
    return {"name": name, "clientConfig": client_config, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "rules": [{"operations": list(operations), "apiGroups": list(groups), "apiVersions": list(versions),
                       "resources": list(resources)}], **extra}
