"""Create a two-way strategic merge patch (``original`` -> ``modified``), as kubectl does.

Follows apimachinery ``strategicpatch.CreateTwoWayMergePatch`` (``diffMaps``, ``diffLists``) with
``SetElementOrder``: removed keys become ``null``; merging lists of maps produce changed and added
items plus ``{"$patch": "delete", <key>: v}`` for removed ones; merging lists of scalars produce the
added values and a ``$deleteFromPrimitiveList/<field>`` list; both add ``$setElementOrder/<field>``
when content or order changed; fields with the ``retainKeys`` strategy carry ``$retainKeys``;
every other list is replaced whole when it differs. Applying the result with
:func:`~kubeloop.api.apply_strategic_merge_patch` to ``original`` yields ``modified``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import BadRequest
from kubeloop.api._schemas import items_schema, property_schema
from kubeloop.api._strategic import (
    DELETE_PRIMITIVE_PREFIX,
    DIRECTIVE,
    ERR_LIST_OF_LISTS,
    ERR_NO_MERGE_KEY_FOR_MAPS,
    RETAIN_KEYS,
    SET_ORDER_PREFIX,
    deep_copy_json,
    go_format,
    missing_merge_key,
    patch_meta,
)

__all__ = ["create_strategic_merge_patch"]

Schema = Mapping[str, Any] | None


def create_strategic_merge_patch(original: Mapping[str, Any], modified: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    """The strategic merge patch that turns ``original`` into ``modified``."""
    return _diff_maps(deep_copy_json(dict(original)), deep_copy_json(dict(modified)), schema, retain=False)


def _retains(schema: Schema) -> bool:
    return bool(schema) and "retainKeys" in str((schema or {}).get("x-kubernetes-patch-strategy") or "").split(",")


def _diff_maps(original: dict[str, Any], modified: dict[str, Any], schema: Schema, *, retain: bool) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    retain_list: list[str] = []
    for key, new in modified.items():
        if retain and new is not None:
            retain_list.append(key)
        if key not in original:
            patch[key] = new
            continue
        old = original[key]
        if type(old) is not type(new):
            patch[key] = new
            continue
        field = property_schema(schema, key)
        strategy, merge_key = patch_meta(field)
        if isinstance(new, dict):
            if strategy == "replace":
                if old != new:
                    patch[key] = new
                continue
            sub = _diff_maps(old, new, field, retain=_retains(field))
            if sub:
                patch[key] = sub
        elif isinstance(new, list):
            if strategy == "merge":
                _diff_list(key, old, new, items_schema(field), merge_key, patch, retain=_retains(field))
            elif old != new:
                patch[key] = new
        elif old != new:
            patch[key] = new
    for key in original:
        if key not in modified:
            patch[key] = None
    extra = any(v is not None and k not in modified for k, v in original.items())
    if retain_list and (patch or extra):
        patch[RETAIN_KEYS] = sorted(retain_list, key=go_format)
    return patch


def _diff_list(
    key: str, old: list[Any], new: list[Any], item_schema: Schema, merge_key: str, patch: dict[str, Any], *, retain: bool
) -> None:
    if not old:
        if new:
            patch[key] = new
        return
    if any(isinstance(v, list) for v in [*old, *new]):
        raise BadRequest(ERR_LIST_OF_LISTS)
    if isinstance(old[0], dict) or (new and isinstance(new[0], dict)):
        if not merge_key:
            raise BadRequest(ERR_NO_MERGE_KEY_FOR_MAPS)
        for item in [*old, *new]:
            if not isinstance(item, dict) or merge_key not in item:
                raise missing_merge_key(item, merge_key)
        before = {go_format(i[merge_key]): i for i in old}
        after = {go_format(i[merge_key]): i for i in new}
        changes: list[Any] = []
        for item in new:
            name = go_format(item[merge_key])
            if name not in before:
                changes.append(item)
                continue
            sub = _diff_maps(before[name], item, item_schema, retain=retain)
            if sub:
                changes.append({**sub, merge_key: item[merge_key]})
        deletions = [{DIRECTIVE: "delete", merge_key: i[merge_key]} for n, i in sorted(before.items()) if n not in after]
        same_order = [go_format(i[merge_key]) for i in old] == [go_format(i[merge_key]) for i in new]
        items = changes + deletions
        if items:
            patch[key] = items
        if items or not same_order:
            patch[f"{SET_ORDER_PREFIX}/{key}"] = [{merge_key: i[merge_key]} for i in new]
        return
    added = [v for v in new if v not in old]
    removed: list[Any] = []
    for value in old:
        if value not in new and value not in removed:
            removed.append(value)
    if added:
        patch[key] = added
    if removed:
        patch[f"{DELETE_PRIMITIVE_PREFIX}/{key}"] = sorted(removed, key=go_format)
    if removed or old != new:
        patch[f"{SET_ORDER_PREFIX}/{key}"] = new
