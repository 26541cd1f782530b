"""autoscaling/v1 HorizontalPodAutoscalers, served through the stored autoscaling/v2 objects.

Upstream keeps one storage version (v2) and converts every v1 request and answer through the internal
version (k/k ``pkg/apis/autoscaling/v1/conversion.go``, here :mod:`kubeloop.api._hpa_conversion`). This
route does the same around the v2 REST handlers, for every request under
``/apis/autoscaling/v1/.../horizontalpodautoscalers``:

- a create or update body (JSON, YAML, or protobuf: ``kubectl autoscale`` sends protobuf) is converted to v2,
  then handled at v2: defaults, validation (its errors name v2 fields, as upstream's do), admission, storage;
- a patch is applied to the object as v1 shows it (JSON patch, merge patch, or a strategic merge patch with
  the v1 schema's merge keys), the result converted to v2 and
  written as an update conditioned on the resourceVersion read, retried on a conflict unless the patch named
  a resourceVersion itself (upstream's GuaranteedUpdate); a server-side apply converts the applied
  configuration and applies it at v2;
- an answer that is an object or a list of them is converted to v1, each watch event's object too; Status
  and Table answers pass as they are (a Table's rows are the same printer's at either version).

What differs from upstream: the managedFields entries a v1 write records name ``autoscaling/v2`` (upstream
records the request's version), and admission webhooks see the v2 object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from kubeloop.api import (
    ApiError,
    BadRequest,
    ResourceInfo,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from kubeloop.api._hpa_conversion import hpa_v1_to_v2, hpa_v2_to_v1
from kubeloop.api._schemas import builtin_schema
from kubeloop.server._http import ASGIApp, Message, Receive, Scope, Send, send_error

__all__ = ["V1_PREFIX", "AutoscalingV1", "is_v1_hpa_request"]

V1_PREFIX = "/apis/autoscaling/v1"
_V2_PREFIX = "/apis/autoscaling/v2"
_JSON = b"application/json"
_CONFLICT_RETRIES = 5
BodyDecoder = Callable[[bytes, ResourceInfo], dict[str, Any]]


def is_v1_hpa_request(path: str) -> bool:
    return "/horizontalpodautoscalers" in path


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


def _yaml(body: bytes) -> Any:
    """A YAML body (PyYAML imported on first use, as the server's other YAML paths do: start-up needs none)."""
    import yaml

    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as err:
        raise ValueError(str(err)) from None


def _converted_answer(body: bytes) -> bytes:
    """An answer at v2 as v1 shows it: an HPA or a list of them converted, anything else unchanged."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if not isinstance(obj, dict):
        return body
    if obj.get("kind") == "HorizontalPodAutoscaler":
        return orjson.dumps(hpa_v2_to_v1(obj))
    if obj.get("kind") == "HorizontalPodAutoscalerList":
        obj["apiVersion"] = "autoscaling/v1"
        obj["items"] = [{k: v for k, v in hpa_v2_to_v1(item).items() if k not in ("apiVersion", "kind")}
                        if isinstance(item, dict) else item for item in obj.get("items") or []]
        return orjson.dumps(obj)
    return body


def _converted_event(line: bytes) -> bytes:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if isinstance(event, dict) and isinstance(event.get("object"), dict) \
            and event["object"].get("kind") == "HorizontalPodAutoscaler":
        event["object"] = hpa_v2_to_v1(event["object"])
        return orjson.dumps(event)
    return line


class _Answer:
    """What the v2 handlers answered one sub-request: status, headers, body."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = b""

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")


def _once(body: bytes, then: Receive | None = None) -> Receive:
    """A sub-request's ``receive``: its body, then the client's next message (a watch ends on its
    disconnect) or, for a request of the route's own, a disconnect."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await then() if then is not None else {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


class AutoscalingV1:
    """The route serving ``/apis/autoscaling/v1/...horizontalpodautoscalers...`` through ``app`` at v2."""

    def __init__(self, app: ASGIApp, info: ResourceInfo, decoders: dict[str, BodyDecoder]) -> None:
        self.app = app
        self.info = info  # the v1 resource (for protobuf bodies and the strategic merge schema)
        self.decoders = decoders

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method = scope["method"]
        path = _V2_PREFIX + scope["path"][len(V1_PREFIX):]
        try:
            if method == "PATCH":
                await self._patch(scope, send, path, body)
                return
            if method in ("POST", "PUT"):
                body = orjson.dumps(hpa_v1_to_v2(self._decode(scope, body)))
            inner = self._inner_scope(scope, method, path, body)
            if b"watch=" in scope.get("query_string", b"") or "/watch/" in scope["path"]:
                await self.app(inner, _once(body, receive), _EventStream(send).send)
                return
            answer = _Answer()
            await self.app(inner, _once(body, receive), answer.send)
            await _send_answer(send, answer, _converted_answer(answer.body))
        except ApiError as error:
            await send_error(send, error)

    def _decode(self, scope: Scope, body: bytes) -> dict[str, Any]:
        media = _header(scope, b"content-type").split(";")[0].strip().lower()
        if media in self.decoders:
            return self.decoders[media](body, self.info)
        try:
            obj = _yaml(body) if "yaml" in media else orjson.loads(body)
        except (orjson.JSONDecodeError, ValueError) as err:
            raise BadRequest(f"the body of the request was in an unknown format: {err}") from None
        if not isinstance(obj, dict):
            raise BadRequest("the body of the request must be a JSON object")
        return obj

    def _inner_scope(self, scope: Scope, method: str, path: str, body: bytes, *, query: bytes | None = None,
                     media: bytes = _JSON) -> Scope:
        headers = [(k, v) for k, v in scope.get("headers") or ()
                   if k.lower() not in (b"content-type", b"content-length", b"accept-encoding", b"accept")]
        accept = _header(scope, b"accept")
        # Protobuf answers are not converted here: JSON is asked for instead (every client takes it).
        headers.append((b"accept", accept.encode() if accept and "protobuf" not in accept else _JSON))
        if body:
            headers += [(b"content-type", media), (b"content-length", str(len(body)).encode())]
        inner = dict(scope)
        inner.update(method=method, path=path, raw_path=path.encode(), headers=headers)
        if query is not None:
            inner["query_string"] = query
        return inner

    async def _call(self, scope: Scope, method: str, path: str, body: bytes = b"", *, query: bytes | None = None,
                    media: bytes = _JSON) -> _Answer:
        answer = _Answer()
        await self.app(self._inner_scope(scope, method, path, body, query=query, media=media), _once(body),
                       answer.send)
        return answer

    async def _patch(self, scope: Scope, send: Send, path: str, patch_body: bytes) -> None:
        media = _header(scope, b"content-type").split(";")[0].strip().lower()
        if media == "application/apply-patch+yaml":
            applied = self._decode(scope, patch_body)
            converted = hpa_v1_to_v2(applied)
            annotations = (applied.get("metadata") or {}).get("annotations") or {}
            if (applied.get("spec") or {}).get("targetCPUUtilizationPercentage") is None \
                    and "autoscaling.alpha.kubernetes.io/metrics" not in annotations:
                converted.get("spec", {}).pop("metrics", None)  # the v1 default is no field the applier set
            answer = await self._call(scope, "PATCH", path, orjson.dumps(converted), media=media.encode())
            await _send_answer(send, answer, _converted_answer(answer.body))
            return
        try:
            patch = orjson.loads(patch_body)
        except orjson.JSONDecodeError as err:
            raise BadRequest(f"error decoding patch: {err}") from None
        main = path.removesuffix("/status")
        meta = patch.get("metadata") if isinstance(patch, dict) else None
        names_version = isinstance(meta, dict) and "resourceVersion" in meta  # then a conflict is the answer
        answer = _Answer()
        for _ in range(_CONFLICT_RETRIES):
            current = await self._call(scope, "GET", main, query=b"")
            if current.status != 200:
                await _send_answer(send, current, current.body)
                return
            stored = orjson.loads(current.body)
            patched = self._patched(hpa_v2_to_v1(stored), patch, media)
            if not names_version:
                patched.setdefault("metadata", {})["resourceVersion"] = (stored.get("metadata") or {}).get(
                    "resourceVersion")
            answer = await self._call(scope, "PUT", path, orjson.dumps(hpa_v1_to_v2(patched)),
                                      query=scope.get("query_string", b""))
            if answer.status != 409 or names_version:
                break
        await _send_answer(send, answer, _converted_answer(answer.body))

    def _patched(self, v1: dict[str, Any], patch: Any, media: str) -> dict[str, Any]:
        if media == "application/json-patch+json":
            patched = apply_json_patch(v1, patch)
        elif media == "application/strategic-merge-patch+json":
            patched = apply_strategic_merge_patch(v1, patch, builtin_schema("autoscaling", "v1", self.info.kind) or {})
        else:
            patched = apply_merge_patch(v1, patch)
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata", {}), dict):
            raise BadRequest("the patched object is not a HorizontalPodAutoscaler")
        return patched


async def _send_answer(send: Send, answer: _Answer, body: bytes) -> None:
    headers = [(k, v) for k, v in answer.headers if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _EventStream:
    """A watch answer passed on as it streams, each complete event line converted."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._pending = b""

    async def send(self, message: Message) -> None:
        if message["type"] != "http.response.body":
            await self._send(message)
            return
        data = self._pending + message.get("body", b"")
        lines = data.split(b"\n")
        self._pending = lines.pop()
        out = b"".join(_converted_event(line) + b"\n" for line in lines if line)
        more = bool(message.get("more_body"))
        if not more and self._pending:
            out += _converted_event(self._pending)
            self._pending = b""
        await self._send({"type": "http.response.body", "body": out, "more_body": more})
