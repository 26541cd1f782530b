"""A request is parsed once: authorization and routing share the parse kept in the ASGI scope.

The answers must be exactly those of a separate parse: a user who passes RBAC gets the same status
and body as an admin (who skips authorization, so the app parses alone), and a middleware that
rewrites the request after authorization is routed by the rewritten request, never a stale parse.
Requests that repeat a query string (kubectl's ``fieldManager=...&fieldValidation=Strict``) share its
parse and its write options: the same values and the same errors as a fresh parse, every time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import parse_qs

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import ApiError
from kubeloop.server import App, User, secure
from kubeloop.server._authz_bootstrap import bootstrap_rbac_objects
from kubeloop.server._authz_rbac import RbacAuthorizer
from kubeloop.server._http import Receive, Scope, Send, query_params
from kubeloop.server._options import _write_options, parse_write_options
from kubeloop.server._requestinfo import SCOPE_KEY, parse_request_info, request_info

ADMIN = User("kubernetes-admin", groups=("system:masters", "system:authenticated"))
BOB = User("bob", groups=("system:authenticated",))
TOKENS = {"admin-token": ADMIN, "bob-token": BOB}
RBAC = "rbac.authorization.k8s.io"
OBJECTS: list[dict[str, Any]] = [
    *bootstrap_rbac_objects(),
    {"kind": "Role", "metadata": {"name": "cm", "namespace": "default"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]},
    {"kind": "RoleBinding", "metadata": {"name": "bob-cm", "namespace": "default"},
     "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "cm"}, "subjects": [{"kind": "User", "name": "bob"}]},
]
PLURALS = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
           "ClusterRoleBinding": "clusterrolebindings"}
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


async def lister(resource: str) -> Sequence[dict[str, Any]]:
    return [o for o in OBJECTS if PLURALS[o["kind"]] == resource]


def clients(app: Any) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
    secured = secure(app, tokens=TOKENS, authorizer=RbacAuthorizer(lister=lister))
    transport = httpx.ASGITransport(app=secured)
    return (
        httpx.AsyncClient(transport=transport, base_url="https://k", headers={"Authorization": "Bearer admin-token"}),
        httpx.AsyncClient(transport=transport, base_url="https://k", headers={"Authorization": "Bearer bob-token"}),
    )


@pytest.fixture
async def admin_and_bob(app: App) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    admin, bob = clients(app)
    async with admin, bob:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
        assert (await admin.post(CONFIGMAPS, content=orjson.dumps(body))).status_code == 201
        yield admin, bob


@pytest.mark.parametrize("path", [
    f"{CONFIGMAPS}/a",
    f"{CONFIGMAPS}/missing",
    CONFIGMAPS,
    f"{CONFIGMAPS}?fieldSelector=metadata.name%3Da",
    f"{CONFIGMAPS}/a/",
    f"{CONFIGMAPS}/a?watch=0",
])
async def test_an_authorized_user_gets_the_answer_the_admin_gets(
    admin_and_bob: tuple[httpx.AsyncClient, httpx.AsyncClient], path: str
) -> None:
    admin, bob = admin_and_bob
    theirs = await admin.get(path)
    ours = await bob.get(path)
    assert ours.status_code == theirs.status_code
    assert ours.json() == theirs.json()


async def test_a_missing_object_is_404_and_a_denied_verb_403_after_one_parse(
    admin_and_bob: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    admin, bob = admin_and_bob
    missing = await bob.get(f"{CONFIGMAPS}/missing")
    assert missing.status_code == 404
    assert missing.json()["message"] == 'configmaps "missing" not found'
    assert missing.json()["details"] == {"name": "missing", "kind": "configmaps"}
    denied = await bob.delete(f"{CONFIGMAPS}/a")
    assert denied.status_code == 403
    assert denied.json()["message"] == (
        'configmaps "a" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" '
        'in the namespace "default"'
    )
    elsewhere = await bob.get("/api/v1/namespaces/kube-system/configmaps/a")
    assert elsewhere.status_code == 403
    # Authorization comes before routing: an unknown resource is 403 for bob, 404 for the admin.
    assert (await bob.get("/api/v1/namespaces/default/configmapz/a")).status_code == 403
    assert (await admin.get("/api/v1/namespaces/default/configmapz/a")).status_code == 404


async def test_a_request_rewritten_after_authorization_is_routed_by_its_new_path(app: App) -> None:
    async def rewrite(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"].endswith("/alias"):
            path = scope["path"].removesuffix("/alias") + "/a"
            scope["path"], scope["raw_path"] = path, path.encode()
        await app(scope, receive, send)

    admin, bob = clients(rewrite)
    async with admin, bob:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
        assert (await admin.post(CONFIGMAPS, content=orjson.dumps(body))).status_code == 201
        answer = await bob.get(f"{CONFIGMAPS}/alias")
    assert answer.status_code == 200
    assert answer.json()["metadata"]["name"] == "a"


def test_request_info_is_parsed_once_per_scope_and_again_when_the_request_changes() -> None:
    scope: dict[str, Any] = {"query_string": b""}
    first = request_info(scope, "GET", f"{CONFIGMAPS}/a", {})
    assert first == parse_request_info("GET", f"{CONFIGMAPS}/a", {})
    assert request_info(scope, "GET", f"{CONFIGMAPS}/a", {}) is first
    assert request_info(scope, "DELETE", f"{CONFIGMAPS}/a", {}).verb == "delete"
    assert request_info(scope, "GET", CONFIGMAPS, {}).verb == "list"
    scope["query_string"] = b"watch=1"
    assert request_info(scope, "GET", CONFIGMAPS, {"watch": ["1"]}).verb == "watch"
    assert scope[SCOPE_KEY][3].verb == "watch"


_PATHS = ["/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/configmaps/a",
          "/apis/apps/v1/deployments", "/api/v1/namespaces/team", "/api/v1/watch/pods", "/healthz", "/apis/apps/v1"]
_VALUES = st.lists(st.sampled_from(["", "0", "1", "false", "true", "metadata.name=a", "metadata.name!=b,x=y"]),
                   max_size=2)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["GET", "DELETE", "POST", "PUT"]), st.sampled_from(_PATHS),
                          _VALUES, _VALUES), min_size=1, max_size=12))
def test_remembered_parses_answer_as_fresh_ones(requests: list[tuple[str, str, list[str], list[str]]]) -> None:
    for method, path, watch, selector in requests:
        query = {k: v for k, v in (("watch", watch), ("fieldSelector", selector)) if v}
        scope: dict[str, Any] = {"query_string": repr(query).encode()}
        assert request_info(scope, method, path, query) == parse_request_info(method, path, query)


async def test_the_query_string_is_parsed_once_for_authorization_and_routing(
    admin_and_bob: tuple[httpx.AsyncClient, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    import kubeloop.server._authz as authz_module
    import kubeloop.server._http as http_module

    parsed: list[str] = []

    def counting(qs: str, **kwargs: Any) -> dict[str, list[str]]:
        parsed.append(qs)
        return parse_qs(qs, **kwargs)

    monkeypatch.setattr(http_module, "parse_qs", counting)
    monkeypatch.setattr(authz_module, "parse_qs", counting)
    _, bob = admin_and_bob
    answer = await bob.get(f"{CONFIGMAPS}?fieldSelector=metadata.name%3Da&limit=5")
    assert answer.status_code == 200
    assert [item["metadata"]["name"] for item in answer.json()["items"]] == ["a"]
    assert parsed == ["fieldSelector=metadata.name%3Da&limit=5"]


def test_a_rewritten_query_string_is_parsed_again() -> None:
    scope: dict[str, Any] = {"query_string": b"watch=1"}
    first = query_params(scope)
    assert first == {"watch": ["1"]}
    assert query_params(scope) is first
    scope["query_string"] = b"watch=0&limit=2"
    assert query_params(scope) == {"watch": ["0"], "limit": ["2"]}
    assert query_params({"query_string": b""}) == {}


_QUERY_PARTS = st.sampled_from([b"watch=1", b"fieldManager=kubectl-client-side-apply", b"fieldValidation=Strict",
                                b"a=%20b+c", b"x", b"x=", b"dryRun=All", b"dryRun=", b"\xe9=%C3%A9", b"k=v;w", b"=v"])


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_QUERY_PARTS, max_size=4), repeat=st.booleans())
def test_a_query_string_parses_as_parse_qs_does_whether_seen_before_or_not(parts: list[bytes], repeat: bool) -> None:
    qs = b"&".join(parts)
    if repeat:
        query_params({"query_string": qs})  # an earlier request with the same query string
    assert query_params({"query_string": qs}) == parse_qs(qs.decode("latin-1"), keep_blank_values=True)


def test_requests_with_one_query_string_share_one_parse_and_a_long_one_is_not_kept() -> None:
    kubectl = b"fieldManager=kubectl-create&fieldValidation=Strict"
    first = query_params({"query_string": kubectl})
    assert query_params({"query_string": kubectl}) is first
    assert first == {"fieldManager": ["kubectl-create"], "fieldValidation": ["Strict"]}
    long = b"labelSelector=" + b"a" * 300
    assert query_params({"query_string": long}) is not query_params({"query_string": long})
    assert query_params({"query_string": long}) == {"labelSelector": ["a" * 300]}


async def test_writes_with_one_query_string_each_get_their_own_options(admin_and_bob: Any) -> None:
    admin, _ = admin_and_bob
    for name, query in (("a1", "fieldManager=one"), ("a2", "fieldManager=one"), ("a3", "fieldManager=two&dryRun=All")):
        created = await admin.post(f"{CONFIGMAPS}?{query}", json={"metadata": {"name": name}, "data": {"k": "v"}})
        assert created.status_code == 201, created.text
        assert created.json()["metadata"]["managedFields"][0]["manager"] == query.split("&")[0].split("=")[1]
    assert (await admin.get(f"{CONFIGMAPS}/a3")).status_code == 404  # the dry run's option, not the earlier one's
    assert (await admin.get(f"{CONFIGMAPS}/a2")).status_code == 200


_WRITE_QUERIES = st.sampled_from([
    b"fieldManager=kubectl-client-side-apply&fieldValidation=Strict", b"fieldManager=kubectl-edit",
    b"fieldValidation=Warn", b"fieldValidation=Bogus", b"dryRun=All", b"dryRun=Some", b"force=true",
    b"fieldManager=%01bad", b"fieldManager=" + b"m" * 129, b"fieldManager=a&fieldManager=b", b"x=1",
])
_WRITE_KINDS = st.sampled_from([("CreateOptions", None), ("UpdateOptions", None),
                                ("PatchOptions", "application/merge-patch+json"),
                                ("PatchOptions", "application/apply-patch+yaml")])


def _options_or_error(query: dict[str, list[str]], kind: str, patch_type: str | None) -> Any:
    try:
        return _write_options(query, kind, patch_type)
    except ApiError as error:
        return error.code, error.message


@settings(max_examples=200, deadline=None)
@given(qs=_WRITE_QUERIES, endpoint=_WRITE_KINDS, times=st.integers(1, 3))
def test_write_options_of_a_query_string_seen_before_are_those_of_a_fresh_parse(
        qs: bytes, endpoint: tuple[str, str | None], times: int) -> None:
    kind, patch_type = endpoint
    expected = _options_or_error(parse_qs(qs.decode("latin-1"), keep_blank_values=True), kind, patch_type)
    for _ in range(times):  # as the requests of a client that repeats its query string
        try:
            got: Any = parse_write_options(query_params({"query_string": qs}), kind=kind, patch_type=patch_type)
        except ApiError as error:
            got = error.code, error.message
        assert got == expected


async def test_a_bad_field_manager_is_refused_on_every_request_that_sends_it(admin_and_bob: Any) -> None:
    admin, _ = admin_and_bob
    for _ in range(2):
        refused = await admin.patch(f"{CONFIGMAPS}/a?fieldManager=%01", content=b'{"data":{"k":"w"}}',
                                    headers={"content-type": "application/merge-patch+json"})
        assert refused.status_code == 422, refused.text
        assert "fieldManager" in refused.text
    kept = await admin.get(f"{CONFIGMAPS}/a")
    assert kept.json()["data"] == {"k": "v"}
