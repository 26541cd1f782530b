"""The real store behind a plain Python object whose methods a test may replace.

Tests that inject a race (another writer committing between a read and a compare-and-swap) replace
``update`` for one request. On the compiled build (``KUBELOOP_COMPILE=1``) the store's own methods are
read-only, so such tests wrap the real store in this and replace the wrapper's: every call the test does
not replace goes to the real store, unchanged."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubeloop.store import SqliteStore


class PatchableStore:
    """Delegates every attribute to ``inner``; assigning one on the wrapper replaces it for callers."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextlib.asynccontextmanager
async def patchable_store(tmp_path: Path) -> AsyncIterator[Any]:
    """A real store in ``tmp_path``, wrapped; closed on exit."""
    inner = await SqliteStore.open(tmp_path / "kubeloop.db")
    try:
        yield PatchableStore(inner)
    finally:
        await inner.close()
