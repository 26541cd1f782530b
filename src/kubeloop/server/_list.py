"""list: selectors, ``limit``/``continue`` pages and resourceVersion semantics, served from stored bytes.

Guarantees (apimachinery reference 5.2, apiserver ``pkg/storage/etcd3/store.go`` GetList):

- The list's ``metadata.resourceVersion`` is the store revision the read was served at; every page
  of a paginated list is read at the first page's revision (a consistent snapshot), and the opaque
  ``continue`` token carries that revision and the last key returned. A token whose revision was
  compacted is 410 Expired.
- ``resourceVersion`` unset or ``0`` reads the latest state; ``N`` with ``resourceVersionMatch=Exact``
  (or with ``limit`` and no match) reads exactly revision N (410 when compacted); ``N`` otherwise
  means "not older than N" (504 ``Too large resource version`` when the store has not reached N).
- Items are the stored bytes concatenated, never decoded unless a selector must look inside, and
  a ``metadata.name`` field selector on a namespaced list reads one key instead of a range. A
  built-in kind's items lose their leading ``apiVersion`` and ``kind`` (a byte cut; upstream's typed
  lists have neither on items), a custom resource's keep them.
- The body is produced in parts (:func:`list_body_parts`) of about ``BODY_PART`` bytes whose
  concatenation is :func:`list_body` byte for byte, with the total length known before the first
  part: the server can stream a large list (as kube-apiserver does) instead of building and copying
  one buffer of the whole list. Every item is read before the first part, so a streamed list is
  still one revision whatever is written while it is sent.
"""

from __future__ import annotations

import base64
import binascii
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import accumulate, repeat
from operator import is_, itemgetter
from typing import Any

import orjson

from kubeloop.api import BadRequest, Expired, ResourceInfo, Timeout
from kubeloop.server._options import ListOptions
from kubeloop.server._state import ServerState, collection_prefix, object_key
from kubeloop.store import Compacted, KeyValue

__all__ = [
    "BODY_PART", "ListResult", "collection_body", "collection_body_parts", "current_objects", "item_prefix",
    "item_rests", "list_body", "list_body_parts", "list_objects", "matches", "served_value",
]

_CHUNK = 500
# A stored value (``KeyValue`` is a named tuple: ``value`` is its second field).
_VALUE = itemgetter(1)
# Bytes per streamed part of a list body: large enough that per-part overhead (an ASGI message, a
# transport write) is negligible, small enough that no part costs a large fresh allocation and the
# client receives while the server is still joining.
BODY_PART = 1 << 18
_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[KeyValue]
    revision: int
    continue_token: str = ""
    # Objects after this page (etcd3 store.go GetList sets it only when no selector filters the list).
    remaining: int | None = None


def matches(info: ResourceInfo, options: ListOptions, obj: dict[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    if not options.label_selector.empty and not options.label_selector.matches(meta.get("labels") or {}):
        return False
    return options.field_selector.empty or options.field_selector.matches(obj, kind=info.kind)


def served_value(info: ResourceInfo, value: bytes) -> bytes:
    """Stored bytes as served at ``info``'s version (custom kinds may store another version)."""
    if not info.custom or value.startswith(b'{"apiVersion":"' + info.api_version.encode() + b'"'):
        return value
    # A custom resource is stored at its storage version (``_rest.storage_form`` puts apiVersion
    # first); conversion strategy None answers at the requested version by changing only apiVersion.
    obj = orjson.loads(value)
    if obj.get("apiVersion") == info.api_version:
        return value
    obj["apiVersion"] = info.api_version
    return orjson.dumps(obj)


def encode_continue(revision: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        revision = data["rv"]
        start = data["start"]
        if data.get("v") != "meta.k8s.io/v1" or not isinstance(revision, int) or not isinstance(start, str):
            raise ValueError
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise BadRequest("invalid continue token: continue key is not valid: incorrect encoded start resourceVersion "
                         "(version meta.k8s.io/v1)") from None
    if not start or start.startswith("/") or ".." in start:
        raise BadRequest(f"invalid continue token: continue key is not valid: {start!r}")
    if revision <= 0:
        raise BadRequest("invalid continue token: continue key is not valid: incorrect encoded start resourceVersion")
    return revision, start


def parse_resource_version(value: str) -> int:
    try:
        revision = int(value, 10)
        if revision < 0:
            raise ValueError
        return revision
    except ValueError:
        raise BadRequest(f"invalid resource version: {value}") from None


async def _read_revision(state: ServerState, options: ListOptions) -> int | None:
    """The exact revision to read, or None for the latest (apimachinery reference 5.2 table)."""
    rv = options.resource_version
    if not rv or rv == "0":
        return None
    revision = parse_resource_version(rv)
    exact = options.resource_version_match == "Exact" or (
        not options.resource_version_match and options.limit > 0
    )
    current = state.store.revision
    if revision > current:
        raise Timeout(
            f"Timeout: Too large resource version: {revision}, current: {current}",
            details={"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                     "retryAfterSeconds": 1},
        )
    return revision if exact else None


async def list_objects(state: ServerState, info: ResourceInfo, namespace: str, options: ListOptions) -> ListResult:
    prefix = collection_prefix(info, namespace)
    start_after: str | None = None
    if options.continue_token:
        if options.resource_version and options.resource_version != "0":
            raise BadRequest("specifying resource version is not allowed when using continue")
        revision, start = decode_continue(options.continue_token)
        start_after = prefix + start
        read_at: int | None = revision
    else:
        read_at = await _read_revision(state, options)
    try:
        return await _collect(state, info, namespace, options, prefix, start_after, read_at)
    except Compacted as exc:
        if options.continue_token:
            raise Expired(_CONTINUE_EXPIRED) from None
        raise Expired(f"too old resource version: {exc.requested} ({exc.compacted})") from None


async def current_objects(state: ServerState, info: ResourceInfo, namespace: str, options: ListOptions) -> ListResult:
    """Every object matching ``options``' selectors at the latest revision, in one result (a watch's
    initial state: ``limit`` does not apply to watches)."""
    return await _collect(state, info, namespace, replace(options, limit=0), collection_prefix(info, namespace),
                          None, None)


async def _collect(
    state: ServerState,
    info: ResourceInfo,
    namespace: str,
    options: ListOptions,
    prefix: str,
    start_after: str | None,
    read_at: int | None,
) -> ListResult:
    store = state.store
    name = options.field_selector.requires_exact_match("metadata.name")
    if name is not None and (namespace or not info.namespaced) and start_after is None:
        at = read_at if read_at is not None else store.revision
        kv = await store.get(object_key(info, namespace, name), revision=read_at)
        found = [kv] if kv is not None and matches(info, options, orjson.loads(kv.value)) else []
        return ListResult(found, at)
    limit = options.limit
    filtering = options.filters
    items: list[KeyValue] = []
    revision = read_at
    while True:
        want = (limit - len(items)) if limit else None
        chunk = want if not filtering else max(want or _CHUNK, _CHUNK)
        result = await store.range(prefix, start_after=start_after, limit=chunk, revision=revision)
        revision = result.revision
        if not filtering:
            # Every item is kept, with no loop over them: the store answered at most ``want``.
            items += result.items
            if limit and len(items) >= limit:
                if not result.more:
                    return ListResult(items, revision)
                token = encode_continue(revision, items[-1].key[len(prefix):])
                return ListResult(items, revision, token, result.count - len(result.items))
        else:
            for index, kv in enumerate(result.items):
                if not matches(info, options, orjson.loads(kv.value)):
                    continue
                items.append(kv)
                if limit and len(items) >= limit:
                    if not result.more and index == len(result.items) - 1:
                        return ListResult(items, revision)
                    return ListResult(items, revision, encode_continue(revision, kv.key[len(prefix):]))
        if not result.more or not result.items:
            return ListResult(items, revision)
        start_after = result.items[-1].key


def list_body(info: ResourceInfo, result: ListResult) -> bytes:
    """The whole ``<Kind>List`` body: the parts of :func:`list_body_parts`, joined."""
    return b"".join(list_body_parts(info, result, part_size=BODY_PART)[1])


def list_body_parts(
    info: ResourceInfo, result: ListResult, *, part_size: int = BODY_PART
) -> tuple[int, Iterator[bytes]]:
    """The list body's total length and its parts (each about ``part_size`` bytes, items never split).

    Items are rendered (:func:`served_value`, or :func:`item_rests` for a built-in kind) before this
    returns, so the length is exact; the parts are joined only as they are taken, one at a time.
    """
    meta: dict[str, Any] = {"resourceVersion": str(result.revision)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    return collection_body_parts(info, meta, list(map(_VALUE, result.items)), part_size=part_size)


def collection_body(info: ResourceInfo, meta: dict[str, Any], values: list[bytes]) -> bytes:
    """A ``<Kind>List`` of stored ``values`` in one buffer (deletecollection's answer)."""
    return b"".join(collection_body_parts(info, meta, values, part_size=BODY_PART)[1])


def collection_body_parts(
    info: ResourceInfo, meta: dict[str, Any], values: list[bytes], *, part_size: int = BODY_PART
) -> tuple[int, Iterator[bytes]]:
    """A ``<Kind>List`` with list metadata ``meta`` over stored ``values``: its length and parts.

    A custom resource's item is the object as served (:func:`served_value`), ``kind`` and
    ``apiVersion`` included, as the unstructured list of apiextensions-apiserver's handler has them.
    A built-in kind's items have neither: kube-apiserver encodes a typed list whose items carry an
    empty ``TypeMeta`` (kubernetes#3030, #63676, #98925; client-go's typed decoding and kubectl's
    printers set them back client-side). Each such item is kept without its opening brace
    (:func:`item_rests`) and the items are joined by ``,{``.
    """
    head = orjson.dumps({"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta})
    head = head[:-1] + b',"items":['
    if info.custom:
        items, sep = [served_value(info, v) for v in values], b","
    else:
        items, sep = item_rests(info, values), b",{"
        if items:
            head += b"{"
    sizes = list(map(len, items))
    length = len(head) + sum(sizes) + len(sep) * max(len(items) - 1, 0) + 2
    return length, _parts(head, items, sizes, sep, part_size)


def item_prefix(info: ResourceInfo) -> bytes:
    """How a built-in object's stored bytes open: ``{"apiVersion":...,"kind":...,`` (the write side
    puts the two keys first: ``_rest.storage_form``)."""
    return orjson.dumps({"apiVersion": info.api_version, "kind": info.kind})[:-1] + b","


def item_rests(info: ResourceInfo, values: list[bytes]) -> list[bytes]:
    """Each stored built-in object as a list item without its opening brace: the JSON after
    ``{"apiVersion":...,"kind":...,``.

    Objects stored with those two keys first (every write since the write side orders them) are
    cut by ``removeprefix`` in one pass, without decoding; any other (stored by an older version, or
    with the keys elsewhere) is decoded and re-encoded without them.
    """
    rests = list(map(bytes.removeprefix, values, repeat(item_prefix(info))))
    # removeprefix answers its own argument when the prefix is absent (CPython, for exact bytes).
    if any(map(is_, rests, values)):
        rests = [_rest_decoded(v) if r is v else r for r, v in zip(rests, values, strict=True)]
    return rests


def _rest_decoded(value: bytes) -> bytes:
    obj = orjson.loads(value)
    obj.pop("apiVersion", None)
    obj.pop("kind", None)
    return orjson.dumps(obj)[1:]


def _parts(head: bytes, items: list[bytes], sizes: list[int], sep: bytes, part_size: int) -> Iterator[bytes]:
    """``head``, ``items`` joined by ``sep``, then ``]}``: a part closes after the first item that
    brings its items (separators not counted; the head counts in the first part) to ``part_size`` bytes.

    Each part is one join (a part after the first opens with ``sep``; the last closes with ``]}``).
    """
    ends = list(accumulate(sizes))  # ends[i]: bytes of items[0..i]
    count = len(items)
    start, base = 0, -len(head)
    while (end := bisect_left(ends, base + part_size, lo=start)) < count:
        yield _joined(head if start == 0 else None, items[start : end + 1], sep, last=False)
        start, base = end + 1, ends[end]
    if start < count:
        yield _joined(head if start == 0 else None, items[start:], sep, last=True)
    else:
        yield head + b"]}" if start == 0 else b"]}"


def _joined(head: bytes | None, chunk: list[bytes], sep: bytes, *, last: bool) -> bytes:
    """``chunk`` joined by ``sep`` in one copy, after ``head`` (the first part) or else after ``sep``."""
    if head is None:
        pieces = [b"", *chunk]
    else:
        pieces = chunk
        pieces[0] = head + pieces[0]
    if last:
        pieces[-1] = pieces[-1] + b"]}"
    return sep.join(pieces)
