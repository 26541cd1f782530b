"""Server-side apply and managedFields bookkeeping, as pure functions over JSON dicts.

:func:`server_side_apply` is the Apply operation and :func:`record_update` the bookkeeping every
other write (create, update, non-apply patch) does, following structured-merge-diff
``merge/update.go`` (``Apply``, ``Update``, ``prune``) and apimachinery
``pkg/util/managedfields/internal`` (manager identity, conflict messages, ordering, stripped
metadata, ``before-first-apply``, the cap of 10 Update managers). Guarantees:

- one managedFields entry per identity: (manager, Apply, subresource) for appliers and
  (manager, Update, apiVersion, subresource) for updaters; entries are sorted as upstream (Apply
  before Update, then time, manager, apiVersion, subresource) and empty ones are dropped;
- an entry's ``time`` is ``now`` when its fields changed (or, for Apply, when the object did);
- Apply raises :class:`~kubeloop.api.Conflict` with upstream's exact message and
  ``FieldManagerConflict`` causes when it would change a value another manager owns, unless
  ``force``, which moves ownership; fields the applier stops applying are removed unless another
  manager owns them; an Update never conflicts and takes the fields it changed from everyone else;
- ``apiVersion``, ``kind``, server-set metadata and ``managedFields`` are never owned; ``status`` is
  not owned through the main resource and ``spec`` not through ``/status`` (reset fields);
- inputs are never mutated.

Known simplification: ownership is not converted between API versions (kubeloop serves one
version per kind).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeloop.api._errors import BadRequest, Conflict
from kubeloop.api._fieldpath import (
    FieldSet,
    Path,
    compare,
    created_fields_v1,
    created_tree,
    edit_fields_v1,
    fields_v1,
    parse_fields_v1,
    path_string,
    to_field_set,
    unowned_tree,
)
from kubeloop.api._flat_entry import FlatPlan, flat_plan
from kubeloop.api._go_encode import GoEncoding
from kubeloop.api._ssa_merge import keep_map_nulls, merge_applied, remove_paths
from kubeloop.api._strategic import deep_copy_json

__all__ = [
    "ManagedEntry",
    "created_entries",
    "decode_managed_fields",
    "default_field_manager",
    "flat_create_plan",
    "managed_fields_after_update",
    "managed_fields_on_create",
    "managed_fields_on_update",
    "record_update",
    "server_side_apply",
]

MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"
BEFORE_FIRST_APPLY = "before-first-apply"

# apimachinery managedfields/internal/stripmeta.go: never owned by anyone.
_STRIPPED: frozenset[Path] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {
        ("f:metadata", "f:" + name)
        for name in (
            "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
            "generation", "managedFields", "resourceVersion",
        )
    }
)


@dataclass(frozen=True, slots=True)
class ManagedEntry:
    """One ``metadata.managedFields`` entry, decoded."""

    manager: str
    operation: str
    api_version: str
    fields: FieldSet
    time: str | None = None
    subresource: str = ""
    # The stored JSON entry this was decoded from, when it is exactly what :meth:`to_json` would
    # write (see ``decode_managed_fields(keep_raw=True)``): re-encoding an unchanged entry reuses it.
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """BuildManagerIdentifier: appliers are one identity whatever apiVersion they used."""
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def describe(self) -> str:
        """How conflict messages name the manager (internal/conflict.go printManager)."""
        text = f'"{_go_escape(self.manager)}"'
        if self.subresource:
            text += f' with subresource "{_go_escape(self.subresource)}"'
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def to_json(self) -> dict[str, Any]:
        if self.raw is not None:
            return dict(self.raw)
        entry: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            entry["time"] = self.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = fields_v1(self.fields)
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


@functools.lru_cache(maxsize=256)
def default_field_manager(user_agent: str) -> str:
    """The manager of a write without ``fieldManager``: the User-Agent before its first ``/``,
    printable characters only, at most 128 bytes (apiserver handlers/create.go managerOrUserAgent)."""
    out = ""
    size = 0
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        width = len(char.encode())
        if size + width > 128:
            break
        out += char
        size += width
    return out


def _go_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def decode_managed_fields(raw: Any, *, keep_raw: bool = False) -> list[ManagedEntry]:
    """Parse ``metadata.managedFields``; malformed entries are a :class:`BadRequest`.

    ``keep_raw`` (for entries this module stored): an entry already in :meth:`ManagedEntry.to_json`
    form keeps its JSON, so an unchanged entry is not encoded again."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest("invalid managedFields: must be a list")
    entries: list[ManagedEntry] = []
    for item in raw:
        if not isinstance(item, dict):
            raise BadRequest("invalid managedFields: each entry must be an object")
        fields_type = item.get("fieldsType")
        if fields_type not in (None, "FieldsV1"):
            raise BadRequest(f'invalid managedFields: unsupported fieldsType "{fields_type}"')
        entries.append(
            ManagedEntry(
                manager=str(item.get("manager") or ""),
                operation=str(item.get("operation") or ""),
                api_version=str(item.get("apiVersion") or ""),
                fields=parse_fields_v1(item.get("fieldsV1") or {}),
                time=item.get("time") if isinstance(item.get("time"), str) else None,
                subresource=str(item.get("subresource") or ""),
                raw=item if keep_raw and _is_stored_entry(item) else None,
            )
        )
    return entries


# What the pods/ephemeralcontainers strategy keeps of a write (its GetResetFieldsFilter is an include
# filter, k/k pkg/registry/core/pod/strategy.go: every field but spec.ephemeralContainers is reset).
_EPHEMERAL_ONLY: tuple[Path, ...] = (("f:spec", "f:ephemeralContainers"),)


def _reset_prefixes(subresource: str | None, status_subresource: bool) -> tuple[Path, ...]:
    if subresource == "status":
        return (("f:spec",),)
    if subresource == "ephemeralcontainers":
        return _EPHEMERAL_ONLY
    if subresource is None and status_subresource:
        return (("f:status",),)
    return ()


# The top-level fields each _reset_prefixes answer drops, as path elements.
_TOP_LEVEL_RESETS: dict[tuple[Path, ...], frozenset[str]] = {
    reset: frozenset(r[0] for r in reset)
    for reset in (_reset_prefixes(sub, status) for sub in (None, "status", "scale") for status in (True, False))
}


def _clean_set(fields: Iterable[Path], reset: tuple[Path, ...]) -> FieldSet:
    if not reset:
        return frozenset(fields) - _STRIPPED
    if reset is _EPHEMERAL_ONLY:  # an include filter: what is under its one prefix, the rest is reset
        kept = reset[0]
        return frozenset(p for p in fields if p[: len(kept)] == kept and p not in _STRIPPED)
    if all(len(r) == 1 for r in reset):  # the reset fields are top-level (spec, status)
        heads = frozenset(reset)
        return frozenset(p for p in fields if p not in _STRIPPED and p[:1] not in heads)
    return frozenset(p for p in fields if p not in _STRIPPED and not any(p[: len(r)] == r for r in reset))


def _body(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """A deep copy of the object without ``metadata.managedFields``."""
    body: dict[str, Any] = deep_copy_json(dict(obj)) if obj else {}
    meta = body.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return body


def _view(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """The object without ``metadata.managedFields``, sharing everything else (read-only use)."""
    if not obj:
        return {}
    view = dict(obj)
    meta = view.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta = view["metadata"] = dict(meta)  # a copy and a deletion: cheaper than a comprehension
        del meta["managedFields"]
    return view


def _read_view(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """:func:`_view` for a caller that only reads it: ``obj`` itself when it has no managedFields."""
    if not obj:
        return {}
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return _view(obj)
    return obj


def _is_reset(raw: Any) -> bool:
    return isinstance(raw, list) and len(raw) == 1 and raw[0] == {}


def _sorted(entries: list[ManagedEntry]) -> list[ManagedEntry]:
    return sorted(entries, key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))


def _with_entries(obj: dict[str, Any], entries: list[ManagedEntry]) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    ordered = _sorted(entries)
    if ordered:
        meta["managedFields"] = [e.to_json() for e in ordered]
    else:
        meta.pop("managedFields", None)
    return obj


def _cap_update_managers(entries: list[ManagedEntry]) -> list[ManagedEntry]:
    """internal/capmanagers.go: fold the oldest Update entries into ``ancient-changes``."""
    updaters = sorted((e for e in entries if e.operation == "Update"), key=lambda e: (e.time or "", e.identity))
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return entries
    kept = [e for e in entries if e.operation != "Update"]
    buckets: dict[str, ManagedEntry] = {}
    first: dict[str, ManagedEntry] = {}
    remaining = len(updaters)
    survivors: list[ManagedEntry] = []
    for entry in updaters:
        if remaining <= MAX_UPDATE_MANAGERS:
            survivors.append(entry)
            continue
        version = entry.api_version
        if version in first:
            base = buckets.get(version) or first.pop(version)
            buckets[version] = ManagedEntry(
                ANCIENT_CHANGES, "Update", version, base.fields | entry.fields, entry.time
            )
            remaining -= 1
        else:
            first[version] = entry
    return kept + list(first.values()) + list(buckets.values()) + survivors


def record_update(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    now: str,
    api_version: str,
    schema: Mapping[str, Any] | None,
    operation: str = "Update",
    subresource: str | None = None,
    status_subresource: bool = True,
) -> dict[str, Any]:
    """``new`` with managedFields updated for a non-apply write by ``manager`` (never conflicts).

    The base entries are those ``new`` carries if it carries any (clients may write them), else
    ``old``'s; ``managedFields: [{}]`` clears them. The manager takes every field it added or
    changed; every manager loses the fields that were removed or that this write changed.
    """
    entries = managed_fields_after_update(
        old, new, manager=manager, now=now, api_version=api_version, schema=schema, operation=operation,
        subresource=subresource, status_subresource=status_subresource,
    )
    body = _body(new)
    meta = body.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = deep_copy_json(entries)
    else:
        meta.pop("managedFields", None)
    return body


def managed_fields_after_update(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    now: str,
    api_version: str,
    schema: Mapping[str, Any] | None,
    operation: str = "Update",
    subresource: str | None = None,
    status_subresource: bool = True,
) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` :func:`record_update` gives ``new`` (``[]``: none), computed
    without copying either object. Entries the write leaves alone are ``old``'s own JSON entries
    (shared, not copied: treat the result as read-only or copy it).

    Fast path: ``old``'s entries were written by this module (normalised, sorted, capped), so when
    they are the base, only the entries that own a changed or removed field and the writer's own
    entry are decoded and re-encoded; the result equals the full recomputation (``fast=False``),
    which a test checks.
    """
    return _after_update(
        old, new, manager=manager, now=now, api_version=api_version, schema=schema, operation=operation,
        subresource=subresource, status_subresource=status_subresource, fast=True,
    )


def managed_fields_on_create(
    new: Mapping[str, Any], manager: str, now: str, api_version: str, schema: Mapping[str, Any] | None,
    status_subresource: bool,
) -> list[dict[str, Any]]:
    """``managed_fields_after_update(None, new, manager=manager, now=now, api_version=api_version,
    schema=schema, status_subresource=status_subresource)`` (a create through the main resource),
    positional and with its constant sets prepared once: every create pays for this call. The
    common body (``metadata`` an object without ``managedFields``) is one walk; anything else takes
    the general path. A test checks both give the same answer."""
    meta = new.get("metadata")
    if type(meta) is dict and "managedFields" not in meta:
        fields = created_tree(new, schema, _CREATE_TREES[status_subresource])
        if fields is not None:
            return created_entries(fields, manager, now, api_version)
    return managed_fields_after_update(
        None, new, manager=manager, now=now, api_version=api_version, schema=schema,
        status_subresource=status_subresource,
    )


# managed_fields_on_create's unowned tree and skipped top-level fields, by status_subresource.
_CREATE_TREES = {
    status: unowned_tree(_STRIPPED, _TOP_LEVEL_RESETS[_reset_prefixes(None, status)]) for status in (True, False)
}


def created_entries(fields: dict[str, Any], manager: str, now: str, api_version: str) -> list[dict[str, Any]]:
    """The managedFields of a create through the main resource (its metadata without ``managedFields``)
    whose one entry owns ``fields`` (FieldsV1, from :func:`~kubeloop.api._fieldpath.created_tree` or the
    decode walk under :func:`flat_create_plan`'s plan): ``[]`` when it owns nothing."""
    if not fields:
        return []
    return [{"manager": manager, "operation": "Update", "apiVersion": api_version, "time": now,
             "fieldsType": "FieldsV1", "fieldsV1": fields}]


def flat_create_plan(schema: Mapping[str, Any] | None, status_subresource: bool,
                     enc: GoEncoding | None = None) -> FlatPlan | None:
    """The plan with which the decode walk builds ``managed_fields_on_create``'s tree for a flat body
    (:mod:`kubeloop.api._flat_entry`). Valid only for a kind whose create changes nothing the entry
    owns between the decode and the field manager (no defaults, no Go zero fields): the caller's call.
    Given the kind's Go encoding ``enc``, the walk passes by the nulls that change nothing the entry owns."""
    return flat_plan(schema, _CREATE_TREES[status_subresource], enc)


def managed_fields_on_update(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], manager: str, now: str, api_version: str,
    schema: Mapping[str, Any] | None, subresource: str | None, status_subresource: bool,
) -> list[dict[str, Any]]:
    """``managed_fields_after_update(old, new, manager=manager, now=now, api_version=api_version,
    schema=schema, subresource=subresource, status_subresource=status_subresource)``, positional: every
    update, patch and subresource write pays for this call."""
    return _after_update(old, new, manager, now, api_version, schema, "Update", subresource, status_subresource, True)


def _after_update(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], manager: str, now: str, api_version: str,
    schema: Mapping[str, Any] | None, operation: str, subresource: str | None, status_subresource: bool, fast: bool,
) -> list[dict[str, Any]]:
    raw_new = (new.get("metadata") or {}).get("managedFields")
    raw_old = ((old or {}).get("metadata") or {}).get("managedFields")
    reset = _reset_prefixes(subresource, status_subresource)
    old_view, new_view = _read_view(old), _read_view(new)
    if subresource is None and _is_reset(raw_new):
        base: Any = []
    elif subresource is None and raw_new is not None and raw_new != [] and raw_new != raw_old:
        base = raw_new  # the client wrote its own entries: decode (and validate) them all
    else:
        base = raw_old
        if fast and not base and not old_view:
            skip = _TOP_LEVEL_RESETS.get(reset)
            created = None if skip is None else _created_entry(
                new_view, schema, manager, operation, api_version, subresource, now, skip)
            if created is not None:
                return created
        if fast and isinstance(base, list) and base and all(_is_stored_entry(e) for e in base):
            comparison = compare(old_view, new_view, schema)
            quick = _fast_update(base, comparison, reset, manager, operation, api_version, subresource or "", now)
            if quick is not None:
                return quick
    entries = decode_managed_fields(base)
    entries = _apply_update(entries, old_view, new_view, schema, manager, operation, api_version, subresource, now, reset)
    return [e.to_json() for e in _sorted(_cap_update_managers(entries))]


def _created_entry(
    new: Mapping[str, Any], schema: Any, manager: str, operation: str, api_version: str, subresource: str | None,
    now: str, skip: frozenset[str],
) -> list[dict[str, Any]] | None:
    """:func:`_apply_update` from nothing (a create): one entry owning every field of ``new`` but the
    top-level ``skip`` ones (reset fields), its FieldsV1 built in one walk; ``None`` when that walk
    does not apply (the caller recomputes)."""
    tree = created_fields_v1(new, schema, unowned=_STRIPPED, skip=skip)
    if tree is None:
        return None
    if not tree:
        return []
    entry: dict[str, Any] = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": now,
                             "fieldsType": "FieldsV1", "fieldsV1": tree}
    if subresource:
        entry["subresource"] = subresource
    return [entry]


def _apply_update(
    entries: list[ManagedEntry], old: Any, new: Any, schema: Any, manager: str, operation: str,
    api_version: str, subresource: str | None, now: str, reset: tuple[Path, ...],
) -> list[ManagedEntry]:
    comparison = compare(old, new, schema)
    changed = _clean_set(comparison.added | comparison.modified, reset)
    removed = frozenset(comparison.removed)
    me = ManagedEntry(manager, operation, api_version, frozenset(), None, subresource or "")
    previous = next((e for e in reversed(entries) if e.identity == me.identity), None)  # the last one wins
    result = _disown(entries, changed | removed, skip=me.identity)
    if changed:
        base = (previous.fields - removed) if previous else frozenset()
        result.append(_replace(me, base | changed, now))
    elif previous is not None and previous.fields - removed:
        result.append(_replace(previous, previous.fields - removed))
    return result


def _disown(entries: Iterable[ManagedEntry], taken: FieldSet, *, skip: tuple[str, ...] = ()) -> list[ManagedEntry]:
    """``entries`` (but the one whose identity is ``skip``) without the ``taken`` fields; entries
    left owning nothing are dropped, untouched ones kept as they are."""
    result: list[ManagedEntry] = []
    for entry in entries:
        if entry.identity == skip:
            continue
        remaining = entry.fields - taken
        if remaining:
            result.append(entry if remaining == entry.fields else _replace(entry, remaining))
    return result


def _replace(entry: ManagedEntry, fields: FieldSet, time: str | None = None) -> ManagedEntry:
    return ManagedEntry(
        entry.manager, entry.operation, entry.api_version, fields, time or entry.time, entry.subresource
    )


def server_side_apply(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    *,
    manager: str,
    force: bool,
    schema: Mapping[str, Any] | None,
    now: str,
    api_version: str,
    subresource: str | None = None,
    status_subresource: bool = True,
    typed: bool = False,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``applied`` to ``live`` (``None``: the object is created).

    ``typed``: the object is a built-in kind's, converted into its Go struct after the merge; a ``null``
    map entry of ``applied`` then stays in the result (:func:`~kubeloop.api._ssa_merge.keep_map_nulls`), for
    the caller to make it the element's zero value, as the conversion does.

    Neither input is changed; the result may share unchanged subtrees with ``live`` (copy before
    changing one of them in place)."""
    if not isinstance(applied, Mapping):
        raise BadRequest("apply patch must be a JSON or YAML object")
    applied_meta = applied.get("metadata")
    if isinstance(applied_meta, Mapping) and applied_meta.get("managedFields") is not None:
        raise BadRequest("metadata.managedFields must be nil")
    reset = _reset_prefixes(subresource, status_subresource)
    live_body = _view(live)
    entries = decode_managed_fields(((live or {}).get("metadata") or {}).get("managedFields"), keep_raw=True)
    if live is not None and not entries:
        # internal/skipnonapplied.go: existing fields go to an Update manager first.
        entries = _apply_update([], {}, live_body, schema, BEFORE_FIRST_APPLY, "Update", api_version, None, now, reset)
    config = dict(applied)  # merge and field sets only read it; merged values are fresh copies
    new_set = _clean_set(to_field_set(config, schema), reset)
    me = ManagedEntry(manager, "Apply", api_version, new_set, now, subresource or "")
    previous = next((e for e in entries if e.identity == me.identity), None)
    others = [e for e in entries if e.identity != me.identity]
    stale_paths: list[Path] = []
    if previous is not None:
        owned_elsewhere = frozenset().union(*(e.fields for e in others)) | new_set
        stale_paths = [p for p in previous.fields - new_set if not _owned_at_or_below(p, owned_elsewhere)]
    if stale_paths:
        live_body = _body(live)  # pruning edits the merge result in place: it must not share with live
    merged = merge_applied(live_body, config, schema)
    if stale_paths:
        merged = remove_paths(merged, stale_paths, schema)
    if typed:
        merged = keep_map_nulls(merged, config, schema)
    comparison = compare(live_body, merged, schema)
    changed = _clean_set(comparison.added | comparison.modified, reset)
    removed = frozenset(comparison.removed)
    clashes = [(e, sorted(e.fields & changed)) for e in others if e.fields & changed]
    if clashes and not force:
        raise _conflict_error(clashes)
    result = _disown(others, changed | removed)
    object_changed = merged != live_body
    if new_set:
        keep_time = previous is not None and not object_changed and previous.time is not None
        if keep_time and previous is not None and previous.fields == new_set and previous.api_version == api_version:
            result.append(previous)  # the same entry, stored JSON and all
        else:
            result.append(_replace(me, new_set, previous.time if keep_time and previous else now))
    if isinstance(merged.get("metadata"), dict):
        merged["metadata"] = dict(merged["metadata"])  # it gets managedFields: never live's own dict
    return _with_entries(merged, _cap_update_managers(result))


def _owned_at_or_below(path: Path, owned: FieldSet) -> bool:
    return any(p[: len(path)] == path for p in owned)


def _conflict_error(clashes: list[tuple[ManagedEntry, list[Path]]]) -> Conflict:
    """internal/conflict.go NewConflictError: message and causes exactly as upstream prints them."""
    clashes = sorted(clashes, key=lambda c: c[0].describe())
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {entry.describe()}", "field": path_string(path)}
        for entry, paths in clashes
        for path in paths
    ]
    if len(causes) == 1:
        entry, paths = clashes[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_string(paths[0])}"
    else:
        lines: list[str] = []
        for entry, paths in clashes:
            lines.append(f"conflicts with {entry.describe()}:")
            lines.extend(f"- {path_string(p)}" for p in paths)
        message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return Conflict(message, details={"causes": causes})


# -- fast path over stored entries ------------------------------------------------------------------

# The key orders ManagedEntry.to_json writes (time and subresource are optional).
_STORED_ORDERS = frozenset({
    ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"),
    ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"),
    ("manager", "operation", "apiVersion", "fieldsType", "fieldsV1", "subresource"),
    ("manager", "operation", "apiVersion", "fieldsType", "fieldsV1"),
})


def _is_stored_entry(raw: Any) -> bool:
    """An entry as :meth:`ManagedEntry.to_json` writes it (so it re-encodes to itself)."""
    # Exact types (as decoded JSON has them): a subclass only costs the caller the general path.
    return (
        type(raw) is dict
        and tuple(raw) in _STORED_ORDERS
        and raw["fieldsType"] == "FieldsV1"
        and type(raw["manager"]) is str
        and type(raw["operation"]) is str
        and type(raw["apiVersion"]) is str
        and type(raw.get("time", "")) is str
        and (type(raw.get("subresource")) is str and raw["subresource"] != "" if "subresource" in raw else True)
        and type(raw["fieldsV1"]) is dict
        and bool(raw["fieldsV1"])
    )


def _raw_identity(raw: Mapping[str, Any]) -> tuple[str, str, str, str]:
    operation = raw["operation"]
    return (raw["manager"], operation, "" if operation == "Apply" else raw["apiVersion"], raw.get("subresource", ""))


def _raw_sort_key(raw: Mapping[str, Any]) -> tuple[str, str, str, str, str]:
    return (raw["operation"], raw.get("time", ""), raw["manager"], raw["apiVersion"], raw.get("subresource", ""))


def _owns_any(fields_v1: Mapping[str, Any], paths: Iterable[Path]) -> bool:
    """Whether a FieldsV1 tree has any of ``paths`` as a member (a ``{}`` leaf or a ``"."`` node)."""
    for path in paths:
        node: Any = fields_v1
        for element in path:
            node = node.get(element)
            if node is None:
                break
        else:
            if not node or "." in node:
                return True
    return False


def _owns_all(fields_v1: Mapping[str, Any], paths: Iterable[Path]) -> bool:
    """Whether a FieldsV1 tree has every one of ``paths`` as a member."""
    for path in paths:
        node: Any = fields_v1
        for element in path:
            node = node.get(element)
            if node is None:
                return False
        if node and "." not in node:
            return False
    return True


def _fast_update(
    stored: list[dict[str, Any]], comparison: Any, reset: tuple[Path, ...], manager: str, operation: str,
    api_version: str, subresource: str, now: str,
) -> list[dict[str, Any]] | None:
    """:func:`_apply_update` over stored JSON entries, touching only the ones the write affects;
    ``None`` when the Update-manager cap would apply (the caller recomputes in full)."""
    changed = _clean_set(comparison.added | comparison.modified, reset)
    removed = comparison.removed
    touched = changed | removed
    identity = (manager, operation, "" if operation == "Apply" else api_version, subresource)
    result: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    # An entry's FieldsV1 is edited along the touched paths (edit_fields_v1), not decoded and encoded:
    # ``{**raw, "fieldsV1": ...}`` is what ``_replace(entry, remaining).to_json()`` writes for a stored entry.
    for raw in stored:
        if _raw_identity(raw) == identity:
            previous = raw
        elif touched and _owns_any(raw["fieldsV1"], touched):
            remaining = edit_fields_v1(raw["fieldsV1"], remove=touched)
            if remaining:
                result.append({**raw, "fieldsV1": remaining})
        else:
            result.append(raw)
    if changed:
        if previous is not None and _owns_all(previous["fieldsV1"], changed) and not (
                removed and _owns_any(previous["fieldsV1"], removed)):
            fields = previous["fieldsV1"]  # the writer changed fields it owned: the set is the same
        else:
            fields = edit_fields_v1(previous["fieldsV1"] if previous is not None else {}, remove=removed, add=changed)
        entry = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": now,
                 "fieldsType": "FieldsV1", "fieldsV1": fields}
        if subresource:
            entry["subresource"] = subresource
        result.append(entry)
    elif previous is not None:
        if removed and _owns_any(previous["fieldsV1"], removed):
            remaining = edit_fields_v1(previous["fieldsV1"], remove=removed)
            if remaining:
                result.append({**previous, "fieldsV1": remaining})
        else:
            result.append(previous)
    if sum(1 for raw in result if raw["operation"] == "Update") > MAX_UPDATE_MANAGERS:
        return None
    result.sort(key=_raw_sort_key)
    return result
