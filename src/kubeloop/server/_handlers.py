"""HTTP verbs on resource URLs: route to list/watch/get/create/update/patch/delete and answer.

One :class:`ResourceHandlers` per app. It resolves the kind (404 for an unknown resource), checks
the URL shape against the kind's scope (a namespaced kind's cluster-wide URL only lists and
watches), the method against the kind's verbs (405 ``<verb> is not supported on resources of
kind "R"``), decodes bodies by Content-Type (JSON, YAML, or a registered decoder; 415 otherwise)
and answers with the stored bytes, or a Table when kubectl asks for one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from kubeloop.api import (
    BadRequest,
    MethodNotAllowed,
    NotFound,
    ResourceInfo,
    UnsupportedMediaType,
)
from kubeloop.api._quantity_fields import QUANTITY_KINDS
from kubeloop.server._authn import USER_SCOPE_KEY
from kubeloop.server._compression import (
    GZIP_THRESHOLD_BYTES,
    answer_messages,
    send_body,
    send_parts_compressed,
    wants_gzip,
)
from kubeloop.server._daemonset_conversion import template_generation_error
from kubeloop.server._defaults import drop_go_nulls
from kubeloop.server._delete import delete_listed, delete_object
from kubeloop.server._field_validation import (
    decode_checked,
    duplicate_texts,
    strict_decoding_error,
)
from kubeloop.server._http import (
    JSON,
    WARNINGS_SCOPE_KEY,
    Message,
    Request,
    Send,
    decode_json,
    decode_yaml,
    encode_body,
    response_start,
    send_bytes,
    send_json,
    send_parts,
    warning_headers,
)
from kubeloop.server._list import (
    ListResult,
    collection_body,
    list_body,
    list_body_parts,
    list_objects,
    served_value,
)
from kubeloop.server._managed import record_manager_hook
from kubeloop.server._options import (
    parse_delete_options,
    parse_list_options,
    parse_write_options,
)
from kubeloop.server._owner_references import dedup_owner_references
from kubeloop.server._patching import PATCH_TYPES, patch_transform
from kubeloop.server._requestinfo import RequestInfo, truthy
from kubeloop.server._rest import Current, WriteRequest, create_object, get_object, update_object
from kubeloop.server._scale import scale_get, scale_update
from kubeloop.server._secret_conversion import fold_string_data
from kubeloop.server._state import ServerState
from kubeloop.server._strategy import decode_quantities
from kubeloop.server._tables import TABLE_CONTENT_TYPE, TableEvents, table_for
from kubeloop.server._watch import serve_watch

__all__ = ["BodyDecoder", "ResourceHandlers"]

BodyDecoder = Callable[[bytes, ResourceInfo], Any]
_NOT_FOUND = "the server could not find the requested resource"
# The subresources served by :mod:`._kubelet_connect` (pods' exec, attach, portforward, proxy; services'
# and nodes' proxy). It and :mod:`._pod_logs` are imported on their first request: start-up needs neither.
_CONNECT_NAMES = ("exec", "attach", "portforward", "proxy")


# The kinds whose conversion to the internal version a create or update body goes through here.
_CONVERTED_KINDS = frozenset({"DaemonSet", "Secret"})


def _not_found() -> NotFound:
    return NotFound(_NOT_FOUND, details={})


def _method_not_allowed() -> MethodNotAllowed:
    """What go-restful's 405 becomes (apiserver ``server/handler.go`` serviceErrorHandler, apimachinery
    ``NewGenericServerResponse``): a route exists for the path, not for the method."""
    return MethodNotAllowed("the server does not allow this method on the requested resource",
                            details={"causes": [{"reason": "UnexpectedServerResponse", "message": "405: Method Not Allowed"}]})


class ResourceHandlers:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._kinds = state.kinds
        self.decoders: dict[str, BodyDecoder] = {}
        # A custom kind's additionalPrinterColumns (the CRD controller provides them).
        self.printer_columns: Callable[[ResourceInfo], list[dict[str, Any]] | None] | None = None
        if state.field_manager is None:
            state.field_manager = record_manager_hook(state)

    # -- body decoding ------------------------------------------------------------------------------
    def _accepted_types(self) -> str:
        return ", ".join(["application/json", "application/yaml", *self.decoders])

    # Plain functions of the body, which the verb's handler reads itself: a coroutine per step would
    # cost a frame and an await each, on every create and update.
    def _decode(self, body: bytes, media: str, info: ResourceInfo) -> Any:
        """``body`` (of media type ``media``) decoded; 400 for a malformed or empty JSON body, 415 for
        a media type without a decoder."""
        if media == "application/json":
            if not body or body.isspace():  # what ``not body.strip()`` says, without copying the body
                raise BadRequest("Object 'Kind' is missing in ''")
            return decode_json(body)
        if media in ("application/yaml", "application/x-yaml"):
            return decode_yaml(body)
        decoder = self.decoders.get(media)
        if decoder is not None:
            return decoder(body, info)
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: {self._accepted_types()}"
        )

    def _decode_checked(self, body: bytes, media: str, info: ResourceInfo, req: WriteRequest,
                        create: bool = False) -> tuple[Any, bool, bool, bool, dict[str, Any] | None]:
        """A create or update body, with fieldValidation applied to its unknown and duplicate fields;
        whether no unknown field, nor value scalar at its zero, was dropped from it (the object is then what
        its body's JSON decodes to, for a JSON body); and whether the typed decode leaves nothing for
        :func:`~kubeloop.server._rest.check_body`'s metadata check to find (``typed``); whether it may
        hold an empty list or map (``empties``), and for a ``create``, what its managedFields entry owns
        when the decode walk could tell (``owned``; both for :func:`~kubeloop.server._rest.create_object`)."""
        directive = req.options.field_validation or "Warn"  # directive_of, inlined (a call less per write)
        if media == "application/json":  # what clients send: ``_decode``'s first case, without the call
            if not body or body.isspace():
                raise BadRequest("Object 'Kind' is missing in ''")
            try:  # decode_json, inlined
                obj = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                raise BadRequest(f"error decoding JSON body: {exc}") from None
            texts = duplicate_texts(body, directive, obj)
        else:
            obj = self._decode(body, media, info)
            texts = []
        if info.kind in QUANTITY_KINDS:  # a bad quantity fails the typed decode, before fieldValidation's errors
            decode_quantities(info, obj)
        # A value its Go field cannot hold fails the typed decode too; the same walk finds the unknown fields.
        # The walk also tells whether the body holds an empty list or map (api/_go_empty.py settles them), and
        # whether it holds a null: most bodies have none to drop.
        unknown, typed, empties, zeros, nulls, owned = decode_checked(self.state, info, obj, create=create)
        if info.kind in _CONVERTED_KINDS and type(obj) is dict:
            # The conversion to the internal version follows the typed decode, before fieldValidation's errors.
            if info.kind == "DaemonSet":
                if err := template_generation_error(info, obj):
                    raise BadRequest(f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: {err}')
            elif not info.group and fold_string_data(obj):
                # The internal Secret holds stringData in data (_secret_conversion.py): the object is no longer
                # its body's JSON, and the field manager owns what it holds (f:data), as create.go's does.
                zeros, owned = True, None
        if nulls and type(obj) is dict:  # the typed decode leaves a null field at its Go zero value
            drop_go_nulls(info, obj)
        texts.extend(unknown)
        if texts and directive == "Strict":
            raise strict_decoding_error(info, obj, texts)
        if directive == "Warn":
            req.warnings.extend(texts)
        return obj, not unknown and not zeros, typed, empties, owned

    def _printer_columns(self, info: ResourceInfo) -> list[dict[str, Any]] | None:
        source = self.printer_columns
        return source(info) if info.custom and source is not None else None

    # -- dispatch --------------------------------------------------------------------------------------
    def handle(self, request: Request, ri: RequestInfo, send: Send) -> Awaitable[None]:
        """Answer a resource request: a URL or method that cannot be served raises here, before the
        returned awaitable (the verb's handler) runs; one coroutine frame less per request."""
        info = self._kinds.get(ri.api_group, ri.api_version, ri.resource)
        parts = ri.parts
        depth = len(parts)  # resource [name [subresource]]
        if info is None or not depth or (depth > 3 and parts[2] != "proxy"):  # a proxy's path goes on
            raise _not_found()
        namespace = ri.namespace
        namespaced_path = namespace != "" and ri.resource != "namespaces"
        method = request.method
        if not info.namespaced:
            if namespaced_path:
                raise _not_found()
            namespace = ""
        elif not namespaced_path:  # a namespaced kind's cluster-wide URL only lists and watches
            if depth > 1:
                raise _not_found()
            if method != "GET":
                raise _method_not_allowed()
        if depth == 1:
            return self._collection(request, info, namespace, method, send)
        if depth == 2:
            return self._item(request, info, namespace, parts[1], method, send)
        sub = parts[2]
        if sub not in info.subresources or sub in ("eviction", "binding", "token"):
            raise _not_found()
        if sub == "log" and info.plural == "pods":
            from kubeloop.server._pod_logs import serve_pod_log

            return serve_pod_log(self.state, info, request, namespace, parts[1], send)
        if sub in _CONNECT_NAMES:
            from kubeloop.server._kubelet_connect import serve_connect

            return serve_connect(self.state, info, request, namespace, parts[1], sub, send)
        if depth > 3:
            raise _not_found()
        return self._subresource(request, info, namespace, parts[1], sub, method, send)

    def _require_verb(self, info: ResourceInfo, verb: str) -> None:
        # Upstream registers no route for a verb the storage does not implement, so the answer is
        # go-restful's generic 405, not NewMethodNotSupported.
        if verb not in info.verbs:
            raise _method_not_allowed()

    def _write_request(self, request: Request, info: ResourceInfo, namespace: str, name: str, sub: str,
                       kind: str, patch_type: str | None = None) -> WriteRequest:
        options = parse_write_options(request.query, kind=kind, patch_type=patch_type)
        # The user as Request.user reads it, without the property's call.
        req = WriteRequest(info, namespace, name, sub, options, request.scope.get(USER_SCOPE_KEY),
                           request.headers.get("user-agent", ""))
        # The warnings go out with the answer, an error included (the app's error handler reads them here).
        request.scope[WARNINGS_SCOPE_KEY] = req.warnings
        return req

    async def _collection(self, request: Request, info: ResourceInfo, namespace: str, method: str, send: Send) -> None:
        if method == "GET":
            watch = truthy(request.query.get("watch"))
            self._require_verb(info, "watch" if watch else "list")
            options = parse_list_options(request.query, info, watch=watch)
            if watch:
                await self._watch(request, info, namespace, options, send)
                return
            result = await list_objects(self.state, info, namespace, options)
            await self._answer_list(request, info, result, send)
        elif method == "POST":
            if "create" not in info.verbs:
                raise _method_not_allowed()
            # Request.negotiate's answer read directly (its call only to raise the 406).
            content_type = request.headers.negotiation.media or request.negotiate()
            req = self._write_request(request, info, namespace, "", "", "CreateOptions")
            obj, _, typed, empties, owned = self._decode_checked(await request.body(), request.content_type, info,
                                                                 req, True)
            status, body = await create_object(self.state, req, obj, typed=typed, empties=empties, owned=owned)
            start, message = self._object_messages(request, info, status, body, content_type, req.warnings)
            await send(start)
            await send(message)
        elif method == "DELETE":
            self._require_verb(info, "deletecollection")
            await self._delete_collection(request, info, namespace, send)
        else:
            raise _method_not_allowed()

    async def _item(self, request: Request, info: ResourceInfo, namespace: str, name: str, method: str,
                    send: Send) -> None:
        if method == "GET":
            query = request.query
            if query and truthy(query.get("watch")):
                self._require_verb(info, "watch")
                query = dict(request.query)
                selector = (query.get("fieldSelector") or [""])[0]
                options = parse_list_options(query, info, watch=True)
                pinned = options.field_selector.requires_exact_match("metadata.name")
                if selector and pinned is not None and pinned != name:
                    raise BadRequest("fieldSelector metadata.name doesn't match requested name")
                name_term = f"metadata.name={name}"
                query["fieldSelector"] = [f"{selector},{name_term}" if selector else name_term]
                options = parse_list_options(query, info, watch=True)
                await self._watch(request, info, namespace, options, send)
                return
            if "get" not in info.verbs:
                raise _method_not_allowed()
            content_type = request.negotiate()
            kv = await get_object(self.state, info, namespace, name)
            start, message = self._object_messages(request, info, 200, kv.value, content_type)
            await send(start)
            await send(message)
        elif method == "PUT":
            self._require_verb(info, "update")
            await self._put(request, info, namespace, name, "", send)
        elif method == "PATCH":
            self._require_verb(info, "patch")
            await self._patch(request, info, namespace, name, "", send)
        elif method == "DELETE":
            self._require_verb(info, "delete")
            content_type = request.negotiate()
            raw = await request.body()
            body = decode_json(raw) if raw.strip() else None
            delete_options = parse_delete_options(request.query, body)
            self.state.strategy(info).before_delete(name)
            # The warnings go out with the answer, an error included (admission webhooks may add some).
            warnings: list[str] = []
            request.scope[WARNINGS_SCOPE_KEY] = warnings
            result = await delete_object(self.state, info, namespace, name, delete_options, user=request.user,
                                         warnings=warnings)
            if result.is_status:
                await send_bytes(send, result.status, result.body,
                                 headers=warning_headers(warnings) if warnings else None)
            else:
                await self._answer_object(request, info, result.status, result.body, send, content_type,
                                          warnings=warnings)
        else:
            raise _method_not_allowed()

    async def _subresource(self, request: Request, info: ResourceInfo, namespace: str, name: str, sub: str,
                           method: str, send: Send) -> None:
        if sub == "scale":
            content_type = request.negotiate()
            if method == "GET":
                scale = await scale_get(self.state, info, namespace, name)
                await send_json(send, 200, scale, content_type=content_type)
                return
            if method not in ("PUT", "PATCH"):
                raise _method_not_allowed()
            patch_type = request.content_type if method == "PATCH" else None
            kind = "PatchOptions" if method == "PATCH" else "UpdateOptions"
            req = self._write_request(request, info, namespace, name, "scale", kind, patch_type)
            if method == "PATCH" and patch_type not in PATCH_TYPES:
                raise UnsupportedMediaType(_patch_types_message(info))
            if method == "PATCH":
                scale = await scale_update(self.state, req, None, patch_type, await request.body())
            else:
                scale = await scale_update(self.state, req, self._decode(await request.body(), request.content_type, info), None)
            # The parent's update recorded its strategy's warnings (ScaleREST updates through it).
            await send_json(send, 200, scale, content_type=content_type,
                            headers=warning_headers(req.warnings) if req.warnings else None)
            return
        allowed = ("PUT",) if sub == "finalize" else ("GET", "PUT", "PATCH")
        if method not in allowed:
            raise _method_not_allowed()
        if method == "GET":
            content_type = request.negotiate()
            kv = await get_object(self.state, info, namespace, name)
            await self._answer_object(request, info, 200, kv.value, send, content_type)
        elif method == "PUT":
            await self._put(request, info, namespace, name, sub, send)
        else:
            await self._patch(request, info, namespace, name, sub, send)

    # -- writes ----------------------------------------------------------------------------------------
    async def _put(self, request: Request, info: ResourceInfo, namespace: str, name: str, sub: str,
                   send: Send) -> None:
        content_type = request.negotiate()
        req = self._write_request(request, info, namespace, name, sub, "UpdateOptions")
        sent = await request.body()
        media = request.content_type
        body, intact, typed, empties, _ = self._decode_checked(sent, media, info, req)
        if not isinstance(body, dict):
            raise BadRequest("the body of the request must be a JSON object")
        has_rv = bool(isinstance(body.get("metadata"), dict) and body["metadata"].get("resourceVersion"))
        # Every attempt (a lost race is retried) starts from the body as decoded (unknown fields dropped): its
        # JSON decoded afresh, as the write path changes the object in place. A JSON body with nothing dropped
        # is its own bytes, and its first attempt takes the decoded body itself (decoding its encoding again
        # gives the same values); any other body goes through JSON first (a YAML ``.inf`` becomes null).
        if media == "application/json" and intact:
            pending: list[dict[str, Any]] = [body]
        else:
            sent = orjson.dumps(body)
            pending = []

        async def transform(current: Current) -> dict[str, Any]:  # the body replaces the stored object
            if pending:
                fresh = pending.pop()
            else:
                fresh = orjson.loads(sent)
                assert isinstance(fresh, dict)
                if info.kind in QUANTITY_KINDS:  # decoded as the first attempt was (the body's quantities are good)
                    decode_quantities(info, fresh)
                # The typed decode left the body's nulls at their Go zero values (``_decode_checked``): a
                # retry drops them again, or it would store what no unraced PUT does (handlers/update.go
                # decodes the body once; each GuaranteedUpdate attempt takes a deep copy of that object,
                # registry/rest/update.go defaultUpdatedObjectInfo.UpdatedObject).
                # Dropping is idempotent, so a re-encoded body (already dropped) may go through it again.
                if b"null" in sent:
                    drop_go_nulls(info, fresh)
            meta = fresh.get("metadata")
            if isinstance(meta, dict) and "ownerReferences" in meta:  # handlers/update.go, before admission
                dedup_owner_references(meta, req.warnings, after_admission=False)
            return fresh

        status, out, _ = await update_object(self.state, req, transform, conditional=has_rv,
                                             allow_create=info.allow_create_on_update, typed=typed, empties=empties)
        start, message = self._object_messages(request, info, status, out, content_type, req.warnings)
        await send(start)
        await send(message)

    async def _patch(self, request: Request, info: ResourceInfo, namespace: str, name: str, sub: str,
                     send: Send) -> None:
        content_type = request.negotiate()
        patch_type = request.content_type
        if patch_type not in PATCH_TYPES or (info.custom and patch_type == "application/strategic-merge-patch+json"):
            raise UnsupportedMediaType(_patch_types_message(info))
        req = self._write_request(request, info, namespace, name, sub, "PatchOptions", patch_type)
        raw = await request.body()
        status, out = await patch_transform(self.state, req, patch_type, raw)
        await self._answer_object(request, info, status, out, send, content_type, warnings=req.warnings)

    async def _delete_collection(self, request: Request, info: ResourceInfo, namespace: str, send: Send) -> None:
        content_type = request.negotiate()
        raw = await request.body()
        body = decode_json(raw) if raw.strip() else None
        delete_options = parse_delete_options(request.query, body)
        list_options = parse_list_options(request.query, info, watch=False)
        listed = await list_objects(self.state, info, namespace, list_options)
        # The warnings of every delete's admission go out with the answer, an error included.
        warnings: list[str] = []
        request.scope[WARNINGS_SCOPE_KEY] = warnings
        deleted = await delete_listed(self.state, info, listed.items, delete_options,
                                      user=request.user, warnings=warnings)
        # The deleted objects as a list, items as a list's are (store.go DeleteCollection).
        body_bytes = collection_body(info, {"resourceVersion": str(self.state.store.revision)}, deleted)
        if content_type != "application/json":
            body_bytes = encode_body(orjson.loads(body_bytes), content_type)
        await send_body(send, request, 200, body_bytes, content_type=content_type,
                        headers=warning_headers(warnings) if warnings else None)

    # -- answers -----------------------------------------------------------------------------------------
    async def _watch(self, request: Request, info: ResourceInfo, namespace: str, options: Any, send: Send) -> None:
        request.negotiate(yaml_ok=False)
        transform = None
        if request.wants_table():
            transform = TableEvents(info, include_object=request.param("includeObject"),
                                    printer_columns=self._printer_columns(info))
        metrics = self.state.request_metrics
        open_watch = metrics.watch_started(request.scope) if metrics is not None else None
        try:
            await serve_watch(self.state, info, namespace, options, request._receive, send, transform=transform)
        finally:
            if open_watch is not None:
                metrics.watch_ended(open_watch)

    async def _answer_list(self, request: Request, info: ResourceInfo, result: ListResult, send: Send) -> None:
        content_type = request.negotiate()
        if request.wants_table():
            objects = [orjson.loads(served_value(info, kv.value)) for kv in result.items]
            table = table_for(info, objects, now=self.state.clock.now(), include_object=request.param("includeObject"),
                              printer_columns=self._printer_columns(info), resource_version=str(result.revision),
                              continue_token=result.continue_token, remaining=result.remaining)
            await send_body(send, request, 200, encode_body(table, TABLE_CONTENT_TYPE), content_type=TABLE_CONTENT_TYPE)
            return
        if content_type != "application/json":
            body = encode_body(orjson.loads(list_body(info, result)), content_type)
            await send_body(send, request, 200, body, content_type=content_type)
            return
        length, parts = list_body_parts(info, result)
        if length > GZIP_THRESHOLD_BYTES and wants_gzip(request):
            await send_parts_compressed(send, 200, parts)
        else:
            await send_parts(send, 200, length, parts)

    def _object_messages(self, request: Request, info: ResourceInfo, status: int, body: bytes, content_type: str,
                         warnings: list[str] | None = None) -> tuple[Message, Message]:
        """The two ASGI messages that answer with one object: its stored bytes as they are (the common
        answer), a Table, or another media type. The verb's handler sends them from its own frame: a
        coroutine for the answer would cost a frame and an await on every request."""
        if info.custom:  # a built-in kind is stored at the version it is served at
            body = served_value(info, body)
        headers = warning_headers(warnings) if warnings else None
        if request.headers.negotiation.wants_table:  # Request.wants_table, without the call
            obj = orjson.loads(body)
            table = table_for(info, [obj], now=self.state.clock.now(), include_object=request.param("includeObject"),
                              printer_columns=self._printer_columns(info),
                              resource_version=str((obj.get("metadata") or {}).get("resourceVersion") or ""))
            body, content_type = encode_body(table, TABLE_CONTENT_TYPE), TABLE_CONTENT_TYPE
        elif content_type != JSON:
            body = encode_body(orjson.loads(body), content_type)
        if len(body) > GZIP_THRESHOLD_BYTES:  # maybe compressed (small answers skip the call)
            return answer_messages(request, status, body, content_type=content_type, headers=headers)
        return (response_start(status, len(body), content_type=content_type, headers=headers),
                {"type": "http.response.body", "body": body})

    async def _answer_object(self, request: Request, info: ResourceInfo, status: int, body: bytes, send: Send,
                             content_type: str, *, warnings: list[str] | None = None) -> None:
        """Send one object (:meth:`_object_messages`), for the verbs that are not hot paths."""
        start, message = self._object_messages(request, info, status, body, content_type, warnings)
        await send(start)
        await send(message)

def _patch_types_message(info: ResourceInfo) -> str:
    types = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
    if not info.custom:
        types.insert(2, "application/strategic-merge-patch+json")
    return f"the body of the request was in an unknown format - accepted media types include: {', '.join(types)}"

