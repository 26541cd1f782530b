"""Empty lists and maps of a built-in object through upstream's write path, from its Go encoding's walks.

An empty JSON list or map decodes into an empty, non-nil Go slice or map. Three readers see it in turn:

1. the field manager types the object through apimachinery's ``runtime.DefaultUnstructuredConverter``,
   which leaves an empty ``omitempty`` slice or map out as ``encoding/json`` does (``converter.go``
   ``isZero``) and keeps one without ``omitempty``: no manager owns ``env: []``, the writer owns a Role's
   ``rules: []``;
2. admission and validation see the decoded struct as sent (an empty map prints ``map[string]string{}``
   in a message, a nil one ``map[string]string(nil)``);
3. the storage encodes it as protobuf, whose generated ``Marshal`` writes no element of an empty slice or
   map (``if len(m.Rules) > 0``), so it reads back nil: not written with ``omitempty`` (a container's
   ``env: []``, a template's ``annotations: {}``, a ConfigMap's ``data: {}``), ``null`` without (a Role's
   ``rules``, an EndpointSlice's ``endpoints``). An update that only empties such a value is no change
   (the stored bytes compare equal).

:func:`take_empty_collections` finds them and takes the ``omitempty`` ones out before the field manager,
:func:`put_back_empty_collections` puts those back after it, :func:`store_empty_collections` gives all
their stored form once validation has passed. The object's own ``metadata`` is the write path's (its empty
collections go first, and an empty ``managedFields`` asks for a reset); a collection's value is compared by
identity, so one that admission filled meanwhile is kept.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api._go_encode import _LIST, _OMITTED, _STRUCT, GoEncoding

__all__ = ["Empty", "holds_collections", "put_back_empty_collections", "store_empty_collections",
           "take_empty_collections"]


def holds_collections(enc: GoEncoding) -> bool:
    """Whether a kind has a list or map anywhere below its own metadata (most do: the walk is skipped
    for none but kinds of scalars and structs)."""
    seen: set[int] = set()
    pending = [(key, walk) for key, walk in enc.walks.items() if key != "metadata"]
    while pending:
        _, (_shape, child, _zero, empty) = pending.pop()
        if empty:
            return True
        if child is not None and id(child) not in seen:
            seen.add(id(child))
            pending.extend(child.walks.items())
    return False


# One empty collection :func:`take_empty_collections` found: its parent, key, the value, whether ``omitempty``.
Empty = tuple[dict[str, Any], str, Any, bool]


def take_empty_collections(obj: dict[str, Any], enc: GoEncoding) -> list[Empty] | None:
    """The empty lists and maps of ``obj`` at any depth below its own metadata (whose collections the write
    path settles), the ``omitempty`` ones taken out (in place), for the
    field manager: it types the object through apimachinery's ``runtime.DefaultUnstructuredConverter``,
    which leaves an empty ``omitempty`` slice or map out as ``encoding/json`` does (``converter.go``
    ``isZero``), and sees one without ``omitempty`` as sent. :func:`put_back_empty_collections` puts them
    back for admission and validation, which see the decoded struct (an empty, non-nil map prints as
    ``map[string]string{}``); :func:`store_empty_collections` gives them their stored form last."""
    return _take(obj, enc.walks, None, "metadata")


def _take(obj: dict[str, Any], walks: dict[str, Any], found: list[Empty] | None, skip: str = "") -> list[Empty] | None:
    taken: list[str] | None = None
    for key, value in obj.items():
        walk = walks.get(key)
        if walk is None or value is None or key == skip:
            continue
        shape, child, _, empty = walk
        if shape == _STRUCT:
            if child is not None and type(value) is dict:
                found = _take(value, child.walks, found)
            continue
        if shape == _LIST:
            if type(value) is not list:
                continue
            items: Any = value
        elif type(value) is dict:
            items = value.values()
        else:
            continue
        if not value:
            if empty:
                if found is None:
                    found = []
                found.append((obj, key, value, empty == _OMITTED))
                if empty == _OMITTED:
                    if taken is None:
                        taken = [key]
                    else:
                        taken.append(key)
        elif child is not None:
            for item in items:
                if type(item) is dict:
                    found = _take(item, child.walks, found)
    if taken is not None:
        for key in taken:
            del obj[key]
    return found


def put_back_empty_collections(found: list[Empty]) -> None:
    """Put back what :func:`take_empty_collections` took out (unless something set the field since)."""
    for parent, key, value, omit in found:
        if omit and key not in parent:
            parent[key] = value


def store_empty_collections(found: list[Empty]) -> None:
    """The stored form of the empty collections :func:`take_empty_collections` found, where nothing has
    filled them since: upstream stores built-in objects as protobuf, whose generated ``Marshal`` writes no
    element of an empty slice or map (``if len(m.Rules) > 0``), so each reads back nil: an ``omitempty``
    one is not written, one without it is ``null`` (a Role's ``rules: null``, an EndpointSlice's
    ``endpoints: null``)."""
    for parent, key, value, omit in found:
        if parent.get(key) is value and not value:
            if omit:
                del parent[key]
            else:
                parent[key] = None
