"""The informer cache keeps its indexes in step with every write."""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.runtime import NAMESPACE_INDEX, OWNER_UID_INDEX, Cache, object_key


def obj(name: str, ns: str | None = "default", *, owners: tuple[str, ...] = (), **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels,
                            "ownerReferences": [{"uid": u, "kind": "X", "name": u, "apiVersion": "v1"} for u in owners]}
    if ns:
        meta["namespace"] = ns
    return {"metadata": meta}


def by_app(o: Any) -> list[str]:
    app = (o.get("metadata") or {}).get("labels", {}).get("app")
    return [app] if app else []


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_keys_are_namespace_slash_name_or_name_for_cluster_scoped() -> None:
    assert object_key(obj("a", "ns")) == "ns/a"
    assert object_key(obj("n", None)) == "n"


def test_namespace_index_lists_one_namespace() -> None:
    cache = Cache()
    cache.upsert(obj("a", "one"))
    cache.upsert(obj("b", "two"))
    cache.upsert(obj("c", "one"))
    assert names(cache.by_index(NAMESPACE_INDEX, "one")) == ["a", "c"]
    assert names(cache.list(namespace="two")) == ["b"]
    assert cache.get_by_name("b", "two") is not None


def test_owner_uid_index_finds_dependents_of_every_owner() -> None:
    cache = Cache()
    cache.upsert(obj("a", owners=("u1",)))
    cache.upsert(obj("b", owners=("u1", "u2")))
    cache.upsert(obj("c"))
    assert names(cache.by_index(OWNER_UID_INDEX, "u1")) == ["a", "b"]
    assert names(cache.by_index(OWNER_UID_INDEX, "u2")) == ["b"]


def test_an_update_moves_the_object_between_index_values() -> None:
    cache = Cache(indexers={"app": by_app})
    cache.upsert(obj("a", app="web"))
    old = cache.upsert(obj("a", app="db"))
    assert old is not None and old["metadata"]["labels"] == {"app": "web"}
    assert cache.by_index("app", "web") == []
    assert names(cache.by_index("app", "db")) == ["a"]
    assert cache.index_values("app") == ["db"]


def test_delete_removes_the_object_from_every_index() -> None:
    cache = Cache(indexers={"app": by_app})
    cache.upsert(obj("a", owners=("u1",), app="web"))
    assert cache.delete(obj("a")) is not None
    assert len(cache) == 0
    assert cache.by_index("app", "web") == [] and cache.by_index(OWNER_UID_INDEX, "u1") == []
    assert cache.delete(obj("a")) is None


def test_indexers_added_later_index_existing_objects() -> None:
    cache = Cache()
    cache.upsert(obj("a", app="web"))
    cache.add_indexers({"app": by_app})
    assert names(cache.by_index("app", "web")) == ["a"]
    with pytest.raises(ValueError, match="already exists"):
        cache.add_indexers({"app": lambda o: []})


def test_replace_rebuilds_items_and_indexes() -> None:
    cache = Cache(indexers={"app": by_app})
    cache.upsert(obj("a", app="web"))
    cache.replace([obj("b", app="web"), obj("c", "other")])
    assert sorted(cache.keys()) == ["default/b", "other/c"]
    assert names(cache.by_index("app", "web")) == ["b"]
    with pytest.raises(KeyError):
        cache.by_index("nope", "x")


def test_count_by_index_follows_every_write_without_listing() -> None:
    cache = Cache(indexers={"app": by_app})
    cache.upsert(obj("a", app="web"))
    cache.upsert(obj("b", app="web"))
    cache.upsert(obj("c", app="db"))
    assert (cache.count_by_index("app", "web"), cache.count_by_index("app", "db"), cache.count_by_index("app", "x")) == (2, 1, 0)
    cache.upsert(obj("b", app="db"))
    cache.delete(obj("a"))
    assert (cache.count_by_index("app", "web"), cache.count_by_index("app", "db")) == (0, 2)
    with pytest.raises(KeyError, match="no index named 'nope'"):
        cache.count_by_index("nope", "web")
