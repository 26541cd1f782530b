"""Creates as client-go and kubectl send them (``metadata.creationTimestamp: null``: a zero ``metav1.Time``
encodes as ``null``, and ``omitempty`` does not omit a struct) take the decode walk's managedFields entry, and
answer exactly what the field manager's own walk gives: the same status, warnings and body byte for byte (the
entry included), and the same stored object, over generated bodies with nulls at many places (metadata's
fields and maps, data values, list items, the type fields), unicode keys and repeated keys, under each
``fieldValidation`` and kubectl's query string.

Upstream decodes a null into the field's Go zero (``encoding/json``; ``metav1.Time.UnmarshalJSON``), and the
field manager records the create from that typed object (``handlers/create.go``, ``fieldmanager.UpdateNoErrors``
before mutating admission; ``managedfields/internal/stripmeta.go`` strips ``creationTimestamp``); the walk is only
a cheaper way to the same FieldsV1.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeloop.api import _apply
from kubeloop.server import ENVTEST_DISABLED_ADMISSION_PLUGINS, App, create_app
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

from ._uvicorn import kubectl_for
from .test_flat_create_entry_http import COLLECTIONS, JSON, general_path

KUBECTL_QUERY = "?fieldManager=kubectl-create&fieldValidation=Strict"

_KEYS = st.sampled_from(["a", "b", "app.kubernetes.io/name", "k-1", "é", "日本", "x"])
_TEXT = st.sampled_from(["", "v", "é", "日本語", "\u2028", 'a"b', "null"])
_LEAF = st.one_of(_TEXT, _TEXT, st.none(), st.integers(-2, 2), st.booleans())
_ANY = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_KEYS, inner, max_size=2),
                    max_leaves=4)
# Mostly what a client sends; now and then a null or a value of another type.
_STRING_MAPS = st.dictionaries(_KEYS, _TEXT, min_size=1, max_size=3)
_MAPS = st.one_of(_STRING_MAPS, _STRING_MAPS, _STRING_MAPS, _STRING_MAPS,
                  st.dictionaries(_KEYS, st.one_of(_TEXT, st.none()), max_size=3), st.none(), _ANY)
_META_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "creationTimestamp": st.one_of(st.none(), st.none(), st.just("2024-01-01T00:00:00Z")),
    "namespace": st.sampled_from([None, "default", ""]),
    "labels": _MAPS, "annotations": _MAPS,
    "generateName": st.sampled_from([None, "g-"]),
    "finalizers": st.one_of(st.none(), st.lists(st.one_of(st.just("example.com/f"), st.none()), max_size=2)),
    "ownerReferences": st.none(), "managedFields": st.none(), "deletionTimestamp": st.none(),
    "uid": st.sampled_from([None, "u"]), "resourceVersion": st.none(), "generation": st.sampled_from([None, 2]),
    "selfLink": st.none(), "bogus": st.one_of(st.none(), _ANY),
}


# What client-go's typed clients and kubectl send: a zero metav1.Time as null, Go's json.Encoder newline.
CLIENT_BODIES = [
    ("ConfigMap", b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"NAME","creationTimestamp":null},'
                  b'"data":{"a":"b"}}'),
    ("ConfigMap", b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"NAME","namespace":"default",'
                  b'"creationTimestamp":null,"labels":{"app":"web"},"annotations":{"k":"v"}},"data":{"a":"b"}}\n'),
    ("ServiceAccount", b'{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"NAME",'
                       b'"creationTimestamp":null,"labels":{"app":"web"}}}\n'),
]


@st.composite
def bodies(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    kind = draw(st.sampled_from(sorted(COLLECTIONS)))
    meta = {"name": "NAME"}
    for field in draw(st.lists(st.sampled_from(sorted(_META_FIELDS)), max_size=4, unique=True)):
        meta[field] = draw(_META_FIELDS[field])
    if draw(st.integers(0, 3)):
        meta["creationTimestamp"] = None  # what client-go sends, most of the time
    body: dict[str, Any] = {"kind": kind, "apiVersion": draw(st.sampled_from(["v1"] * 5 + [None])), "metadata": meta}
    top: dict[str, st.SearchStrategy[Any]] = (
        {"data": _MAPS, "binaryData": st.one_of(st.none(), st.just({"b": "AAAA"})),
         "immutable": st.one_of(st.none(), st.booleans())} if kind == "ConfigMap" else
        {"automountServiceAccountToken": st.one_of(st.none(), st.booleans()),
         "secrets": st.one_of(st.none(), st.just([{"name": "s"}]), st.just([None])),
         "imagePullSecrets": st.one_of(st.none(), st.just([]))})
    if kind == "ConfigMap" and draw(st.integers(0, 3)):
        body["data"] = draw(_STRING_MAPS)  # what most creates carry
    for field in draw(st.lists(st.sampled_from(sorted(top)), max_size=3, unique=True)):
        body[field] = draw(top[field])
    if draw(st.integers(0, 9)) == 0:
        body["status"] = draw(st.sampled_from([None, {}]))
    order = draw(st.permutations(sorted(body)))
    return kind, {key: body[key] for key in order}


def _encode(value: Any, draw: st.DrawFn) -> bytes:
    """``value`` as JSON, now and then with a map's key sent twice (the first sending loses, as in Go)."""
    if isinstance(value, dict):
        members = [orjson.dumps(k) + b":" + _encode(v, draw) for k, v in value.items()]
        if value and draw(st.integers(0, 9)) == 0:
            key = draw(st.sampled_from(list(value)))
            members.insert(0, orjson.dumps(key) + b":" + orjson.dumps(draw(_LEAF)))
        return b"{" + b",".join(members) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_encode(v, draw) for v in value) + b"]"
    return orjson.dumps(value)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, bytes, str]:
    kind, body = draw(bodies())
    query = draw(st.sampled_from(["", KUBECTL_QUERY, "?fieldValidation=Warn", "?fieldValidation=Ignore"]))
    return kind, _encode(body, draw), query


def _normalised(response: httpx.Response, name: str) -> tuple[int, list[str], bytes]:
    text = response.content.replace(name.encode(), b"NAME")
    if response.status_code in (200, 201):
        obj = orjson.loads(text)
        obj["metadata"]["uid"] = obj["metadata"]["resourceVersion"] = ""
        text = orjson.dumps(obj)
    return response.status_code, response.headers.get_list("warning"), text


@pytest.mark.interpreted  # the walks are counted through a spy, which compiled callers bypass
def test_client_go_shaped_creates_answer_what_the_general_path_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = {"created": 0, "with_entry": 0, "fast": 0}
    built = _apply.created_tree

    def counted(*args: Any) -> Any:
        counts["general_walks"] = counts.get("general_walks", 0) + 1
        return built(*args)

    monkeypatch.setattr(_apply, "created_tree", counted)  # a spy: it calls the field manager's walk through

    with asyncio.Runner() as runner:
        store = runner.run(SqliteStore.open(tmp_path / "k.db"))
        app = create_app(store=store, clock=FakeClock(), rng=random.Random(7),
                         disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
        runner.run(app.startup())
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kubeloop")
        serial = iter(range(10**6))

        async def one(kind: str, raw: bytes, query: str) -> bool:
            """The two creates compared; whether the first took the walk's entry (and so no general walk)."""
            i = next(serial)
            url = COLLECTIONS[kind] + query
            fast_name, general_name = f"zfast{i:04}", f"zslow{i:04}"
            walks = counts.get("general_walks", 0)
            before = store.revision
            fast = await client.post(url, content=raw.replace(b'"NAME"', f'"{fast_name}"'.encode()), headers=JSON)
            fast_walked = counts.get("general_walks", 0) > walks
            if fast.status_code >= 400:
                assert store.revision == before, "a refused create stored something"
            with general_path(monkeypatch):
                general = await client.post(url, content=raw.replace(b'"NAME"', f'"{general_name}"'.encode()),
                                            headers=JSON)
            assert _normalised(fast, fast_name) == _normalised(general, general_name), raw
            if fast.status_code == 201:
                counts["created"] += 1
                stored = [await client.get(f"{COLLECTIONS[kind]}/{name}") for name in (fast_name, general_name)]
                assert _normalised(stored[0], fast_name)[2] == _normalised(stored[1], general_name)[2]
                if fast.json()["metadata"].get("managedFields"):
                    counts["with_entry"] += 1
                    counts["fast"] += not fast_walked
                    return not fast_walked
            return False

        @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        @given(requests())
        def check(request: tuple[str, bytes, str]) -> None:
            runner.run(one(*request))

        try:
            check()
            # The bodies client-go and kubectl send take the walk's entry, whichever examples the installed
            # Hypothesis draws above (its version picks them: 24 to 40-odd of ~90 took the entry).
            took = {(raw, query): runner.run(one(kind, raw, query))
                    for kind, raw in CLIENT_BODIES for query in ("", KUBECTL_QUERY)}
        finally:
            runner.run(client.aclose())
            runner.run(app.shutdown())
            runner.run(store.close())
    assert counts["created"] > 60 and counts["with_entry"] > 40, counts
    assert all(took.values()), [key for key, fast in took.items() if not fast]
    assert counts["fast"] > len(took), f"creates with nulls took the walk's entry: {counts}"


# -- kubectl ------------------------------------------------------------------------------------------------------

@pytest.mark.interpreted  # counts the field manager's walks through a spy, which compiled callers bypass
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_create_takes_the_walks_entry_and_gets_the_general_paths(
        real_app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kubectl create configmap`` and ``create serviceaccount`` (1.32) send protobuf, whose ObjectMeta holds an
    empty ``creationTimestamp`` (decoded as ``creationTimestamp: null``, as client-go's JSON has it), under
    ``?fieldManager=kubectl-create&fieldValidation=Strict``: the create builds its entry without the field
    manager's own walk, and kubectl reads back what the general path stores."""
    walks: list[object] = []
    built = _apply.created_tree

    def counted(*args: Any) -> Any:
        walks.append(args[0])
        return built(*args)

    monkeypatch.setattr(_apply, "created_tree", counted)  # a spy: it calls the field manager's walk through

    async def created(kubectl: Callable[..., Awaitable[str]], kind: str, name: str, *extra: str
                      ) -> tuple[dict[str, Any], int]:
        before = len(walks)
        await kubectl("create", kind, name, *extra)
        got = json.loads(await kubectl("get", kind, name, "-o", "json", "--show-managed-fields"))
        return got, len(walks) - before

    async with kubectl_for(real_app, tmp_path) as kubectl:
        literals = ("--from-literal=b=2", "--from-literal=a=日本")
        fast_cm, fast_cm_walks = await created(kubectl, "configmap", "fast", *literals)
        fast_sa, fast_sa_walks = await created(kubectl, "serviceaccount", "fast")
        with general_path(monkeypatch):
            general_cm, general_cm_walks = await created(kubectl, "configmap", "general", *literals)
            general_sa, general_sa_walks = await created(kubectl, "serviceaccount", "general")
    assert (fast_cm_walks, fast_sa_walks) == (0, 0), "kubectl's creates took the walk's entry"
    assert general_cm_walks == 1 and general_sa_walks == 1
    (fast_entry,), (general_entry,) = fast_cm["metadata"]["managedFields"], general_cm["metadata"]["managedFields"]
    assert {**fast_entry, "time": ""} == {**general_entry, "time": ""}
    assert fast_entry["manager"] == "kubectl-create"
    assert fast_entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}}}
    assert fast_cm["data"] == general_cm["data"] == {"a": "日本", "b": "2"}
    assert fast_cm["metadata"]["creationTimestamp"]
    assert "managedFields" not in fast_sa["metadata"] and "managedFields" not in general_sa["metadata"]
    assert set(fast_sa["metadata"]) == set(general_sa["metadata"])
