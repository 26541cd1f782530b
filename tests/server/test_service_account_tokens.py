"""TokenRequest (``serviceaccounts/token``) and bound ServiceAccount token authentication, through the API.

Upstream 1.32: pkg/registry/core/serviceaccount/storage/token.go (TokenREST.Create),
pkg/apis/authentication/validation (ValidateTokenRequest), pkg/serviceaccount/claims.go.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.api import KindRegistry, ResourceInfo, format_time
from kubeloop.client import Client
from kubeloop.server import App, create_app, secure, store_rbac_authorizer
from kubeloop.server._authn import User
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

KINDS = KindRegistry()
NAMESPACES: ResourceInfo = KINDS.by_kind("", "Namespace")  # type: ignore[assignment]
PODS: ResourceInfo = KINDS.by_kind("", "Pod")  # type: ignore[assignment]
SERVICEACCOUNTS: ResourceInfo = KINDS.by_kind("", "ServiceAccount")  # type: ignore[assignment]
TOKEN = "/api/v1/namespaces/ns/serviceaccounts/{}/token"
ADMIN = "admin-token"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def app(tmp_path: Path, clock: FakeClock) -> AsyncIterator[App]:
    store = await SqliteStore.open(tmp_path / "db")
    application = create_app(store=store, clock=clock, rng=random.Random(3))
    await application.startup()
    try:
        yield application
    finally:
        await application.shutdown()
        await store.close()


@pytest.fixture
async def http(app: App) -> AsyncIterator[httpx.AsyncClient]:
    """The API behind the security chain, as ``kubeloop up`` serves it; ``ADMIN`` is a master."""
    chain = secure(app, tokens={ADMIN: User("kubernetes-admin", "1", ("system:masters",))},
                   authorizer=store_rbac_authorizer(app.state.store),
                   token_authenticator=app.service_account_tokens.authenticate)  # fmt: skip
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=chain), base_url="http://kubeloop",
                                 headers={"Authorization": f"Bearer {ADMIN}"}) as client:  # fmt: skip
        admin = Client.from_asgi(app, default_namespace="ns")
        await admin.create(NAMESPACES, {"metadata": {"name": "ns"}})
        await admin.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}})
        await admin.create(SERVICEACCOUNTS, {"metadata": {"name": "robot"}})
        await admin.close()
        yield client


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return decoded


async def request_token(http: httpx.AsyncClient, name: str = "robot", **spec: Any) -> httpx.Response:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    return await http.post(TOKEN.format(name), json=body)


async def sa(app: App, name: str = "robot") -> dict[str, Any]:
    client = Client.from_asgi(app, default_namespace="ns")
    try:
        return await client.get(SERVICEACCOUNTS, name)
    finally:
        await client.close()


async def test_token_request_answers_a_signed_token_with_upstreams_claims(
    http: httpx.AsyncClient, app: App, clock: FakeClock
) -> None:
    response = await request_token(http)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["kind"] == "TokenRequest" and answer["apiVersion"] == "authentication.k8s.io/v1"
    assert answer["metadata"]["name"] == "robot" and answer["metadata"]["namespace"] == "ns"
    assert answer["spec"] == {"audiences": ["https://kubernetes.default.svc.cluster.local"], "expirationSeconds": 3600}
    assert answer["status"]["expirationTimestamp"] == format_time(clock.now() + 3600)
    claims = claims_of(answer["status"]["token"])
    uid = (await sa(app))["metadata"]["uid"]
    assert claims["sub"] == "system:serviceaccount:ns:robot"
    assert claims["iss"] == "https://kubernetes.default.svc.cluster.local"
    assert claims["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"]
    assert claims["kubernetes.io"] == {"namespace": "ns", "serviceaccount": {"name": "robot", "uid": uid}}
    assert claims["jti"]


async def test_the_token_authenticates_as_the_service_account(http: httpx.AsyncClient, app: App) -> None:
    token = (await request_token(http)).json()["status"]["token"]
    user = await app.service_account_tokens.authenticate(token)
    assert user is not None
    assert user.name == "system:serviceaccount:ns:robot"
    assert user.uid == (await sa(app))["metadata"]["uid"]
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    assert user.extra == {"authentication.kubernetes.io/credential-id": (f"JTI={claims_of(token)['jti']}",)}
    # Through the security chain: authenticated (RBAC then refuses, no role grants it anything) ...
    as_sa = await http.get("/api/v1/namespaces/ns/pods", headers={"Authorization": f"Bearer {token}"})
    assert as_sa.status_code == 403
    assert 'User "system:serviceaccount:ns:robot" cannot list resource "pods"' in as_sa.json()["message"]
    # ... where a forged one is not.
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    refused = await http.get("/api/v1/namespaces/ns/pods", headers={"Authorization": f"Bearer {forged}"})
    assert refused.status_code == 401


@pytest.mark.parametrize(("seconds", "message"), [
    (599, "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"),
    ((1 << 32) + 1, "spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"),
])
async def test_expiration_out_of_bounds_is_invalid(http: httpx.AsyncClient, seconds: int, message: str) -> None:
    response = await request_token(http, expirationSeconds=seconds)
    assert response.status_code == 422
    assert response.json()["message"] == f'TokenRequest.authentication.k8s.io "" is invalid: {message}'


async def test_missing_service_account_is_not_found(http: httpx.AsyncClient) -> None:
    response = await request_token(http, "ghost")
    assert response.status_code == 404
    assert response.json()["message"] == 'serviceaccounts "ghost" not found'


async def test_body_name_must_match_the_url(http: httpx.AsyncClient) -> None:
    response = await http.post(TOKEN.format("robot"), json={"metadata": {"name": "other"}, "spec": {}})
    assert response.status_code == 422
    assert response.json()["message"] == ('TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: '
                                          'Invalid value: "other": must match the service account name if specified')


async def test_token_bound_to_a_pod_dies_with_the_pod(http: httpx.AsyncClient, app: App, clock: FakeClock) -> None:
    pod = {"metadata": {"name": "web"}, "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "x"}]}}
    created = (await http.post("/api/v1/namespaces/ns/pods", json=pod)).json()
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web"}
    token = (await request_token(http, boundObjectRef=ref)).json()["status"]["token"]
    pod_uid = created["metadata"]["uid"]
    assert claims_of(token)["kubernetes.io"]["pod"] == {"name": "web", "uid": pod_uid}
    user = await app.service_account_tokens.authenticate(token)
    assert user is not None
    assert user.extra["authentication.kubernetes.io/pod-name"] == ("web",)
    assert user.extra["authentication.kubernetes.io/pod-uid"] == (pod_uid,)
    assert (await http.delete("/api/v1/namespaces/ns/pods/web?gracePeriodSeconds=0")).status_code == 200
    assert await app.service_account_tokens.authenticate(token) is None


async def test_bound_object_rules(http: httpx.AsyncClient) -> None:
    pod = {"metadata": {"name": "web"}, "spec": {"serviceAccountName": "default", "containers": [{"name": "c", "image": "x"}]}}
    assert (await http.post("/api/v1/namespaces/ns/pods", json=pod)).status_code == 201
    other_sa = await request_token(http, boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web"})
    assert other_sa.status_code == 400
    assert other_sa.json()["message"] == ('cannot bind token for serviceaccount "robot" to pod running with different '
                                          "serviceaccount name.")
    wrong_uid = await request_token(http, "default", boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web",
                                                                     "uid": "not-it"})
    assert wrong_uid.status_code == 409
    assert "the UID in the bound object reference (not-it) does not match the UID in record" in wrong_uid.json()["message"]
    config_map = await request_token(http, boundObjectRef={"kind": "ConfigMap", "apiVersion": "v1", "name": "x"})
    assert config_map.status_code == 400
    assert config_map.json()["message"] == "cannot bind token to object of type /v1, Kind=ConfigMap"
    missing = await request_token(http, boundObjectRef={"kind": "Secret", "apiVersion": "v1", "name": "nope"})
    assert missing.status_code == 404
    assert missing.json()["message"] == 'secrets "nope" not found'


async def test_expired_token_or_recreated_account_no_longer_authenticates(
    http: httpx.AsyncClient, app: App, clock: FakeClock
) -> None:
    token = (await request_token(http, expirationSeconds=600)).json()["status"]["token"]
    await clock.advance(600 + 59)  # go-jose's one-minute leeway
    assert await app.service_account_tokens.authenticate(token) is not None
    await clock.advance(2)
    assert await app.service_account_tokens.authenticate(token) is None
    token = (await request_token(http)).json()["status"]["token"]
    assert (await http.delete("/api/v1/namespaces/ns/serviceaccounts/robot")).status_code == 200
    assert (await http.post("/api/v1/namespaces/ns/serviceaccounts", json={"metadata": {"name": "robot"}})).status_code == 201
    assert await app.service_account_tokens.authenticate(token) is None


async def test_a_token_for_other_audiences_does_not_authenticate_here(http: httpx.AsyncClient, app: App) -> None:
    answer = (await request_token(http, audiences=["vault"])).json()
    assert claims_of(answer["status"]["token"])["aud"] == ["vault"]
    assert await app.service_account_tokens.authenticate(answer["status"]["token"]) is None
