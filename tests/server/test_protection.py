"""Deletion protection (kubeloop.dev/protect): plain deletes are refused with 403, a confirmed plan goes through."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubeloop import guard
from kubeloop.api import Forbidden, KindRegistry, ResourceInfo
from kubeloop.client import Client
from kubeloop.server import (
    APPROVED_ANNOTATION,
    ENVTEST_DISABLED_ADMISSION_PLUGINS,
    PROTECT_ANNOTATION,
    create_app,
)
from kubeloop.server._protection import review_response
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

KINDS = KindRegistry()
NAMESPACES: ResourceInfo = KINDS.by_kind("", "Namespace")  # type: ignore[assignment]
CONFIGMAPS: ResourceInfo = KINDS.by_kind("", "ConfigMap")  # type: ignore[assignment]
PROTECT = {PROTECT_ANNOTATION: "true"}


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Client]:
    store = await SqliteStore.open(tmp_path / "db")
    app = create_app(store=store, clock=FakeClock(), rng=random.Random(3), disable_admission_plugins=ENVTEST_DISABLED_ADMISSION_PLUGINS)
    await app.startup()
    client = Client.from_asgi(app, default_namespace="team-a")
    try:
        yield client
    finally:
        await client.close()
        await app.shutdown()
        await store.close()


async def test_guard_and_server_agree_on_the_annotations() -> None:
    assert (guard.PROTECT_ANNOTATION, guard.APPROVED_ANNOTATION) == (PROTECT_ANNOTATION, APPROVED_ANNOTATION)
    # Both now re-export kubeloop.api's names, so the line above holds by construction; what users type
    # (and the webhook on a real cluster reads) is the documented spelling:
    assert (PROTECT_ANNOTATION, APPROVED_ANNOTATION) == ("kubeloop.dev/protect", "kubeloop.dev/delete-approved")


async def test_plain_delete_of_a_protected_namespace_is_forbidden_and_names_the_plan_step(api: Client) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "team-a", "annotations": PROTECT}})
    with pytest.raises(Forbidden) as caught:
        await api.delete(NAMESPACES, "team-a")
    message = caught.value.message
    assert message.startswith('namespaces "team-a" is forbidden: it is protected')
    assert "`kubeloop delete namespace/team-a`" in message and "--confirm PLAN" in message
    assert (await api.get(NAMESPACES, "team-a"))["metadata"].get("deletionTimestamp") is None


async def test_content_of_a_protected_namespace_is_not_protected_by_it(api: Client) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "team-a", "annotations": PROTECT}})
    await api.create(CONFIGMAPS, {"metadata": {"name": "c"}})
    await api.delete(CONFIGMAPS, "c")


async def test_a_protected_object_inside_a_namespace_is_protected(api: Client) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "team-a"}})
    await api.create(CONFIGMAPS, {"metadata": {"name": "c", "annotations": PROTECT}})
    with pytest.raises(Forbidden, match="kubeloop delete configmap/c -n team-a"):
        await api.delete(CONFIGMAPS, "c")


async def test_an_approval_for_another_uid_does_not_let_the_delete_through(api: Client) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "team-a"}})
    approval = {**PROTECT, APPROVED_ANNOTATION: "0123456789abcdef/not-this-uid"}
    await api.create(CONFIGMAPS, {"metadata": {"name": "c", "annotations": approval}})
    with pytest.raises(Forbidden):
        await api.delete(CONFIGMAPS, "c")


async def test_a_confirmed_plan_deletes_the_protected_namespace(api: Client) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "team-a", "annotations": PROTECT}})
    impact = await guard.preview_delete(api, "namespace", "team-a")
    assert impact.deleted[0].protected
    outcome = await guard.confirm_delete(api, "ns", "team-a", plan=impact.plan_id)
    assert [r.name for r in outcome.approved] == ["team-a"]
    ns = await api.get(NAMESPACES, "team-a")
    assert ns["status"]["phase"] == "Terminating"
    uid = ns["metadata"]["uid"]
    assert ns["metadata"]["annotations"][APPROVED_ANNOTATION] == f"{impact.plan_id}/{uid}"


async def test_a_failed_confirmed_delete_removes_its_approvals(api: Client) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "team-a", "annotations": PROTECT}})
    impact = await guard.preview_delete(api, "namespace", "team-a")
    with pytest.raises(guard.PlanChanged):
        await guard.confirm_delete(api, "ns", "team-a", plan="ffffffffffffffff")
    ns = await api.get(NAMESPACES, "team-a")
    assert APPROVED_ANNOTATION not in ns["metadata"]["annotations"]
    assert impact.plan_id != "ffffffffffffffff"


def review(operation: str, old: dict[str, Any] | None) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "r-1", "operation": operation, "name": "team-a", "namespace": "",
        "kind": {"group": "", "version": "v1", "kind": "Namespace"},
        "resource": {"group": "", "version": "v1", "resource": "namespaces"}, "oldObject": old}}


def test_webhook_review_denies_a_protected_delete_with_a_403_status() -> None:
    old = {"metadata": {"name": "team-a", "uid": "u1", "annotations": PROTECT}}
    answer = review_response(review("DELETE", old))
    assert answer["kind"] == "AdmissionReview" and answer["response"]["uid"] == "r-1"
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 403
    assert "kubeloop delete namespace/team-a" in answer["response"]["status"]["message"]


def test_webhook_review_allows_approved_unprotected_and_non_delete_requests() -> None:
    approved = {"metadata": {"name": "team-a", "uid": "u1",
                             "annotations": {**PROTECT, APPROVED_ANNOTATION: "0123456789abcdef/u1"}}}
    assert review_response(review("DELETE", approved))["response"]["allowed"] is True
    assert review_response(review("DELETE", {"metadata": {"name": "team-a"}}))["response"]["allowed"] is True
    assert review_response(review("UPDATE", None))["response"]["allowed"] is True


def test_webhook_refusal_names_the_resource_as_the_server_does() -> None:
    old = {"metadata": {"name": "web", "namespace": "shop", "uid": "u1", "annotations": PROTECT}}
    request = {"uid": "r-2", "operation": "DELETE", "name": "web", "namespace": "shop", "oldObject": old,
               "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
               "resource": {"group": "apps", "version": "v1", "resource": "deployments"}}
    answer = review_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    message = answer["response"]["status"]["message"]
    assert message.startswith('deployments.apps "web" is forbidden: ')
    assert "kubeloop delete deployment.apps/web -n shop" in message
    core = review_response(review("DELETE", {"metadata": {"name": "team-a", "uid": "u1", "annotations": PROTECT}}))
    assert core["response"]["status"]["message"].startswith('namespaces "team-a" is forbidden: ')
