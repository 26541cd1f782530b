"""The duplicate-field check of a write body answers as the full parse does, for bodies as Go's
``json.Encoder`` writes them: client-go's JSON serializer (apimachinery ``runtime/serializer/json/json.go``)
ends every body with a newline, so ``kubectl replace`` and every client-go JSON write send one. A body that
is the re-encoding of what it decodes to, with or without that newline, repeats no key and skips the full
parse; any other body (a repeated key, other whitespace) still gets it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.server import App, _field_validation
from kubeloop.server._field_validation import duplicate_texts

from ._uvicorn import kubectl_for

_KEYS = st.sampled_from(["a", "b", "é", "日本", "", "k.v"])
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3))
_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_KEYS, inner, max_size=3),
                       max_leaves=6)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A JSON object, now and then with a key repeated, and one of the endings clients write."""

    def encode(value: Any) -> bytes:
        if isinstance(value, dict):
            members = [orjson.dumps(k) + b":" + encode(v) for k, v in value.items()]
            if value and draw(st.integers(0, 4)) == 0:
                members.insert(0, orjson.dumps(draw(st.sampled_from(sorted(value)))) + b":" + orjson.dumps(draw(_LEAVES)))
            return b"{" + b",".join(members) + b"}"
        if isinstance(value, list):
            return b"[" + b",".join(encode(v) for v in value) + b"]"
        return orjson.dumps(value)

    body = encode(draw(st.dictionaries(_KEYS, _VALUES, max_size=4)))
    return body + draw(st.sampled_from([b"", b"\n", b"\n", b" ", b"\n\n", b"\r\n"]))


@settings(max_examples=400, deadline=None)
@given(bodies(), st.sampled_from(["Strict", "Warn"]))
def test_the_check_answers_what_the_full_parse_answers(body: bytes, directive: str) -> None:
    full = duplicate_texts(body, directive)  # no decoded object: the full parse
    assert duplicate_texts(body, directive, orjson.loads(body)) == full


async def test_a_repeated_key_before_goes_newline_is_still_refused_under_strict(client: httpx.AsyncClient) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","a":"2"}}\n'
    r = await client.post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict", content=body,
                          headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert 'duplicate field \\"data.a\\"' in r.text or 'duplicate field "data.a"' in r.json()["message"]
    r = await client.post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
                          content=body.replace(b'"a":"1",', b""), headers={"content-type": "application/json"})
    assert r.status_code == 201, r.text


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_replaces_json_body_skips_the_full_parse(
        real_app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[object] = []
    full = _field_validation.duplicate_fields

    def counted(body: bytes | str) -> list[str]:
        parsed.append(body)
        return full(body)

    monkeypatch.setattr(_field_validation, "duplicate_fields", counted)  # a spy: it calls the full parse through
    async with kubectl_for(real_app, tmp_path) as kubectl:
        await kubectl("create", "configmap", "c", "--from-literal=a=1")
        manifest = json.loads(await kubectl("get", "configmap", "c", "-o", "json"))
        manifest["data"]["a"] = "2"
        (tmp_path / "c.json").write_text(json.dumps(manifest))
        parsed.clear()
        assert (await kubectl("replace", "-f", str(tmp_path / "c.json"))).strip() == "configmap/c replaced"
        replaced = json.loads(await kubectl("get", "configmap", "c", "-o", "json"))
    assert replaced["data"] == {"a": "2"}
    assert parsed == [], "kubectl replace's body (Go's encoding and its newline) took the full parse"
