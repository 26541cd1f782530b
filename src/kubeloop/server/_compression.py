"""Response compression, as kube-apiserver 1.32 does it (feature APIResponseCompression, on by default).

Upstream (apiserver ``pkg/endpoints/handlers/responsewriters/writers.go``): ``SerializeObject`` writes
every object and list answer through a ``deferredResponseWriter``, which gzips the body when

- the request's ``Accept-Encoding`` lists the token ``gzip`` (``negotiateContentEncoding``: the header
  split at ``,``, each token trimmed and compared as is, so ``gzip;q=0`` is no ``gzip``), and
- the body is longer than ``defaultGzipThresholdBytes`` (128 KiB, strictly more);

the compressed answer carries ``Content-Encoding: gzip`` and ``Vary: Accept-Encoding``, at gzip level 1
(``defaultGzipContentEncodingLevel``). Anything else is sent as it is. Watch streams are written by the
watch server, not ``SerializeObject``: never compressed (nor here: :mod:`._watch` does not come here).

Contract: a body of at most :data:`GZIP_THRESHOLD_BYTES` costs one length comparison (the GET and write
hot paths answer small objects); a larger one also reads the request's header map once. A streamed list
(:func:`send_parts_compressed`) is compressed part by part as it is sent, with no Content-Length (Go's
``net/http`` sends such an answer chunked as well), so the whole list is never one more buffer.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from kubeloop.server._http import JSON, Message, Request, Send, response_start

__all__ = [
    "GZIP_THRESHOLD_BYTES", "answer_messages", "compressed", "send_body", "send_parts_compressed", "wants_gzip",
]

# writers.go defaultGzipThresholdBytes.
GZIP_THRESHOLD_BYTES = 128 * 1024
# writers.go defaultGzipContentEncodingLevel (kubernetes#112296: level 1 costs the least CPU for a ratio
# close to the higher levels').
_GZIP_LEVEL = 1
# zlib's wbits for a gzip container (16 + the 32 KiB window).
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_GZIP_HEADERS = [(b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding")]


def wants_gzip(request: Request) -> bool:
    """True when the request's ``Accept-Encoding`` lists ``gzip`` (writers.go negotiateContentEncoding:
    exact tokens after trimming, no quality values)."""
    header = request.headers.get("accept-encoding")
    if not header:
        return False
    return any(token.strip() == "gzip" for token in header.split(","))


def compressed(body: bytes) -> bytes:
    """``body`` in a gzip container at upstream's level."""
    encoder = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    return encoder.compress(body) + encoder.flush()


def answer_messages(request: Request, status: int, body: bytes, *, content_type: str = JSON,
                    headers: list[tuple[bytes, bytes]] | None = None) -> tuple[Message, Message]:
    """The two ASGI messages of an answer with ``body``: gzipped when upstream would gzip it."""
    if len(body) > GZIP_THRESHOLD_BYTES and wants_gzip(request):
        body = compressed(body)
        headers = [*(headers or ()), *_GZIP_HEADERS]
    return (response_start(status, len(body), content_type=content_type, headers=headers),
            {"type": "http.response.body", "body": body})


async def send_body(send: Send, request: Request, status: int, body: bytes, *, content_type: str = JSON,
                    headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Send an answer with ``body`` (:func:`answer_messages`)."""
    start, message = answer_messages(request, status, body, content_type=content_type, headers=headers)
    await send(start)
    await send(message)


async def send_parts_compressed(send: Send, status: int, parts: Iterable[bytes], *, content_type: str = JSON) -> None:
    """A body produced in ``parts``, gzipped as it is sent: one ASGI message per part whose compressed
    bytes are not empty, then the end of the stream. Sent without a Content-Length (chunked)."""
    headers = [(b"content-type", content_type.encode()), (b"cache-control", b"no-cache, private"), *_GZIP_HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    encoder = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    for part in parts:
        out = encoder.compress(part)
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
    await send({"type": "http.response.body", "body": encoder.flush(), "more_body": False})
