"""``authorizer`` in admission CEL: ValidatingAdmissionPolicy expressions and webhook matchConditions ask the
server's RBAC what a user may do.

Upstream: k8s.io/apiserver ``pkg/cel/library/authz.go`` (path, group, resource, subresource, namespace, name,
check, allowed, reason, errored, error, serviceAccount; ``authorizer.requestResource``), bound to the API
server's authorizer by the policy dispatcher (``validating/dispatcher.go``: ``NewCachingAuthorizer``) and the
webhook matchConditions matcher. Through the real security chain, store and RBAC; webhooks over TLS.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import User

from ._rbac import rbac_clients
from ._webhooks import configuration, webhook, webhook_server
from .test_admission_policy_admission import CONFIGMAP_RULE, CONFIGMAPS, binding, configmap, install, policy

ROBOT = User("system:serviceaccount:default:robot",
             groups=("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"))
RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
CREATE_ONLY = "authorizer.group('').resource('configmaps').namespace('default').check('delete').allowed()"


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with rbac_clients(tmp_path, ROBOT) as (admin, robot):
        await grant(admin, "writer", ["configmaps"], ["create", "get", "list"])
        yield admin, robot


async def grant(admin: httpx.AsyncClient, name: str, resources: list[str], verbs: list[str]) -> None:
    role = {"kind": "Role", "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}]}
    role_binding = {"kind": "RoleBinding", "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                    "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}
    for path, body in ((f"{RBAC}/roles", role), (f"{RBAC}/rolebindings", role_binding)):
        r = await admin.post(path, json=body)
        assert r.status_code == 201, r.text


async def test_a_policy_asks_rbac_about_the_requests_user(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    admin, robot = clients
    await install(admin, policy(rule=CONFIGMAP_RULE, validations=[{
        "expression": CREATE_ONLY, "messageExpression": "'only who may delete them may create configmaps'"}]),
                  binding())
    assert (await admin.post(CONFIGMAPS, json=configmap("by-admin", {"a": "b"}))).status_code == 201  # a master
    refused = await robot.post(CONFIGMAPS, json=configmap("by-robot", {"a": "b"}))
    assert refused.status_code == 422, refused.text
    assert refused.json()["message"] == (
        'configmaps "by-robot" is forbidden: ValidatingAdmissionPolicy \'p\' with binding \'b\' denied request: '
        "only who may delete them may create configmaps")
    await grant(admin, "deleter", ["configmaps"], ["delete"])  # the next request sees the grant
    assert (await robot.post(CONFIGMAPS, json=configmap("by-robot", {"a": "b"}))).status_code == 201


async def test_request_resource_service_account_path_and_decision_fields(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    admin, robot = clients
    robot_account = "authorizer.serviceAccount('default', 'robot')"
    checks = [
        "authorizer.requestResource.check('create').allowed()",  # the request itself: configmaps in default
        "!authorizer.requestResource.check('delete').allowed()",
        f"{robot_account}.group('').resource('configmaps').namespace('default').check('create').allowed()",
        f"!{robot_account}.group('apps').resource('deployments').namespace('default').check('create').allowed()",
        f"!{robot_account}.group('').resource('configmaps').namespace('default').check('create').errored()",
        f"{robot_account}.group('').resource('configmaps').namespace('default').check('create').error() == ''",
        "authorizer.path('/healthz').check('get').allowed()",  # public-info-viewer: system:authenticated
        # serviceAccount's user is upstream's serviceaccount.UserInfo: not in system:authenticated.
        f"!{robot_account}.path('/healthz').check('get').allowed()",
        f"{robot_account}.group('').resource('configmaps').namespace('x').check('get').reason() != 'never'",
    ]
    await install(admin, policy(rule=CONFIGMAP_RULE, validations=[
        {"expression": check, "message": f"check {i}"} for i, check in enumerate(checks)]), binding())
    created = await robot.post(CONFIGMAPS, json=configmap("fine", {"a": "b"}))
    assert created.status_code == 201, created.text
    # The admin may delete: the second check now fails, and only it.
    refused = await admin.post(CONFIGMAPS, json=configmap("admin", {"a": "b"}))
    assert refused.status_code == 422
    assert refused.json()["message"].endswith("denied request: check 1")


async def test_an_invalid_check_is_an_evaluation_error_under_the_failure_policy(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    admin, _ = clients
    await install(admin, policy(rule=CONFIGMAP_RULE, validations=[
        {"expression": "authorizer.path(' ').check('get').allowed()"},
        {"expression": "authorizer.serviceAccount('default', 'Bad_Name').group('').resource('x').check('get').allowed()"},
    ]), binding())
    refused = await admin.post(CONFIGMAPS, json=configmap("x", {"a": "b"}))
    assert refused.status_code == 422
    assert refused.json()["message"].endswith(
        "denied request: expression 'authorizer.path(' ').check('get').allowed()' resulted in error: "
        "path must not be empty")


async def test_webhook_match_conditions_ask_rbac_too(
        clients: tuple[httpx.AsyncClient, httpx.AsyncClient], tmp_path: Path) -> None:
    admin, robot = clients

    def deny(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": "not for you"}}

    async with webhook_server(tmp_path, deny) as served:
        hook = webhook("rbac.example.com", served.client_config(), matchConditions=[
            {"name": "cannot-delete", "expression": f"!({CREATE_ONLY})"},
            {"name": "its-own-resource", "expression": "authorizer.requestResource.check('create').allowed()"}])
        r = await admin.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                             json=configuration("ValidatingWebhookConfiguration", "cfg", hook))
        assert r.status_code == 201, r.text
        assert (await admin.post(CONFIGMAPS, json=configmap("by-admin", {"a": "b"}))).status_code == 201
        refused = await robot.post(CONFIGMAPS, json=configmap("by-robot", {"a": "b"}))
        assert refused.status_code == 403, refused.text
        assert refused.json()["message"] == 'admission webhook "rbac.example.com" denied the request: not for you'
        assert [review["request"]["name"] for review in served.hook.reviews] == ["by-robot"]


async def test_without_a_security_chain_every_check_is_allowed(client: httpx.AsyncClient) -> None:
    await install(client, policy(rule=CONFIGMAP_RULE, validations=[
        {"expression": "authorizer.group('apps').resource('deployments').check('create').allowed() && "
                       "authorizer.requestResource.check('delete').reason() == ''"}]), binding())
    assert (await client.post(CONFIGMAPS, json=configmap("x", {"a": "b"}))).status_code == 201
