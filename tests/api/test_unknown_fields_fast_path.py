"""Unknown-field pruning of built-in objects skips the schema nodes under which nothing can be
unknown (string maps, free-form values); the removed fields, their paths and the pruned object are
exactly those of the plain schema walk."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import _unknown_fields, builtin_schema
from kubeloop.api._schemas import resolve
from kubeloop.api._unknown_fields import (
    prune_builtin_unknown_fields,
    prune_plan,
    prune_planned,
    undeclared_fields,
)


def _reference(value: Any, node: Mapping[str, Any], path: str, unknown: list[str], mutate: bool, smd: bool) -> None:
    """The plain walk: every dict and list against its schema node, resolved on the way."""
    schema = resolve(node) or {}
    props, extra, items = schema.get("properties"), schema.get("additionalProperties"), schema.get("items")
    props = props if isinstance(props, dict) else None
    extra = extra if isinstance(extra, dict) else None
    items = items if isinstance(items, dict) else None

    def child(key: str) -> str:
        return f"{path}.{key}" if path else key

    if isinstance(value, dict):
        drop = []
        for key, item in value.items():
            sub = props.get(key) if props is not None else None
            if props is not None and sub is None and extra is None:
                unknown.append(child(key))
                drop.append(key)
            elif isinstance(item, (dict, list)) and (sub if sub is not None else extra) is not None:
                _reference(item, sub if sub is not None else extra, child(key), unknown, mutate, smd)
        if mutate:
            for key in drop:
                del value[key]
    elif isinstance(value, list) and items is not None:
        keys = schema.get("x-kubernetes-list-map-keys")
        for i, item in enumerate(value):
            if not isinstance(item, (dict, list)):
                continue
            if smd and schema.get("x-kubernetes-list-type") == "map" and isinstance(keys, list) and isinstance(item, dict):
                element = "[" + ",".join(f"{k}={json.dumps(item.get(k), separators=(',', ':'))}" for k in keys) + "]"
            else:
                element = f"[{i}]"
            _reference(item, items, path + element, unknown, mutate, smd)


_WORDS = ["spec", "containers", "name", "image", "ports", "containerPort", "env", "value", "valueFrom", "resources",
          "limits", "requests", "labels", "annotations", "template", "metadata", "selector", "matchLabels", "data",
          "volumes", "configMap", "items", "key", "path", "status", "conditions", "type", "bogus", "x-unknown"]
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(0, 3) | st.sampled_from(["", "a"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_WORDS), inner, max_size=5),
    max_leaves=30,
)
_KINDS = {"Pod": builtin_schema("", "v1", "Pod"), "ConfigMap": builtin_schema("", "v1", "ConfigMap"),
          "Deployment": builtin_schema("apps", "v1", "Deployment"), "Service": builtin_schema("", "v1", "Service"),
          "CustomResourceDefinition": builtin_schema("apiextensions.k8s.io", "v1", "CustomResourceDefinition")}


def _nested(node: Any) -> bool:
    schema = resolve(node) or {}
    return any(isinstance(schema.get(k), dict) for k in ("properties", "additionalProperties", "items"))


def _shaped(node: Mapping[str, Any] | None, depth: int, *, every: bool = False) -> st.SearchStrategy[Any]:
    """Values that follow ``node``: declared fields (mostly the nested ones; any of them with
    ``every``), map values, list items, with stray fields and stray JSON mixed in."""
    schema = resolve(node) or {}
    if depth == 0:
        return _JSON
    props, extra, items = schema.get("properties"), schema.get("additionalProperties"), schema.get("items")
    options = []
    if isinstance(props, dict) and props:
        names = (not every and sorted(k for k in props if _nested(props[k]))) or sorted(props)
        options.append(st.lists(st.sampled_from(names), min_size=1, max_size=3).flatmap(
            lambda keys: st.fixed_dictionaries({k: _shaped(props[k], depth - 1, every=every) for k in keys},
                                               optional={k: _JSON for k in ("bogus", "name") if k not in keys})))
    if isinstance(extra, dict):
        options.append(st.dictionaries(st.sampled_from(["a", "b"]), _shaped(extra, depth - 1, every=every),
                                       min_size=1, max_size=2))
    if isinstance(items, dict):
        options.append(st.lists(_shaped(items, depth - 1, every=every), min_size=1, max_size=2))
    options.append(_JSON)
    return st.one_of(*options)


def _check(schema: Mapping[str, Any], body: Any) -> None:
    expected_obj, expected = copy.deepcopy(body), []
    _reference(expected_obj, schema, "", expected, True, False)
    assert prune_builtin_unknown_fields(body, schema) == expected
    assert body == expected_obj
    smd: list[str] = []
    _reference(copy.deepcopy(body), schema, "", smd, False, True)
    frozen = copy.deepcopy(body)
    assert undeclared_fields(body, schema) == ["." + p for p in smd]
    assert body == frozen


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_KINDS)), st.dictionaries(st.sampled_from(_WORDS), _JSON, max_size=6))
def test_pruning_finds_and_removes_what_the_plain_walk_does(kind: str, body: dict[str, Any]) -> None:
    schema = _KINDS[kind]
    assert schema is not None
    _check(schema, body)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_KINDS)).flatmap(lambda kind: st.tuples(st.just(kind), _shaped(_KINDS[kind], 7))))
def test_pruning_of_schema_shaped_bodies_finds_and_removes_what_the_plain_walk_does(case: tuple[str, Any]) -> None:
    kind, body = case
    schema = _KINDS[kind]
    assert schema is not None
    _check(schema, body)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(_KINDS)).flatmap(lambda kind: st.tuples(st.just(kind), _shaped(_KINDS[kind], 7))))
def test_pruning_with_cold_and_warm_plan_caches_finds_and_removes_what_the_plain_walk_does(case: tuple[str, Any]) -> None:
    # Each plan remembers its declared properties' plans as the walk meets them: the first walk
    # (fresh plans) and the second (remembered ones) give the plain walk's answer.
    kind, body = case
    schema = _KINDS[kind]
    assert schema is not None
    _unknown_fields._plans.clear()
    _check(schema, copy.deepcopy(body))
    _check(schema, body)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_KINDS)).flatmap(
    lambda kind: st.tuples(st.just(kind), _shaped(_KINDS[kind], 7, every=True))))
def test_pruning_of_bodies_of_any_declared_fields_finds_and_removes_what_the_plain_walk_does(
        case: tuple[str, Any]) -> None:
    # Declared fields with nothing below them (names, labels, ConfigMap data) beside nested ones:
    # a child made only of such fields is settled without a walk.
    kind, body = case
    schema = _KINDS[kind]
    assert schema is not None
    _check(schema, body)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_KINDS)).flatmap(
    lambda kind: st.tuples(st.just(kind), _shaped(_KINDS[kind], 7, every=True))))
def test_pruning_with_a_remembered_plan_is_pruning_with_the_schema(case: tuple[str, Any]) -> None:
    kind, body = case
    schema = _KINDS[kind]
    plan = prune_plan(schema)
    assert plan is not None
    expected_obj, expected = copy.deepcopy(body), []
    _reference(expected_obj, schema, "", expected, True, False)
    assert prune_planned(body, plan) == expected
    assert body == expected_obj
