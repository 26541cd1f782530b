"""Strategic merge patch: apply a patch to a built-in object the way kube-apiserver does.

Semantics follow apimachinery ``pkg/util/strategicpatch/patch.go`` (``StrategicMergeMapPatch`` with
``MergeParallelList`` and ``IgnoreUnmatchedNulls``), driven by the schema markers
``x-kubernetes-patch-strategy`` and ``x-kubernetes-patch-merge-key`` instead of Go struct tags:

- maps merge key by key; ``null`` deletes a key; a value of another type replaces;
- lists whose strategy is ``merge`` merge by ``patchMergeKey`` (lists of maps) or as a set
  (lists of scalars, e.g. ``finalizers``); every other list is replaced;
- directives: ``$patch: replace | delete`` on a map, ``{"$patch": "replace"}`` and
  ``{"$patch": "delete", <key>: v}`` inside a merging list, ``$retainKeys``,
  ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``; the resulting order of a
  merged list follows upstream (``$setElementOrder``, then the patch's order, then the live order);
- fields the schema does not know merge like a JSON merge patch (maps recurse, lists replace);
- directives never leak into the result, and ``null`` values inside newly added values are dropped
  (upstream's typed decoding has the same effect).

Errors are :class:`~kubeloop.api.BadRequest` (malformed patch or directive) or
:class:`~kubeloop.api.Invalid` (lists of lists), with upstream's messages. Inputs are not mutated,
but for an object the caller hands over with ``owned=True`` (its private copy: the patch is merged
into it rather than into a deep copy of it, with the same result or error).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kubeloop.api._errors import BadRequest, Invalid
from kubeloop.api._go_json import go_json_kind
from kubeloop.api._schemas import items_schema, property_schema

__all__ = ["apply_strategic_merge_patch", "deep_copy_json", "go_format", "missing_merge_key", "patch_meta"]

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_PRIMITIVE_PREFIX = "$deleteFromPrimitiveList"
SET_ORDER_PREFIX = "$setElementOrder"

# apimachinery pkg/util/mergepatch/errors.go
ERR_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_SET_ORDER = "invalid patch format of setElementOrder list"
ERR_LIST_OF_LISTS = "lists of lists are not supported"
ERR_NO_MERGE_KEY_FOR_MAPS = "cannot merge lists without merge key for type map"

Schema = Mapping[str, Any] | None


def deep_copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, scalars), much cheaper than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: deep_copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy_json(v) for v in value]
    return value


def go_format(value: Any) -> str:
    """Render a JSON value the way Go's ``%v`` prints ``interface{}`` (for upstream's messages)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _go_float(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), as ``%v`` prints a float64: the shortest digits, in exponent
    form below 1e-4 or from 1e6 (a JSON number with a fraction or an exponent decodes to float64)."""
    number = Decimal(repr(abs(value))).normalize()
    _, digit_tuple, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) - 1 + exponent
    sign = "-" if value < 0 else ""
    if number and (point < -4 or point >= 6):
        rest = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{rest}e{'-' if point < 0 else '+'}{abs(point):02d}"
    return sign + format(number, "f")


def missing_merge_key(item: Any, merge_key: str) -> BadRequest:
    """mergepatch.ErrNoMergeKey: a list item without the list's merge key."""
    return BadRequest(f"map: {go_format(item)} does not contain declared merge key: {merge_key}")


def patch_meta(schema: Schema) -> tuple[str, str]:
    """``(strategy, merge_key)`` of a field schema; ``retainKeys`` is dropped from the strategy."""
    if not schema:
        return "", ""
    raw = str(schema.get("x-kubernetes-patch-strategy") or "")
    strategies = [s for s in raw.split(",") if s and s != "retainKeys"]
    return (strategies[0] if strategies else ""), str(schema.get("x-kubernetes-patch-merge-key") or "")


def apply_strategic_merge_patch(obj: Mapping[str, Any], patch: Any, schema: Schema, *,
                                owned: bool = False) -> dict[str, Any]:
    """The object after applying strategic merge ``patch``; ``schema`` is the kind's JSON schema.
    ``owned``: ``obj`` is a dict the caller hands over, merged into in place rather than copied."""
    if not isinstance(patch, dict):
        raise BadRequest(f"json: cannot unmarshal {go_json_kind(patch)} into Go value of type map[string]interface {{}}")
    target = obj if owned and isinstance(obj, dict) else deep_copy_json(dict(obj))
    return _merge_map(target, deep_copy_json(patch), schema)


def _is_directive_key(key: str) -> bool:
    return key in (DIRECTIVE, RETAIN_KEYS) or key.startswith((DELETE_PRIMITIVE_PREFIX + "/", SET_ORDER_PREFIX + "/"))


def _clean(value: Any) -> tuple[Any, bool]:
    """A patch value as stored: nulls dropped, directives removed; ``False`` if it is itself a directive."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None or _is_directive_key(key):
                continue
            cleaned, keep = _clean(item)
            if keep:
                out[key] = cleaned
        return out, True
    if isinstance(value, list):
        items = [_clean(v) for v in value]
        return [v for v, keep in items if keep], True
    return value, True


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Schema) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            del patch[DIRECTIVE]
            return dict(_clean(patch)[0])
        if directive == "delete":
            return {}
        raise BadRequest(f"unknown patch type: {go_format(directive)} in map: {go_format(patch)}")
    _apply_retain_keys(original, patch)
    _apply_set_element_order(original, patch, schema)
    for raw_key, patch_value in list(patch.items()):
        key, is_delete_list = raw_key, False
        if raw_key.startswith(DELETE_PRIMITIVE_PREFIX):
            key, is_delete_list = _strip_prefix(raw_key, DELETE_PRIMITIVE_PREFIX, ERR_PRIMITIVE_LIST), True
        if patch_value is None:
            original.pop(key, None)
            continue
        if key not in original or type(original[key]) is not type(patch_value):
            if not is_delete_list:
                cleaned, keep = _clean(patch_value)
                if keep:
                    original[key] = cleaned
                else:
                    original.pop(key, None)
            continue
        current = original[key]
        field = property_schema(schema, key)
        strategy, merge_key = patch_meta(field)
        if isinstance(current, dict):
            if strategy == "replace":
                original[key] = _clean(patch_value)[0]
            else:
                original[key] = _merge_map(current, patch_value, field)
        elif isinstance(current, list):
            if is_delete_list:
                if not isinstance(patch_value, list):
                    raise BadRequest(ERR_PRIMITIVE_LIST)
                original[key] = [v for v in current if v not in patch_value]
            elif strategy == "merge":
                original[key] = _merge_list(current, patch_value, items_schema(field), merge_key)
            else:
                original[key] = _clean(patch_value)[0]
        else:
            original[key] = patch_value
    return original


def _strip_prefix(key: str, prefix: str, error: str) -> str:
    head, sep, tail = key.partition("/")
    if head != prefix or not sep:
        raise BadRequest(error)
    return tail


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise BadRequest(ERR_RETAIN_KEYS)
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_PRIMITIVE_PREFIX, SET_ORDER_PREFIX)):
            continue
        if key not in retain:
            raise BadRequest(ERR_RETAIN_KEYS)
    for key in list(original):
        if key not in retain:
            del original[key]


def _element_kind(*lists: list[Any]) -> type | None:
    """The common element type (dict or a scalar type) of the lists; errors as upstream."""
    found: type | None = None
    for items in lists:
        for item in items:
            kind = type(item)
            if kind is list:
                raise Invalid(ERR_LIST_OF_LISTS)
            if kind in (int, float):
                kind = float  # JSON numbers compare as one type
            if found is None:
                found = kind
            elif found is not kind:
                raise BadRequest(f"list element types are not identical: {go_format(list(lists))}")
    return found


def _merge_list(original: list[Any], patch: Any, item_schema: Schema, merge_key: str) -> list[Any]:
    if not isinstance(patch, list):
        raise BadRequest(f"expected a []interface {{}}, but received a {go_json_kind(patch)}")
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind is not dict:
        merged: list[Any] = []
        for item in [*original, *patch]:
            if item not in merged:
                merged.append(item)
        return _normalize_order(merged, patch, original, "")
    if not merge_key:
        raise BadRequest(ERR_NO_MERGE_KEY_FOR_MAPS)
    original, patch = _merge_special_elements(list(original), patch, merge_key)
    # Upstream orders against the live list as it was before new items were appended, so an item
    # only in the patch lands before the server-only items (patch.go mergeSlice/mergeSortedSlice).
    server_order = list(original)
    for item in patch:
        if merge_key not in item:
            raise missing_merge_key(item, merge_key)
        index = _find(original, merge_key, item[merge_key])
        if index >= 0:
            original[index] = _merge_map(original[index], item, item_schema)
        else:
            cleaned, keep = _clean(item)
            if keep:
                original.append(cleaned)
    return _normalize_order(original, patch, server_order, merge_key)


def _merge_special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise missing_merge_key(item, merge_key)
            original = [o for o in original if not (isinstance(o, dict) and o.get(merge_key, _MISSING) == item[merge_key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise BadRequest("merging lists cannot yet be specified in the patch")
        else:
            raise BadRequest(f"unknown patch type: {go_format(directive)} in map: {go_format(item)}")
    if replace:
        return [c for c, keep in (_clean(p) for p in plain) if keep], []
    return original, plain


_MISSING = object()


def _find(items: list[Any], merge_key: str, value: Any) -> int:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise BadRequest(f"value for key {index} is not a map.")
        if item.get(merge_key, _MISSING) == value:
            return index
    return -1


def _identity(item: Any, merge_key: str) -> Any:
    return item.get(merge_key, _MISSING) if merge_key and isinstance(item, dict) else item


def _index_of(order: list[Any], item: Any, merge_key: str) -> int:
    wanted = _identity(item, merge_key)
    for index, candidate in enumerate(order):
        if _identity(candidate, merge_key) == wanted:
            return index
    return -1


def _normalize_order(merged: list[Any], patch_order: list[Any], server_order: list[Any], merge_key: str) -> list[Any]:
    """Upstream ``normalizeElementOrder``: patch items in patch order, interleaved with server-only items."""
    server_order = list(server_order)
    in_patch = [m for m in merged if _index_of(patch_order, m, merge_key) >= 0]
    server_only = [m for m in merged if _index_of(patch_order, m, merge_key) < 0]
    in_patch.sort(key=lambda m: _index_of(patch_order, m, merge_key))
    server_only.sort(key=lambda m: _sort_position(server_order, m, merge_key))
    result: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(in_patch):
        if i >= len(server_only):
            result.append(in_patch[j])
            j += 1
        elif j >= len(in_patch):
            result.append(server_only[i])
            i += 1
        else:
            left = _index_of(server_order, server_only[i], merge_key)
            right = _index_of(server_order, in_patch[j], merge_key)
            if left >= 0 and right >= 0 and left < right:
                result.append(server_only[i])
                i += 1
            else:
                result.append(in_patch[j])
                j += 1
    return result


def _sort_position(order: list[Any], item: Any, merge_key: str) -> int:
    index = _index_of(order, item, merge_key)
    return index if index >= 0 else len(order)


def _apply_set_element_order(original: dict[str, Any], patch: dict[str, Any], schema: Schema) -> None:
    for raw_key in [k for k in patch if k.startswith(SET_ORDER_PREFIX)]:
        order = patch.pop(raw_key)
        key = _strip_prefix(raw_key, SET_ORDER_PREFIX, ERR_SET_ORDER)
        if not isinstance(order, list):
            raise BadRequest(ERR_SET_ORDER)
        field = property_schema(schema, key)
        strategy, merge_key = patch_meta(field)
        found_original, found_patch = key in original, key in patch
        if not found_original and not found_patch:
            continue
        current = original.get(key) if found_original else []
        patch_list = patch.get(key) if found_patch else []
        if not isinstance(current, list) or not isinstance(patch_list, list):
            raise BadRequest(ERR_SET_ORDER)
        if merge_key:
            for item in [*order, *current]:
                if not isinstance(item, dict) or merge_key not in item:
                    raise missing_merge_key(item, merge_key)
        _check_order_consistent(patch_list, order, merge_key)
        if found_original and found_patch:
            if strategy == "merge":
                merged = _merge_list(current, patch_list, items_schema(field), merge_key)
            else:
                merged = _clean(patch_list)[0]
        elif found_patch:
            merged = _clean(patch_list)[0]
        else:
            merged = current
        original[key] = _normalize_order(merged, order, current, merge_key)
        patch.pop(key, None)


def _check_order_consistent(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Upstream ``validatePatchWithSetOrderList``: patch items appear in ``order``, in the same order."""
    items = [p for p in patch_list if not (isinstance(p, dict) and p.get(DIRECTIVE) == "delete")] if merge_key else patch_list
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], dict) and DIRECTIVE in items[p]:
            p += 1
            continue
        if _identity(items[p], merge_key) == _identity(order[s], merge_key):
            p += 1
        s += 1
    if p < len(items):
        raise BadRequest(
            f"The order in patch list:\n{go_format(patch_list)}\n doesn't match {SET_ORDER_PREFIX} list:\n{go_format(order)}\n"
        )
