"""Keyed lists whose live object repeats a key: structured-merge-diff v4.4's compare, merge and ownership.

Upstream: kubernetes-sigs/structured-merge-diff #249 (ToFieldSet owns a repeated key as the bare
key path), #251 (Compare: a repeated key is one atomic item; coming to repeat removes the single
item and adds the key, and the reverse; a change among the copies modifies the key), #253/#254
(Merge: copies the applied configuration leaves alone stay as they are; an applied key replaces
them all, merged with none of them).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import server_side_apply
from kubeloop.api._fieldpath import compare, duplicate_entries

# A list map on two keys, as a CRD declares one.
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"list": {
    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key", "id"],
    "items": {"type": "object", "properties": {
        "key": {"type": "string"}, "id": {"type": "integer"}, "bv": {"type": "boolean"}, "nv": {"type": "integer"}}}}}}
A1 = 'k:{"id":1,"key":"a"}'


def item(key: str, id_: int, **fields: Any) -> dict[str, Any]:
    return {"key": key, "id": id_, **fields}


def changes(old: Any, new: Any) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]], set[tuple[str, ...]]]:
    result = compare(old, new, SCHEMA)
    return result.added, result.modified, result.removed


def test_a_key_that_comes_to_repeat_is_added_whole_and_its_single_item_removed() -> None:
    added, modified, removed = changes({"list": [item("a", 1, nv=1)]}, {"list": [item("a", 1, nv=1), item("a", 1)]})
    assert added == {("f:list", A1)}
    assert modified == set()
    assert removed == {("f:list", A1), ("f:list", A1, "f:key"), ("f:list", A1, "f:id"), ("f:list", A1, "f:nv")}


def test_a_key_that_stops_repeating_is_removed_whole_and_its_single_item_added() -> None:
    added, modified, removed = changes({"list": [item("a", 1), item("a", 1, bv=True)]}, {"list": [item("a", 1)]})
    assert added == {("f:list", A1), ("f:list", A1, "f:key"), ("f:list", A1, "f:id")}
    assert removed == {("f:list", A1)}
    assert modified == set()


def test_a_change_among_the_copies_modifies_the_key_and_equal_copies_change_nothing() -> None:
    old = {"list": [item("a", 1), item("b", 2), item("a", 1, nv=2)]}
    assert changes(old, {"list": [item("a", 1), item("b", 2), item("a", 1, nv=3)]}) == (set(), {("f:list", A1)}, set())
    assert changes(old, {"list": [item("a", 1), item("b", 2, nv=1), item("a", 1, nv=2)]}) == (
        {("f:list", 'k:{"id":2,"key":"b"}', "f:nv")}, set(), set())


def test_merge_keeps_copies_left_alone_and_replaces_copies_applied() -> None:
    live = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"},
            "list": [item("a", 1, bv=True), item("b", 2), item("a", 1, bv=False, nv=2)]}
    out = server_side_apply(live, {"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"},
                                   "list": [item("c", 3)]}, manager="m", force=True, schema=SCHEMA,
                            now="2024-01-01T00:00:00Z", api_version="v1")
    assert out["list"] == [item("a", 1, bv=True), item("b", 2), item("a", 1, bv=False, nv=2), item("c", 3)]
    out = server_side_apply(live, {"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"},
                                   "list": [item("a", 1, nv=3), item("c", 3), item("b", 2)]}, manager="m",
                            force=True, schema=SCHEMA, now="2024-01-01T00:00:00Z", api_version="v1")
    assert out["list"] == [item("a", 1, nv=3), item("c", 3), item("b", 2)]


def test_duplicate_entries_name_each_repeat_in_walk_order() -> None:
    value = {"z": {"list": [item("a", 1), item("a", 1)]}, "list": [item("b", 2), item("a", 1), item("b", 2)]}
    schema = {"type": "object", "properties": {"list": SCHEMA["properties"]["list"], "z": SCHEMA}}
    assert duplicate_entries(value, schema, ("f:spec",)) == [
        '.spec.list: duplicate entries for key [id=2,key="b"]',
        '.spec.z.list: duplicate entries for key [id=1,key="a"]',
    ]
