"""The store's chunked key set reads exactly as one sorted list would, whatever the adds and removes."""

from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.store import _keys
from kubeloop.store._keys import SortedKeys

_KEYS = st.text(alphabet="abc/", max_size=6)


def _model_select(keys: list[str], lo: str, hi: str, after: str | None, limit: int | None) -> tuple[list[str], int]:
    """The single-sorted-list computation the store used before the chunks."""
    start = bisect.bisect_right(keys, after) if after is not None and after >= lo else bisect.bisect_left(keys, lo)
    end = max(start, bisect.bisect_left(keys, hi, start))
    return keys[start : end if limit is None else min(end, start + limit)], end - start


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), _KEYS), max_size=3000),
    st.lists(st.tuples(_KEYS, _KEYS, st.none() | _KEYS, st.none() | st.integers(0, 40)), min_size=1, max_size=20),
    st.lists(_KEYS, max_size=200),
)
def test_adds_removes_and_selections_match_one_sorted_list(
    ops: list[tuple[bool, str]], reads: list[tuple[str, str, str | None, int | None]], initial: list[str]
) -> None:
    _check_against_one_sorted_list(ops, reads, initial)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), _KEYS), max_size=300),
    st.lists(st.tuples(_KEYS, _KEYS, st.none() | _KEYS, st.none() | st.integers(0, 40)), min_size=1, max_size=20),
    st.lists(_KEYS, max_size=50),
)
def test_with_tiny_chunks_every_multi_chunk_path_matches_one_sorted_list(
    ops: list[tuple[bool, str]], reads: list[tuple[str, str, str | None, int | None]], initial: list[str]
) -> None:
    """The same check with chunks of at most four keys: splits, emptied chunks and selections that
    span many chunks happen in nearly every example (with the real size they need thousands of keys)."""
    present = {key for add, key in ops if add} | set(initial)
    # Besides the drawn reads: from before and after each key, to the end and to the next letters.
    spans = [(lo, hi, after, limit) for after in sorted(present) for lo, hi in (("", "\U0010ffff"), ("a", "c"))
             for limit in (None, 3)]
    load = _keys._LOAD
    _keys._LOAD = 2
    try:
        _check_against_one_sorted_list(ops, reads + spans, initial)
    finally:
        _keys._LOAD = load


def _check_against_one_sorted_list(
    ops: list[tuple[bool, str]], reads: list[tuple[str, str, str | None, int | None]], initial: list[str]
) -> None:
    keys = SortedKeys(set(initial))
    model = sorted(set(initial))
    for add, key in ops:
        present = bisect.bisect_left(model, key) < len(model) and model[bisect.bisect_left(model, key)] == key
        if add and not present:
            keys.add(key)
            bisect.insort(model, key)
        elif not add and present:
            keys.remove(key)
            model.remove(key)
    assert list(keys) == model and len(keys) == len(model)
    for lo, hi, after, limit in reads:
        assert keys.select(lo, hi, after=after, limit=limit) == _model_select(model, lo, hi, after, limit)


def test_many_keys_split_into_chunks_and_still_read_in_order() -> None:
    keys = SortedKeys()
    names = [f"/r/{(i * 7919) % 5000:05}" for i in range(5000)]  # every number once, out of order
    for name in names:
        keys.add(name)
    model = sorted(names)
    assert list(keys) == model
    assert keys.select("/r/01", "/r/02", after="/r/01500", limit=10) == (model[1501:1511], 499)
    for name in names[::2]:
        keys.remove(name)
    model = sorted(names[1::2])
    assert list(keys) == model
    assert keys.select("/r/", "/r/\U0010ffff") == (model, len(model))
