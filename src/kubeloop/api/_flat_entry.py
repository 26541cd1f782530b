"""The FieldsV1 of a create's managedFields entry for a flat body, built by the decode walk.

A create's one managedFields entry owns every field of the object at the field manager's hook except
the server's (``metadata.name``, ``namespace``, ``uid`` ..., and ``apiVersion``/``kind``) and the
reset ones (``status`` of a kind with a status subresource): :func:`kubeloop.api._fieldpath.created_tree`
builds it in a walk of its own. Most creates send a *flat* body: top-level scalars and maps of strings
(a ConfigMap's ``data``), and metadata holding scalars and maps of strings (labels, annotations). The
decode walk (:mod:`kubeloop.api._go_decode`) already looks at every one of those values, so it builds
the same tree from a :class:`FlatPlan`, and gives up (``None``: the caller takes ``created_tree``) at
anything else: a list, a struct other than the root's metadata, an empty map, a field of another type
than its Go struct's, an unknown field, and a null anywhere but at the fields of :attr:`FlatPlan.nulls`.

A null there is one the entry cannot see (client-go sends ``metadata.creationTimestamp: null`` with
every create: a zero ``metav1.Time`` encodes as ``null`` and ``omitempty`` does not omit a struct).
Upstream decodes a ``null`` into the field's Go zero (``encoding/json``: a nil map, slice or pointer, a
scalar left as it was; ``metav1.Time.UnmarshalJSON`` a zero time), and the field manager converts that
typed object back (``runtime.DefaultUnstructuredConverter``), so a null field is one the entry owns only
where Go writes its zero (no ``omitempty``); the write path replaces nulls so
(:func:`kubeloop.api._go_encode.drop_nulls`) before the hook. The plan's ``nulls`` are therefore the fields
whose null that replacement deletes (``GoEncoding.known`` without ``always``), and in metadata also the
server's fields (``creationTimestamp``, ``namespace`` ...: stripped from every entry whatever they hold).

The plan is only valid for a kind whose create adds nothing between the decode and the hook (no
defaulter, no Go zero field): :func:`kubeloop.api._apply.flat_create_plan`'s caller decides that.
A property test compares the walk's tree with ``created_tree`` over generated bodies.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api._fieldpath import _root_shape, _Shape, _Unowned
from kubeloop.api._go_encode import GoEncoding

__all__ = ["ATOMIC", "MEMBER", "STRUCT", "FlatPlan", "flat_children", "flat_plan", "map_node"]

# How a map of strings is owned (:func:`kubeloop.api._fieldpath._owned`): as one leaf (``{}``, an
# atomic map), or key by key, with ``"."`` first when the map is itself a member (not struct-like).
ATOMIC, MEMBER, STRUCT = range(3)

_STR_ONLY = frozenset({str})


class FlatPlan:
    """One map of the body (the root, or its metadata): the scalar fields left out (``dropped``), by
    field name how a non-empty map of strings there is owned (``maps``; a field it lacks, or any other
    non-scalar value, makes the walk give up), the fields where a ``null`` changes nothing the entry owns
    (``nulls``: the walk passes them by; a null elsewhere makes it give up), those of them whose null the
    typed decode's replacement leaves as it is (``kept``: a ``metav1.Time`` struct field, whose zero encodes
    as ``null``), and the plan of its ``metadata`` (``meta``: the root's only; ``None`` where metadata makes
    the walk give up)."""

    __slots__ = ("dropped", "kept", "maps", "meta", "nulls")

    def __init__(self, dropped: frozenset[str], maps: dict[str, int], meta: FlatPlan | None = None,
                 nulls: frozenset[str] = frozenset()) -> None:
        self.dropped = dropped
        self.maps = maps
        self.meta = meta
        self.nulls = nulls
        self.kept: frozenset[str] = frozenset()


def flat_plan(schema: Any, tree: _Unowned, enc: GoEncoding | None = None) -> FlatPlan | None:
    """The plan of ``created_tree(value, schema, tree)`` for flat values; ``None`` when the root is
    atomic (``created_tree`` answers ``None`` there). ``enc``: the kind's Go encoding, which tells where
    a null is harmless (without it, every null makes the walk give up)."""
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
            walk = None if enc is None else enc.walks.get("metadata")
            if walk is not None and walk[1] is not None:
                # Any null among the server's fields, which no entry holds, and the ones the decode deletes.
                meta.nulls = _deleted(walk[1], meta_shape) | meta.dropped
                # Written at its zero, and that zero is null (creationTimestamp): nothing to replace.
                meta.kept = frozenset(key for key, zero in walk[1].always.items()
                                      if zero is None and key in meta.nulls)
    plan = _level(shape, tree, meta)
    if enc is not None:
        # Not the fields read before the decode (apiVersion, kind: check_body's) nor metadata itself.
        plan.nulls = _deleted(enc, shape) - _TYPE_META
    return plan


_TYPE_META = frozenset({"apiVersion", "kind", "metadata"})


def _deleted(enc: GoEncoding, shape: _Shape) -> frozenset[str]:
    """The declared fields whose null :func:`~kubeloop.api._go_encode.drop_nulls` deletes (the decode's Go
    zero, omitted by its encoding), rather than replacing it with a zero the entry would own."""
    return frozenset(key for key in enc.known if key not in enc.always and key in shape.declared)


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
    """The sorted ``f:`` children of ``obj`` (scalars and non-empty maps of strings; a null at one of
    ``level.nulls`` owns nothing), ``None`` at anything else."""
    children: dict[str, Any] = {}
    dropped, maps = level.dropped, level.maps
    for key, value in obj.items():
        vtype = type(value)
        if vtype is dict:
            how = maps.get(key)
            if how is None or not value or not _STR_ONLY.issuperset(map(type, value.values())):
                return None
            children["f:" + key] = map_node(value, how)
        elif value is None:
            if key not in level.nulls:
                return None
        elif vtype is list:
            return None
        elif key not in dropped:
            children["f:" + key] = {}
    if len(children) > 1:  # "f:" + key sorts as key does
        return {element: children[element] for element in sorted(children)}
    return children
