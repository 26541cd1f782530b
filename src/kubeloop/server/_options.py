"""Request options from the query string (and the DeleteOptions body), validated as upstream does.

Each ``*Options`` is a frozen dataclass built by one ``parse_*`` function that raises the exact
upstream error for bad input: query values that do not convert are 400 BadRequest (the handler's
decoding error); semantic problems are 422 Invalid on kind ``ListOptions``/``CreateOptions``/
``UpdateOptions``/``PatchOptions``/``DeleteOptions`` in group ``meta.k8s.io`` (apimachinery
``pkg/apis/meta/v1/validation`` and ``pkg/apis/meta/internalversion/validation``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubeloop.api import BadRequest, FieldError, ResourceInfo, invalid
from kubeloop.api._selectors import (
    FieldSelector,
    LabelSelector,
    check_field_selector,
    parse_field_selector,
    parse_label_selector,
)
from kubeloop.server._requestinfo import truthy

__all__ = [
    "DeleteOptions",
    "ListOptions",
    "WriteOptions",
    "parse_delete_options",
    "parse_list_options",
    "parse_write_options",
]

META_GROUP = "meta.k8s.io"
FIELD_MANAGER_MAX_LENGTH = 128
Query = dict[str, list[str]]


def _first(query: Query, name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _int(query: Query, name: str) -> int | None:
    raw = _first(query, name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw, 10)
    except ValueError:
        raise BadRequest(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None


def _opt_bool(query: Query, name: str) -> bool | None:
    return truthy(query[name]) if name in query else None


@dataclass(frozen=True, slots=True)
class ListOptions:
    label_selector: LabelSelector = field(default_factory=LabelSelector)
    field_selector: FieldSelector = field(default_factory=FieldSelector)
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    timeout_seconds: int | None = None
    watch: bool = False
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None

    @property
    def filters(self) -> bool:
        return not (self.label_selector.empty and self.field_selector.empty)


def parse_list_options(query: Query, info: ResourceInfo, *, watch: bool) -> ListOptions:
    labels = parse_label_selector(_first(query, "labelSelector"))
    fields = parse_field_selector(_first(query, "fieldSelector"))
    check_field_selector(fields, info.field_selectors, custom=info.custom)
    options = ListOptions(
        label_selector=labels,
        field_selector=fields,
        limit=max(_int(query, "limit") or 0, 0),
        continue_token=_first(query, "continue") or "",
        resource_version=_first(query, "resourceVersion") or "",
        resource_version_match=_first(query, "resourceVersionMatch") or "",
        timeout_seconds=_int(query, "timeoutSeconds"),
        watch=watch,
        allow_watch_bookmarks=truthy(query.get("allowWatchBookmarks")),
        send_initial_events=_opt_bool(query, "sendInitialEvents"),
    )
    errors = _validate_watch(options) if watch else _validate_list(options)
    if errors:
        raise invalid("ListOptions", "", errors, META_GROUP)
    return options


def _validate_list(o: ListOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    match = o.resource_version_match
    if match:
        if not o.resource_version:
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if o.continue_token:
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
        if match not in ("Exact", "NotOlderThan"):
            errs.append(FieldError.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
        if match == "Exact" and o.resource_version == "0":
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if o.send_initial_events is not None:
        errs.append(FieldError.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return errs


def _validate_watch(o: ListOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    match = o.resource_version_match
    if o.send_initial_events is not None and match != "NotOlderThan":
        errs.append(FieldError.forbidden(
            "resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
    if match:
        if o.send_initial_events is None:
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
        if match != "NotOlderThan":
            errs.append(FieldError.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
        if o.continue_token:
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
    return errs


def _dry_run_errors(values: list[str]) -> list[FieldError]:
    if values and any(v != "All" for v in values):
        return [FieldError.not_supported("dryRun", values, ["All"])]
    return []


def _field_manager_errors(manager: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(manager) > FIELD_MANAGER_MAX_LENGTH:
        errs.append(FieldError.too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    for i, ch in enumerate(manager):
        if not ch.isprintable():
            errs.append(FieldError.invalid(
                "fieldManager", manager, f"invalid character U+{ord(ch):04X} (at position {i})"))
    return errs


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """CreateOptions, UpdateOptions and PatchOptions (the fields kubeloop acts on)."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = ""
    force: bool | None = None


def parse_write_options(query: Query, *, kind: str, patch_type: str | None = None) -> WriteOptions:
    """``kind`` is ``CreateOptions``, ``UpdateOptions`` or ``PatchOptions`` (used in the 422 message)."""
    if not query and patch_type != "application/apply-patch+yaml":
        return _NO_WRITE_OPTIONS  # no parameters: the defaults, and nothing to reject (apply needs a manager)
    # Requests with one query string share its (read-only) parse (kubeloop.server._http.query_params), and
    # its options: kubectl sends the same ``fieldManager=...&fieldValidation=Strict`` with every write, whose
    # checks (the manager's characters one by one) cost more than the rest of the parse.
    memo_key = (id(query), kind, patch_type)
    hit = _WRITE_OPTIONS.get(memo_key)
    if hit is not None and hit[0] is query:
        return hit[1]
    options = _write_options(query, kind, patch_type)
    if len(_WRITE_OPTIONS) >= _WRITE_OPTIONS_LIMIT:
        _WRITE_OPTIONS.clear()
    _WRITE_OPTIONS[memo_key] = (query, options)  # the query kept alive: its id names no other dict meanwhile
    return options


_WRITE_OPTIONS: dict[tuple[int, str, str | None], tuple[Query, WriteOptions]] = {}
_WRITE_OPTIONS_LIMIT = 1024


def _write_options(query: Query, kind: str, patch_type: str | None) -> WriteOptions:
    dry_run = query.get("dryRun", [])
    manager = _first(query, "fieldManager") or ""
    validation = _first(query, "fieldValidation") or ""
    force = _opt_bool(query, "force")
    errs: list[FieldError] = []
    if kind == "PatchOptions":
        if patch_type != "application/apply-patch+yaml":
            if force is not None:
                errs.append(FieldError.forbidden("force", "may not be specified for non-apply patch"))
        elif not manager:
            errs.append(FieldError.required("fieldManager", "is required for apply patch"))
    errs.extend(_field_manager_errors(manager))
    errs.extend(_dry_run_errors(dry_run))
    if validation and validation not in ("Ignore", "Warn", "Strict"):
        errs.append(FieldError.not_supported("fieldValidation", validation, ["Ignore", "Warn", "Strict"]))
    if errs:
        raise invalid(kind, "", errs, META_GROUP)
    return WriteOptions(bool(dry_run), manager, validation, force)


_NO_WRITE_OPTIONS = WriteOptions()


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    uid_precondition: str | None = None
    rv_precondition: str | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    dry_run: bool = False


def parse_delete_options(query: Query, body: Any) -> DeleteOptions:
    """DeleteOptions from a JSON body when one was sent, else from the query (Python client)."""
    if body is not None:
        if not isinstance(body, dict):
            raise BadRequest("json: cannot unmarshal non-object into Go value of type v1.DeleteOptions")
        raw = body
    else:
        raw = {}
        if "gracePeriodSeconds" in query:
            raw["gracePeriodSeconds"] = _int(query, "gracePeriodSeconds")
        if "propagationPolicy" in query:
            raw["propagationPolicy"] = _first(query, "propagationPolicy")
        if "orphanDependents" in query:
            raw["orphanDependents"] = truthy(query["orphanDependents"])
        if "dryRun" in query:
            raw["dryRun"] = query["dryRun"]
        preconditions: dict[str, Any] = {}
        if "preconditions.uid" in query:
            preconditions["uid"] = _first(query, "preconditions.uid")
        if "preconditions.resourceVersion" in query:
            preconditions["resourceVersion"] = _first(query, "preconditions.resourceVersion")
        if preconditions:
            raw["preconditions"] = preconditions
    grace = raw.get("gracePeriodSeconds")
    policy = raw.get("propagationPolicy")
    orphan = raw.get("orphanDependents")
    dry_run = raw.get("dryRun") or []
    preconditions_raw = raw.get("preconditions") or {}
    if (
        (grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)))
        or (policy is not None and not isinstance(policy, str))
        or (orphan is not None and not isinstance(orphan, bool))
        or not isinstance(dry_run, list)
        or not all(isinstance(v, str) for v in dry_run)
        or not isinstance(preconditions_raw, dict)
        or any(v is not None and not isinstance(v, str) for v in preconditions_raw.values())
    ):
        raise BadRequest("json: cannot unmarshal the request body into Go value of type v1.DeleteOptions")
    errs: list[FieldError] = []
    if orphan is not None and policy is not None:
        errs.append(FieldError.invalid(
            "propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"))
    if policy is not None and policy not in ("Foreground", "Background", "Orphan"):
        errs.append(FieldError.not_supported(
            "propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"]))
    errs.extend(_dry_run_errors(dry_run))
    if errs:
        raise invalid("DeleteOptions", "", errs, META_GROUP)
    return DeleteOptions(
        grace_period_seconds=max(grace, 1) if isinstance(grace, int) and grace < 0 else grace,
        uid_precondition=preconditions_raw.get("uid"),
        rv_precondition=preconditions_raw.get("resourceVersion"),
        propagation_policy=policy,
        orphan_dependents=orphan,
        dry_run=bool(dry_run),
    )
