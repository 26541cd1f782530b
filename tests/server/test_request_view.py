"""The request view's shortcuts give what the plain computations give.

Headers are decoded once per distinct header list (a remembered map shared by requests), the Accept
negotiation once per distinct value, a body that arrives in one ASGI message is taken as is, and a
resource URL is routed in one compact pass: each must equal the straightforward result (a fresh
decode, a fresh parse, the chunks joined, the URL-shape rules checked one by one).
"""

from __future__ import annotations

import inspect
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeloop.api import ApiError, NotAcceptable
from kubeloop.server import App
from kubeloop.server._http import MAX_BODY_BYTES, MediaType, Request, header_map, parse_accept
from kubeloop.server._requestinfo import RequestInfo, parse_request_info


def plain_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in raw:
        name, value = k.decode("latin-1").lower(), v.decode("latin-1")
        out[name] = f"{out[name]},{value}" if name in out else value
    return out


NAMES = st.sampled_from([b"accept", b"Accept", b"content-type", b"authorization", b"x-\xe9", b"Impersonate-User"])
VALUES = st.sampled_from([b"application/json", b"a, b", b"", b"\xff\xfe", b"Bearer t"])


@settings(max_examples=300, deadline=None)
@given(raw=st.lists(st.tuples(NAMES, VALUES), max_size=6), as_lists=st.booleans())
def test_the_header_map_is_the_plain_decode_every_time(raw: list[tuple[bytes, bytes]], as_lists: bool) -> None:
    pairs: list[Any] = [list(p) for p in raw] if as_lists else raw
    first = header_map({"headers": pairs})
    again = header_map({"headers": [(bytes(k), bytes(v)) for k, v in raw]})  # equal pairs, new objects
    assert first == again == plain_headers(raw)
    assert first.names == "".join("\n" + name for name in plain_headers(raw))


def test_the_request_takes_the_map_looked_up_for_its_header_list_and_a_new_list_gets_its_own() -> None:
    scope: dict[str, Any] = {"type": "http", "method": "GET", "path": "/", "headers": [(b"accept", b"application/yaml")]}
    chain_map = header_map(scope)  # as the security chain looks it up, before the app's Request
    assert Request(scope, _no_body).headers is chain_map
    # A middleware in between that changes the headers gives the scope a new list: a fresh map, not the kept one.
    scope["headers"] = [(b"accept", b"application/json"), (b"x-extra", b"1")]
    request = Request(scope, _no_body)
    assert dict(request.headers) == {"accept": "application/json", "x-extra": "1"}
    assert request.negotiate() == "application/json"
    assert header_map(scope) is request.headers


def test_repeated_headers_are_joined_in_order() -> None:
    raw = [(b"Accept", b"application/yaml"), (b"x", b"1"), (b"accept", b"application/json")]
    assert dict(header_map({"headers": raw})) == {"accept": "application/yaml,application/json", "x": "1"}


def plain_negotiate(accepts: list[MediaType], *, yaml_ok: bool) -> str | None:
    if not accepts:
        return "application/json"
    for media in accepts:
        if media.is_json_like and media.params.get("as") in (None, "Table"):
            return "application/json"
        if yaml_ok and media.type == "application/yaml" and "as" not in media.params:
            return "application/yaml"
    return None


def plain_wants_table(accepts: list[MediaType]) -> bool:
    for media in accepts:
        if media.params.get("as") == "Table" and media.params.get("g") == "meta.k8s.io":
            return True
        if media.is_json_like and "as" not in media.params:
            return False
    return False


ACCEPT_PARTS = st.sampled_from([
    "application/json", "application/yaml", "*/*", "application/*", "text/html",
    "application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=PartialObjectMetadata;g=meta.k8s.io",
    "application/vnd.kubernetes.protobuf", "application/yaml;as=Table", " APPLICATION/JSON ",
])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(ACCEPT_PARTS, max_size=3), absent=st.booleans())
def test_negotiation_matches_a_fresh_parse_of_the_accept_header(parts: list[str], absent: bool) -> None:
    accept = ",".join(parts)
    headers = [] if absent else [(b"accept", accept.encode())]
    accepts = parse_accept("" if absent else accept)
    for _ in range(2):  # the second request with these headers reuses the remembered negotiation
        request = Request({"type": "http", "method": "GET", "path": "/", "headers": list(headers)}, _no_body)
        assert request.accepts() == accepts
        assert request.wants_table() == plain_wants_table(accepts)
        for yaml_ok in (True, False):
            expected = plain_negotiate(accepts, yaml_ok=yaml_ok)
            if expected is None:
                with pytest.raises(NotAcceptable):
                    request.negotiate(yaml_ok=yaml_ok)
            else:
                assert request.negotiate(yaml_ok=yaml_ok) == expected


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def _receiver(messages: list[dict[str, Any]]) -> Any:
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        return pending.pop(0)

    return receive


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=20), min_size=1, max_size=4), disconnect=st.booleans())
async def test_a_body_in_one_message_or_many_reads_the_same(chunks: list[bytes], disconnect: bool) -> None:
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)
    ]
    if disconnect:
        messages[-1] = {"type": "http.disconnect"}
    expected = b"".join(c for c, m in zip(chunks, messages, strict=True) if m["type"] == "http.request")
    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    request = Request(scope, _receiver(messages))
    assert await request.body() == expected
    assert await request.body() == expected  # read once


async def test_a_body_over_the_limit_is_413_in_one_message_or_many() -> None:
    big = b" " * (MAX_BODY_BYTES + 1)
    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    for messages in (
        [{"type": "http.request", "body": big, "more_body": False}],
        [{"type": "http.request", "body": big[:10], "more_body": True},
         {"type": "http.request", "body": big[10:], "more_body": False}],
    ):
        with pytest.raises(ApiError) as caught:
            await Request(scope, _receiver(messages)).body()
        assert caught.value.status_code == 413


def plain_route(app: App, method: str, ri: RequestInfo) -> str:
    """The URL-shape rules of ResourceHandlers.handle, written out one by one (the oracle)."""
    info = app.state.kinds.get(ri.api_group, ri.api_version, ri.resource)
    if info is None or len(ri.parts) > 3 or not ri.parts:
        return "NotFound"
    namespaced_path = bool(ri.namespace) and ri.resource != "namespaces"
    if namespaced_path and not info.namespaced:
        return "NotFound"
    name = ri.parts[1] if len(ri.parts) > 1 else ""
    sub = ri.parts[2] if len(ri.parts) > 2 else ""
    if info.namespaced and not namespaced_path:
        if name:
            return "NotFound"
        if method != "GET":
            return "MethodNotAllowed"
    if sub and sub not in info.subresources:
        return "NotFound"
    if sub in ("eviction", "binding"):
        return "NotFound"
    namespace = ri.namespace if info.namespaced else ""
    return f"{'_collection' if not name else '_item' if not sub else '_subresource'} {namespace!r}"


PREFIXES = st.sampled_from(["/api/v1", "/apis/apps/v1", "/apis/nope/v1"])
SCOPES = st.sampled_from(["", "/namespaces/default", "/namespaces"])
RESOURCES = st.sampled_from(["configmaps", "nodes", "pods", "deployments", "namespaces", "nope"])
TAILS = st.sampled_from(["", "/x", "/x/status", "/x/scale", "/x/eviction", "/x/binding", "/x/finalize", "/x/y/z"])


@pytest.mark.interpreted  # reads the routed handler's coroutine frame, which a compiled coroutine has not
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # routing reads only
@given(prefix=PREFIXES, scope=SCOPES, resource=RESOURCES, tail=TAILS,
       method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]))
async def test_resource_urls_are_routed_as_the_rules_say(
    app: App, prefix: str, scope: str, resource: str, tail: str, method: str
) -> None:
    path = f"{prefix}{scope}/{resource}{tail}"
    ri = parse_request_info(method, path, {})
    if not ri.is_resource_request:
        return
    request = Request({"type": "http", "method": method, "path": path, "headers": []}, _no_body)

    async def send(message: Any) -> None:
        raise AssertionError("routing sends nothing")

    try:
        routed = app._handlers.handle(request, ri, send)
    except ApiError as error:
        got = type(error).__name__
    else:
        assert inspect.iscoroutine(routed)
        frame = routed.cr_frame
        got = f"{routed.cr_code.co_name} {frame.f_locals['namespace']!r}"
        routed.close()
    assert got == plain_route(app, method, ri)


async def test_the_pod_eviction_and_binding_route_takes_exactly_its_paths(client: httpx.AsyncClient) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod)).status_code == 201
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    answers = {}
    for method, path in [
        ("GET", "/api/v1/namespaces/default/pods/p/eviction"),  # the route's own 405
        ("POST", "/api/v1/namespaces/default/configmaps/x/eviction"),  # not a pod: the resource handlers
        ("POST", "/api/v1/namespaces/default/pods/p/binding/x"),
        ("POST", "/api/v1/namespaces/default/pods/q/binding"),
        ("POST", "/api/v1/namespaces/default/pods/p/eviction/"),  # the route: the trailing slash is trimmed
        ("POST", "/api/v1/namespaces/default/pods/p/eviction"),  # the pod is gone
    ]:
        r = await client.request(method, path, json=eviction)
        answers[(method, path)] = (r.status_code, r.json().get("reason"))
    assert list(answers.values()) == [
        (405, "MethodNotAllowed"), (404, "NotFound"), (404, "NotFound"), (400, "BadRequest"), (201, None),
        (404, "NotFound"),
    ]


async def test_a_percent_encoded_path_is_routed_by_its_decoded_form(client: httpx.AsyncClient) -> None:
    # The app routes by ASGI's (decoded) ``path``: ``raw_path`` keeps the escapes, and httpx's carries the query.
    cms = "/api/v1/namespaces/default/configmaps"
    created = await client.post(cms, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a-b"}})
    assert created.status_code == 201
    got = await client.get(f"{cms}/a%2Db", params={"pretty": "false"})
    assert (got.status_code, got.json()["metadata"]["name"]) == (200, "a-b")
    assert (await client.get("/api/v1/namespaces/default/config%6Daps/a-b")).status_code == 200


CONTENT_TYPES = st.sampled_from([
    None, "application/json", "application/json; charset=utf-8", " Application/YAML ", "", ";", "text/plain;x=y",
    "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf",
])
DECLARED = st.one_of(
    st.none(),
    st.integers(min_value=0, max_value=2 * MAX_BODY_BYTES).map(str),
    st.sampled_from([str(MAX_BODY_BYTES), str(MAX_BODY_BYTES + 1), "0003145729", "00000001", "9" * 5000, "",
                     "abc", " 12", "-1", "1e9", "\xb2", "1\xb3", "\xb9" * 8]),
)


def plain_media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower() or "application/json"


def plain_declared_check(declared: str | None) -> str:
    """What the body's read does with a Content-Length before reading, written out (the oracle)."""
    try:
        too_large = declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES
    except ValueError:
        return "ValueError"
    return "413" if too_large else "read"


@settings(max_examples=300, deadline=None)
@given(content_type=CONTENT_TYPES, declared=DECLARED)
async def test_the_media_type_and_the_declared_length_check_are_the_plain_ones(
    content_type: str | None, declared: str | None
) -> None:
    headers = [(b"content-type", content_type.encode("latin-1"))] if content_type is not None else []
    if declared is not None:
        headers.append((b"content-length", declared.encode("latin-1")))
    for _ in range(2):  # the second request with these headers reuses the remembered map
        request = Request({"type": "http", "method": "POST", "path": "/", "headers": list(headers)},
                          _receiver([{"type": "http.request", "body": b"{}", "more_body": False}]))
        assert request.content_type == plain_media_type(content_type)
        try:
            outcome = "read" if await request.body() == b"{}" else "wrong body"
        except ApiError as error:
            outcome = str(error.status_code)
        except ValueError:
            outcome = "ValueError"
        assert outcome == plain_declared_check(declared)
