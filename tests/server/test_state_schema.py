"""``ServerState.schema`` answers what ``builtin_schema`` and the custom-schema hook answer, in any order
of kinds: it remembers the last built-in kind's schema, never a custom resource's (whose CRD may change)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import KindRegistry, SystemClock, builtin_schema
from kubeloop.server._state import ServerState

_KINDS = KindRegistry()
_BUILTINS = list(_KINDS)
_WIDGETS = replace(_BUILTINS[0], group="example.com", kind="Widget", plural="widgets", custom=True)


def _state(custom: dict[str, Any]) -> ServerState:
    state = ServerState(store=None, clock=SystemClock(), kinds=_KINDS, rng=random.Random(0))  # type: ignore[arg-type]
    state.custom_schema = lambda group, version, kind: custom.get(kind)
    return state


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*_BUILTINS, _WIDGETS]), max_size=12))
def test_schema_answers_as_uncached_in_any_order_of_kinds(infos: list[Any]) -> None:
    custom: dict[str, Any] = {}
    state = _state(custom)
    for i, info in enumerate(infos):
        custom["Widget"] = {"type": "object", "x-version": i}  # a CRD changing between writes
        expected = custom["Widget"] if info.custom else builtin_schema(info.group, info.version, info.kind)
        assert state.schema(info) is expected


def test_a_custom_resources_schema_change_is_seen_on_the_next_write() -> None:
    custom: dict[str, Any] = {"Widget": {"type": "object"}}
    state = _state(custom)
    assert state.schema(_WIDGETS) == {"type": "object"}
    custom["Widget"] = {"type": "object", "properties": {}}
    assert state.schema(_WIDGETS) == {"type": "object", "properties": {}}
    del custom["Widget"]
    assert state.schema(_WIDGETS) is None
