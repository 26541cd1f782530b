"""A sorted set of keys whose insert and removal do not cost the size of the set.

The store keeps its current keys in order for prefix ranges. A single sorted list makes every new
key an O(n) memory move (40,000 keys: a few microseconds per create, growing with the store); here
the keys live in sorted chunks of at most ``2 * _LOAD`` keys, found by bisecting the chunks' last
keys, so an insert or removal moves at most one chunk. Reads walk the chunks in order and give
exactly what bisecting one sorted list would.

Contract: :meth:`add` is given only absent keys and :meth:`remove` only present ones (the store's
index says which); the chunks are never empty and ``_maxes[i]`` is the last key of ``_chunks[i]``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator

__all__ = ["SortedKeys"]

_LOAD = 512


class SortedKeys:
    def __init__(self, keys: Iterable[str] = ()) -> None:
        ordered = sorted(keys)
        self._chunks: list[list[str]] = [ordered[i : i + _LOAD] for i in range(0, len(ordered), _LOAD)]
        self._maxes: list[str] = [chunk[-1] for chunk in self._chunks]
        self._len = len(ordered)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        for chunk in self._chunks:
            yield from chunk

    def add(self, key: str) -> None:
        maxes = self._maxes
        self._len += 1
        i = bisect_left(maxes, key)
        if i == len(maxes):  # after every key: the common case of keys that arrive in order
            if not maxes:
                self._chunks.append([key])
                maxes.append(key)
                return
            i -= 1
            chunk = self._chunks[i]
            chunk.append(key)
            maxes[i] = key
        else:
            chunk = self._chunks[i]
            insort(chunk, key)
        if len(chunk) > 2 * _LOAD:
            self._chunks[i : i + 1] = [chunk[:_LOAD], chunk[_LOAD:]]
            maxes[i : i + 1] = [chunk[_LOAD - 1], chunk[-1]]

    def remove(self, key: str) -> None:
        i = bisect_left(self._maxes, key)
        chunk = self._chunks[i]
        j = bisect_left(chunk, key)
        del chunk[j]
        self._len -= 1
        if not chunk:
            del self._chunks[i]
            del self._maxes[i]
        elif j == len(chunk):
            self._maxes[i] = chunk[-1]

    def select(self, lo: str, hi: str, *, after: str | None = None, limit: int | None = None) -> tuple[list[str], int]:
        """The keys ``k`` with ``lo <= k < hi`` and, when ``after`` is given, ``k > after``: the first
        ``limit`` of them (all when ``None``) in order, and how many there are in all."""
        chunks, maxes = self._chunks, self._maxes
        if after is not None and after >= lo:
            ci = bisect_right(maxes, after)
            j = bisect_right(chunks[ci], after) if ci < len(chunks) else 0
        else:
            ci = bisect_left(maxes, lo)
            j = bisect_left(chunks[ci], lo) if ci < len(chunks) else 0
        ce = bisect_left(maxes, hi)
        if ce == len(chunks):
            if not chunks:
                return [], 0
            ce = len(chunks) - 1
            je = len(chunks[ce])
        else:
            je = bisect_left(chunks[ce], hi)
        if ci > ce:
            return [], 0
        if ci == ce:
            if je <= j:
                return [], 0
            keys = chunks[ci][j:je]
            count = je - j
            return (keys if limit is None or limit >= count else keys[:limit]), count
        count = len(chunks[ci]) - j + je
        for x in range(ci + 1, ce):
            count += len(chunks[x])
        want = count if limit is None else min(limit, count)
        keys = chunks[ci][j : j + want]
        x = ci + 1
        while len(keys) < want:
            chunk = chunks[x] if x < ce else chunks[ce][:je]
            keys.extend(chunk[: want - len(keys)])
            x += 1
        return keys, count
