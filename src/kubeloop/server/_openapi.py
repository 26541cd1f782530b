"""``/openapi/v3``: the discovery root and one OpenAPI 3.0 document per served group/version.

What kubectl needs (apimachinery reference section 3; cli-runtime ``query_param_verifier_v3.go``):
the root lists every served group/version under ``paths`` as ``api/v1`` or ``apis/<group>/<version>``
with a ``serverRelativeURL`` carrying ``?hash=<sha512 of the document>``; each document has, per
resource, a PATCH operation with ``x-kubernetes-group-version-kind`` and a ``fieldValidation`` query
parameter (so ``kubectl create -f``/``apply`` validate server-side), and real schemas in
``components/schemas`` (so ``kubectl explain`` prints field docs). ``api/v1`` always carries the
Namespace PATCH, which kubectl falls back to for CRD kinds.

Guarantees:

- Documents are generated lazily and cached per group/version; a cached document is reused until
  the set of resources served in that group/version changes, or, for groups with custom kinds,
  until the custom schema source's ``revision`` moves. The hash therefore changes exactly when the
  document's bytes change.
- ``GET /openapi/v3/<gv>?hash=H`` with the current hash answers ``Cache-Control: public,
  immutable``; a stale hash is redirected (301) to the current URL, as upstream does; without a
  hash the answer is ``no-cache``. ``ETag`` is the quoted hash and ``If-None-Match`` gives 304.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kubeloop.api import ApiError, KindRegistry, MethodNotAllowed, NotFound, ResourceInfo
from kubeloop.server._http import Receive, Request, Scope, Send, send_error
from kubeloop.server._openapi_paths import gv_path, resource_paths, subresource_schemas
from kubeloop.server._openapi_schemas import META, ComponentSet

__all__ = ["CustomSchemaSource", "OpenAPIDocuments", "OpenAPIResponse", "add_resources", "send_response"]


class CustomSchemaSource(Protocol):
    """Where the ``openAPIV3Schema`` of served custom kinds comes from (the CRD controller)."""

    @property
    def revision(self) -> int:
        """Moves whenever any custom schema changes."""
        ...

    def schema(self, group: str, version: str, kind: str) -> Mapping[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class OpenAPIResponse:
    status: int
    body: bytes
    headers: tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True, slots=True)
class _Document:
    key: tuple[Any, ...]
    body: bytes
    hash: str


class OpenAPIDocuments:
    """Builds, caches and serves the ``/openapi/v3`` root and per-group/version documents."""

    def __init__(self, registry: KindRegistry, *, custom_schemas: CustomSchemaSource | None = None) -> None:
        self._registry = registry
        self._custom = custom_schemas
        self._cache: dict[str, _Document] = {}

    def _key(self, infos: list[ResourceInfo]) -> tuple[Any, ...]:
        revision = (
            self._custom.revision if self._custom is not None and any(i.custom for i in infos) else None
        )
        return (tuple(sorted(infos, key=lambda i: i.plural)), revision)

    def document(self, group: str, version: str) -> _Document | None:
        infos = [i for i in self._registry.in_group_version(group, version) if "/" not in i.plural]
        if not infos:
            self._cache.pop(gv_path(group, version), None)
            return None
        key = self._key(infos)
        cached = self._cache.get(gv_path(group, version))
        if cached is not None and cached.key == key:
            return cached
        body = orjson.dumps(self._build(group, version, infos), option=orjson.OPT_SORT_KEYS)
        doc = _Document(key, body, hashlib.sha512(body).hexdigest().upper())
        self._cache[gv_path(group, version)] = doc
        return doc

    def _build(self, group: str, version: str, infos: list[ResourceInfo]) -> dict[str, Any]:
        components = ComponentSet()
        paths: dict[str, Any] = {}
        add_resources(components, paths, sorted(infos, key=lambda i: i.plural), self._custom)
        components.add_all([f"{META}.Status", f"{META}.Patch", f"{META}.DeleteOptions"])
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths,
            "components": {"schemas": components.schemas},
        }

    def root(self) -> dict[str, Any]:
        paths: dict[str, Any] = {}
        for group, version in sorted(self._registry.group_versions()):
            doc = self.document(group, version)
            if doc is not None:
                gv = gv_path(group, version)
                paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={doc.hash}"}
        return {"paths": paths}

    def respond(
        self, path: str, query: Mapping[str, list[str]], headers: Mapping[str, str]
    ) -> OpenAPIResponse:
        """The answer to ``GET path`` under ``/openapi/v3`` (raises NotFound for unknown documents)."""
        json_type = (b"content-type", b"application/json")
        rest = path.removeprefix("/openapi/v3").strip("/")
        if not rest:
            body = orjson.dumps(self.root(), option=orjson.OPT_SORT_KEYS)
            etag = '"' + hashlib.sha512(body).hexdigest().upper() + '"'
            return self._answer(body, etag, headers, (json_type, (b"cache-control", b"no-cache, private")))
        parts = rest.split("/")
        if len(parts) == 2 and parts[0] == "api":
            group, version = "", parts[1]
        elif len(parts) == 3 and parts[0] == "apis":
            group, version = parts[1], parts[2]
        else:
            raise NotFound("the server could not find the requested resource")
        doc = self.document(group, version)
        if doc is None:
            raise NotFound("the server could not find the requested resource")
        hashes = query.get("hash") or []
        requested = hashes[0] if hashes else None
        etag = f'"{doc.hash}"'
        if requested is not None and requested != doc.hash:
            location = f"/openapi/v3/{rest}?hash={doc.hash}".encode()
            return OpenAPIResponse(
                301, b"", ((b"location", location), (b"cache-control", b"no-cache, private"))
            )
        cache = b"public, immutable" if requested else b"no-cache, private"
        return self._answer(doc.body, etag, headers, (json_type, (b"cache-control", cache)))

    @staticmethod
    def _answer(
        body: bytes, etag: str, headers: Mapping[str, str], extra: tuple[tuple[bytes, bytes], ...]
    ) -> OpenAPIResponse:
        tagged = (*extra, (b"etag", etag.encode()))
        if headers.get("if-none-match") == etag:
            return OpenAPIResponse(304, b"", tagged)
        return OpenAPIResponse(200, body, tagged)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI endpoint for ``/openapi/v3`` and below (GET and HEAD only)."""
        request = Request(scope, receive)
        try:
            if request.method not in ("GET", "HEAD"):
                raise MethodNotAllowed(f"{request.method} is not supported on the OpenAPI documents")
            response = self.respond(request.path, request.query, request.headers)
        except ApiError as error:
            await send_error(send, error)
            return
        await send_response(send, request.method, response)


def add_resources(components: ComponentSet, paths: dict[str, Any], infos: list[ResourceInfo],
                  custom_schemas: CustomSchemaSource | None) -> None:
    """Each resource's schema (a CRD's from ``custom_schemas``), its paths, and the schemas its scale and
    other subresources use: what a v3 group-version document and the v2 document both hold."""
    for info in infos:
        custom = None
        if info.custom and custom_schemas is not None:
            custom = custom_schemas.schema(info.group, info.version, info.kind)
        name = components.add_kind(info, custom)
        resource_paths(info, f"#/components/schemas/{name}", paths)
        if info.scale is not None:
            components.add_builtin("io.k8s.api.autoscaling.v1.Scale")
        components.add_all(subresource_schemas(info))


async def send_response(send: Send, method: str, response: OpenAPIResponse) -> None:
    """Send ``response`` with its length (no body for a HEAD request), as every OpenAPI endpoint answers."""
    headers = [*response.headers, (b"content-length", str(len(response.body)).encode())]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else response.body})
