"""PATCH: apply a JSON, merge, strategic-merge or apply (server-side apply) patch to the live object.

The patch is re-applied to the freshly read object on every optimistic-concurrency retry (as
apiserver ``handlers/patch.go`` does inside GuaranteedUpdate), so a patch never loses a concurrent
write; a ``metadata.resourceVersion`` the patch sets is a precondition (409 when stale). Strategic
merge needs the built-in schema (custom kinds get 415 before reaching here). Apply creates a
missing object (201) and records ownership through :func:`kubeloop.api._apply.server_side_apply`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from kubeloop.api import (
    UNKNOWN_REASON,
    ApiError,
    BadRequest,
    FieldError,
    ResourceInfo,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    format_time,
    invalid,
)
from kubeloop.api._apply import server_side_apply
from kubeloop.api._fieldpath import duplicate_entries
from kubeloop.api._quantity import QuantityError
from kubeloop.api._quantity_fields import QuantityFields, quantity_fields
from kubeloop.api._schemas import definitions, property_schema
from kubeloop.api._strategic import go_format
from kubeloop.server._daemonset_conversion import template_generation_error
from kubeloop.server._defaults import drop_go_nulls
from kubeloop.server._field_validation import (
    decode_builtin,
    directive_of,
    drop_go_zeros,
    duplicate_texts,
    go_conversion_error,
    strict_patch_error,
    undeclared_apply_fields,
    unknown_field_texts,
)
from kubeloop.server._http import decode_json, decode_yaml
from kubeloop.server._rest import Current, WriteRequest, update_object
from kubeloop.server._secret_conversion import fold_string_data
from kubeloop.server._state import ServerState

__all__ = ["APPLY", "PATCH_TYPES", "patch_transform"]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC, APPLY, "application/apply-patch+cbor")


def _decode_apply(raw: bytes) -> dict[str, Any]:
    """An apply body: YAML, which kubectl fills with JSON; JSON takes the fast parser (same result)."""
    data: Any = None
    if raw.lstrip()[:1] == b"{":
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
    if data is None:
        data = decode_yaml(raw)
    if not isinstance(data, dict):
        raise BadRequest("apply patch must be a JSON or YAML object")
    return data


async def patch_transform(state: ServerState, req: WriteRequest, patch_type: str, raw: bytes) -> tuple[int, bytes]:
    info = req.info
    if patch_type == "application/apply-patch+cbor":
        raise BadRequest("CBOR apply patches are not supported")
    if not raw.strip():
        raise BadRequest("the body of the request was empty")
    fields = quantity_fields(info.group, info.kind) if not info.custom else None
    if patch_type == APPLY:
        applied = _decode_apply(raw)
        undeclared_apply_fields(state, info, applied)
        _refuse_duplicate_entries(state, info, applied)
        req = replace(req, operation="Apply")
        manager = req.options.field_manager
        typed_nulls = not info.custom and _holds_null(applied)

        async def transform(current: Current) -> dict[str, Any]:
            result = server_side_apply(
                current() or None, applied, manager=manager, force=bool(req.options.force),
                schema=state.schema(info), now=format_time(state.clock.now()), api_version=info.api_version,
                subresource=req.subresource or None, status_subresource=info.status_subresource,
                typed=typed_nulls,
            )
            # smd keeps an applied null map entry; the conversion into the Go struct makes it the element's
            # zero value (structuredmerge.go Apply: TypedToObject, then toVersioned/toUnversioned).
            if typed_nulls and isinstance(result, dict):
                drop_go_nulls(info, result)
            # The merged object is converted into the kind's Go struct (structuredmerge.go Apply, then the
            # update): a value scalar's zero is gone from what is stored, though the applier owns the field
            # (its applied configuration's field set holds it).
            if not info.custom and isinstance(result, dict):
                drop_go_zeros(info, result)
            if fields is not None and isinstance(result, dict):
                try:
                    fields(result, True)
                except QuantityError as err:
                    raise _apply_conversion_error(info.group, info.version, info.kind, applied, err) from None
            if not info.custom and isinstance(result, dict) and (text := _bytes_error(info, result)):
                raise _apply_conversion_error(info.group, info.version, info.kind, applied, text)
            if isinstance(result, dict) and (text := template_generation_error(info, result)):
                raise _apply_conversion_error(info.group, info.version, info.kind, applied, text, unversioned=True)
            if _is_secret(info) and isinstance(result, dict):  # the conversion to the internal Secret
                fold_string_data(result)
            return result

        status, body, _ = await update_object(state, req, transform, conditional=False, allow_create=True)
        return status, body

    patch = decode_json(raw)
    directive = directive_of(req.options.field_validation)
    # handlers/patch.go: a merge or strategic patch's own duplicate keys count as strict errors too.
    duplicates = duplicate_texts(raw, directive, patch) if patch_type != JSON_PATCH else []

    async def patched(current: Current) -> dict[str, Any]:
        # ``current()`` decodes the stored object afresh for this attempt, so the patch is applied to
        # it in place (``owned``): the deep copy the patch functions make otherwise cost more than the
        # decode itself. The patch document is only read, and serves every attempt.
        live = current()
        if patch_type == JSON_PATCH:
            result = apply_json_patch(live, patch, owned=True)
        elif patch_type == MERGE_PATCH:
            result = apply_merge_patch(live, patch, owned=True)
        else:
            result = apply_strategic_merge_patch(live, patch, state.schema(info), owned=True)
        if not isinstance(result, dict):
            raise BadRequest("the patch result is not a JSON object")
        if fields is not None:
            _decode_quantities(fields, patch_type, patch, result)
        # The patched object decoded into its Go type (handlers/patch.go): a JSON or merge patch's result
        # is decoded from JSON, in the walk that finds its unknown fields; a strategic one's is converted.
        decoded = decode_builtin(info, result) if patch_type != STRATEGIC and not info.custom else None
        if decoded is None:
            if not info.custom:
                _convert_types(info, patch, result)
            before = orjson.dumps(result) if directive == "Strict" else b""
            texts = duplicates + unknown_field_texts(state, info, result)
            if texts and directive == "Strict":
                raise strict_patch_error(orjson.loads(before), texts)
            if not info.custom:  # the converted struct holds a value scalar's zero as absent (runtime/converter.go)
                drop_go_zeros(info, result)
            if text := template_generation_error(info, result):  # smpPatcher's ConvertToVersion: no API status
                raise ApiError(text, reason=UNKNOWN_REASON, code=500)
        else:
            error = decoded.error or template_generation_error(info, result)  # the decode converts, last
            if error is not None:
                raise invalid("", "", [FieldError.invalid("patch", orjson.dumps(result).decode(), error)])
            texts = duplicates + [f'unknown field "{p}"' for p in decoded.unknown]
            if texts and directive == "Strict":
                raise strict_patch_error(result, texts)  # the patched object, its unknown fields still in
            decoded.drop_unknown()
            decoded.drop_zeros()  # the decoded struct holds a value scalar's zero as absent
            if patch_type == JSON_PATCH:  # the one patch type that can put a null in the object
                drop_go_nulls(info, result)
        if directive == "Warn":
            req.warnings[:] = texts  # a retried patch reports its last attempt only
        if _is_secret(info):  # decoded (or converted) into the internal Secret: stringData folded into data
            fold_string_data(result)
        return result

    status, body, _ = await update_object(state, req, patched, conditional=False)
    return status, body


def _refuse_duplicate_entries(state: ServerState, info: ResourceInfo, applied: dict[str, Any]) -> None:
    """Server-side apply types the applied configuration without ``typed.AllowDuplicates``: an item of
    a ``listType=map`` or ``set`` list (containers by name, ports by containerPort and protocol, env,
    volumes, conditions, ownerReferences by uid, a CRD's ``x-kubernetes-list-map-keys`` ...) whose key
    an earlier item has fails, one line per repeat, as a 500: the error is no API status
    (managedfields ``structuredmerge.go`` Apply: ``failed to create typed patch object (<ns>/<name>;
    <gvk>): <path>: duplicate entries for key [name="a"]``). ``metadata`` is typed as ObjectMeta for
    every kind, custom ones included. A live object's duplicates are allowed (``_apply``)."""
    schema = state.schema(info)
    texts: list[str] = []
    for key in sorted(applied):
        value = applied[key]
        if type(value) is dict or type(value) is list:
            child = definitions().get(_OBJECT_META) if key == "metadata" else property_schema(schema, key)
            texts.extend(duplicate_entries(value, child, ("f:" + key,)))
    if not texts:
        return
    meta = applied.get("metadata") if isinstance(applied.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    gvk = f"{info.api_version if info.group else '/' + info.version}, Kind={info.kind}"
    detail = texts[0] if len(texts) == 1 else "errors:\n" + "\n".join(f"  {t}" for t in texts)
    # structuredmerge.go objectGVKNN: "<namespace>/<name>; <group/version>, Kind=<kind>".
    raise ApiError(f"failed to create typed patch object ({namespace}/{name}; {gvk}): {detail}",
                   reason=UNKNOWN_REASON, code=500)


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _holds_null(value: Any) -> bool:
    """Whether a ``null`` stands anywhere in ``value`` (an applied configuration: most have none)."""
    if type(value) is dict:
        return any(v is None or _holds_null(v) for v in value.values())
    if type(value) is list:
        return any(v is None or _holds_null(v) for v in value)
    return False


def _is_secret(info: ResourceInfo) -> bool:
    return info.kind == "Secret" and not info.group and not info.custom


def _bytes_error(info: ResourceInfo, result: dict[str, Any]) -> str | None:
    """A ``[]byte`` field of an applied result that is no base64: the unstructured-to-typed conversion of the
    merged object fails (runtime/converter.go sliceFromUnstructured: ``error decoding from json: illegal
    base64 data at input byte N``). The other conversion errors are the typed patch's to find, earlier."""
    err = go_conversion_error(info, result)
    return err if err is not None and err.startswith("error decoding from json: ") else None


def _convert_types(info: ResourceInfo, patch: Any, patched: dict[str, Any]) -> None:
    """A strategic merge patch's result its Go type cannot hold: 422 on field ``patch``, shown as
    :func:`_decode_quantities` shows it. The patched map is converted, not decoded from JSON
    (apimachinery ``runtime/converter.go``: ``unrecognized type: string`` ...)."""
    err = go_conversion_error(info, patched)
    if err is not None:
        raise invalid("", "", [FieldError.invalid("patch", go_format(patch), err)])


def _decode_quantities(fields: QuantityFields, patch_type: str, patch: Any, patched: dict[str, Any]) -> None:
    """The typed decode of a patched built-in object (handlers/patch.go): its quantities canonical, or 422.

    A JSON or merge patch decodes the patched JSON, and a bad value is ``patch: Invalid value:
    <that JSON>``; a strategic merge patch converts the patched map, and the value shown is the
    patch itself as Go's ``%+v`` prints a map.
    """
    try:
        fields(patched, True)
    except QuantityError as err:
        shown = go_format(patch) if patch_type == STRATEGIC else orjson.dumps(patched).decode()
        raise invalid("", "", [FieldError.invalid("patch", shown, str(err))]) from None


def _apply_conversion_error(group: str, version: str, kind: str, applied: dict[str, Any], err: QuantityError | str,
                            *, unversioned: bool = False) -> ApiError:  # fmt: skip
    """Server-side apply converts the merged object to its Go type last (structuredmerge.go Apply), then
    to the internal version (``unversioned``); either error is no API status, so the handler answers 500
    with reason Unknown."""
    meta = applied.get("metadata") if isinstance(applied.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    gvk = f"{group}/{version}, Kind={kind}"
    if unversioned:
        return ApiError(f"failed to convert to unversioned ({namespace}/{name}; {gvk}): {err}",
                        reason=UNKNOWN_REASON, code=500)  # fmt: skip
    return ApiError(f"failed to convert new object ({namespace}/{name}; {gvk}) to proper version: {err}",
                    reason=UNKNOWN_REASON, code=500)


