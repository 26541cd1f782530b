"""What an EndpointSlice-writing controller wrote, until its slice cache has seen it.

The counterpart of upstream's ``EndpointSliceTracker`` (k/k release-1.32
``staging/src/k8s.io/endpointslice/util/endpointslice_tracker.go``: ``Update``, ``ExpectDeletion``,
``StaleSlices``, ``DeleteService``), shared by the endpointslice and endpointslice-mirroring
controllers. Contract:

- :meth:`SliceTracker.wrote` remembers, per owner key (namespace, Service or Endpoints name), each
  slice this controller created or updated (by the ``generation`` the API answered) or deleted.
- :meth:`SliceTracker.stale` says whether the slice cache is still behind those writes: a slice
  written is not in the cache yet, or with an older ``generation``; a slice deleted is still there.
  Writes the cache has caught up with are forgotten as it answers, so a key costs nothing once in step.
- While a key is stale its controller does not reconcile it (the slice's own event brings it back),
  so a lagging cache never makes it create a slice twice or resurrect one it deleted.
- :meth:`SliceTracker.forget` drops a key (its owner is gone or no longer managed).

Simplified from upstream: slices are tracked by name, not uid, and forgotten once seen (upstream
keeps the generation it wrote to filter its own events).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SliceTracker"]

Key = tuple[str, str]
# (name, namespace) -> the slice as the cache has it, or None
CachedSlice = Callable[[str, str], Mapping[str, Any] | None]


def _generation(obj: Mapping[str, Any]) -> int:
    meta = obj.get("metadata")
    return int((meta.get("generation") if isinstance(meta, Mapping) else 0) or 0)


class SliceTracker:
    def __init__(self) -> None:
        # owner key -> slice name -> generation written, or None for a slice deleted
        self._expected: dict[Key, dict[str, int | None]] = {}

    def wrote(self, key: Key, name: str, written: Mapping[str, Any] | None) -> None:
        """Remember a slice created or updated (``written`` as the API answered) or deleted (``None``)."""
        generation = (_generation(written) or 1) if written is not None else None
        self._expected.setdefault(key, {})[name] = generation

    def stale(self, key: Key, cached: CachedSlice) -> bool:
        """Whether the cache is behind this controller's writes for ``key`` (forgetting those it has seen)."""
        expected = self._expected.get(key)
        if not expected:
            return False
        for name, generation in list(expected.items()):
            current = cached(name, key[0])
            if generation is None:
                caught_up = current is None
            else:
                caught_up = current is not None and _generation(current) >= generation
            if caught_up:
                del expected[name]
        if not expected:
            del self._expected[key]
            return False
        return True

    def forget(self, key: Key) -> None:
        self._expected.pop(key, None)
