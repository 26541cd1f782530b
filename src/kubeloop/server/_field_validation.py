"""``fieldValidation``: what happens to unknown and duplicate fields of a request body.

Upstream decodes built-in objects into Go structs (unknown fields are always dropped) and prunes
custom resources against their structural schema; the directive only decides what the client is
told (apimachinery ``meta/v1`` ``CreateOptions.FieldValidation``; apiserver ``handlers/create.go``,
``update.go``, ``patch.go``):

- ``Ignore``: nothing; ``Warn`` (the default since 1.23 when the parameter is absent): one
  ``Warning: 299 - "unknown field \\"spec.foo\\""`` header per field, the request succeeds;
- ``Strict``: create and update are 400 BadRequest ``<Kind> in version "<v>" cannot be handled as
  a <Kind>: strict decoding error: unknown field "spec.foo"`` (``transformDecodeError`` in
  ``handlers/rest.go``); JSON, merge and strategic merge patches are 422 Invalid on field
  ``patch`` (``Invalid value: "<patched object>": strict decoding error: ...``, ``patch.go``).

Duplicate keys are found with a second, slower parse (:func:`kubeloop.api._unknown_fields.duplicate_fields`),
only for JSON bodies, only when the directive is not ``Ignore``, and only when the body is not
already the compact encoding of what it decoded to (then it cannot repeat a key).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

from kubeloop.api import BadRequest, FieldError, Invalid, ResourceInfo, builtin_schema, invalid
from kubeloop.api._apply import flat_create_plan
from kubeloop.api._flat_entry import FlatPlan
from kubeloop.api._go_decode import Decoded, GoStruct, conversion_error, decode, go_struct
from kubeloop.api._go_encode import go_encoding
from kubeloop.api._schema_validate import prune
from kubeloop.api._schemas import definition_name_for
from kubeloop.api._unknown_fields import (
    PrunePlan,
    duplicate_fields,
    prune_builtin_unknown_fields,
    prune_plan,
    prune_planned,
    undeclared_fields,
)
from kubeloop.server._defaults import create_keeps_decoded_body
from kubeloop.server._http import warning_headers
from kubeloop.server._state import ServerState

__all__ = [
    "decode_builtin",
    "decode_checked",
    "directive_of",
    "drop_go_zeros",
    "duplicate_texts",
    "go_conversion_error",
    "strict_decoding_error",
    "strict_patch_error",
    "undeclared_apply_fields",
    "unknown_field_texts",
    "warning_headers",
]

_UNSET: Any = object()


def directive_of(field_validation: str) -> str:
    """The effective directive: an absent ``fieldValidation`` means ``Warn``."""
    return field_validation or "Warn"


def _object_meta_schema() -> Mapping[str, Any] | None:
    from kubeloop.api._schemas import definitions

    return definitions().get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")


def unknown_field_texts(state: ServerState, info: ResourceInfo, obj: Any) -> list[str]:
    """Drop the fields ``info``'s schema does not declare from ``obj`` (in place); their texts."""
    if not isinstance(obj, dict):
        return []
    if info.custom:
        schema = state.schema(info)
        paths: list[str] = []
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            paths.extend("metadata." + p for p in prune_builtin_unknown_fields(meta, _object_meta_schema()))
        if schema is not None:
            paths.extend(prune(obj, schema))
    else:
        hit = _builtin_plans.get(id(info))
        if hit is None or hit[0] is not info:
            hit = _builtin_plan(info)
        if hit[1] is None:
            return []
        paths = prune_planned(obj, hit[1])
    return [f'unknown field "{p}"' for p in paths] if paths else paths


# The pruning plan of each built-in kind, by the identity of its ResourceInfo (the kinds table's
# entries, which live as long as the server; the info is kept so that a reused id is never mistaken
# for it): a write then skips the schema and plan lookups.
_builtin_plans: dict[int, tuple[ResourceInfo, PrunePlan | None]] = {}


def _builtin_plan(info: ResourceInfo) -> tuple[ResourceInfo, PrunePlan | None]:
    if len(_builtin_plans) > 1_000:  # ResourceInfos are few; never grow without bound all the same
        _builtin_plans.clear()
    hit = _builtin_plans[id(info)] = (info, prune_plan(builtin_schema(info.group, info.version, info.kind)))
    return hit


def go_conversion_error(info: ResourceInfo, obj: dict[str, Any]) -> str | None:
    """What converting the map ``obj`` into its built-in kind's Go type says of the first value the type
    cannot hold (a strategic merge patch's result, which is converted, not decoded from JSON:
    :func:`kubeloop.api._go_decode.conversion_error`). ``None`` for custom resources and well-typed
    objects. Bodies decoded from JSON go through :func:`decode_checked` or :func:`decode_builtin`."""
    if info.custom:
        return None
    defname = definition_name_for(info.group, info.version, info.kind)
    if defname is None:
        return None
    return conversion_error(obj, defname=defname)


def decode_builtin(info: ResourceInfo, obj: dict[str, Any]) -> Decoded | None:
    """``obj`` decoded into its built-in kind's Go struct (:func:`kubeloop.api._go_decode.decode`: the
    first type error and the unknown fields, in one walk; nothing dropped yet). ``None`` for custom
    resources, which decode into unstructured maps."""
    hit = _go_structs.get(id(info))
    if hit is None or hit[0] is not info:
        hit = _go_struct_of(info)
    return None if hit[1] is None else decode(obj, hit[1])


def drop_go_zeros(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """Drop the value scalars of built-in ``obj`` at their zero, as its Go struct holds them (an object the
    server built itself: a strategic merge patch's or an apply's result). Only that part of the decode walk is
    used: the object's types were settled where it came from."""
    decoded = decode_builtin(info, obj)
    if decoded is not None:
        decoded.drop_zeros()


def decode_checked(state: ServerState, info: ResourceInfo, obj: Any, *, create: bool = False,
                   ) -> tuple[list[str], bool, bool, bool, bool, dict[str, Any] | None]:
    """The typed decode of a create or update body, and its unknown fields dropped: their texts,
    whether its metadata needs no type check after this (:attr:`Decoded.exact`), whether it may hold
    an empty list or map (:attr:`Decoded.empties`; always for a custom resource), whether a value
    scalar at its zero was dropped too (the decoded struct cannot tell it from an absent field:
    :mod:`kubeloop.api._go_pointers`; never for a custom resource, which keeps what was sent), whether
    it may hold a null the typed decode replaces (:attr:`Decoded.nulls`; always for a custom resource),
    and for a ``create`` of a kind whose create keeps the decoded body (:func:`create_keeps_decoded_body`),
    what its managedFields entry owns when the body is flat (:attr:`Decoded.owned`), else ``None``.

    A JSON value of the wrong type for its Go field is 400 (handlers/rest.go transformDecodeError over
    encoding/json's UnmarshalTypeError), before fieldValidation's unknown-field errors and with nothing
    dropped. Custom resources decode into unstructured maps: their unknown fields are pruned against
    their schema (:func:`unknown_field_texts`), and their types are checked later."""
    hit = _go_structs.get(id(info))  # decode_builtin, inlined: a call less per create and update
    if hit is None or hit[0] is not info:
        hit = _go_struct_of(info)
    if hit[1] is None or type(obj) is not dict:
        return unknown_field_texts(state, info, obj), False, True, False, True, None
    decoded = decode(obj, hit[1], hit[2] if create else None)
    if (err := decoded.error) is not None:
        version = info.version
        if isinstance(obj.get("apiVersion"), str):
            version = obj["apiVersion"].rpartition("/")[2]
        raise BadRequest(f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: {err}')
    paths = decoded.unknown
    if not paths and decoded.zeros is None:  # most bodies
        return paths, decoded.exact, decoded.empties, False, decoded.nulls, decoded.owned
    zeros = decoded.drop_zeros()  # the walk's entry holds none then (decoded.owned is None)
    if not paths:
        return paths, decoded.exact, decoded.empties, zeros, decoded.nulls, None
    decoded.drop_unknown()
    return [f'unknown field "{p}"' for p in paths], decoded.exact, decoded.empties, zeros, decoded.nulls, None


# The Go struct of each built-in kind by the identity of its ResourceInfo (as _builtin_plans), and the
# plan of its creates' managedFields entry for the decode walk (None: the hook builds it).
_go_structs: dict[int, tuple[ResourceInfo, GoStruct | None, FlatPlan | None]] = {}


def _go_struct_of(info: ResourceInfo) -> tuple[ResourceInfo, GoStruct | None, FlatPlan | None]:
    if len(_go_structs) > 1_000:
        _go_structs.clear()
    defname = None if info.custom else definition_name_for(info.group, info.version, info.kind)
    plan = None
    if defname is not None and create_keeps_decoded_body(info):
        plan = flat_create_plan(builtin_schema(info.group, info.version, info.kind), info.status_subresource,
                                go_encoding(defname))
    hit = _go_structs[id(info)] = (info, None if defname is None else go_struct(defname), plan)
    return hit


def undeclared_apply_fields(state: ServerState, info: ResourceInfo, applied: dict[str, Any]) -> None:
    """Server-side apply types the applied configuration: an undeclared field is a 400 whatever the
    directive (apimachinery managedfields ``structuredmerge.go``: ``failed to create typed patch
    object (apps/v1, Kind=Deployment): .spec.foo: field not declared in schema``)."""
    meta = applied.get("metadata")
    paths: list[str] = []
    if isinstance(meta, dict):
        paths.extend(".metadata" + p for p in undeclared_fields(meta, _object_meta_schema()))
    if info.custom:
        schema = state.schema(info)
        if schema is not None:
            body = {k: v for k, v in applied.items() if k != "metadata"}
            paths.extend("." + p for p in prune(copy.deepcopy(body), schema))
    else:
        schema = builtin_schema(info.group, info.version, info.kind)
        body = {k: v for k, v in applied.items() if k != "metadata"}
        paths.extend(undeclared_fields(body, schema))
    if not paths:
        return
    gvk = f"{info.api_version if info.group else '/' + info.version}, Kind={info.kind}"
    detail = f"{paths[0]}: field not declared in schema" if len(paths) == 1 else "errors:\n" + "\n".join(
        f"  {p}: field not declared in schema" for p in paths)
    raise BadRequest(f"failed to create typed patch object ({gvk}): {detail}")


def duplicate_texts(body: bytes, directive: str, decoded: Any = _UNSET) -> list[str]:
    """``duplicate field "a.b"`` for every repeated key of a JSON ``body`` (nothing under Ignore).

    ``decoded`` is ``body`` as already parsed, if the caller has it: when re-encoding it gives
    ``body`` back byte for byte (compact JSON from orjson, and from Go's encoder for most objects),
    ``body`` cannot repeat a key (the decoded object has none, and the bytes are the same), so the
    second, slower parse is skipped. So too with one newline after it: client-go's JSON serializer
    writes with ``json.Encoder.Encode``, which ends every body so (apimachinery
    ``runtime/serializer/json/json.go``; ``kubectl replace`` and every client-go JSON write). Any other
    body takes the full parse; the answer is the same.
    """
    if directive == "Ignore":
        return []
    if body[:1] not in (b"{", b"[") and not body.lstrip().startswith((b"{", b"[")):
        return []
    if decoded is not _UNSET:
        try:
            encoded = orjson.dumps(decoded)
        except TypeError:  # not re-encodable (e.g. an integer past 64 bits): parse in full
            pass
        else:
            if encoded == body or (body[-1:] == b"\n" and body[:-1] == encoded):
                return []
    return [f'duplicate field "{p}"' for p in duplicate_fields(body)]


def strict_decoding_error(info: ResourceInfo, obj: Any, texts: list[str]) -> BadRequest:
    """The 400 a create or update answers under Strict (handlers/rest.go transformDecodeError)."""
    version = info.version
    if isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str):
        version = obj["apiVersion"].rpartition("/")[2]
    return BadRequest(
        f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: '
        f"strict decoding error: {', '.join(texts)}"
    )


def strict_patch_error(patched: Any, texts: list[str]) -> Invalid:
    """The 422 a JSON, merge or strategic merge patch answers under Strict (handlers/patch.go)."""
    value = orjson.dumps(patched).decode()
    return invalid("", "", [FieldError.invalid("patch", value, "strict decoding error: " + ", ".join(texts))])
