"""Bearer-token authentication in front of any ASGI app (apiserver filters/authentication.go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

from kubeloop.server._authn import (
    USER_SCOPE_KEY,
    AuthenticationMiddleware,
    User,
    ensure_token_file,
    load_token_file,
)


async def whoami(scope: Any, receive: Any, send: Any) -> None:
    user: User = scope[USER_SCOPE_KEY]
    body = orjson.dumps({"name": user.name, "groups": list(user.groups)})
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def client(tokens: dict[str, User]) -> httpx.AsyncClient:
    app = AuthenticationMiddleware(whoami, tokens=tokens)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://kubeloop")


ALICE = User("alice", "u1", ("dev", "system:authenticated"))
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


async def test_known_token_runs_as_its_user() -> None:
    async with client({"t0k": ALICE}) as c:
        r = await c.get("/api/v1/pods", headers={"Authorization": "Bearer t0k"})
    assert r.status_code == 200
    assert r.json() == {"name": "alice", "groups": ["dev", "system:authenticated"]}


async def test_header_name_and_scheme_are_case_insensitive() -> None:
    async with client({"t0k": ALICE}) as c:
        r = await c.get("/api", headers={"authorization": "bearer t0k"})
    assert r.json()["name"] == "alice"


async def test_missing_credentials_are_401_with_upstream_status() -> None:
    async with client({"t0k": ALICE}) as c:
        r = await c.get("/api/v1/namespaces/default/configmaps")
    assert r.status_code == 401
    assert r.json() == UNAUTHORIZED


async def test_401_carries_the_headers_every_apiserver_answer_has() -> None:
    # apiserver DefaultBuildHandlerChain: WithCacheControl wraps WithAuthentication, so a 401 is
    # "no-cache, private" too; responsewriters add nosniff to every Status.
    async with client({"t0k": ALICE}) as c:
        r = await c.get("/api/v1/pods")
    assert r.status_code == 401
    assert r.headers["cache-control"] == "no-cache, private"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-type"] == "application/json"


async def test_unknown_token_is_401_even_on_public_paths() -> None:
    async with client({"t0k": ALICE}) as c:
        for path in ("/api", "/healthz"):
            r = await c.get(path, headers={"Authorization": "Bearer nope"})
            assert r.status_code == 401
            assert r.json() == UNAUTHORIZED


async def test_health_and_version_paths_are_open_to_anonymous() -> None:
    async with client({}) as c:
        for path in ("/healthz", "/livez", "/readyz", "/version", "/readyz/ping"):
            r = await c.get(path)
            assert r.status_code == 200, path
            assert r.json() == {"name": "system:anonymous", "groups": ["system:unauthenticated"]}


def test_token_file_round_trips_users_and_groups_and_keeps_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    first = ensure_token_file(path, identities=[("admin", ("system:masters",)), ("cm", ())])
    again = ensure_token_file(path, identities=[("admin", ("system:masters",)), ("cm", ()), ("bob", ("a", "b"))])
    assert again["admin"] == first["admin"] and again["cm"] == first["cm"]
    users = load_token_file(path)
    assert users[first["admin"]].groups == ("system:masters", "system:authenticated")
    assert users[first["admin"]].is_master
    assert users[again["bob"]].groups == ("a", "b", "system:authenticated")
    assert path.stat().st_mode & 0o077 == 0
