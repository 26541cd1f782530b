"""The generic write path for one kind: create, update (main, ``/status``, ``/finalize``), get.

Mirrors apiserver ``pkg/registry/generic/registry/store.go`` and ``pkg/registry/rest``: checks run
in upstream's order (decode and defaulting, endpoint match, the field manager's managedFields,
mutating admission, optimistic lock, strategy, validation, validating admission:
:mod:`kubeloop.server._admission`, :mod:`kubeloop.server._managed`), and a request that fails any of
them stores nothing. Updates are compare-and-swap on the stored
object's revision; an update without a client precondition (unconditional PUT, every PATCH) is
retried on a lost race like upstream's ``GuaranteedUpdate``, one with a precondition is a 409.
A write whose result equals the stored object (ignoring managedFields) is a no-op: no new
resourceVersion, no watch event. ``dryRun`` runs every step but the store write.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson

from kubeloop.api import (
    UNKNOWN_REASON,
    ApiError,
    BadRequest,
    FieldError,
    Invalid,
    ResourceInfo,
    already_exists,
    conflict,
    format_time,
    invalid,
    not_found,
)
from kubeloop.api._go_empty import put_back_empty_collections, store_empty_collections, take_empty_collections
from kubeloop.api._go_encode import fill_zero_fields, strip_zero_fields
from kubeloop.api._validation import (
    type_errors,
    validate_finalizers,
    validate_object_meta,
    validate_object_meta_update,
    well_typed,
)
from kubeloop.server._admission import AdmissionAttributes, AdmissionChain, Plan, plans_for, run_plan
from kubeloop.server._decoded_messages import decoded_errors
from kubeloop.server._defaults import apply_defaults, go_write_encodings
from kubeloop.server._managed import keep_valid_managed_fields
from kubeloop.server._options import WriteOptions
from kubeloop.server._owner_references import dedup_owner_references
from kubeloop.server._state import GUARANTEED_UPDATE_RETRIES, ServerState, namespace_key, object_key, renderer
from kubeloop.server._strategy import GenericStrategy
from kubeloop.store import GuardChanged, KeyExists, KeyNotFound, KeyValue, RevisionMismatch

__all__ = ["Current", "WriteRequest", "create_object", "get_object", "request_form", "storage_form", "update_object"]

_GENERATE_ATTEMPTS = 8
_GUARD_ATTEMPTS = 16  # a namespace rewritten this often while one create commits is pathological
# What rest.BeforeCreate clears from a create's metadata (the uid and creationTimestamp are set anew);
# a resourceVersion stays for the storage to judge (_refuse_resource_version).
_CLEARED_ON_CREATE = frozenset(("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"))


def _refuse_resource_version(rv: Any) -> None:
    """etcd3 ``store.Create``: an object that carries a resourceVersion other than 0 is refused with the
    plain ``storage.ErrResourceVersionSetOnCreate``, which the handler answers as a 500 with
    StatusReasonUnknown (""); one that does not parse as a number (``ObjectResourceVersion`` fails) is
    stored, its resourceVersion cleared (``PrepareObjectForStorage``). It runs after admission and
    validation, and a dry run never reaches it (``DryRunnableStorage``)."""
    try:
        nonzero = int(str(rv), 10) != 0 if type(rv) is str and rv else False
    except ValueError:
        nonzero = False
    if nonzero:
        raise ApiError("resourceVersion should not be set on objects to be created", reason=UNKNOWN_REASON, code=500)


@dataclass(slots=True)
class WriteRequest:
    """Who writes what where: the endpoint (kind, namespace, name, subresource) and the options.

    Not frozen: one is built per write request, and a frozen dataclass's construction (one
    ``object.__setattr__`` per field) cost about 2% of a create. Nothing assigns its fields after
    construction; a variant is made with ``dataclasses.replace``."""

    info: ResourceInfo
    namespace: str
    name: str = ""
    subresource: str = ""
    options: WriteOptions = field(default_factory=WriteOptions)
    user: Any = None
    user_agent: str = ""
    # "Update" for create/update/patch, "Apply" for server-side apply (managedFields bookkeeping).
    operation: str = "Update"
    # Texts for ``Warning`` response headers (fieldValidation=Warn), appended while the write runs.
    warnings: list[str] = field(default_factory=list)


async def get_object(state: ServerState, info: ResourceInfo, namespace: str, name: str) -> KeyValue:
    kv = await state.store.get(object_key(info, namespace, name))
    if kv is None:
        raise not_found(info.plural, name, info.group)
    return kv


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
        obj["metadata"] = meta
    assert isinstance(meta, dict)
    return meta


def check_body(info: ResourceInfo, obj: Any, name: str = "", *, typed: bool = False) -> dict[str, Any]:
    """A decoded request body must be an object of this endpoint's kind (400) with well-typed metadata (422).

    ``typed``: the body came through its built-in kind's typed decode with nothing left for the
    metadata check to find (:attr:`kubeloop.api._go_decode.Decoded.exact`), which is then skipped."""
    if not isinstance(obj, dict):
        raise BadRequest(f"the body of the request must be a JSON object, not {_json_type(obj)}")
    # well_typed answers the common case in one pass; type_errors then says what is wrong, if anything.
    if not typed and not well_typed(obj) and (errors := type_errors(obj)):
        display = obj.get("metadata", {}).get("name") if isinstance(obj.get("metadata"), dict) else None
        raise invalid(info.kind, display if isinstance(display, str) else name, errors, info.group)
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    expected_version = info.api_version
    if api_version and api_version != expected_version:
        raise BadRequest(
            f"the API version in the data ({api_version}) does not match the expected API version ({expected_version})"
        )
    if kind and kind != info.kind:
        if info.custom:
            raise BadRequest(f"the kind in the data ({kind}) does not match the expected kind ({info.kind})")
        # The versioned decoder builds the body's kind, then cannot convert it to the endpoint's
        # internal type (runtime codec; handlers/rest.go transformDecodeError).
        version = info.version
        internal = (info.group or "core").split(".")[0]
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {info.kind}: converting '
                         f"({version}.{kind}) to ({internal}.{info.kind}): unknown conversion")
    obj["apiVersion"] = expected_version
    obj["kind"] = info.kind
    meta = obj.get("metadata")
    if meta is None:  # meta_of, inlined: well-typed metadata is a dict or absent
        obj["metadata"] = {}
    else:
        # ObjectMeta's collections are all `json:",omitempty"` (apimachinery meta/v1 types.go), and a
        # custom resource's metadata goes through ObjectMeta too (objectmeta.Coerce): an empty one is
        # never written, as when a patch removes the last finalizer. One test first: most metadata has
        # none of the four (a name and a namespace).
        if not _OMITEMPTY_META_FIELDS.isdisjoint(meta):
            for field in _OMITEMPTY_META_COLLECTIONS:
                if field in meta and not meta[field] and type(meta[field]) in (list, dict):
                    del meta[field]
    return obj


_OMITEMPTY_META_COLLECTIONS = ("finalizers", "labels", "annotations", "ownerReferences")
_OMITEMPTY_META_FIELDS = frozenset(_OMITEMPTY_META_COLLECTIONS)


def storage_form(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """What is stored: ``apiVersion`` then ``kind`` first; a custom resource at its storage version.

    Custom resources convert with strategy None (only ``apiVersion`` changes); keeping it the first
    key lets :func:`~kubeloop.server._list.served_value` see the stored version without decoding. A
    built-in object's two keys first let a list cut them off its items without decoding
    (:func:`~kubeloop.server._list.item_rests`); the rest keeps the order it came in.
    """
    if not info.custom:
        keys = iter(obj)
        if (next(keys, None) == "apiVersion" and next(keys, None) == "kind") or "kind" not in obj \
                or "apiVersion" not in obj:
            return obj
        # A dict display keeps each key where it first appears and the value it last gets.
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], **obj}
    version = info.storage_version or info.version
    api_version = f"{info.group}/{version}"
    return {"apiVersion": api_version, **{k: v for k, v in obj.items() if k != "apiVersion"}}


def request_form(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object as seen at the request's version (custom resources: conversion None)."""
    if info.custom:
        obj["apiVersion"] = info.api_version
    return obj


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")


def _check_namespace(info: ResourceInfo, meta: dict[str, Any], namespace: str) -> None:
    """rest.EnsureObjectNamespaceMatchesRequestNamespace."""
    if not info.namespaced:
        meta.pop("namespace", None)
        return
    body_ns = meta.get("namespace") or ""
    if not body_ns:
        meta["namespace"] = namespace
    elif body_ns != namespace:
        raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")


def _validate(state: ServerState, info: ResourceInfo, obj: dict[str, Any], errors: list[FieldError],
              strategy: GenericStrategy, old: dict[str, Any] | None = None, subresource: str = "",
              warnings: list[str] | None = None) -> None:
    errors.extend(strategy.validate(obj) if old is None else strategy.validate_update(obj, old, subresource))
    validators = state.validators  # empty without custom resources: no key to build
    if validators and (extra := validators.get((info.group, info.kind))) is not None:
        errors.extend(extra(obj, old, warnings if warnings is not None else []))
    if errors:
        raise invalid(info.kind, str(meta_of(obj).get("name") or ""), errors, info.group)


def _add_warnings(warnings: list[str], texts: list[str]) -> None:
    """Each text once, as the apiserver's warning recorder keeps them (a retried update adds them again)."""
    for text in texts:
        if text not in warnings:
            warnings.append(text)


def _parse_rv(info: ResourceInfo, name: str, rv: Any) -> int:
    try:
        value = int(str(rv), 10)
        if value < 0:
            raise ValueError
        return value
    except ValueError:
        raise invalid(info.kind, name, [FieldError.invalid(
            "metadata.resourceVersion", rv, f'strconv.ParseUint: parsing "{rv}": invalid syntax')], info.group) from None


def _same_but_managed_times(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update changes nothing but its managedFields entries' times: then it is no write.

    Upstream's ``IgnoreManagedFieldsTimestampsTransformer`` (k8s.io/apiserver
    ``pkg/endpoints/handlers/fieldmanager/equality.go``, run by the update and patch handlers): when the
    managedFields are equal modulo each entry's ``time`` and the rest of the object is equal, the old
    times are put back, so the stored bytes compare equal and ``GuaranteedUpdate`` writes nothing. Any
    other managedFields change is a write: a second applier of the same values becomes a co-owner, an
    applier that drops a field it alone set (a value zero that is not stored) gives it up."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    if type(new_meta) is not dict or type(old_meta) is not dict:
        return new == old
    # The object with ``metadata`` set aside, then the metadata with ``managedFields`` set aside (no copies
    # of either metadata in Python), then the entries.
    if ({**new, "metadata": None} != {**old, "metadata": None}
            or {**new_meta, "managedFields": None} != {**old_meta, "managedFields": None}):
        return False
    new_managed, old_managed = new_meta.get("managedFields"), old_meta.get("managedFields")
    if new_managed == old_managed:
        return True
    if type(new_managed) is not list or type(old_managed) is not list or len(new_managed) != len(old_managed):
        return False
    return all(a == b or (type(a) is dict and type(b) is dict and {**a, "time": None} == {**b, "time": None})
               for a, b in zip(new_managed, old_managed, strict=True))


# -- create ------------------------------------------------------------------------------------


async def create_object(state: ServerState, req: WriteRequest, obj: Any, *, typed: bool = False,
                        empties: bool = True, owned: dict[str, Any] | None = None) -> tuple[int, bytes]:
    """Create ``obj``; ``typed`` as :func:`check_body` takes it; ``empties``: ``obj`` may hold an empty list
    or map (a JSON body's bytes tell when it cannot: then the walk that settles them is skipped); ``owned``:
    what its managedFields entry owns, as the decode walk found it (for the field manager's hook). The walk
    answers only for a kind without defaults or Go zero fields and a body without an empty list or map
    (:func:`~kubeloop.server._defaults.create_keeps_decoded_body`): given ``owned``, the steps for those
    are skipped."""
    info = req.info
    obj = check_body(info, obj, typed=typed)
    meta = obj["metadata"]  # check_body made it a dict
    _check_namespace(info, meta, req.namespace)
    # Decoding defaults the body; mutating admission sees it so and may change it, before the strategy
    # prepares and validates it (handlers/create.go, then store.go Create: rest.BeforeCreate).
    if owned is None:
        apply_defaults(info, obj)
    namespace = req.namespace if info.namespaced else ""
    # What _namespace_guard does, awaited here rather than through its coroutine (a frame less per create).
    guard: tuple[str, int] | None = None
    namespace_state: tuple[KeyValue | None] | None = None
    if namespace:
        guard_key = f"/registry/core/namespaces/{namespace}"  # namespace_key, inlined
        ns_kv = await state.store.get(guard_key)
        guard, namespace_state = (guard_key, ns_kv.mod_revision if ns_kv is not None else 0), (ns_kv,)
    if "ownerReferences" in meta and req.operation != "Apply":  # a patch dedups only after admission
        dedup_owner_references(meta, req.warnings, after_admission=False)
    # handlers/create.go: the field manager records the request's fields before mutating admission, so
    # what a plugin adds (DefaultTolerationSeconds' tolerations, Priority's spec.priority) is nobody's.
    # The zero fields Go's encoding writes are the writer's inside list items (the kind's empty object, which
    # the manager compares with, has none), and no manager's along the struct fields: those go out around it.
    # An empty omitempty list or map is no manager's either, though admission and validation see it (_go_empty).
    zeros = found = None
    if owned is None:
        zeros, walks = go_write_encodings(info)
        found = take_empty_collections(obj, walks) if walks is not None and empties else None
    # One reading of the clock stamps both the managedFields entry and creationTimestamp: RFC 3339 in whole
    # seconds, as upstream's two readings (fieldmanager, then FillObjectMetaSystemFields) show them.
    now = format_time(state.clock.now())
    hook = state.field_manager  # record_manager, inlined
    if hook is not None:
        if zeros is not None:
            fill_zero_fields(obj, zeros)
            strip_zero_fields(obj, zeros)
        hook(req, obj, None, now, owned)
    if zeros is not None:
        fill_zero_fields(obj, zeros)
    if found is not None:
        put_back_empty_collections(found)
    admission = state.admission  # plans_for, its chain's cached case inlined
    mutating, validating = (admission.plan("CREATE", info) if type(admission) is AdmissionChain
                            else plans_for(admission, "CREATE", info))
    # All ten fields, positionally: the named tuple's generated ``__new__`` with keywords costs more.
    attrs = tuple.__new__(AdmissionAttributes, ("CREATE", info, namespace, meta.get("name") or "", "", req.user,
                                                req.options.dry_run, namespace_state, req.warnings, req.options))
    if mutating:
        managed = meta.get("managedFields")  # ManagedFieldsValidatingAdmissionController, inlined
        entries = tuple(managed) if type(managed) is list else ()
        for step in mutating:  # run_plan, inlined
            pending = step(attrs, obj, None)
            if pending is not None:
                await pending
        meta = obj["metadata"]  # a plugin may have replaced it
        after = meta.get("managedFields")
        # What admission leaves as a rule: the field manager's one entry (a create's), list and entry as they
        # were; anything else is checked.
        if after is not managed or (type(after) is list and not (
                len(after) == 1 and len(entries) == 1 and after[0] is entries[0])):
            keep_valid_managed_fields(meta, managed, entries, req.warnings)
        if "ownerReferences" in meta:
            dedup_owner_references(meta, req.warnings, after_admission=True)
    strategy = state.strategy(info)
    if (recorded := strategy.prepare_for_create(obj)) is not None:  # warnings recorded while preparing
        _add_warnings(req.warnings, recorded)
    # rest.BeforeCreate / FillObjectMetaSystemFields.
    if not _CLEARED_ON_CREATE.isdisjoint(meta):  # one test for four fields bodies rarely carry
        for cleared in _CLEARED_ON_CREATE:
            meta.pop(cleared, None)
    meta["uid"] = state.new_uid()
    meta["creationTimestamp"] = now
    if "managedFields" in meta:  # last, where ObjectMeta's Go field order puts it (recorded before the uid)
        meta["managedFields"] = meta.pop("managedFields")
    generate = str(meta.get("generateName") or "")  # a mutating plugin may have set it
    if generate and not meta.get("name"):
        meta["name"] = state.generate_name(generate)
    else:
        generate = ""
    if strategy.needs_identity:
        strategy.prepare_identity(obj)
    # store.go Create: BeginCreate (a Service's allocations) after the name is final, before BeforeCreate's
    # validation; what it allocated is handed back once the create is stored or has failed.
    allocation = await strategy.begin_create(obj, dry_run=req.options.dry_run) if strategy.allocates else None
    try:
        errors = validate_object_meta(meta, namespaced=info.namespaced, name_validator=strategy.name_validator)
        # _validate, inlined for a create (a call less per create).
        errors.extend(strategy.validate(obj))
        validators = state.validators  # empty without custom resources: no key to build
        if validators and (extra := validators.get((info.group, info.kind))) is not None:
            errors.extend(extra(obj, None, req.warnings))
        if errors:
            raise invalid(info.kind, str(meta_of(obj).get("name") or ""), errors, info.group)
        if strategy.warns:  # rest.BeforeCreate: WarningsOnCreate once validation has passed
            _add_warnings(req.warnings, strategy.warnings_on_create(obj))
        name: str = meta["name"]  # validated: a non-empty str
        if validating:  # createValidation: the object as it will be stored, under its final name
            if name != attrs.name:
                attrs = attrs._replace(name=name)
            for step in validating:
                pending = step(attrs, obj, None)
                if pending is not None:
                    await pending
        if found is not None:  # the storage's protobuf keeps no element of an empty slice or map
            store_empty_collections(found)
        if req.options.dry_run:  # DryRunnableStorage.Create: the object as it is, the storage never asked
            if await state.store.get(object_key(info, req.namespace, name)) is not None:
                raise already_exists(info.plural, name, info.group)
            return 201, orjson.dumps(obj)
        if "resourceVersion" in meta:
            _refuse_resource_version(meta.pop("resourceVersion"))
        attempt = guard_attempt = 0
        while True:
            try:
                kv = await state.store.create(
                    object_key(info, req.namespace, name), renderer(storage_form(info, obj)), guard=guard
                )
                return 201, kv.value
            except KeyExists:
                attempt += 1
                # A kind whose prepare_identity wrote the name into the object (a Job's labels) is not
                # renamed: upstream never retries a generated name; the client is told to retry instead.
                if not generate or attempt == _GENERATE_ATTEMPTS or strategy.needs_identity:
                    break
                name = state.generate_name(generate)
                meta["name"] = name
            except GuardChanged:
                # The namespace changed between admission and commit (it may now be Terminating): admit again
                # against its new state, so no content lands in a namespace after its deletion is committed.
                guard_attempt += 1
                if guard_attempt == _GUARD_ATTEMPTS:
                    raise conflict(info.plural, name, info.group,
                                   "the namespace kept changing while the object was created; please retry") from None
                guard, namespace_state = await _namespace_guard(state, info, req.namespace)
                attrs = AdmissionAttributes("CREATE", info, req.namespace if info.namespaced else "", name,
                                            req.subresource, user=req.user, dry_run=False,
                                            namespace_state=namespace_state, warnings=req.warnings,
                                            options=req.options)
                await _admit_again(state, info, strategy, attrs, obj)
        error = already_exists(info.plural, name, info.group)
        if generate:
            error = type(error)(
                f"{error.message}, the server was not able to generate a unique name for the object",
                details=error.details, retry_after_seconds=1,
            )
        raise error
    finally:
        if allocation is not None:
            allocation.finish()


async def _admit_again(
    state: ServerState, info: ResourceInfo, strategy: GenericStrategy, attrs: AdmissionAttributes, obj: dict[str, Any]
) -> None:
    """Admit a create again (its namespace changed before it committed): both phases on the object as it
    stands, mutating plugins being idempotent as upstream's reinvoked ones must be, and validation again
    between them, so that what a mutating plugin changes is still validated."""
    plans = plans_for(state.admission, "CREATE", info)
    managed = meta_of(obj).get("managedFields")
    entries = tuple(managed) if type(managed) is list else ()
    await _run(plans.mutating, attrs, obj, None)
    meta = meta_of(obj)
    keep_valid_managed_fields(meta, managed, entries, [])  # the first admission gave any warning
    errors = validate_object_meta(meta, namespaced=info.namespaced, name_validator=strategy.name_validator)
    _validate(state, info, obj, errors, strategy)
    await _run(plans.validating, attrs, obj, None)


async def _run(plan: Plan, attrs: AdmissionAttributes, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    pending = run_plan(plan, attrs, obj, old)
    if pending is not None:
        await pending


async def _namespace_guard(
    state: ServerState, info: ResourceInfo, namespace: str
) -> tuple[tuple[str, int] | None, tuple[KeyValue | None] | None]:
    """The namespace's key at the revision admission is about to judge, for the store's guarded create,
    and that read itself (``AdmissionAttributes.namespace_state``): one store read serves both.

    Upstream leaves a window between the NamespaceLifecycle check and the write (its namespace controller
    waits ``namespaceDeletionGracePeriod`` so late creations become visible); committing the create only
    while the namespace is still at the revision that was admitted closes the window here.
    """
    if not info.namespaced or not namespace:
        return None, None
    key = namespace_key(namespace)
    kv = await state.store.get(key)
    return (key, kv.mod_revision if kv is not None else 0), (kv,)


def record_manager(state: ServerState, req: WriteRequest, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Record the write's field manager in managedFields (``state.field_manager``)."""
    hook = state.field_manager
    if hook is not None:
        hook(req, obj, old, format_time(state.clock.now()), None)


# -- update ------------------------------------------------------------------------------------

# ``current()`` decodes a private copy of the stored object (at the request's version) that the transform
# may change: a patch or a scale update calls it, a PUT (whose body replaces the object) does not, so a
# PUT decodes the stored object once, for the comparisons and hooks that read ``old``.
Current = Callable[[], dict[str, Any]]
Transform = Callable[[Current], Awaitable[dict[str, Any]]]


async def update_object(
    state: ServerState,
    req: WriteRequest,
    transform: Transform,
    *,
    conditional: bool,
    allow_create: bool = False,
    typed: bool = False,
    empties: bool = True,
) -> tuple[int, bytes, dict[str, Any] | None]:
    """Read, transform, prepare, validate, admit and compare-and-swap, retrying lost races.

    ``transform(current)`` returns the requested new object (the PUT body, or the patched object;
    ``current()`` is the stored object's own copy for it); a ``metadata.resourceVersion`` in it is a precondition. ``conditional`` means a mismatch is a
    409 rather than a retry. ``typed``: what ``transform`` returns on every attempt is what the typed decode
    passed (:func:`check_body`); ``empties``: it may hold an empty list or map (:func:`create_object`). Returns (HTTP status, body bytes, the resulting object when decoded).
    """
    info = req.info
    key = object_key(info, req.namespace, req.name)
    for _ in range(GUARANTEED_UPDATE_RETRIES):
        kv = await state.store.get(key)
        if kv is None:
            if allow_create and not req.subresource:
                return await _create_on_update(state, req, transform, typed, empties)
            raise not_found(info.plural, req.name, info.group)
        old = request_form(info, orjson.loads(kv.value))
        new = await transform(partial(_decoded, info, kv.value))
        new = check_body(info, new, req.name, typed=typed)
        # What a storage hook allocated for this attempt (Services), handed back when the attempt ends.
        held: list[Any] = []
        try:
            outcome = await _update_attempt(state, req, key, new, old, kv, held, conditional, empties)
        finally:
            for allocation in held:
                allocation.finish()
        if outcome is not None:
            return outcome
    raise conflict(info.plural, req.name, info.group)


async def _update_attempt(
    state: ServerState, req: WriteRequest, key: str, new: dict[str, Any], old: dict[str, Any], kv: KeyValue,
    held: list[Any], conditional: bool, empties: bool,
) -> tuple[int, bytes, dict[str, Any] | None] | None:
    """One read-modify-write of :func:`update_object`: its answer, or ``None`` when the compare-and-swap lost
    a race an unconditional write retries. (A function of its own: mypyc compiles no ``continue`` inside
    the ``try``/``finally`` that hands the attempt's allocations back.)"""
    info = req.info
    try:
        new, delete_now = await _prepare_update(state, req, new, old, kv, held, empties)
    except _Unchanged:
        return 200, kv.value, None
    if delete_now:  # store.go ShouldDeleteDuringUpdate
        try:
            deleted = await _delete_during_update(state, req, new, kv)
        except (RevisionMismatch, KeyNotFound):
            return None
        return 200, deleted, new
    if req.options.dry_run:
        return 200, orjson.dumps(new), new
    try:
        stored = await state.store.update(key, renderer(storage_form(info, new)), expected_revision=kv.mod_revision)
    except (RevisionMismatch, KeyNotFound):
        if conditional:
            raise conflict(info.plural, req.name, info.group) from None
        return None
    return 200, stored.value, new


def _decoded(info: ResourceInfo, value: bytes) -> dict[str, Any]:
    return request_form(info, orjson.loads(value))


def _absent() -> dict[str, Any]:
    return {}


class _Unchanged(Exception):
    pass


async def _prepare_update(
    state: ServerState, req: WriteRequest, new: dict[str, Any], old: dict[str, Any], kv: KeyValue,
    held: list[Any] | None = None, empties: bool = True,
) -> tuple[dict[str, Any], bool]:
    info = req.info
    strategy = state.strategy(info)
    new_meta = meta_of(new)
    old_meta = meta_of(old)
    body_name = new_meta.get("name") or ""
    if body_name and body_name != req.name:
        raise BadRequest(f"the name of the object ({body_name}) does not match the name on the URL ({req.name})")
    new_meta["name"] = req.name
    _check_namespace(info, new_meta, req.namespace)
    if not req.subresource or req.subresource == "ephemeralcontainers":
        # Upstream defaults a body as it decodes it, before PrepareForUpdate compares the specs: a
        # manifest sent back without its defaulted fields is the same spec, and keeps its generation.
        # An ephemeral container is defaulted as any container (SetDefaults_EphemeralContainer).
        apply_defaults(info, new)
    # The transformers of objInfo.UpdatedObject run the field manager first (handlers/update.go; patch.go's
    # applyPatch), then mutating admission: what a plugin adds or restores is not the writer's.
    # The manager compares the update with the live object, which holds the zero fields too (upstream's
    # Updater.Update diffs live against new): one left at its zero is nobody's change, one changed to it
    # (an Event's reportingInstance "x" to "") is the writer's, as any other change.
    zeros, walks = go_write_encodings(info)
    found = take_empty_collections(new, walks) if walks is not None and empties else None
    if zeros is not None:
        fill_zero_fields(new, zeros)
    hook = state.field_manager  # record_manager, inlined (a call less per update)
    if hook is not None:
        hook(req, new, old, format_time(state.clock.now()), None)
    if found is not None:
        # Stored forms at once: what compares the new object with the old one (generation, immutable fields,
        # "no change") compares semantically upstream (apimachinery equality.Semantic.DeepEqual: an empty
        # slice or map equals a nil one), as dicts here. A failed validation takes its messages from the object
        # as decoded, where an emptied map prints map[string]string{} as upstream's does (_decoded_messages).
        store_empty_collections(found)
    admission = state.admission  # plans_for, its chain's cached case inlined
    mutating, validating = (admission.plan("UPDATE", info) if type(admission) is AdmissionChain
                            else plans_for(admission, "UPDATE", info))
    options = req.options
    # All ten fields, positionally: the named tuple's generated ``__new__`` costs more (create_object's).
    attrs = tuple.__new__(AdmissionAttributes, ("UPDATE", info, req.namespace if info.namespaced else "", req.name,
                                                req.subresource, req.user, options.dry_run, None, req.warnings,
                                                options))
    if mutating:  # the mutating transformer of objInfo.UpdatedObject (handlers/update.go, patch.go)
        managed = new_meta.get("managedFields")  # ManagedFieldsValidatingAdmissionController
        entries = tuple(managed) if type(managed) is list else ()
        for step in mutating:  # run_plan, inlined: NamespaceLifecycle runs on every namespaced update
            pending = step(attrs, new, old)
            if pending is not None:
                await pending
        new_meta = new["metadata"]  # a plugin may have replaced it
        after = new_meta.get("managedFields")
        # What admission leaves as a rule: the field manager's one entry (the writer's), list and entry as they
        # were, and the entry's fields keep_valid_managed_fields checks still valid (a plugin may have changed
        # them in place); anything else goes through it. One call less per update.
        if after is not managed or (type(after) is list and not (
                len(after) == 1 and len(entries) == 1 and (entry := after[0]) is entries[0] and type(entry) is dict
                and entry.get("operation") in _OPERATIONS and entry.get("apiVersion")
                and entry.get("fieldsType") == "FieldsV1")):
            keep_valid_managed_fields(new_meta, managed, entries, req.warnings)
    if "ownerReferences" in new_meta and req.subresource != "scale":  # the Scale is what scale's admission sees
        dedup_owner_references(new_meta, req.warnings, after_admission=True)
    rv = new_meta.get("resourceVersion")
    if rv:
        if _parse_rv(info, req.name, rv) != kv.mod_revision:
            raise conflict(info.plural, req.name, info.group)
    elif not info.allow_unconditional_update:
        raise invalid(info.kind, req.name, [FieldError.invalid(
            "metadata.resourceVersion", "0x0", "must be specified for an update")], info.group)
    new_meta["resourceVersion"] = old_meta.get("resourceVersion")
    if req.subresource == "status":
        new = _keeping_managed_fields(state, new, strategy.prepare_for_status_update(new, old))
        new_meta = meta_of(new)
    elif req.subresource == "ephemeralcontainers":  # pods only (the kind's strategy has the hook)
        new = _keeping_managed_fields(state, new, strategy.prepare_for_ephemeral_containers(new, old))
        new_meta = meta_of(new)
    elif req.subresource == "finalize":
        prepare = getattr(strategy, "prepare_for_finalize", None)
        if prepare is not None:
            new = _keeping_managed_fields(state, new, prepare(new, old))
            new_meta = meta_of(new)
    else:
        if strategy.allocates and held is not None:  # store.go BeginUpdate, before rest.BeforeUpdate
            allocation = await strategy.begin_update(new, old, dry_run=req.options.dry_run)
            if allocation is not None:
                held.append(allocation)
        strategy.prepare_for_update(new, old)
    # rest.BeforeUpdate: system fields the client omitted or may not change.
    if not new_meta.get("uid"):
        new_meta["uid"] = old_meta.get("uid")
    if old_meta.get("creationTimestamp"):
        new_meta["creationTimestamp"] = old_meta["creationTimestamp"]
    if old_meta.get("deletionTimestamp"):
        new_meta["deletionTimestamp"] = old_meta["deletionTimestamp"]
    if old_meta.get("deletionGracePeriodSeconds") is not None and new_meta.get("deletionGracePeriodSeconds") is None:
        new_meta["deletionGracePeriodSeconds"] = old_meta["deletionGracePeriodSeconds"]
    if new_meta.get("generateName") is None and old_meta.get("generateName"):
        new_meta["generateName"] = old_meta["generateName"]
    errors = validate_object_meta_update(new_meta, old_meta)
    if finalizers := new_meta.get("finalizers"):  # none to check in an absent or empty list
        errors.extend(validate_finalizers(finalizers))
    try:
        _validate(state, info, new, errors, strategy, old, req.subresource, req.warnings)
    except Invalid:
        if not found:
            raise
        # A function of its own: a lambda here would make ``new``, ``old`` and ``strategy`` cells of this
        # function, read through their cells on every update (about 2k instructions per PUT).
        raise _invalid_as_decoded(req, errors, found, strategy, new, old) from None
    if strategy.warns:  # rest.BeforeUpdate: WarningsOnUpdate once validation has passed
        _add_warnings(req.warnings, strategy.warnings_on_update(new, old, req.subresource))
    if validating:  # updateValidation (run_plan, not _run: no coroutine when every step finishes at once)
        pending = run_plan(validating, attrs, new, old)
        if pending is not None:
            await pending
    if _same_but_managed_times(new, old):
        raise _Unchanged
    return new, strategy.should_delete_during_update(new)


_OPERATIONS = ("Apply", "Update")  # as _managed's (a tuple: an unhashable operation compares unequal)


def _invalid_as_decoded(req: WriteRequest, errors: list[FieldError], found: list[Any], strategy: Any,
                        new: dict[str, Any], old: dict[str, Any]) -> Invalid:
    """The failed update's Invalid, its messages printing the decoded object's emptied maps as empty, not nil,
    as upstream's do (:mod:`kubeloop.server._decoded_messages`)."""
    info, subresource = req.info, req.subresource
    texts = decoded_errors(errors, found, lambda: strategy.validate_update(new, old, subresource))
    return invalid(info.kind, req.name, texts, info.group)


def _keeping_managed_fields(state: ServerState, new: dict[str, Any], prepared: dict[str, Any]) -> dict[str, Any]:
    """``prepared`` (a subresource strategy's object, built from the stored one) with the managedFields the
    field manager gave ``new``: upstream's strategies never touch them, the field manager having run first."""
    if state.field_manager is None:
        return prepared
    managed = meta_of(new).get("managedFields")
    meta = prepared["metadata"] = dict(meta_of(prepared))  # it may be the stored object's own
    if managed is None:
        meta.pop("managedFields", None)
    else:
        meta["managedFields"] = managed
    return prepared


async def _delete_during_update(state: ServerState, req: WriteRequest, new: dict[str, Any], kv: KeyValue) -> bytes:
    if req.options.dry_run:
        return orjson.dumps(new)
    key = object_key(req.info, req.namespace, req.name)
    deleted = await state.store.delete(key, expected_revision=kv.mod_revision, render=renderer(storage_form(req.info, new)))
    return deleted.value


async def _create_on_update(state: ServerState, req: WriteRequest, transform: Transform,
                            typed: bool, empties: bool) -> tuple[int, bytes, None]:
    new = await transform(_absent)
    new = check_body(req.info, new, req.name, typed=typed)
    meta = meta_of(new)
    body_name = meta.get("name") or ""
    if body_name and body_name != req.name:
        raise BadRequest(f"the name of the object ({body_name}) does not match the name on the URL ({req.name})")
    meta["name"] = req.name
    meta.pop("resourceVersion", None)
    status, body = await create_object(state, req, new, typed=typed, empties=empties)
    return status, body, None
