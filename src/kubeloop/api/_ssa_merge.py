"""The object side of server-side apply: merging an applied configuration and pruning fields.

:func:`merge_applied` is structured-merge-diff ``TypedValue.Merge`` (``typed/merge.go``): maps and
structs merge key by key, ``listType=map`` lists merge item by item on their keys, ``listType=set``
lists take the union, atomic lists and maps and scalars take the applied value. Item order
follows smd: the applied order for items it names, live-only items kept where they were.
``null`` in the configuration removes the field (a typed decode would drop it).
:func:`keep_map_nulls` puts back the ``null`` values of map entries (``data: {a: null}``): smd keeps a
null as the entry's value, and a built-in kind's conversion from unstructured makes it the element's Go
zero value (``runtime/converter.go`` ``fromUnstructured``), so the key stays.

:func:`remove_paths` deletes fields and list items named by field paths (smd ``RemoveItems``),
used to prune what an applier stopped applying. Neither function mutates its inputs' callers'
data beyond the dict it is given and returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api._errors import BadRequest
from kubeloop.api._fieldpath import Path, is_atomic_map, item_element, list_semantics
from kubeloop.api._schemas import items_schema, property_schema, resolve

__all__ = ["keep_map_nulls", "merge_applied", "remove_paths"]

Schema = Mapping[str, Any] | None


def merge_applied(live: dict[str, Any], config: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """``live`` with ``config`` merged in (both already private copies)."""
    merged = _merge(live, config, resolve(schema))
    return merged if isinstance(merged, dict) else {}


def _merge(live: Any, config: Any, schema: Schema) -> Any:
    if isinstance(live, dict) and isinstance(config, dict) and not is_atomic_map(schema):
        out = dict(live)
        for key, value in config.items():
            if value is None:
                out.pop(key, None)
                continue
            child = property_schema(schema, key)
            out[key] = _merge(live[key], value, child) if key in live else _drop_nulls(value)
        return out
    if isinstance(live, list) and isinstance(config, list):
        semantics, keys = list_semantics(schema)
        if semantics != "atomic":
            return _merge_list(live, config, semantics, keys, items_schema(schema))
    return _drop_nulls(config)


def keep_map_nulls(merged: dict[str, Any], config: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    """``merged`` with every ``null`` value that ``config`` gives a map entry (along struct and map fields,
    not inside lists) set again; the dicts on the way are copied, so ``merged`` may share with live."""
    resolved = resolve(schema)
    out = merged
    for key, value in config.items():
        if type(value) is not dict or not value:
            continue
        child = property_schema(resolved, key)
        if child is None:
            continue
        target = out.get(key)
        if _is_map(child) and not is_atomic_map(child):
            nulls = [k for k, v in value.items() if v is None]
            if nulls:
                entries = dict(target) if isinstance(target, dict) else {}
                for name in nulls:
                    entries[name] = None
                target = entries
        if isinstance(target, dict):
            target = keep_map_nulls(target, value, child)
        if target is not out.get(key):
            if out is merged:
                out = dict(merged)
            out[key] = target
    return out


def _is_map(schema: Schema) -> bool:
    return schema is not None and not schema.get("properties") and isinstance(schema.get("additionalProperties"), Mapping)


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _index(items: list[Any], semantics: str, keys: tuple[str, ...]) -> tuple[list[str], dict[str, Any]]:
    """Every item's path element, in order (repeats included), and the item of each element; an
    element that repeats maps to :data:`_NO_MERGE` (smd ``indexListPathElements`` with duplicates
    allowed: such items are never merged with an applied one)."""
    order: list[str] = []
    seen: dict[str, Any] = {}
    for position, item in enumerate(items):
        element = item_element(item, semantics, keys, position)
        seen[element] = _NO_MERGE if element in seen else item
        order.append(element)
    return order, seen


# What an applied item is merged with when there is nothing to merge it with: no live item under its
# key, or the several items of a live key that repeats (which count as absent): the applied item alone.
_NO_MERGE: Any = object()


def _merge_list(live: list[Any], config: list[Any], semantics: str, keys: tuple[str, ...], item_schema: Schema) -> list[Any]:
    """smd merge of two granular lists, with its interleaving of live-only and applied items.

    A key the live list repeats (smd v4.4, ``typed/merge.go``): left alone, every item stays as it
    is; applied, all of them give way to the one applied item (not merged with any of them)."""
    live_order, live_items = _index(live, semantics, keys)
    config_order, config_items = _index(config, semantics, keys)
    shared = [e for e in config_order if e in live_items]
    shared_iter = iter(shared)
    next_shared = next(shared_iter, None)
    merged: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(live_order) or ri < len(config_order):
        if li < len(live_order) and ri < len(config_order):
            element = live_order[li]
            if element == config_order[ri]:
                merged.add(element)
                out.append(_merged_item(live_items[element], config_items[element], item_schema))
                li += 1
                ri += 1
                next_shared = next(shared_iter, None)
                continue
            if element in config_items and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(live_order):
            element = live_order[li]
            if element not in config_items:
                out.append(live[li])  # each repeated item too, as it is
                li += 1
                continue
            if element in merged:
                li += 1
                continue
        if ri < len(config_order):
            element = config_order[ri]
            merged.add(element)
            out.append(_merged_item(live_items.get(element, _NO_MERGE), config_items[element], item_schema))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = next(shared_iter, None)
        else:
            li += 1
    return out


def _merged_item(live: Any, config: Any, schema: Schema) -> Any:
    """The applied item ``config`` merged with the live item ``live``, or alone (without its nulls)."""
    return _drop_nulls(config) if live is _NO_MERGE else _merge(live, config, schema)


def remove_paths(obj: dict[str, Any], paths: Iterable[Path], schema: Schema) -> dict[str, Any]:
    """``obj`` with every field or list item named by ``paths`` removed.

    Shallow paths go first (removing a node removes what is under it); the key fields of a list
    item that stays are never removed, so the item stays addressable.
    """
    for path in sorted(paths, key=len):
        if path:
            _remove(obj, path, resolve(schema))
    return obj


def _remove(node: Any, path: Path, schema: Schema) -> None:
    element, rest = path[0], path[1:]
    if element.startswith("f:"):
        if not isinstance(node, dict):
            return
        key = element[2:]
        if not rest:
            node.pop(key, None)
        elif key in node:
            _remove(node[key], rest, property_schema(schema, key))
            if node[key] in ({}, []):
                # Emptied by pruning: Go's omitempty would drop it from the stored object too.
                del node[key]
        return
    if not isinstance(node, list):
        return
    semantics, keys = list_semantics(schema)
    kept: list[Any] = []
    for position, item in enumerate(node):  # every item with the element: a live key may repeat
        try:
            matches = item_element(item, semantics, keys, position) == element
        except BadRequest:  # a malformed live item cannot be addressed; leave it
            matches = False
        if matches:
            if not rest:
                continue
            if not (semantics == "map" and len(rest) == 1 and rest[0][2:] in keys):
                _remove(item, rest, items_schema(schema))
        kept.append(item)
    node[:] = kept
