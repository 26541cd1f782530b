"""The HTTP version and keep-alive a request gets under kubeloop's protocol (`kubeloop.cli._serving`), which
takes the version without asking httptools when llhttp's keep-alive rule settles it, are uvicorn's own:
for every version llhttp knows (and some it refuses), with and without each header that moves the rule.

Every request runs through a real uvicorn over TLS, once with uvicorn's httptools protocol and once with
kubeloop's, as ``kubeloop apiserver`` serves."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import uvicorn

from kubeloop.cli._cluster import _uvicorn_server
from kubeloop.cli._serving import uvicorn_config
from kubeloop.server import ensure_tls

from .test_http_protocol import _without_date, connect, serving

VERSIONS = [b"0.9", b"1.0", b"1.1", b"2.0", b"1.2", b"3.0", b"2.1"]
# Headers that move llhttp_should_keep_alive, in the spellings clients send; and one that does not.
HEADER_SETS = [
    b"",
    b"Connection: close\r\n",
    b"Connection: keep-alive\r\n",
    b"connection: Keep-Alive\r\n",
    b"Connection: foo, keep-alive\r\n",
    b"Proxy-Connection: keep-alive\r\n",
    b"Proxy-Connection: close\r\n",
    b"Keep-Alive: timeout=5\r\n",
    b"Connection: close\r\nConnection: keep-alive\r\n",
]
# Each request twice on its connection, so the second shows whether the first kept it open.
REQUESTS = [
    b"GET /v HTTP/%s\r\nHost: x\r\n%s\r\n" % (version, headers) for version in VERSIONS for headers in HEADER_SETS
]


async def _exchange(port: int, tls: Any, request: bytes) -> list[bytes]:
    """Send ``request`` twice on one connection and read what comes back until the server closes it or
    has answered both."""
    reader, writer = await connect(port, tls)
    writer.write(request + request)
    await writer.drain()
    answers: list[bytes] = []
    async with asyncio.timeout(10):
        while len(answers) < 2:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                answers.append(b"closed:" + exc.partial)
                break
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            answers.append(_without_date(head + await reader.readexactly(length)))
    writer.close()
    return answers


async def test_every_version_and_keep_alive_header_is_served_as_under_uvicorns_own_protocol(tmp_path: Path) -> None:
    tls = ensure_tls(tmp_path)
    seen: list[tuple[str, str]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        seen.append((scope["http_version"], scope["path"]))
        body = scope["http_version"].encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})

    async def run(server: Any) -> tuple[list[list[bytes]], list[tuple[str, str]]]:
        seen.clear()
        async with serving(app, tls, server) as (port, _):
            answers = [await _exchange(port, tls, request) for request in REQUESTS]
        return answers, list(seen)

    config = uvicorn_config(app, cert=tls.cert, key=tls.key)
    config.http = "httptools"
    theirs = await run(uvicorn.Server(config))
    ours = await run(_uvicorn_server(app, tls.cert, tls.key))
    assert ours == theirs
    versions = {version for version, _ in ours[1]}
    assert versions == {"0.9", "1.0", "1.1", "2.0"}  # the unknown ones refused, as llhttp does
    kept_open = [request for request, answers in zip(REQUESTS, ours[0], strict=True) if len(answers) == 2 and not answers[1].startswith(b"closed:")]
    closing = (b"Connection: close\r\n", b"Proxy-Connection: close\r\n")
    keeping = (b"eep-alive\r\n", b"eep-Alive\r\n")
    assert kept_open == [
        request for request in REQUESTS
        if (b"HTTP/1.1" in request and not any(c in request for c in closing))
        or ((b"HTTP/0.9" in request or b"HTTP/2.0" in request) and any(k in request for k in keeping))
    ]  # fmt: skip
