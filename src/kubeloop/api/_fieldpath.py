"""Field paths and sets for server-side apply, and their FieldsV1 JSON form.

Models structured-merge-diff (smd) ``fieldpath`` and the parts of ``typed`` that managedFields
need, over plain JSON dicts and a JSON schema (built-in or a CRD's ``openAPIV3Schema``):

- A path element is kept in its FieldsV1 spelling: ``f:<name>`` (struct field or map key),
  ``k:<sorted JSON of key fields>`` (item of a ``listType=map`` list), ``v:<JSON value>`` (item of
  a ``listType=set`` list), ``i:<index>``. A :data:`Path` is a tuple of them; a :data:`FieldSet`
  is a frozenset of paths.
- :func:`fields_v1` / :func:`parse_fields_v1` convert a set to and from FieldsV1 (keys sorted
  ``f:`` < ``k:`` < ``v:`` < ``i:``, ``"."`` first when a node is itself a member); they round-trip.
- List semantics come from ``x-kubernetes-list-type`` / ``-list-map-keys`` (falling back to the
  patch markers, as kube-openapi's schema conversion does); ``x-kubernetes-map-type: atomic``
  makes a map one leaf. Without a schema, lists are atomic and maps granular (smd deduced type).
- :func:`to_field_set` is smd ``ToFieldSet`` (what an applied configuration owns);
  :func:`compare` is smd ``Compare`` (added / removed / modified paths between two objects).
- :func:`path_string` renders a path the way conflict messages print it (``.spec.replicas``,
  ``.spec.containers[name="nginx"].image``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from kubeloop.api._errors import BadRequest
from kubeloop.api._schemas import items_schema, property_schema, resolve
from kubeloop.api._strategic import patch_meta

__all__ = [
    "Duplicates",
    "FieldSet",
    "Path",
    "compare",
    "created_fields_v1",
    "created_tree",
    "duplicate_entries",
    "edit_fields_v1",
    "fields_v1",
    "is_atomic_map",
    "item_element",
    "list_semantics",
    "parse_fields_v1",
    "path_string",
    "to_field_set",
    "unowned_tree",
]

Path = tuple[str, ...]
FieldSet = frozenset[Path]
Schema = Mapping[str, Any] | None

# Key fields that upstream fills from the schema default when an item omits them (smd
# complete_keys); the installed schemas carry no defaults, and protocol is the one that matters.
_KEY_DEFAULTS = {"protocol": "TCP"}
_ORDER = {"f": 0, "k": 1, "v": 2, "i": 3}


def _dumps(value: Any) -> str:
    if type(value) is dict and all(type(v) is str or type(v) is int for v in value.values()):
        # orjson writes strings and integers exactly as json.dumps does here (compact, UTF-8), faster.
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def list_semantics(schema: Schema) -> tuple[str, tuple[str, ...]]:
    """``("map", keys)``, ``("set", ())`` or ``("atomic", ())`` for a list field's schema."""
    if not schema:
        return "atomic", ()
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        return "map", tuple(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
    if list_type in ("set", "atomic"):
        return str(list_type), ()
    strategy, merge_key = patch_meta(schema)
    if strategy == "merge":
        return ("map", (merge_key,)) if merge_key else ("set", ())
    return "atomic", ()


def is_atomic_map(schema: Schema) -> bool:
    """Whether a map field's schema makes the whole map one leaf (``x-kubernetes-map-type: atomic``)."""
    resolved = resolve(schema)
    return resolved is not None and resolved.get("x-kubernetes-map-type") == "atomic"


def item_element(item: Any, semantics: str, keys: tuple[str, ...], index: int) -> str:
    """The path element of one list item under the list's semantics."""
    if semantics == "map" and keys:
        if not isinstance(item, dict):
            raise BadRequest(f"associative list with keys has an element that is not a map (element {index})")
        fields = {}
        for key in keys:
            if key in item:
                fields[key] = item[key]
            elif key in _KEY_DEFAULTS:
                fields[key] = _KEY_DEFAULTS[key]
        if not fields:
            raise BadRequest(f"associative list with keys has an element that omits all key fields {list(keys)}")
        return "k:" + _dumps(fields)
    if semantics == "set":
        return "v:" + _dumps(item)
    return f"i:{index}"


class Duplicates:
    """The items of a granular list that share one path element (two or more, in list order).

    smd v4.4 (``typed/compare.go``, ``tofieldset.go``; k8s 1.29+) lets the live object hold them (a
    create or update may write them; an apply may not): such a key is one atomic leaf, owned as
    the bare key path, never field by field, and compared as the whole run of items (two are equal
    when their items are). Being neither a dict nor a list, it reads as a leaf to every walk that
    does not look for it. (A plain class rather than a tuple subclass: the compiled build's mypyc
    cannot subclass built-in types.)"""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = tuple(items)

    def __eq__(self, other: object) -> bool:
        return type(other) is Duplicates and self.items == other.items

    def __hash__(self) -> int:
        return hash(len(self.items))

    def __repr__(self) -> str:
        return f"Duplicates({list(self.items)!r})"


def _list_items(value: list[Any], schema: Schema, shape: _Shape | None = None) -> dict[str, Any]:
    """Items of a granular list by path element; a repeated element maps to its :class:`Duplicates`."""
    semantics, keys = (shape.semantics, shape.keys) if shape is not None else list_semantics(schema)
    out: dict[str, Any] = {}
    for index, item in enumerate(value):
        out.setdefault(item_element(item, semantics, keys, index), item)
    if len(out) < len(value):  # some element repeats: rare, and only then paid for
        runs: dict[str, list[Any]] = {}
        for index, item in enumerate(value):
            runs.setdefault(item_element(item, semantics, keys, index), []).append(item)
        for element, run in runs.items():
            if len(run) > 1:
                out[element] = Duplicates(run)
    return out


def duplicate_entries(value: Any, schema: Schema, path: Path = ()) -> list[str]:
    """smd's validation of an applied configuration (``typed/validate.go``, without ``AllowDuplicates``):
    ``<list path>: duplicate entries for key <key>`` for every item of a ``listType=map`` or ``set``
    list whose path element an earlier item has, in upstream's walk order (map fields sorted by
    name, items in order); ``path`` is where ``value`` sits. Items whose element cannot be made are
    left to :func:`item_element`'s callers."""
    out: list[str] = []
    _duplicates(value, _shape(resolve(schema)), path, out)
    return out


def _duplicates(value: Any, shape: _Shape, path: Path, out: list[str]) -> None:
    if type(value) is dict:
        for key in sorted(value):
            child = value[key]
            if type(child) is dict or type(child) is list:
                _duplicates(child, shape.kid(key)[0], (*path, "f:" + key), out)
    elif type(value) is list:
        item_shape = shape.item_kid()
        seen: set[str] = set()
        for index, item in enumerate(value):
            if shape.semantics == "atomic":
                element = f"i:{index}"
            else:
                try:
                    element = item_element(item, shape.semantics, shape.keys, index)
                except BadRequest:
                    continue
                if element in seen:
                    out.append(f"{path_string(path)}: duplicate entries for key {path_string((element,))}")
                seen.add(element)
            if type(item) is dict or type(item) is list:
                _duplicates(item, item_shape, (*path, element), out)


def to_field_set(value: Any, schema: Schema) -> FieldSet:
    """The set of fields an applied configuration specifies (smd ``typed/tofieldset.go``)."""
    out: set[Path] = set()
    _walk_set(value, resolve(schema), (), out)
    return frozenset(out)


def _walk_set(value: Any, schema: Schema, path: Path, out: set[Path]) -> None:
    if isinstance(value, dict):
        shape = _shape(schema)
        if shape.atomic_map:
            out.add(path)
            return
        for key, child in value.items():
            child_path = (*path, "f:" + key)
            child_schema, _ = shape.child(key)
            _walk_set(child, child_schema, child_path, out)
            if child is None or (isinstance(child, dict) and not child) or key not in shape.children:
                out.add(child_path)  # shape.children holds exactly the declared fields seen
    elif isinstance(value, list):
        shape = _shape(schema)
        if shape.semantics == "atomic":
            out.add(path)
            return
        for element, item in _list_items(value, schema, shape).items():
            item_path = (*path, element)
            _walk_set(item, shape.items, item_path, out)
            out.add(item_path)
    elif value is not None:
        out.add(path)


_ABSENT: Any = object()
# The types of JSON scalars but null (exactly): a value of one of them is a leaf whatever the value
# on the other side is, where a null next to a map or list stands for an empty one.
_LEAVES = frozenset({str, int, float, bool})


class Comparison:
    """Paths added, removed and modified going from one object to another (smd ``Comparison``)."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:  # a plain class: a dataclass's default factories cost more per update
        self.added: set[Path] = set()
        self.removed: set[Path] = set()
        self.modified: set[Path] = set()


def compare(old: Any, new: Any, schema: Schema) -> Comparison:
    """smd ``TypedValue.Compare``: leaves that changed, plus non-leaf nodes that appeared or vanished.

    A non-leaf node that appears is recorded (``"."`` in FieldsV1) unless it is a declared struct
    field or a required field: upstream compares against a typed zero object, where those exist.
    """
    result = Comparison()
    _compare(old, new, _shape(resolve(schema)), (), result, True)
    return result


def _empty(value: Any) -> bool:
    return value is _ABSENT or value is None or (isinstance(value, (dict, list)) and not value)


def _leaf(old: Any, new: Any, path: Path, result: Comparison) -> None:
    if old is _ABSENT:
        result.added.add(path)
    elif new is _ABSENT:
        result.removed.add(path)
    elif old != new:
        result.modified.add(path)


class _Shape:
    """What :func:`_compare` needs of one resolved schema node, worked out once per node."""

    __slots__ = ("atomic_map", "children", "declared", "extra", "extra_kid", "items", "items_kid", "keys", "kids",
                 "required", "schema", "semantics")

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.atomic_map = is_atomic_map(schema)
        self.semantics, self.keys = list_semantics(schema)
        self.items = items_schema(schema)
        resolved = resolve(schema)
        self.required = frozenset(resolved.get("required") or ()) if resolved else frozenset()
        properties = resolved.get("properties") if resolved else None
        self.declared = frozenset(properties) if isinstance(properties, dict) else frozenset()
        self.extra: tuple[Schema, bool] = (property_schema(schema, _UNDECLARED), False)
        self.children: dict[str, tuple[Schema, bool]] = {}
        # The same answers as shapes, for the create walk (filled on first use).
        self.kids: dict[str, tuple[_Shape, bool]] = {}
        self.extra_kid: tuple[_Shape, bool] | None = None
        self.items_kid: _Shape | None = None

    def child(self, key: str) -> tuple[Schema, bool]:
        """(schema, struct-like) of field ``key``: declared fields are remembered, map keys share one."""
        hit = self.children.get(key)
        if hit is not None:
            return hit
        if key not in self.declared:  # the node's own properties, known once (map keys are never)
            return self.extra
        child_schema = property_schema(self.schema, key)
        struct = key in self.required or bool(child_schema and isinstance(child_schema.get("properties"), dict))
        hit = self.children[key] = (child_schema, struct)
        return hit

    def kid(self, key: str) -> tuple[_Shape, bool]:
        """:meth:`child` with the schema's shape."""
        hit = self.kids.get(key)
        if hit is not None:
            return hit
        if key in self.declared:
            schema, struct = self.child(key)
            hit = self.kids[key] = (_shape(schema), struct)
            return hit
        if self.extra_kid is None:
            self.extra_kid = (_shape(self.extra[0]), False)
        return self.extra_kid

    def item_kid(self) -> _Shape:
        """The shape of the items of a list field."""
        if self.items_kid is None:
            self.items_kid = _shape(self.items)
        return self.items_kid


# A key no schema declares (NUL cannot appear in a field name the server accepts).
_UNDECLARED = "\x00"
_NO_SCHEMA = _Shape(None)
# Shapes by schema identity (schemas are shared and never mutated); the node is kept in the shape
# so that an id reused after garbage collection is never mistaken for it.
_shapes: dict[int, _Shape] = {}


def _shape(schema: Schema) -> _Shape:
    if schema is None:
        return _NO_SCHEMA
    hit = _shapes.get(id(schema))
    if hit is not None and hit.schema is schema:
        return hit
    if len(_shapes) > 100_000:  # CRD schemas come and go; never grow without bound
        _shapes.clear()
    hit = _shapes[id(schema)] = _Shape(schema)
    return hit


def _compare(old: Any, new: Any, shape: _Shape, path: Path, result: Comparison, struct_like: bool) -> None:
    """The comparison of ``old`` and ``new`` at ``path``, whose schema node is ``shape``."""
    if type(old) is dict and type(new) is dict and old and new and not shape.atomic_map:
        # Two non-empty maps, the common case: no leaf here, and the node neither appears nor goes.
        _compare_maps(old, new, shape, path, result)
        return
    if old is _ABSENT:
        _added(new, shape.schema, path, result.added, struct_like)
        return
    if old == new:
        # Equal values add, remove and modify nothing below them (``==`` is the leaf test too);
        # most of an update is unchanged, so this skips walking it.
        return
    sample = new if new is not _ABSENT and new is not None else old
    old_none = old is _ABSENT or old is None
    new_none = new is _ABSENT or new is None
    if isinstance(sample, dict) and (old_none or isinstance(old, dict)) and (new_none or isinstance(new, dict)):
        if shape.atomic_map or (_empty(old) and _empty(new)):
            _leaf(old, new, path, result)
            return
        _compare_maps(old if isinstance(old, dict) else {}, new if isinstance(new, dict) else {}, shape, path, result)
    elif isinstance(sample, list) and (old_none or isinstance(old, list)) and (new_none or isinstance(new, list)):
        if shape.semantics == "atomic" or (_empty(old) and _empty(new)):
            _leaf(old, new, path, result)
            return
        left = _list_items(old, shape.schema, shape) if isinstance(old, list) else {}
        right = _list_items(new, shape.schema, shape) if isinstance(new, list) else {}
        item_shape = shape.item_kid()
        for element in dict.fromkeys([*left, *right]) if left else right:
            before, after = left.get(element, _ABSENT), right.get(element, _ABSENT)
            if before != after:  # an equal item changes nothing (_compare's first test, without the call)
                if type(before) is Duplicates or type(after) is Duplicates:
                    _compare_duplicates(before, after, item_shape, (*path, element), result)
                else:
                    _compare(before, after, item_shape, (*path, element), result, False)
    else:
        _leaf(old, new, path, result)
        return
    if path and not struct_like:
        if old is _ABSENT:
            result.added.add(path)
        elif new is _ABSENT:
            result.removed.add(path)


def _compare_duplicates(before: Any, after: Any, shape: _Shape, path: Path, result: Comparison) -> None:
    """smd v4.4 ``compareWalker.visitListItems`` for a key repeated on either side (they differ):
    repeated on both, the key is modified; a key that comes to repeat is added as a whole and the
    single item it was is removed (field by field), and the reverse when it stops repeating."""
    if type(before) is Duplicates and type(after) is Duplicates:
        result.modified.add(path)
        return
    if type(before) is Duplicates:
        if after is not _ABSENT:
            _compare(_ABSENT, after, shape, path, result, False)
        result.removed.add(path)
    else:
        if before is not _ABSENT:
            _compare(before, _ABSENT, shape, path, result, False)
        result.added.add(path)


def _compare_maps(left: dict[str, Any], right: dict[str, Any], shape: _Shape, path: Path, result: Comparison) -> None:
    """:func:`_compare` of the fields of two maps: ``left``'s fields, then those only ``right`` has (two
    loops rather than one over ``dict.fromkeys([*left, *right])``, which costs more than the walk)."""
    kids = shape.kids
    for key, before in left.items():
        after = right.get(key, _ABSENT)
        # The cases _compare would settle first, settled here without the call: most fields of an
        # update are equal, and most that differ are scalars.
        if before == after:
            continue
        if type(before) in _LEAVES:
            if after is _ABSENT:
                result.removed.add((*path, "f:" + key))
                continue
            if type(after) in _LEAVES:
                result.modified.add((*path, "f:" + key))
                continue
        kid, struct = kids.get(key) or shape.kid(key)
        _compare(before, after, kid, (*path, "f:" + key), result, struct)
    if not left.keys() >= right.keys():  # some field only ``right`` has
        for key, after in right.items():
            if key in left:
                continue
            if type(after) in _LEAVES:
                result.added.add((*path, "f:" + key))
                continue
            kid, struct = kids.get(key) or shape.kid(key)
            _compare(_ABSENT, after, kid, (*path, "f:" + key), result, struct)


def _added(new: Any, schema: Schema, path: Path, added: set[Path], struct_like: bool) -> None:
    """``_compare(_ABSENT, new, ...)``: everything under a value that appeared is added."""
    if isinstance(new, dict):
        shape = _shape(schema)
        if shape.atomic_map or not new:
            added.add(path)
            return
        for key, value in new.items():
            child_schema, child_struct = shape.child(key)
            _added(value, child_schema, (*path, "f:" + key), added, child_struct)
    elif isinstance(new, list):
        shape = _shape(schema)
        if shape.semantics == "atomic" or not new:
            added.add(path)
            return
        for element, item in _list_items(new, schema, shape).items():
            _added(item, shape.items, (*path, element), added, False)
    else:
        added.add(path)
        return
    if path and not struct_like:
        added.add(path)


def created_fields_v1(value: Mapping[str, Any], schema: Schema, *, unowned: frozenset[Path],
                      skip: frozenset[str]) -> dict[str, Any] | None:
    """``fields_v1`` of ``compare({}, value, schema).added`` without the paths in ``unowned`` and
    without the top-level fields in ``skip`` (elements such as ``"f:status"``), built in one walk
    without materialising the paths: what a create's single managedFields entry owns. ``None``
    when the schema makes the root one atomic leaf (the caller then takes the general path).

    ``unowned`` is followed as a tree of path elements (:class:`_Unowned`), so only the subtrees
    it reaches into pay for the membership test; below them every node is owned."""
    return created_tree(value, schema, _unowned_tree(unowned, skip))


def unowned_tree(unowned: frozenset[Path], skip: frozenset[str]) -> _Unowned:
    """``unowned`` and ``skip`` prepared once for :func:`created_tree` (a caller with constant sets
    keeps the answer)."""
    return _unowned_tree(unowned, skip)


def created_tree(value: Mapping[str, Any], schema: Schema, tree: _Unowned) -> dict[str, Any] | None:
    """:func:`created_fields_v1` with its sets prepared by :func:`unowned_tree`: positional, for
    the per-create hot path."""
    hit = _root_shapes.get(id(schema))
    shape = hit[1] if hit is not None and hit[0] is schema else _root_shape(schema)
    if shape.atomic_map or not value:
        return None
    return _created_fields(value, shape, tree)


# The shape of each root schema as given (before resolving), by identity as _shapes: a create asks
# for the same few.
_root_shapes: dict[int, tuple[Schema, _Shape]] = {}


def _root_shape(schema: Schema) -> _Shape:
    shape = _shape(resolve(schema))
    if len(_root_shapes) > 10_000:  # CRD schemas come and go; never grow without bound
        _root_shapes.clear()
    _root_shapes[id(schema)] = (schema, shape)
    return shape


def _created_fields(value: Mapping[str, Any], shape: _Shape, below: _Unowned) -> dict[str, Any]:
    """The ``f:`` children :func:`_created` gives the non-empty, non-atomic map ``value`` with the
    unowned paths ``below`` under it (and without the fields ``below`` skips)."""
    fields, dropped, skipped, kids = below.fields, below.dropped, below.skipped, shape.kids
    children: dict[str, Any] = {}
    node: dict[str, Any] | None
    # In the body's order, sorted at the end: most fields of an object (apiVersion, kind, the server's
    # metadata) own nothing, and sorting the few children costs less than sorting every key.
    for key, item in value.items():
        if not isinstance(item, (dict, list)):
            if key not in dropped:
                children["f:" + key] = {}
            continue
        if key in skipped:
            continue
        kid, struct = kids.get(key) or shape.kid(key)
        entry = fields.get(key)
        if entry is None:
            node = _owned(item, kid, struct)
        elif entry[1] is not None and not kid.atomic_map and _all_inert(item, entry[1]):
            node = {} if entry[0] and not struct else None  # metadata with only server-set fields
        else:
            node = _created(item, kid, struct, entry[0], entry[1])
        if node is not None:
            children["f:" + key] = node
    if len(children) > 1:  # "f:" + key sorts as key does
        return {element: children[element] for element in sorted(children)}
    return children


# The types of JSON scalars (exactly: a subclass of dict or list is not among them).
_SCALARS = frozenset({str, int, float, bool, type(None)})
_NO_FIELDS: frozenset[str] = frozenset()


def _all_inert(value: Any, below: _Unowned) -> bool:
    """Whether ``value`` is a non-empty map of scalars whose fields are all inert under ``below``
    (then :func:`_created` finds no child to own); a plain loop over a few fields."""
    if type(value) is not dict or not value:
        return False
    inert = below.inert
    for key, item in value.items():  # noqa: SIM110 - cheaper than a generator or building sets
        if key not in inert or type(item) not in _SCALARS:
            return False
    return True


class _Unowned:
    """The unowned paths below one node, by path element: ``fields`` for ``f:`` elements (by field
    name), ``others`` for list items; each maps to (whether the path there is a member, the
    :class:`_Unowned` below it or ``None``). ``inert`` names the fields that are not members and
    have nothing unowned below them: a scalar there is simply left out. ``skipped`` names fields
    left out whatever they hold (the reset fields, at the root); ``dropped`` every field whose
    scalar value is left out: the skipped ones and those whose path is not a member."""

    __slots__ = ("dropped", "fields", "inert", "others", "skipped")

    def __init__(self, unowned: frozenset[Path], prefix: Path, skipped: frozenset[str] = _NO_FIELDS) -> None:
        depth = len(prefix)
        heads = sorted({p[depth] for p in unowned if len(p) > depth and p[:depth] == prefix})
        self.fields: dict[str, tuple[bool, _Unowned | None]] = {}
        self.others: dict[str, tuple[bool, _Unowned | None]] = {}
        inert: list[str] = []
        for head in heads:
            path = (*prefix, head)
            deeper = any(len(p) > depth + 1 and p[: depth + 1] == path for p in unowned)
            entry = (path not in unowned, _Unowned(unowned, path) if deeper else None)
            if head.startswith("f:"):
                self.fields[head[2:]] = entry
                if entry == (False, None):
                    inert.append(head[2:])
            else:
                self.others[head] = entry
        self.inert = frozenset(inert)
        self.skipped = skipped
        self.dropped = skipped | {name for name, (member, _) in self.fields.items() if not member}


_unowned_trees: dict[tuple[int, int], tuple[frozenset[Path], frozenset[str], _Unowned]] = {}


def _unowned_tree(unowned: frozenset[Path], skip: frozenset[str]) -> _Unowned:
    """``unowned`` as a tree skipping the top-level elements ``skip``, by identity (callers pass the
    same few constant sets)."""
    hit = _unowned_trees.get((id(unowned), id(skip)))
    if hit is not None and hit[0] is unowned and hit[1] is skip:
        return hit[2]
    tree = _Unowned(unowned, (), frozenset(element[2:] for element in skip if element.startswith("f:")))
    if len(_unowned_trees) > 64:
        _unowned_trees.clear()
    _unowned_trees[(id(unowned), id(skip))] = (unowned, skip, tree)
    return tree


def _created(value: dict[str, Any] | list[Any], shape: _Shape, struct_like: bool, member: bool,
             below: _Unowned | None) -> dict[str, Any] | None:
    """The FieldsV1 node, for :func:`_added` of the non-scalar ``value``, of a path that is a member
    or not (``member``) and has the unowned paths ``below`` under it: ``{}`` for a member leaf, the
    children (with ``"."`` first when the path is itself a member), ``None`` when nothing is owned."""
    if below is None:
        if member:
            return _owned(value, shape, struct_like)
        return _owned(value, shape, True) or None
    children: dict[str, Any] = {}
    node: dict[str, Any] | None
    if isinstance(value, dict):
        if shape.atomic_map or not value:
            return {} if member else None
        children = _created_fields(value, shape, below)
    else:
        if shape.semantics == "atomic" or not value:
            return {} if member else None
        items = _list_items(value, shape.schema, shape)
        item_shape = shape.item_kid()
        others = below.others
        for element in sorted(items):
            item = items[element]
            entry = others.get(element)
            child_member, child_below = (True, None) if entry is None else entry
            if isinstance(item, (dict, list)):
                node = _created(item, item_shape, False, child_member, child_below)
            else:
                node = {} if child_member else None
            if node is not None:
                children[element] = node
    if not struct_like and member:
        return {".": {}, **children} if children else {}
    return children or None


def _owned(value: dict[str, Any] | list[Any], shape: _Shape, struct_like: bool) -> dict[str, Any]:
    """:func:`_created` of a member path with no unowned path below it (the common case: all of
    ``spec``, ``data``, labels ...): no membership tests, scalars written in place."""
    # A non-empty map or list owns one child per field or item, so ``"."`` (when the node is itself
    # a member, not a struct's field) goes in first and the children follow in order: one pass.
    if isinstance(value, dict):
        if shape.atomic_map or not value:
            return {}
        children: dict[str, Any] = {} if struct_like else {".": {}}
        kids = shape.kids
        for key in sorted(value):
            item = value[key]
            if isinstance(item, (dict, list)):
                kid, struct = kids.get(key) or shape.kid(key)
                children["f:" + key] = _owned(item, kid, struct)
            else:
                children["f:" + key] = {}
        return children
    if shape.semantics == "atomic" or not value:
        return {}
    items = _list_items(value, shape.schema, shape)
    item_shape = shape.item_kid()
    children = {} if struct_like else {".": {}}
    for element in sorted(items):
        item = items[element]
        children[element] = _owned(item, item_shape, False) if isinstance(item, (dict, list)) else {}
    return children


def _reorder(node: dict[str, Any]) -> dict[str, Any]:
    """``node``'s elements in FieldsV1 order (``f:`` < ``k:`` < ``v:`` < ``i:``, as :func:`_ordered`)."""
    elements = sorted(node)
    if elements and elements[-1][0] in "kv":
        elements.sort(key=_sort_key)
    return {element: node[element] for element in elements}


def _sort_key(element: str) -> tuple[int, str]:
    return _ORDER.get(element[:1], 4), element


def fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """Encode a field set as a FieldsV1 JSON object (members are ``{}`` leaves or ``"."``)."""
    tree: dict[str, Any] = {}
    members: set[Path] = set()
    for path in fields:
        if not path:
            continue
        members.add(path)
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return _ordered(tree, (), members) if tree else {}


def _ordered(node: dict[str, Any], path: Path, members: set[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if path and path in members:
        out["."] = {}
    elements = sorted(node)
    if elements[-1][0] in "kv":  # plain order puts i: before k: and v:; FieldsV1 puts it last
        elements.sort(key=_sort_key)
    for element in elements:
        child = node[element]
        out[element] = _ordered(child, (*path, element), members) if child else {}
    return out


def edit_fields_v1(tree: Mapping[str, Any], *, remove: Iterable[Path] = (), add: Iterable[Path] = ()) -> dict[str, Any]:
    """``fields_v1((parse_fields_v1(tree) - remove) | add)`` for a ``tree`` in the form :func:`fields_v1`
    writes (``{}`` for the empty set), edited along the given paths only: the nodes on them are new,
    every other subtree is ``tree``'s own (shared: treat the answer as read-only).

    An update changes a few fields of an entry that owns many; decoding the whole entry into paths
    and encoding it back cost more than the rest of the bookkeeping."""
    edits: dict[str, Any] = {}
    for paths, member in ((remove, False), (add, True)):  # add after remove: a path in both is kept
        for path in paths:
            node = edits
            for element in path[:-1]:
                node = node.setdefault(element, [None, {}])[1]
            if path:
                node.setdefault(path[-1], [None, {}])[0] = member
    if not edits:
        return dict(tree)
    return _edit(tree or None, False, None, edits) or {}


def _edit(node: Mapping[str, Any] | None, member: bool, becomes: bool | None, edits: dict[str, Any]
          ) -> dict[str, Any] | None:
    """The FieldsV1 node of one path after ``edits`` (element -> [member or not or unchanged, edits
    below]) below it; ``node`` is its node before (``None``: absent), ``member`` whether the path was
    a member, ``becomes`` whether it is one after (``None``: as before). ``None`` when nothing is left."""
    children = {element: child for element, child in node.items() if element != "."} if node else {}
    grew = False
    for element, (child_becomes, below) in edits.items():
        child = children.get(element)
        child_member = child is not None and (not child or "." in child)
        if below:
            edited = _edit(child, child_member, child_becomes, below)
        elif child_becomes is None or child_becomes == child_member:
            continue
        elif child_becomes:  # a member appears: a leaf where nothing was, ``"."`` on a node with children
            edited = {".": {}, **child} if child else {}
        else:  # a member goes: its node goes with it unless it has children
            edited = {e: c for e, c in child.items() if e != "."} if child else None
        if edited is None:
            children.pop(element, None)
        else:
            grew = grew or child is None
            children[element] = edited
    if becomes is not None:
        member = becomes
    if not children:
        return {} if member else None
    elements = sorted(children) if grew else list(children)
    if grew and elements[-1][0] in "kv":
        elements.sort(key=_sort_key)
    out: dict[str, Any] = {".": {}} if member else {}
    for element in elements:
        out[element] = children[element]
    return out


def parse_fields_v1(raw: Any) -> FieldSet:
    """Decode FieldsV1 JSON into a field set; malformed input is a :class:`BadRequest`."""
    out: set[Path] = set()
    if not isinstance(raw, dict):
        raise BadRequest("invalid managedFields: fieldsV1 must be a JSON object")
    _parse(raw, (), out)
    return frozenset(out)


def _parse(node: dict[str, Any], path: Path, out: set[Path]) -> None:
    for element, child in node.items():
        if element == ".":
            if path:
                out.add(path)
            continue
        if element[:2] not in ("f:", "k:", "v:", "i:") or not isinstance(child, dict):
            raise BadRequest(f"invalid managedFields: unexpected path element {element!r}")
        child_path = (*path, element)
        if not child:
            out.add(child_path)
        else:
            _parse(child, child_path, out)


def path_string(path: Path) -> str:
    """``.spec.containers[name="nginx"].image``: smd ``Path.String`` for conflict messages."""
    parts: list[str] = []
    for element in path:
        kind, body = element[:1], element[2:]
        if kind == "f":
            parts.append("." + body)
        elif kind == "k":
            try:
                keys = json.loads(body)
                parts.append("[" + ",".join(f"{k}={_dumps(v)}" for k, v in sorted(keys.items())) + "]")
            except (ValueError, AttributeError):
                parts.append("[" + body + "]")
        elif kind == "v":
            parts.append("[=" + body + "]")
        else:
            parts.append("[" + body + "]")
    return "".join(parts)
