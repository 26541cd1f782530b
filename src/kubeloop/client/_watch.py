"""Watch events and the decoder for a watch response body.

A watch body is a sequence of JSON objects ``{"type": ..., "object": {...}}``, each terminated by
``\\n`` (apiserver ``handlers/watch.go``); chunks may split an event anywhere, or carry several.
:class:`WatchDecoder` reassembles them. ``ERROR`` events are not yielded: they become the
``ApiError`` their ``Status`` describes (410 ``Expired``/``Gone`` means "relist"), exactly as the
same Status in an HTTP error response would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from kubeloop.api import InternalError, error_from_status

__all__ = ["WatchDecoder", "WatchEvent"]

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK; ``object`` the full object."""

    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


class WatchDecoder:
    """Feed it body chunks; it yields complete events and raises on ``ERROR`` or garbage."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> Iterator[WatchEvent]:
        self._buffer.extend(chunk)
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                return
            line = bytes(self._buffer[:end]).strip()
            del self._buffer[: end + 1]
            if line:
                yield _decode(line)

    def finish(self) -> Iterator[WatchEvent]:
        """The stream ended: a final event without its newline still counts."""
        line = bytes(self._buffer).strip()
        self._buffer.clear()
        if line:
            yield _decode(line)


def _decode(line: bytes) -> WatchEvent:
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise InternalError(f"malformed watch event: {line[:200]!r}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("object"), dict):
        raise InternalError(f"malformed watch event: {line[:200]!r}")
    kind = raw.get("type")
    obj: dict[str, Any] = raw["object"]
    if kind == "ERROR":
        code = obj.get("code")
        raise error_from_status(obj, code if isinstance(code, int) else 500)
    if kind not in EVENT_TYPES:
        raise InternalError(f"unknown watch event type {kind!r}")
    return WatchEvent(str(kind), obj)
