"""A large list body decoded in pieces is exactly ``orjson.loads`` of it, whatever the body holds."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.client._listjson import loads

# Tiny pieces, and every body pieced, so that short bodies exercise every cut.
SMALL = {"piece": 40, "pieced_body": 0}


def listed(items: list[Any], **extra: Any) -> dict[str, Any]:
    return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7", **extra}, "items": items}


def pod(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"p{i}", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B"}]},
                                    {"name": "b"}]}}


def same_as_orjson(body: bytes, **options: int) -> Any:
    expected = orjson.loads(body)
    buffer = bytearray(body)
    for given_body in (body, buffer):
        value = loads(given_body, **(options or SMALL))
        assert value == expected
        assert orjson.dumps(value) == orjson.dumps(expected), "same key order"
    assert buffer == body, "the buffer is left as it was"
    return expected


def test_a_list_as_kube_apiserver_encodes_it() -> None:
    same_as_orjson(orjson.dumps(listed([pod(i) for i in range(50)])) + b"\n")


def test_items_that_open_with_apiversion_and_nested_objects_that_open_like_an_item() -> None:
    items = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a"},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b"}]}} for i in range(40)]
    same_as_orjson(orjson.dumps(listed(items)))
    templates = [{"metadata": {"name": f"s{i}"}, "spec": {"volumeClaimTemplates": [
        {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}, {"metadata": {"name": "c"}}]}} for i in range(40)]
    same_as_orjson(orjson.dumps(listed(templates)))


def test_strings_that_look_like_the_list_structure() -> None:
    tricky = ['},{"metadata":', '"items":[', "]}", '\\"},{"metadata":{', "[", "{", "\\", '\\\\"']
    items = [{"metadata": {"name": f"p{i}", "annotations": {"a": tricky[i % len(tricky)] * 3}}} for i in range(60)]
    same_as_orjson(orjson.dumps(listed(items, **{"continue": '"items":[},{"metadata":'})))


@pytest.mark.parametrize("body", [
    b'{"kind": "PodList",\n "items": [\n  {"metadata": {"name": "a"}},\n  {"metadata": {"name": "b"}}\n ]\n}\n',
    b'{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"kind":"PodList"}',
    b'{"metadata":{"items":[1,2]},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}',
    b'{"items":[{"metadata":{"name":"old"}}],"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}',
    b'{"items":null,"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}',
    b'{"kind":"PodList","items":[]}',
    b'{"kind":"PodList","items":[ ]}',
    b'{"kind":"List","items":[1,2,3,"},{",[4],{"a":1}]}',
    b'{"kind":"List","items":["a","b"]}',
    b'[{"items":[{"a":1},{"a":2}]}]',
    b'{"a":"\\"items\\":[","items":[{"a":1},{"a":2}]}',
    b'{"kind":"PodList","items":[{"metadata":{"name":"a"}}]}   ',
])
def test_unusual_but_valid_bodies(body: bytes) -> None:
    same_as_orjson(body)


@pytest.mark.parametrize("body", [
    b'{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}]}',
    b'{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}',
    b'{"kind":"PodList","items":[{"metadata":{"name":"a"}},,{"metadata":{"name":"b"}}]}',
    b'{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]} x',
    b'{"kind":"PodList" "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}',
    b'{"kind":"PodList","items":[{"metadata":{"name":"a\xff"}},{"metadata":{"name":"b"}}]}',
])
def test_a_body_that_is_not_json_fails_as_orjson_fails(body: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(body)
    buffer = bytearray(body)
    with pytest.raises(orjson.JSONDecodeError):
        loads(buffer, **SMALL)
    assert buffer == body


def test_a_large_list_with_the_default_pieces() -> None:
    body = orjson.dumps(listed([pod(i) for i in range(20_000)]))
    assert len(body) > 2 << 20
    assert len(same_as_orjson(body, piece=1 << 17, pieced_body=1 << 20)["items"]) == 20_000


_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(alphabet='{}[],:"\\ abmetadt\n') | st.floats(
    allow_nan=False)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["metadata", "items", "name", "a", '"},{']), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(_values, max_size=12), meta=st.dictionaries(st.sampled_from(["items", "x"]), _values),
       piece=st.integers(1, 80))
def test_any_list_decodes_as_orjson_decodes_it(items: list[Any], meta: dict[str, Any], piece: int) -> None:
    body = orjson.dumps({"metadata": meta, "items": items})
    same_as_orjson(body, piece=piece, pieced_body=0)
