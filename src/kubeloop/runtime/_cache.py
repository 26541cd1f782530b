"""The informer cache: objects by key, with indexes (client-go ``tools/cache`` ``Indexer``).

Keys are ``namespace/name`` (``name`` for cluster-scoped objects), as client-go's
``MetaNamespaceKeyFunc``. An index maps each value an :data:`IndexFunc` returns for an object to
the keys of the objects that returned it; indexes are kept in step with every add, update,
delete and replace, so ``by_index`` is a lookup, not a scan.

Built-in index functions: :func:`index_by_namespace` and :func:`index_by_owner_uid` (every
ownerReference uid). Objects are stored and returned as they came from the API, not copied:
treat them as read-only (copy before mutating), as client-go asks of its listers.

Single event loop, no awaits inside: every method is atomic with respect to other tasks.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "NAMESPACE_INDEX",
    "OWNER_UID_INDEX",
    "Cache",
    "IndexFunc",
    "index_by_namespace",
    "index_by_owner_uid",
    "object_key",
]

IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]

NAMESPACE_INDEX = "namespace"
OWNER_UID_INDEX = "owner-uid"


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def index_by_namespace(obj: Mapping[str, Any]) -> list[str]:
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


def index_by_owner_uid(obj: Mapping[str, Any]) -> list[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return [str(r["uid"]) for r in refs if isinstance(r, Mapping) and r.get("uid")]


class Cache:
    def __init__(self, *, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: index_by_namespace, OWNER_UID_INDEX: index_by_owner_uid}
        self._indexers.update(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    # -- reads ------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str) -> dict[str, Any] | None:
        return self._items.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def list(self, *, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        if namespace is None:
            return list(self._items.values())
        return self.by_index(NAMESPACE_INDEX, namespace)

    def by_index(self, index: str, value: str) -> builtins.list[dict[str, Any]]:
        try:
            keys = self._indices[index].get(value, ())
        except KeyError:
            raise KeyError(f"no index named {index!r}") from None
        return [self._items[k] for k in sorted(keys)]

    def count_by_index(self, index: str, value: str) -> int:
        """``len(by_index(index, value))`` without building the list."""
        try:
            return len(self._indices[index].get(value, ()))
        except KeyError:
            raise KeyError(f"no index named {index!r}") from None

    def index_values(self, index: str) -> builtins.list[str]:
        return sorted(self._indices[index])

    @property
    def indexers(self) -> Mapping[str, IndexFunc]:
        return dict(self._indexers)

    # -- writes -----------------------------------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes; existing objects are indexed at once. Redefining an index is an error."""
        for name, fn in indexers.items():
            if name in self._indexers and self._indexers[name] is not fn:
                raise ValueError(f"index {name!r} already exists")
            self._indexers[name] = fn
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._index(name, fn, key, obj)

    def upsert(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store ``obj``; return the object it replaced, if any."""
        key = object_key(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        for name, fn in self._indexers.items():
            self._index(name, fn, key, obj)
        return old

    def delete(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """Remove the object with ``obj``'s key; return what was stored, if any."""
        key = object_key(obj)
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(self, objs: Iterable[dict[str, Any]]) -> None:
        self._items = {object_key(o): o for o in objs}
        self._indices = {name: {} for name in self._indexers}
        for key, obj in self._items.items():
            for name, fn in self._indexers.items():
                self._index(name, fn, key, obj)

    def _index(self, name: str, fn: IndexFunc, key: str, obj: Mapping[str, Any]) -> None:
        index = self._indices[name]
        for value in fn(obj):
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Mapping[str, Any]) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in fn(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
