"""``/openapi/v2``: one swagger 2.0 document for every served kind, as JSON or gnostic protobuf.

Why it matters: kubectl validates a ``kind: List`` (``apply -f``/``create -f`` of ``kubectl get -o
yaml`` output) on the client, because the v3 field-validation verifier has no operation for ``v1/List``
(cli-runtime ``query_param_verifier_v3.go``); it then reads ``/openapi/v2`` in protobuf (client-go
``discovery.OpenAPISchema``) and checks each item against its definition (kubectl
``pkg/validation``, kube-openapi ``pkg/util/proto/validation``).

Contract (kube-openapi ``pkg/handler/handler.go``):

- The document is built on the first request from the same facts as the v3 documents (definitions
  named ``io.k8s.api.core.v1.ConfigMap``..., custom kinds from their CRD in v2 form, the operations of
  every resource) and cached; it is rebuilt only when the served resources change or the custom schema
  source's ``revision`` moves. Start-up builds nothing.
- ``Accept`` is negotiated in upstream's order (clauses by quality, then specificity): JSON
  (``application/json``, also what ``*/*`` and no ``Accept`` get), and protobuf under both
  ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` (what client-go sends) and
  ``application/com.github.proto-openapi.spec.v2.v1.0+protobuf``; either protobuf answer is labelled
  with the latter. Nothing acceptable: 406 with an empty body.
- ``ETag`` is the quoted upper-case hex SHA-512 of the JSON bytes, the same for both forms;
  ``If-None-Match`` with it answers 304. ``Vary: Accept`` is always set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kubeloop.api import ApiError, KindRegistry, MethodNotAllowed, NotFound, ResourceInfo
from kubeloop.server._http import Receive, Request, Scope, Send, send_error
from kubeloop.server._openapi import CustomSchemaSource, OpenAPIResponse, add_resources, send_response
from kubeloop.server._openapi_schemas import META, ComponentSet
from kubeloop.server._openapi_v2_paths import swagger2_paths

__all__ = ["PROTOBUF_V2", "OpenAPIV2Document"]

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_PROTOBUF_V2_DEPRECATED = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
# (subtype accepted, answered as protobuf?) in upstream's order of preference for a wildcard.
_OFFERED = (("json", False), (_PROTOBUF_V2_DEPRECATED, True), (PROTOBUF_V2.split("/", 1)[1], True))


@dataclass(frozen=True, slots=True)
class _Built:
    key: tuple[Any, ...]
    json: bytes
    etag: str
    document: dict[str, Any]


def _clauses(accept: str) -> list[tuple[str, str]]:
    """``(type, subtype)`` of each ``Accept`` clause, best first (goautoneg ``ParseAccept`` order)."""
    parsed: list[tuple[float, int, int, str, str]] = []
    for index, raw in enumerate(accept.split(",")):
        media, *params = (part.strip() for part in raw.split(";"))
        kind, _, subtype = media.partition("/")
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if not kind or quality <= 0:
            continue
        specificity = (kind != "*") + (subtype not in ("", "*"))
        parsed.append((-quality, -specificity, index, kind, subtype or "*"))
    return [(kind, subtype) for *_, kind, subtype in sorted(parsed)]


class OpenAPIV2Document:
    """Builds (lazily), caches and serves the ``/openapi/v2`` swagger document."""

    def __init__(self, registry: KindRegistry, *, custom_schemas: CustomSchemaSource | None = None) -> None:
        self._registry = registry
        self._custom = custom_schemas
        self._built: _Built | None = None
        self._protobuf: bytes | None = None

    def _infos(self) -> list[ResourceInfo]:
        infos: list[ResourceInfo] = []
        for group, version in sorted(self._registry.group_versions()):
            infos.extend(
                sorted(
                    (i for i in self._registry.in_group_version(group, version) if "/" not in i.plural),
                    key=lambda i: i.plural,
                )
            )
        return infos

    def built(self) -> _Built:
        infos = self._infos()
        revision = self._custom.revision if self._custom is not None and any(i.custom for i in infos) else None
        key = (tuple(infos), revision)
        if self._built is not None and self._built.key == key:
            return self._built
        document = self._build(infos)
        body = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
        self._built = _Built(key, body, '"' + hashlib.sha512(body).hexdigest().upper() + '"', document)
        self._protobuf = None
        return self._built

    def _build(self, infos: list[ResourceInfo]) -> dict[str, Any]:
        definitions = ComponentSet(swagger2=True)
        paths: dict[str, Any] = {}
        add_resources(definitions, paths, infos, self._custom)
        definitions.add_all([f"{META}.Status", f"{META}.Patch", f"{META}.DeleteOptions", f"{META}.WatchEvent"])
        return {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": swagger2_paths(paths),
            "definitions": definitions.schemas,
            "securityDefinitions": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                }
            },
            "security": [{"BearerToken": []}],
        }

    def protobuf(self, built: _Built) -> bytes:
        """The gnostic protobuf of ``built``, encoded once per document (first asked for)."""
        if self._protobuf is None or self._built is not built:
            # Imported on first use: the encoder needs PyYAML (vendor extensions as YAML), which start-up never loads.
            from kubeloop.server._openapi_v2_proto import encode_document

            self._protobuf = encode_document(built.document)
        return self._protobuf

    def respond(self, headers: Mapping[str, str]) -> OpenAPIResponse:
        vary = (b"vary", b"Accept")
        for kind, subtype in _clauses(headers.get("accept") or "*/*"):
            if kind not in ("application", "*"):
                continue
            for offered, is_protobuf in _OFFERED:
                if subtype not in (offered, "*"):
                    continue
                built = self.built()
                body = self.protobuf(built) if is_protobuf else built.json
                content_type = PROTOBUF_V2 if is_protobuf else "application/json"
                tagged = (
                    (b"content-type", content_type.encode()),
                    (b"etag", built.etag.encode()),
                    vary,
                )
                if headers.get("if-none-match") == built.etag:
                    return OpenAPIResponse(304, b"", tagged)
                return OpenAPIResponse(200, body, tagged)
        return OpenAPIResponse(406, b"", (vary,))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI endpoint for ``/openapi/v2`` (GET and HEAD only; nothing is served below it)."""
        request = Request(scope, receive)
        try:
            if request.method not in ("GET", "HEAD"):
                raise MethodNotAllowed(f"{request.method} is not supported on the OpenAPI documents")
            if request.path.rstrip("/") != "/openapi/v2":
                raise NotFound("the server could not find the requested resource")
            response = self.respond(request.headers)
        except ApiError as error:
            await send_error(send, error)
            return
        await send_response(send, request.method, response)

