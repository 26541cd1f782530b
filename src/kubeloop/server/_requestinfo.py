"""Request attributes from a URL and method, as apiserver ``pkg/endpoints/request/requestinfo.go``.

:func:`parse_request_info` turns ``GET /apis/apps/v1/namespaces/ns/deployments/d/scale`` into a
frozen :class:`RequestInfo` (verb ``get``, group ``apps``, resource ``deployments``, subresource
``scale`` ...). Routing, authorization and admission all read the same value, so they never
disagree about what a request is. Rules kept from upstream:

- GET on a collection is ``list``, or ``watch`` when the ``watch`` query flag is truthy (anything
  but absent, ``0`` and ``false``), or with the deprecated ``/watch/`` path prefix;
- ``/api/v1/namespaces/NS/status`` and ``.../finalize`` are subresources of the namespace ``NS``;
- a list/watch whose field selector pins ``metadata.name`` carries that name.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestInfo", "parse_request_info", "truthy"]

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


def parse_request_info(method: str, path: str, query: dict[str, list[str]]) -> RequestInfo:
    parts = [p for p in path.strip("/").split("/") if p] if path.strip("/") else []
    lower_method = method.lower()
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(False, path, lower_method)
    prefix = parts[0]
    rest = parts[1:]
    group = ""
    if prefix == "apis":
        if not rest:
            return RequestInfo(False, path, lower_method)
        group = rest[0]
        rest = rest[1:]
    if not rest:
        return RequestInfo(False, path, lower_method)
    version = rest[0]
    rest = rest[1:]
    if not rest:
        return RequestInfo(False, path, lower_method)

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
        elif verb == "watch":
            pass
    elif verb == "get" and truthy(query.get("watch")):
        verb = "watch"
    if verb in ("list", "watch") and not name:
        for selector in query.get("fieldSelector", [])[:1]:
            for term in selector.split(","):
                key, op, value = _split_term(term)
                if key == "metadata.name" and op in ("=", "=="):
                    name = value
    return RequestInfo(
        True, path, verb, prefix, group, version, namespace, resource, subresource, name, tuple(rest)
    )


def _split_term(term: str) -> tuple[str, str, str]:
    for op in ("!=", "==", "="):
        if op in term:
            key, _, value = term.partition(op)
            return key.strip(), op, value.strip()
    return term.strip(), "", ""
