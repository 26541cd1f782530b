"""Plain-ASGI plumbing: the request view, body reading, content negotiation, responses.

No framework: a :class:`Request` is built from the ASGI scope once, the body is read lazily with
the upstream 3 MiB limit (413 beyond), and every answer goes out through :func:`send_bytes`.
Negotiation follows apiserver ``handlers/negotiation``: a missing Content-Type means JSON, an
unknown one is 415; ``Accept`` absent, ``*/*``, ``application/*`` or ``application/json`` (with
any parameters we can honour) means JSON, a list with nothing we can produce is 406.

Per-request work is kept small: the decoded header map is remembered per distinct header list
(:func:`header_map`; clients repeat theirs), the negotiation per distinct ``Accept`` value, and a
body that arrives in one ASGI message is used as is. All of them are shared: treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import orjson

from kubeloop.api import ApiError, BadRequest, NotAcceptable, RequestEntityTooLarge

__all__ = [
    "JSON",
    "MAX_BODY_BYTES",
    "WARNINGS_SCOPE_KEY",
    "ASGIApp",
    "HeaderMap",
    "MediaType",
    "Message",
    "Receive",
    "Request",
    "Scope",
    "Send",
    "encode_body",
    "header_map",
    "negotiation_of",
    "parse_accept",
    "query_params",
    "response_start",
    "send_bytes",
    "send_error",
    "send_json",
    "send_parts",
    "warning_headers",
    "warnings_of",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# apiserver pkg/server/config.go MaxRequestBodyBytes.
MAX_BODY_BYTES = 3 * 1024 * 1024
JSON = "application/json"
_JSON_CONTENT_TYPE = (b"content-type", JSON.encode())
_CACHE_CONTROL = (b"cache-control", b"no-cache, private")
# Where :func:`query_params` keeps a request's parsed query string in its ASGI scope.
_QUERY_SCOPE_KEY = "kubeloop.query"
# Where :func:`header_map` keeps a request's header map (and the list it decoded) in its ASGI scope.
_HEADERS_SCOPE_KEY = "kubeloop.headers"
# Where a write's handler keeps the list of warnings it records (:func:`warnings_of`).
WARNINGS_SCOPE_KEY = "kubeloop.warnings"


@dataclass(frozen=True, slots=True)
class MediaType:
    """One entry of an Accept header: ``application/json;as=Table;v=v1;g=meta.k8s.io``."""

    type: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def is_json_like(self) -> bool:
        return self.type in ("application/json", "application/*", "*/*")


def parse_accept(header: str) -> list[MediaType]:
    if "," not in header and ";" not in header:  # one bare media type: what most clients send
        media = header.strip().lower()
        return [MediaType(media)] if media else []
    out: list[MediaType] = []
    for part in header.split(","):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        for p in pieces[1:]:
            k, _, v = p.partition("=")
            params[k.strip().lower()] = v.strip().strip('"')
        out.append(MediaType(pieces[0].lower(), params))
    return out


def query_params(scope: Scope) -> dict[str, list[str]]:
    """``scope["query_string"]`` parsed once per request: the parse is kept in the scope beside the
    string it came from, so authorization and the app's :class:`Request` share it (a middleware that
    rewrites the query string gets a fresh parse). The same query string gives the same (shared)
    dict, as :func:`header_map` shares header maps: treat the result as read-only."""
    qs: bytes = scope.get("query_string", b"")
    if not qs:  # most requests have none
        return {}
    cached = scope.get(_QUERY_SCOPE_KEY)
    if cached is not None and cached[0] == qs:
        query: dict[str, list[str]] = cached[1]
        return query
    # Clients repeat their query strings (kubectl's ``fieldManager=...&fieldValidation=Strict`` on every
    # write): parse_qs is about 200 bytecode steps in Python, the table one lookup in C.
    memo = _QUERIES.get(qs) if type(qs) is bytes else None
    if memo is None:
        memo = parse_qs(qs.decode("latin-1"), keep_blank_values=True)
        if type(qs) is bytes and len(qs) <= _QUERY_MEMO_MAX_BYTES:
            if len(_QUERIES) >= _QUERIES_LIMIT:
                _QUERIES.clear()
            _QUERIES[qs] = memo
    scope[_QUERY_SCOPE_KEY] = (qs, memo)
    return memo


# Parsed query strings by their bytes: bounded (emptied when full), short strings only (a label
# selector or a continue token can be long; a watch's resourceVersion changes every time).
_QUERIES: dict[bytes, dict[str, list[str]]] = {}
_QUERIES_LIMIT = 1024
_QUERY_MEMO_MAX_BYTES = 256


class Request:
    """What a handler needs from one HTTP request. The body is read once, on demand."""

    __slots__ = ("_body", "_receive", "content_type", "headers", "method", "path", "query", "scope")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self._receive = receive
        self.method: str = scope["method"]
        # ASGI's ``path`` is the percent-decoded path (``raw_path`` undecoded, and for some clients with
        # the query string): what servers and in-process transports all put there.
        self.path: str = scope["path"]
        # The query string's parameters: every route reads them. Most requests have none (no parse),
        # and authorization has already parsed the others into the scope (read-only, shared).
        self.query: dict[str, list[str]] = query_params(scope) if scope.get("query_string") else {}
        # The map the security chain looked up, unless the header list changed since (one call less).
        kept = scope.get(_HEADERS_SCOPE_KEY)
        if kept is not None and kept[0] is scope.get("headers", ()):
            self.headers: HeaderMap = kept[1]
        else:
            self.headers = header_map(scope)
        # The media type of the body without parameters; JSON when absent (the Python client sends none).
        self.content_type: str = self.headers.media_type
        self._body: bytes | None = None

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def has(self, name: str) -> bool:
        return name in self.query

    @property
    def user(self) -> Any:
        return self.scope.get("kubeloop.user")

    async def body(self) -> bytes:
        if self._body is not None:
            return self._body
        headers = self.headers
        if not headers.declared_within_limit and int(headers["content-length"]) > MAX_BODY_BYTES:
            raise RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY_BYTES}")
        message = await self._receive()
        if not message.get("more_body", False) and message["type"] != "http.disconnect":
            # The whole body in one message: what clients' small writes arrive as.
            body: bytes = message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                raise RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY_BYTES}")
            self._body = body
            return body
        chunks: list[bytes] = []
        size = 0
        while True:
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY_BYTES}")
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
            message = await self._receive()
        self._body = b"".join(chunks)
        return self._body

    # The negotiation comes with the (shared) header map, worked out once per distinct header list: a
    # handler asks twice per request (the media type, then whether a Table is wanted).
    def accepts(self) -> list[MediaType]:
        """The Accept header's entries, parsed once per request (treat the list as read-only)."""
        return self.headers.negotiation.accepts

    def wants_table(self) -> bool:
        """True when the first acceptable Accept entry asks for a meta.k8s.io Table."""
        return self.headers.negotiation.wants_table

    def negotiate(self, *, yaml_ok: bool = True) -> str:
        """The response media type (``application/json`` or ``application/yaml``), or 406."""
        negotiation = self.headers.negotiation
        media = negotiation.media if yaml_ok else negotiation.media_without_yaml
        if media is None:
            raise NotAcceptable(
                "only the following media types are accepted: application/json, application/yaml, "
                "application/vnd.kubernetes.protobuf"
            )
        return media


def header_map(scope: Scope) -> HeaderMap:
    """``scope["headers"]`` as one dict: names lower-cased, a repeated header's values joined with
    ``,`` in order. The same headers give the same (shared) dict: treat it as read-only.

    The map is also kept in the scope beside the header list it came from, so that the app's
    :class:`Request` takes the one the security chain looked up; a middleware that changes the headers
    in between gives the scope a new list (as ASGI middlewares do, and impersonation does), and its
    request gets a fresh map."""
    # ASGI allows each pair as a list too: typed loosely, so that the compiled build accepts both.
    raw: Sequence[Sequence[bytes]] = scope.get("headers", ())
    kept = scope.get(_HEADERS_SCOPE_KEY)
    if kept is not None and kept[0] is raw:
        known: HeaderMap = kept[1]
        return known
    # Clients repeat their headers request after request: the decoded map is remembered by the
    # raw pairs (a bounded table; hashing and comparing them is C work, decoding each one is not).
    try:
        key = tuple(raw)
        memo = _HEADER_MAPS.get(key)
    except TypeError:  # pairs that are lists: decode without remembering
        key, memo = None, None
    if memo is None:
        memo = _decode_headers(raw)
        if key is not None:
            if len(_HEADER_MAPS) >= _HEADER_MAPS_LIMIT:
                _HEADER_MAPS.clear()
            _HEADER_MAPS[key] = memo
    scope[_HEADERS_SCOPE_KEY] = (raw, memo)
    return memo


class HeaderMap(dict[str, str]):
    """A request's headers by lower-cased name, with what requests read from them worked out once per
    distinct header list (the map is shared by every request that sends the same list): ``names``,
    ``"\n"`` before each name, joined (so ``"\nimpersonate-" in names`` finds a name prefix in one
    scan); ``negotiation``, what the Accept header asks for; ``media_type``, the Content-Type without parameters (JSON when absent);
    ``declared_within_limit``, false when Content-Length may declare more than :data:`MAX_BODY_BYTES`."""

    __slots__ = ("declared_within_limit", "media_type", "names", "negotiation")

    def __init__(self, pairs: dict[str, str]) -> None:
        super().__init__(pairs)
        self.names = "".join("\n" + name for name in pairs)
        self.media_type = pairs.get("content-type", "").split(";", 1)[0].strip().lower() or JSON
        # Request.body refuses a declared length past the limit before reading. True here only when the
        # value cannot declare more (not a number, or a few ASCII digits that say so); every other value
        # is left to its ``int()`` there, which raises as it always has (``"\xb2"``, 5,000 digits).
        declared = pairs.get("content-length")
        self.declared_within_limit = (declared is None or not declared.isdigit()
                                      or (len(declared) <= 7 and declared.isascii() and int(declared) <= MAX_BODY_BYTES))
        # The Accept header's negotiation (:meth:`Request.negotiate`), itself remembered per value.
        self.negotiation = negotiation_of(pairs.get("accept", ""))


def _decode_headers(raw: Sequence[Sequence[bytes]]) -> HeaderMap:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
    if len(headers) != len(raw):  # a repeated name: join the values in order, as one header
        headers = {}
        for k, v in raw:
            name = k.decode("latin-1").lower()
            value = v.decode("latin-1")
            headers[name] = f"{headers[name]},{value}" if name in headers else value
    return HeaderMap(headers)


_HEADER_MAPS: dict[tuple[Sequence[bytes], ...], HeaderMap] = {}
_HEADER_MAPS_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class _Negotiation:
    """What one Accept header value asks for, worked out once per distinct value."""

    accepts: list[MediaType]
    wants_table: bool
    media: str | None  # the response media type, None for 406
    media_without_yaml: str | None


def _wants_table(accepts: list[MediaType]) -> bool:
    for media in accepts:
        if media.params.get("as") == "Table" and media.params.get("g") == "meta.k8s.io":
            return True
        if media.is_json_like and "as" not in media.params:
            return False
    return False


def _negotiate(accepts: list[MediaType], *, yaml_ok: bool) -> str | None:
    if not accepts:
        return JSON
    for media in accepts:
        if media.is_json_like and media.params.get("as") in (None, "Table"):
            return JSON
        if yaml_ok and media.type == "application/yaml" and "as" not in media.params:
            return "application/yaml"
    return None


def negotiation_of(accept: str) -> _Negotiation:
    """The negotiation for an ``Accept`` value; remembered in a bounded table (clients repeat theirs)."""
    negotiation = _NEGOTIATIONS.get(accept)
    if negotiation is None:
        accepts = parse_accept(accept)
        negotiation = _Negotiation(accepts, _wants_table(accepts), _negotiate(accepts, yaml_ok=True),
                                   _negotiate(accepts, yaml_ok=False))
        if len(_NEGOTIATIONS) >= _NEGOTIATIONS_LIMIT:
            _NEGOTIATIONS.clear()
        _NEGOTIATIONS[accept] = negotiation
    return negotiation


_NEGOTIATIONS: dict[str, _Negotiation] = {}
_NEGOTIATIONS_LIMIT = 256


def response_start(
    status: int, length: int, *, content_type: str = JSON, headers: list[tuple[bytes, bytes]] | None = None
) -> Message:
    """The ``http.response.start`` message of every answer: its content type and length, ``no-cache``,
    then ``headers``. A handler that sends a body itself sends this first."""
    raw_headers = [
        _JSON_CONTENT_TYPE if content_type == JSON else (b"content-type", content_type.encode()),
        (b"content-length", b"%d" % length),
        _CACHE_CONTROL,
    ]
    if headers:
        raw_headers.extend(headers)
    return {"type": "http.response.start", "status": status, "headers": raw_headers}


async def send_bytes(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: str = JSON,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send(response_start(status, len(body), content_type=content_type, headers=headers))
    await send({"type": "http.response.body", "body": body})


async def send_parts(send: Send, status: int, length: int, parts: Iterable[bytes], *, content_type: str = JSON) -> None:
    """A body of ``length`` bytes sent as ``parts`` (one ASGI message each): the transport writes each
    part as it comes, so a large body is never one buffer and the peer receives while it is produced."""
    await send(response_start(status, length, content_type=content_type))
    for part in parts:
        await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def encode_body(obj: Any, content_type: str) -> bytes:
    """``obj`` as a response body of ``content_type``: YAML for ``application/yaml``, JSON otherwise."""
    if content_type == "application/yaml":
        import yaml

        return yaml.safe_dump(obj, sort_keys=False).encode()
    return orjson.dumps(obj)


async def send_json(
    send: Send, status: int, obj: Any, *, content_type: str = JSON, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send_bytes(send, status, encode_body(obj, content_type), content_type=content_type, headers=headers)


async def send_error(send: Send, error: ApiError, *, warnings: Sequence[str] = ()) -> None:
    """Answer with ``error``'s Status, and a ``Warning`` header per text in ``warnings``: upstream's
    warning recorder (apiserver ``endpoints/filters/warning.go``) adds each header as the warning is
    recorded, so the warnings gathered before a request failed go out with its error too."""
    headers: list[tuple[bytes, bytes]] = [(b"x-content-type-options", b"nosniff")]
    retry = error.retry_after_seconds
    if retry is not None and error.status_code in (429, 503, 504):
        headers.append((b"retry-after", str(retry).encode()))
    if warnings:
        headers.extend(warning_headers(warnings))
    await send_bytes(send, error.status_code, orjson.dumps(error.to_status()), headers=headers)


def warning_headers(warnings: Iterable[str]) -> list[tuple[bytes, bytes]]:
    """``Warning: 299 - "<text>"`` headers (RFC 7234 quoting, as apiserver ``warning`` recorder), each
    text once."""
    out: list[tuple[bytes, bytes]] = []
    seen: set[str] = set()
    for text in warnings:
        if text in seen:
            continue
        seen.add(text)
        quoted = text.replace("\\", "\\\\").replace('"', '\\"')
        out.append((b"warning", f'299 - "{quoted}"'.encode()))
    return out


def warnings_of(scope: Scope) -> list[str]:
    """The warnings a request's handler recorded in its ASGI scope (``scope[WARNINGS_SCOPE_KEY]``, the
    list it appends to while the request runs); empty when it recorded none."""
    recorded: list[str] | None = scope.get(WARNINGS_SCOPE_KEY)
    return recorded if recorded is not None else []


_YAML_LOADER: Any = None


def decode_yaml(body: bytes) -> Any:
    """Parse a YAML body into JSON values, as sigs.k8s.io/yaml's YAMLToJSON does: non-string keys
    (YAML 1.1 ``on``, ``yes``, ``1``) become their string form (``"true"``, ``"1"``), timestamps
    become strings. Malformed input is a 400."""
    global _YAML_LOADER
    import yaml

    if _YAML_LOADER is None:
        _YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return _jsonable(yaml.load(body.decode("utf-8"), Loader=_YAML_LOADER))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BadRequest(f"error converting YAML to JSON: {exc}") from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float)) or value is None:
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(_jsonable(key))


def decode_json(body: bytes) -> Any:
    """Parse a JSON body; malformed input is a 400, as upstream's decoder reports it."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"error decoding JSON body: {exc}") from None
