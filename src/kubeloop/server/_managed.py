"""managedFields bookkeeping for non-apply writes, through :mod:`kubeloop.api._apply`.

Every create, update and non-apply patch records its field manager (the ``fieldManager`` query
parameter, else the User-Agent prefix, as apiserver ``handlers/rest.go`` managerOrUserAgent) with
operation ``Update``; server-side apply computes its own entries and is skipped here.

The write path calls the hook where upstream's handlers call ``FieldManager.UpdateNoErrors``
(``handlers/create.go``; the first transformer of ``update.go``; ``patch.go`` applyPatch): after the
body is decoded and defaulted, **before** mutating admission. So decode-time defaults are the
writer's, and what a mutating plugin adds (DefaultTolerationSeconds' tolerations, Priority's
``spec.priority``) belongs to nobody, and a later apply of those fields by another manager does not
conflict with the writer. Mutating admission is then wrapped as upstream's
``fieldmanager.NewManagedFieldsValidatingAdmissionController`` (``handlers/fieldmanager/admission.go``)
wraps it: :func:`keep_valid_managed_fields` puts back the managedFields a plugin left invalid, with
upstream's warning. Entries the field manager wrote that admission left in place (the same list, the
same entry objects) are taken as valid without parsing their FieldsV1 again; on a create with one
entry that is the whole check, so an entry a plugin edits in place there is not looked at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeloop.api import ApiError, parse_fields_v1
from kubeloop.api._apply import (
    created_entries,
    default_field_manager,
    managed_fields_on_create,
    managed_fields_on_update,
)
from kubeloop.server._state import ServerState

__all__ = ["INVALID_AFTER_ADMISSION", "keep_valid_managed_fields", "managed_fields_error", "record_manager_hook"]

# handlers/fieldmanager/admission.go InvalidManagedFieldsAfterMutatingAdmissionWarningFormat.
INVALID_AFTER_ADMISSION = (".metadata.managedFields was in an invalid state after admission; this could be caused by "
                           "an outdated mutating admission controller; please fix your requests: ")


def record_manager_hook(
    state: ServerState,
) -> Callable[[Any, dict[str, Any], dict[str, Any] | None, str, dict[str, Any] | None], None]:
    """The field manager's hook: ``record(req, obj, old, now, owned)`` records the write of ``obj`` (``old``:
    the stored object, ``None`` for a create) at ``now`` (``metav1.Time`` text, which the caller reads
    once for the write: a create stamps its creationTimestamp with the same reading); ``owned``: only for a
    create through the main resource, what its entry owns when the decode walk built it
    (:attr:`kubeloop.api._go_decode.Decoded.owned`), else ``None``."""

    def record(req: Any, obj: dict[str, Any], old: dict[str, Any] | None, now: str,
               owned: dict[str, Any] | None) -> None:
        if req.operation == "Apply":
            return
        info = req.info
        manager = req.options.field_manager or default_field_manager(req.user_agent)
        meta = obj.setdefault("metadata", {})
        if owned is not None and "managedFields" not in meta:
            # What managed_fields_on_create answers for a flat body, which the decode walk already saw.
            if owned:
                meta["managedFields"] = created_entries(owned, manager, now, info.api_version)
            return
        api_version, schema = info.api_version, state.schema(info)
        subresource = req.subresource if req.subresource in ("status", "scale", "ephemeralcontainers") else None
        try:
            if old is None and subresource is None:  # a create: the positional entry point
                managed = managed_fields_on_create(
                    obj, manager, now, api_version, schema, info.status_subresource,
                )
            else:
                managed = managed_fields_on_update(
                    old, obj, manager, now, api_version, schema, subresource,
                    info.status_subresource,
                )
        except ApiError:
            # FieldManager.UpdateNoErrors: the bookkeeping fails no request (it runs before validation,
            # which refuses an object its schema cannot type). Entries the body carried that do not decode
            # give way to the stored object's (internal/fieldmanager.go Update); any other failure leaves
            # the object without managedFields.
            managed = []
            if isinstance(meta, dict) and meta.pop("managedFields", None) is not None:
                try:
                    managed = managed_fields_on_update(
                        old, obj, manager, now, api_version, schema, subresource,
                        info.status_subresource,
                    )
                except ApiError:
                    managed = []
        if managed:
            # Unchanged entries are shared with ``old``, which the write path only reads and serialises.
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)

    return record


_OPERATIONS = ("Apply", "Update")  # a tuple: an unhashable operation compares unequal, never raises


def managed_fields_error(managed: Any, entries: tuple[Any, ...] = ()) -> str | None:
    """Why ``managed`` (a ``metadata.managedFields`` value) does not decode, as apimachinery
    ``managedfields/internal/managedfields.go`` DecodeManagedFields says it; ``None`` when it does.

    The FieldsV1 trees of the entries in ``entries`` (compared by identity: the ones admission
    left as they were, which the field manager wrote or validated) are not parsed again."""
    if managed is None:
        return None
    if type(managed) is not list:
        return "managedFields must be a list"
    for index, entry in enumerate(managed):
        if type(entry) is not dict:
            return f"managed fields entry {index} must be an object"
        if entry.get("operation") not in _OPERATIONS:
            return "operation must be `Apply` or `Update`"
        if not entry.get("apiVersion"):
            return "apiVersion must not be empty"
        fields_type = entry.get("fieldsType")
        if not fields_type:
            return f"missing fieldsType in managed fields entry {index}"
        if fields_type != "FieldsV1":
            return f'invalid fieldsType "{fields_type}" in managed fields entry {index}'
        if index < len(entries) and entries[index] is entry:
            continue  # written (or validated) by the field manager before admission
        try:
            parse_fields_v1(entry.get("fieldsV1") or {})
        except ApiError as err:
            return f"error decoding versioned set from {entry}: error decoding set: {err.message}"
    return None


def keep_valid_managed_fields(meta: dict[str, Any], before: Any, entries: tuple[Any, ...], warnings: list[str]) -> None:
    """After mutating admission: the managedFields ``before`` it (``entries``: that list's items, taken
    then) again, with a warning, when admission left ``meta``'s invalid (``NewManagedFieldsValidatingAdmissionController``).
    Cheap when admission did not touch them: the entries the field manager wrote are not re-parsed."""
    after = meta.get("managedFields")
    if after is before and type(after) is list and len(after) == len(entries):
        # What admission usually leaves: the field manager's entries, as they were (a create's one entry).
        for entry, kept in zip(after, entries, strict=True):
            if (entry is not kept or type(entry) is not dict or entry.get("operation") not in _OPERATIONS
                    or not entry.get("apiVersion") or entry.get("fieldsType") != "FieldsV1"):
                break
        else:
            return
    error = managed_fields_error(after, entries if after is before else ())
    if error is None:
        return
    if before is None:
        meta.pop("managedFields", None)
    else:  # the list's items as they were (a plugin may have changed the list in place)
        meta["managedFields"] = list(entries) if type(before) is list else before
    text = INVALID_AFTER_ADMISSION + error
    if text not in warnings:
        warnings.append(text)
