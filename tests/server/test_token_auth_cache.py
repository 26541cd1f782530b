"""Bound ServiceAccount tokens are authenticated through a 10 s success cache, as kube-apiserver does.

Upstream 1.32: ``pkg/kubeapiserver/authenticator/config.go`` wraps the token authenticators in
``token/cache.New(tokenAuth, true, TokenSuccessCacheTTL, TokenFailureCacheTTL)``; the defaults
(``pkg/kubeapiserver/options/authentication.go``) are 10 s and 0 s. So a token keeps working for up to
10 s after its bound Pod is deleted, and a refused token is checked again on every request.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from kubeloop.api import KindRegistry, ResourceInfo
from kubeloop.client import Client
from kubeloop.server import (
    App,
    CachedTokenAuthenticator,
    User,
    bootstrap_rbac_objects,
    ensure_tls,
    secure,
    store_rbac_authorizer,
)
from kubeloop.server._authz_chain import TokenAuthenticator
from kubeloop.testing import FakeClock

from ._uvicorn import serve

KINDS = KindRegistry()
NAMESPACES: ResourceInfo = KINDS.by_kind("", "Namespace")  # type: ignore[assignment]
SERVICEACCOUNTS: ResourceInfo = KINDS.by_kind("", "ServiceAccount")  # type: ignore[assignment]
ROLES: ResourceInfo = KINDS.by_kind("rbac.authorization.k8s.io", "Role")  # type: ignore[assignment]
BINDINGS: ResourceInfo = KINDS.by_kind("rbac.authorization.k8s.io", "RoleBinding")  # type: ignore[assignment]
ADMIN = "admin-token"
PODS = "/api/v1/namespaces/ns/pods"
POD = {"metadata": {"name": "web"}, "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "x"}]}}


class Counting:
    """The server's own ServiceAccount authenticator, counting the lookups that reach it."""

    def __init__(self, inner: TokenAuthenticator) -> None:
        self.inner = inner
        self.calls = 0

    async def __call__(self, token: str) -> User | None:
        self.calls += 1
        return await self.inner(token)


@pytest.fixture
async def counting(app: App) -> Counting:
    return Counting(app.service_account_tokens.authenticate)


@pytest.fixture
async def cache(app: App, clock: FakeClock, counting: Counting) -> CachedTokenAuthenticator:
    return CachedTokenAuthenticator(counting, audiences=app.service_account_tokens.audiences, clock=clock)


@pytest.fixture
async def chain(app: App, cache: CachedTokenAuthenticator) -> AsyncIterator[object]:
    """The API behind the security chain with the cache, as ``kubeloop up`` serves it; the robot may read pods."""
    admin = Client.from_asgi(app, default_namespace="ns")
    try:
        for obj in bootstrap_rbac_objects():  # system:discovery and the rest, as kubeloop up bootstraps them
            await admin.create(KINDS.by_kind("rbac.authorization.k8s.io", obj["kind"]), obj)  # type: ignore[arg-type]
        await admin.create(NAMESPACES, {"metadata": {"name": "ns"}})
        await admin.create(SERVICEACCOUNTS, {"metadata": {"name": "robot"}})
        await admin.create(ROLES, {"metadata": {"name": "pods"},
                                   "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})
        await admin.create(BINDINGS, {"metadata": {"name": "robot-pods"},
                                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
                                      "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "ns"}]})
    finally:
        await admin.close()
    yield secure(app, tokens={ADMIN: User("kubernetes-admin", "1", ("system:masters", "system:authenticated"))},
                 authorizer=store_rbac_authorizer(app.state.store), token_authenticator=cache)


@pytest.fixture
async def http(chain: object) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=chain), base_url="http://kubeloop",  # type: ignore[arg-type]
                                 headers={"Authorization": f"Bearer {ADMIN}"}) as client:
        yield client


async def pod_bound_token(http: httpx.AsyncClient) -> str:
    assert (await http.post(PODS, json=POD)).status_code == 201
    body = {"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web"}}}
    answer = await http.post("/api/v1/namespaces/ns/serviceaccounts/robot/token", json=body)
    assert answer.status_code == 201, answer.text
    token: str = answer.json()["status"]["token"]
    return token


async def as_token(http: httpx.AsyncClient, token: str) -> int:
    return (await http.get(PODS, headers={"Authorization": f"Bearer {token}"})).status_code


async def test_a_token_outlives_its_deleted_pod_for_the_ten_second_success_ttl(
    http: httpx.AsyncClient, clock: FakeClock, counting: Counting
) -> None:
    token = await pod_bound_token(http)
    assert await as_token(http, token) == 200
    assert counting.calls == 1
    assert (await http.delete(f"{PODS}/web?gracePeriodSeconds=0")).status_code == 200
    await clock.advance(9.9)
    assert await as_token(http, token) == 200  # cached: the deleted pod is not looked up again
    assert counting.calls == 1
    await clock.advance(0.2)
    refused = await http.get(PODS, headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401 and refused.json()["reason"] == "Unauthorized"
    assert counting.calls == 2


async def test_a_refused_token_is_checked_again_on_every_request(
    http: httpx.AsyncClient, counting: Counting, cache: CachedTokenAuthenticator
) -> None:
    token = await pod_bound_token(http)
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    for expected_calls in (1, 2, 3):
        assert await as_token(http, forged) == 401
        assert counting.calls == expected_calls
    assert len(cache) == 0


async def test_a_refusal_does_not_hide_a_later_success(clock: FakeClock) -> None:
    accepted: set[str] = set()

    async def known(token: str) -> User | None:
        return User("u") if token in accepted else None

    cache = CachedTokenAuthenticator(known, clock=clock)
    assert await cache("t") is None
    accepted.add("t")
    user = await cache("t")
    assert user is not None and user.name == "u"
    accepted.clear()
    assert await cache("t") == user  # the success is cached ...
    await clock.advance(10)
    assert await cache("t") is None  # ... for 10 s


async def test_concurrent_requests_with_one_token_share_one_lookup(clock: FakeClock) -> None:
    release = asyncio.Event()
    calls: list[str] = []

    async def slow(token: str) -> User | None:
        calls.append(token)
        await release.wait()
        return User("u") if token == "good" else None

    cache = CachedTokenAuthenticator(slow, clock=clock)
    waiting = [asyncio.ensure_future(cache("good")) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    assert [u.name if u else None for u in await asyncio.gather(*waiting)] == ["u", "u", "u"]
    assert calls == ["good"]


async def test_the_cache_is_bounded_by_its_ttl_alone_like_upstreams_expiring_cache(clock: FakeClock) -> None:
    # apiserver token/cache: striped utilcache.Expiring maps, no size limit (the 32 x 128 LRU is older
    # upstream's); Expiring.Set collects expired entries. 5,000 tokens within 10 s all stay cached.
    calls: list[str] = []

    async def everyone(token: str) -> User | None:
        calls.append(token)
        return User(token)

    cache = CachedTokenAuthenticator(everyone, clock=clock)
    tokens = [f"t{i}" for i in range(5000)]
    for token in tokens:
        await cache(token)
    assert len(cache) == 5000
    for token in tokens:
        await cache(token)
    assert calls == tokens, "every token answered from the cache the second time"
    await clock.advance(9)
    await cache("late")
    assert len(cache) == 5001  # nothing expired yet
    await clock.advance(1)
    await cache("next")  # the first 5,000 expired at 10 s: dropped on this insert
    assert len(cache) == 2
    await cache("t0")
    assert calls[-1] == "t0" and len(calls) == 5003


async def test_the_key_is_an_hmac_of_token_and_audiences_not_the_token(clock: FakeClock) -> None:
    async def everyone(token: str) -> User | None:
        return User(token)

    here = CachedTokenAuthenticator(everyone, clock=clock, audiences=("api",), hmac_key=b"k" * 32)
    other = CachedTokenAuthenticator(everyone, clock=clock, audiences=("vault",), hmac_key=b"k" * 32)
    split = CachedTokenAuthenticator(everyone, clock=clock, audiences=("ap", "i"), hmac_key=b"k" * 32)
    await here("secret-token")
    await other("secret-token")
    await split("secret-token")
    keys = [next(iter(c._entries)) for c in (here, other, split)]
    assert len(set(keys)) == 3
    assert all(b"secret-token" not in key for key in keys)


def kubectl_get_pods(url: str, token: str, home: Path) -> subprocess.CompletedProcess[str]:
    ca = str(home / "pki" / "ca.crt")
    return subprocess.run(["kubectl", "--server", url, "--certificate-authority", ca, "--token", token,
                           "get", "pods", "-n", "ns", "-o", "name"],
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin:/usr/local/bin", "KUBECONFIG": str(home / "none")},
                          capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_token_keeps_working_for_ten_seconds_after_its_pod_is_deleted(
    chain: object, http: httpx.AsyncClient, clock: FakeClock, tmp_path: Path
) -> None:
    token = await pod_bound_token(http)
    async with serve(chain, tls=ensure_tls(tmp_path)) as url:  # type: ignore[arg-type]
        first = await asyncio.to_thread(kubectl_get_pods, url, token, tmp_path)
        assert first.returncode == 0 and first.stdout.strip() == "pod/web", first.stderr
        assert (await http.delete(f"{PODS}/web?gracePeriodSeconds=0")).status_code == 200
        await clock.advance(9)
        cached = await asyncio.to_thread(kubectl_get_pods, url, token, tmp_path)
        assert cached.returncode == 0 and cached.stdout.strip() == "", cached.stderr
        await clock.advance(2)
        refused = await asyncio.to_thread(kubectl_get_pods, url, token, tmp_path)
        assert refused.returncode == 1
        assert "error: You must be logged in to the server (Unauthorized)" in refused.stderr
