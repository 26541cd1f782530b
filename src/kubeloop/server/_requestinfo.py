"""Request attributes from a URL and method, as apiserver ``pkg/endpoints/request/requestinfo.go``.

:func:`parse_request_info` turns ``GET /apis/apps/v1/namespaces/ns/deployments/d/scale`` into a
frozen :class:`RequestInfo` (verb ``get``, group ``apps``, resource ``deployments``, subresource
``scale`` ...). Routing, authorization and admission all read the same value, so they never
disagree about what a request is. Rules kept from upstream:

- GET on a collection is ``list``, or ``watch`` when the ``watch`` query flag is truthy (anything
  but absent, ``0`` and ``false``), or with the deprecated ``/watch/`` path prefix;
- ``/api/v1/namespaces/NS/status`` and ``.../finalize`` are subresources of the namespace ``NS``;
- a list/watch whose field selector pins ``metadata.name`` carries that name.

:func:`request_info` parses a request once: the value is kept in the ASGI scope, so the
authorization middleware and the app's router share one parse (and one answer); parses are also
remembered by method, path and the query values they read (a bounded table), since most requests
repeat a URL.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SCOPE_KEY", "RequestInfo", "parse_request_info", "request_info", "truthy"]

# Where :func:`request_info` keeps a request's parsed attributes in its ASGI scope.
SCOPE_KEY = "kubeloop.request_info"

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get", "HEAD": "get"}


def truthy(values: list[str] | None) -> bool:
    """apimachinery Convert_Slice_string_To_bool: absent, ``0``, ``false`` are false, the rest true."""
    if not values:
        return False
    return values[0].lower() not in ("0", "false")


@dataclass(frozen=True, slots=True)
class RequestInfo:
    is_resource_request: bool
    path: str
    verb: str
    api_prefix: str = ""  # "api" or "apis"
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()


def parse_request_info(method: str, path: str, query: Mapping[str, list[str]]) -> RequestInfo:
    stripped = path.strip("/")
    lower_method = method.lower()
    if not stripped.startswith("api"):  # also the empty path: no resource request without /api or /apis
        return RequestInfo(False, path, lower_method)
    parts = stripped.split("/")
    if "" in parts:  # "//" in the path: upstream's splitPath drops empty segments
        parts = [p for p in parts if p]
    prefix = parts[0]
    if prefix != "api" and prefix != "apis":
        return RequestInfo(False, path, lower_method)
    group = ""
    if prefix == "apis":
        if len(parts) < 2:
            return RequestInfo(False, path, lower_method)
        group = parts[1]
        rest = parts[2:]
    else:
        rest = parts[1:]
    if len(rest) < 2:  # a version alone (or nothing) is discovery
        return RequestInfo(False, path, lower_method)
    version = rest[0]
    rest = rest[1:]

    verb = _VERBS.get(method.upper(), lower_method)
    if rest[0] == "watch":
        verb = "watch"
        rest = rest[1:]

    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""

    if len(rest) >= 2 and resource == "namespaces" and not namespace:
        namespace = name
    if not name:
        if verb == "get":
            verb = "watch" if truthy(query.get("watch")) else "list"
        elif verb == "delete":
            verb = "deletecollection"
    elif verb == "get" and truthy(query.get("watch")):
        verb = "watch"
    if verb in ("list", "watch") and not name:
        for selector in (query.get("fieldSelector") or ())[:1]:
            for term in selector.split(","):
                key, op, value = _split_term(term)
                if key == "metadata.name" and op in ("=", "=="):
                    name = value
    return RequestInfo(
        True, path, verb, prefix, group, version, namespace, resource, subresource, name, tuple(rest)
    )


def request_info(scope: MutableMapping[str, Any], method: str, path: str, query: Mapping[str, list[str]]) -> RequestInfo:
    """:func:`parse_request_info` once per request: the result is kept in ``scope`` and reused by
    every later caller that asks about the same method, path and query string (authorization, then
    routing); ``query`` must be the parsed ``scope["query_string"]``. A middleware that rewrites the
    request in between gets a fresh parse, never a stale one."""
    query_string = scope.get("query_string", b"")
    cached = scope.get(SCOPE_KEY)
    if cached is not None and cached[0] == method and cached[1] == path and cached[2] == query_string:
        info: RequestInfo = cached[3]
        return info
    # The parse reads only the first watch and fieldSelector values of the query: with the method
    # and path they are its whole input, so requests to one URL (a controller's object, a
    # collection that is written to) share one immutable result.
    if query:
        watch, selector = query.get("watch"), query.get("fieldSelector")
        memo_key = (method, path, watch[0] if watch else None, selector[0] if selector else None)
    else:
        memo_key = (method, path, None, None)
    memo = _PARSED.get(memo_key)
    if memo is None:
        memo = parse_request_info(method, path, query)
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[memo_key] = memo
    scope[SCOPE_KEY] = (method, path, query_string, memo)
    return memo


_PARSED: dict[tuple[str, str, str | None, str | None], RequestInfo] = {}
_PARSED_LIMIT = 4096


def _split_term(term: str) -> tuple[str, str, str]:
    for op in ("!=", "==", "="):
        if op in term:
            key, _, value = term.partition(op)
            return key.strip(), op, value.strip()
    return term.strip(), "", ""
