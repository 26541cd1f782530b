"""The FieldsV1 of a create's managedFields entry for a flat body, built by the decode walk.

A create's one managedFields entry owns every field of the object at the field manager's hook except
the server's (``metadata.name``, ``namespace``, ``uid`` ..., and ``apiVersion``/``kind``) and the
reset ones (``status`` of a kind with a status subresource): :func:`kubeloop.api._fieldpath.created_tree`
builds it in a walk of its own. Most creates send a *flat* body: top-level scalars and maps of strings
(a ConfigMap's ``data``), and metadata holding scalars and maps of strings (labels, annotations). The
decode walk (:mod:`kubeloop.api._go_decode`) already looks at every one of those values, so it builds
the same tree from a :class:`FlatPlan`, and gives up (``None``: the caller takes ``created_tree``) at
anything else: a list, a struct other than the root's metadata, an empty map, a null, a field of
another type than its Go struct's, an unknown field.

The plan is only valid for a kind whose create adds nothing between the decode and the hook (no
defaulter, no Go zero field): :func:`kubeloop.api._apply.flat_create_plan`'s caller decides that.
A property test compares the walk's tree with ``created_tree`` over generated bodies.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api._fieldpath import _root_shape, _Shape, _Unowned

__all__ = ["ATOMIC", "MEMBER", "STRUCT", "FlatPlan", "flat_children", "flat_plan", "map_node"]

# How a map of strings is owned (:func:`kubeloop.api._fieldpath._owned`): as one leaf (``{}``, an
# atomic map), or key by key, with ``"."`` first when the map is itself a member (not struct-like).
ATOMIC, MEMBER, STRUCT = range(3)

_STR_ONLY = frozenset({str})


class FlatPlan:
    """One map of the body (the root, or its metadata): the scalar fields left out (``dropped``), by
    field name how a non-empty map of strings there is owned (``maps``; a field it lacks, or any other
    non-scalar value, makes the walk give up), and the plan of its ``metadata`` (``meta``: the root's
    only; ``None`` where metadata makes the walk give up)."""

    __slots__ = ("dropped", "maps", "meta")

    def __init__(self, dropped: frozenset[str], maps: dict[str, int], meta: FlatPlan | None = None) -> None:
        self.dropped = dropped
        self.maps = maps
        self.meta = meta


def flat_plan(schema: Any, tree: _Unowned) -> FlatPlan | None:
    """The plan of ``created_tree(value, schema, tree)`` for flat values; ``None`` when the root is
    atomic (``created_tree`` answers ``None`` there)."""
    shape = _root_shape(schema)
    if shape.atomic_map:
        return None
    meta: FlatPlan | None = None
    entry = tree.fields.get("metadata")
    # The root's metadata is not a member and has the server's fields below it (_apply._STRIPPED).
    if entry is not None and not entry[0] and entry[1] is not None and "metadata" in shape.declared:
        meta_shape, struct = shape.kid("metadata")
        if struct:
            meta = _level(meta_shape, entry[1])
    return _level(shape, tree, meta)


def _level(shape: _Shape, below: _Unowned, meta: FlatPlan | None = None) -> FlatPlan:
    maps: dict[str, int] = {}
    for key in shape.declared:
        if key in below.skipped or key in below.fields:  # skipped, or unowned paths below it
            continue
        kid, struct = shape.kid(key)
        # Maps only (a schema for their values): a struct gives up the walk, as does a scalar field
        # holding a map (a type error).
        if kid.declared or kid.extra[0] is None:
            continue
        maps[key] = ATOMIC if kid.atomic_map else STRUCT if struct else MEMBER
    return FlatPlan(below.dropped, maps, meta)


def map_node(value: dict[str, Any], how: int) -> dict[str, Any]:
    """The node of the non-empty map of strings ``value`` owned ``how``."""
    if how == ATOMIC:
        return {}
    node: dict[str, Any] = {} if how == STRUCT else {".": {}}
    for key in sorted(value):
        node["f:" + key] = {}
    return node


def flat_children(obj: dict[str, Any], level: FlatPlan) -> dict[str, Any] | None:
    """The sorted ``f:`` children of ``obj`` (scalars and non-empty maps of strings), ``None`` at
    anything else."""
    children: dict[str, Any] = {}
    dropped, maps = level.dropped, level.maps
    for key, value in obj.items():
        vtype = type(value)
        if vtype is dict:
            how = maps.get(key)
            if how is None or not value or not _STR_ONLY.issuperset(map(type, value.values())):
                return None
            children["f:" + key] = map_node(value, how)
        elif vtype is list or value is None:
            return None
        elif key not in dropped:
            children["f:" + key] = {}
    if len(children) > 1:  # "f:" + key sorts as key does
        return {element: children[element] for element in sorted(children)}
    return children
