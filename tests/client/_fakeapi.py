"""A small in-memory Kubernetes API server as a raw ASGI app, for testing the client and informers.

It speaks real HTTP semantics (Status bodies with the right codes, chunked watch streams of
newline-terminated events, Retry-After) and lets tests script faults: failing responses, dropped
watch streams, ERROR 410 events. It is a test double for the wire protocol only; the real server
(kubeloop.server) is tested on its own.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import jsonpatch
import orjson

from kubeloop.api import (
    ApiError,
    BadRequest,
    KindRegistry,
    NotFound,
    ResourceInfo,
    already_exists,
    conflict,
    not_found,
)

WIDGETS = ResourceInfo("example.com", "v1", "Widget", "widgets", "widget", True, status_subresource=True, custom=True)

_REASONS = {403: "Forbidden", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass
class Fault:
    method: str
    status: int
    path_contains: str = ""
    retry_after: int | None = None
    times: int = 1
    reason: str = ""


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class _Watcher:
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = field(default_factory=asyncio.Queue)
    resource: tuple[str, str] = ("", "")
    namespace: str | None = None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class FakeApi:
    def __init__(self, registry: KindRegistry | None = None, *, token: str | None = None) -> None:
        self.registry = registry or KindRegistry()
        self.token = token
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.rv = 100
        self.compacted_rv = 0
        self.faults: list[Fault] = []
        self.requests: list[Request] = []
        self.watchers: list[_Watcher] = []
        self.watch_count = 0
        self.log: list[tuple[int, tuple[str, str], str, dict[str, Any]]] = []
        self._uids = itertools.count(1)

    # -- test controls ----------------------------------------------------------------------------

    def fail(self, method: str, status: int, *, path_contains: str = "", retry_after: int | None = None,
             times: int = 1, reason: str = "") -> None:
        self.faults.append(Fault(method, status, path_contains, retry_after, times, reason))

    def drop_watches(self) -> None:
        """End every open watch stream cleanly (as a server timeout or restart would)."""
        for w in self.watchers:
            w.queue.put_nowait(None)

    def expire_watches(self) -> None:
        """Compact history past now and send every open watch an ERROR 410 Expired event."""
        self.compacted_rv = self.rv
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": f"too old resource version: 1 ({self.rv})", "reason": "Expired", "code": 410}
        for w in self.watchers:
            w.queue.put_nowait(("ERROR", status))
            w.queue.put_nowait(None)

    def seed(self, resource: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an object directly (emits a watch event like any write)."""
        return self._create(resource, obj.get("metadata", {}).get("namespace", ""), copy.deepcopy(obj))

    def remove(self, resource: ResourceInfo, namespace: str, name: str) -> None:
        key = (resource.group, resource.plural, namespace if resource.namespaced else "", name)
        obj = self.objects.pop(key)
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._emit(resource, "DELETED", obj)

    # -- store --------------------------------------------------------------------------------------

    def _key(self, res: ResourceInfo, ns: str, name: str) -> tuple[str, str, str, str]:
        return (res.group, res.plural, ns if res.namespaced else "", name)

    def _emit(self, res: ResourceInfo, kind: str, obj: dict[str, Any]) -> None:
        self.log.append((self.rv, (res.group, res.plural), kind, copy.deepcopy(obj)))
        for w in self.watchers:
            if w.resource == (res.group, res.plural) and (not w.namespace or w.namespace == obj["metadata"].get("namespace")):
                w.queue.put_nowait((kind, copy.deepcopy(obj)))

    def _create(self, res: ResourceInfo, ns: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{next(self._uids):05d}"
        name = meta.get("name", "")
        key = self._key(res, ns, name)
        if key in self.objects:
            raise already_exists(res.plural, name, res.group)
        self.rv += 1
        if res.namespaced:
            meta["namespace"] = ns
        meta["uid"] = str(uuid.UUID(int=next(self._uids)))
        meta["resourceVersion"] = str(self.rv)
        meta["creationTimestamp"] = "2024-01-01T00:00:00Z"
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        self.objects[key] = obj
        self._emit(res, "ADDED", obj)
        return obj

    def _replace(self, res: ResourceInfo, key: tuple[str, str, str, str], obj: dict[str, Any]) -> dict[str, Any]:
        old = self.objects[key]
        self.rv += 1
        meta = obj.setdefault("metadata", {})
        for f in ("uid", "creationTimestamp", "namespace", "name"):
            if f in old["metadata"]:
                meta[f] = old["metadata"][f]
        meta["resourceVersion"] = str(self.rv)
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        self.objects[key] = obj
        self._emit(res, "MODIFIED", obj)
        return obj

    # -- ASGI ---------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode(), keep_blank_values=True).items()}
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        req = Request(scope["method"], scope["path"], query, headers, body)
        self.requests.append(req)
        for fault in self.faults:
            if fault.times > 0 and fault.method == req.method and fault.path_contains in req.path:
                fault.times -= 1
                err = ApiError(f"injected {fault.status}", code=fault.status, reason=fault.reason or _REASONS.get(fault.status, "InternalError"))
                extra = [(b"retry-after", str(fault.retry_after).encode())] if fault.retry_after is not None else []
                await self._respond(send, fault.status, err.to_status(), extra)
                return
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            await self._respond(send, 401, ApiError("Unauthorized", code=401, reason="Unauthorized").to_status())
            return
        try:
            res, ns, name, sub = self._route(req.path)
            if req.method == "GET" and name is None and query.get("watch") in ("true", "1"):
                await self._watch(send, res, ns, query)
                return
            code, out = self._handle(req, res, ns, name, sub)
        except ApiError as exc:
            await self._respond(send, exc.status_code, exc.to_status())
            return
        await self._respond(send, code, out)

    async def _respond(self, send: Send, code: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        data = orjson.dumps(body)
        await send({"type": "http.response.start", "status": code,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                                *(extra or [])]})
        await send({"type": "http.response.body", "body": data})

    def _route(self, path: str) -> tuple[ResourceInfo, str, str | None, str | None]:
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise NotFound("the server could not find the requested resource")
        ns = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest:
            raise NotFound("the server could not find the requested resource")
        res = self.registry.get(group, version, rest[0])
        if res is None:
            raise NotFound("the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return res, ns, name, sub

    def _matches(self, obj: dict[str, Any], selector: str) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        for term in filter(None, selector.split(",")):
            k, _, v = term.partition("=")
            if labels.get(k) != v:
                return False
        return True

    def _handle(self, req: Request, res: ResourceInfo, ns: str, name: str | None,
                sub: str | None) -> tuple[int, Any]:
        q = req.query
        body = orjson.loads(req.body) if req.body else None
        if name is None:
            if req.method == "POST":
                return 201, copy.deepcopy(self._create(res, ns, body))
            if req.method == "GET":
                return 200, self._list(res, ns, q)
            raise ApiError("method not allowed", code=405, reason="MethodNotAllowed")
        key = self._key(res, ns, name)
        current = self.objects.get(key)
        if req.method == "GET":
            if current is None:
                raise not_found(res.plural, name, res.group)
            return 200, self._scale(current) if sub == "scale" else copy.deepcopy(current)
        if req.method == "DELETE":
            if current is None:
                raise not_found(res.plural, name, res.group)
            pre = (body or {}).get("preconditions") or {}
            if pre.get("resourceVersion") and pre["resourceVersion"] != current["metadata"]["resourceVersion"]:
                raise conflict(res.plural, name, res.group, "the ResourceVersion in the precondition does not match")
            if (body or {}).get("dryRun"):
                return 200, copy.deepcopy(current)
            self.remove(res, ns, name)
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": {"name": name, "kind": res.plural, "uid": current["metadata"]["uid"]}}
        if req.method == "PUT":
            if current is None:
                raise not_found(res.plural, name, res.group)
            rv = (body.get("metadata") or {}).get("resourceVersion")
            if rv and rv != current["metadata"]["resourceVersion"]:
                raise conflict(res.plural, name, res.group)
            return 200, copy.deepcopy(self._write(res, key, current, body, sub, q))
        if req.method == "PATCH":
            ctype = req.headers.get("content-type", "")
            if current is None:
                if ctype.startswith("application/apply-patch"):
                    return 201, copy.deepcopy(self._create(res, ns, body))
                raise not_found(res.plural, name, res.group)
            base = self._scale(current) if sub == "scale" else copy.deepcopy(current)
            if ctype.startswith("application/json-patch+json"):
                try:
                    new = jsonpatch.apply_patch(base, body)
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                    raise ApiError(str(exc), code=422, reason="Invalid") from None
            elif ctype.split(";")[0] in ("application/merge-patch+json", "application/strategic-merge-patch+json",
                                         "application/apply-patch+yaml"):
                new = merge_patch(base, body)
            else:
                raise ApiError("unsupported patch type", code=415, reason="UnsupportedMediaType")
            return 200, copy.deepcopy(self._write(res, key, current, new, sub, q))
        raise BadRequest("unsupported")

    def _write(self, res: ResourceInfo, key: tuple[str, str, str, str], current: dict[str, Any],
               new: dict[str, Any], sub: str | None, q: dict[str, str]) -> dict[str, Any]:
        if sub == "status":
            merged = copy.deepcopy(current)
            merged["status"] = new.get("status")
            new = merged
        elif sub == "scale":
            merged = copy.deepcopy(current)
            merged.setdefault("spec", {})["replicas"] = new["spec"]["replicas"]
            new = merged
        elif res.status_subresource:
            new["status"] = copy.deepcopy(current.get("status"))
        if q.get("dryRun") == "All":
            return new
        out = self._replace(res, key, new)
        return self._scale(out) if sub == "scale" else out

    @staticmethod
    def _scale(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta},
                "spec": {"replicas": obj.get("spec", {}).get("replicas", 0)},
                "status": {"replicas": (obj.get("status") or {}).get("replicas", 0)}}

    def _list(self, res: ResourceInfo, ns: str, q: dict[str, str]) -> dict[str, Any]:
        items = [copy.deepcopy(o) for k, o in sorted(self.objects.items())
                 if k[:2] == (res.group, res.plural) and (not ns or k[2] == ns)
                 and self._matches(o, q.get("labelSelector", ""))]
        list_rv, offset = str(self.rv), 0
        if q.get("continue"):
            rv_text, _, off = q["continue"].partition(":")
            if int(rv_text) < self.compacted_rv:
                raise ApiError("The provided continue parameter is too old", code=410, reason="Expired")
            list_rv, offset = rv_text, int(off)
        limit = int(q.get("limit") or 0)
        meta: dict[str, Any] = {"resourceVersion": list_rv}
        page = items[offset:]
        if limit and len(page) > limit:
            page = page[:limit]
            meta["continue"] = f"{list_rv}:{offset + limit}"
        for item in page:  # upstream drops kind/apiVersion on items
            item.pop("kind", None)
            item.pop("apiVersion", None)
        return {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta, "items": page}

    async def _watch(self, send: Send, res: ResourceInfo, ns: str, q: dict[str, str]) -> None:
        self.watch_count += 1
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")]})
        rv = q.get("resourceVersion", "")
        if rv not in ("", "0") and int(rv) < self.compacted_rv:
            status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": f"too old resource version: {rv} ({self.compacted_rv})", "reason": "Expired", "code": 410}
            await send({"type": "http.response.body", "body": orjson.dumps({"type": "ERROR", "object": status}) + b"\n"})
            await send({"type": "http.response.body", "body": b""})
            return
        watcher = _Watcher(resource=(res.group, res.plural), namespace=ns or None)
        self.watchers.append(watcher)
        try:
            if rv in ("", "0"):
                for k, o in sorted(self.objects.items()):
                    if k[:2] == (res.group, res.plural) and (not ns or k[2] == ns):
                        watcher.queue.put_nowait(("ADDED", copy.deepcopy(o)))
            else:
                for at, which, kind, obj in self.log:
                    if at > int(rv) and which == watcher.resource and (not ns or obj["metadata"].get("namespace") == ns):
                        watcher.queue.put_nowait((kind, copy.deepcopy(obj)))
            while True:
                item = await watcher.queue.get()
                if item is None:
                    break
                kind, obj = item
                await send({"type": "http.response.body", "body": orjson.dumps({"type": kind, "object": obj}) + b"\n",
                            "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            self.watchers.remove(watcher)
