"""What the client gets back from admission webhooks: denials, the first of concurrent failures, warnings.

Upstream (k8s.io/apiserver, release-1.32): ``pkg/admission/plugin/webhook/errors/statuserror.go`` ToStatusErr
(the webhook's Status, a code below 400 made 400, the message prefixed ``admission webhook "NAME" denied the
request``), ``validating/dispatcher.go`` (all validating webhooks called at once; the first error received
from the channel answers, the others are logged), and ``warning.AddWarning`` (each webhook's ``warnings``
become the response's ``Warning`` headers, on every verb). Each test runs real webhooks over TLS.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx

from kubeloop.server import App

from ._webhooks import HANG, configuration, webhook, webhook_server

CM = "/api/v1/namespaces/default/configmaps"
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}}


async def _install(client: httpx.AsyncClient, name: str, *hooks: dict[str, Any]) -> None:
    r = await client.post(VWC, json=configuration("ValidatingWebhookConfiguration", name, *hooks))
    assert r.status_code == 201, r.text


async def test_a_denial_with_a_reason_and_no_code_is_400_with_the_reason_as_its_message(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path, lambda request: {"allowed": False, "status": {"reason": "NotWelcome"}}) as served:
        await _install(client, "cfg", webhook("reason.example.com", served.client_config()))
        r = await client.post(CM, json=_cm("x"))
    assert r.status_code == 400
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": 'admission webhook "reason.example.com" denied the request: NotWelcome',
                        "reason": "NotWelcome", "code": 400}
    assert (await client.get(f"{CM}/x")).status_code == 404


async def test_a_denial_with_a_success_code_is_made_a_400_failure(client: httpx.AsyncClient, tmp_path: Path) -> None:
    # ToStatusErr: "Make sure we don't return < 400 status codes along with a rejection", nor "Success".
    answer = {"allowed": False, "status": {"code": 200, "status": "Success", "message": "no"}}
    async with webhook_server(tmp_path, lambda request: answer) as served:
        await _install(client, "cfg", webhook("ok.example.com", served.client_config()))
        r = await client.post(CM, json=_cm("x"))
    assert r.status_code == 400
    body = r.json()
    assert (body["status"], body["code"]) == ("Failure", 400)
    assert body["message"] == 'admission webhook "ok.example.com" denied the request: no'
    assert "reason" not in body


async def test_the_first_validating_failure_to_arrive_answers_not_the_first_in_order(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    # "a" comes first in webhook order but fails last: it answers only once "b"'s denial was received.
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request["object"]["metadata"]["name"] != "x":
            return {"allowed": True}
        return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": "b says no"}}

    async with webhook_server(tmp_path, answer) as served, webhook_server(tmp_path / "a", lambda r: HANG) as slow:
        await _install(client, "a", webhook("a.example.com", slow.client_config(), failurePolicy="Fail"))
        await _install(client, "b", webhook("b.example.com", served.client_config()))

        class ReleaseOnDenial(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if record.getMessage().startswith('rejected by webhook "b.example.com"'):
                    slow.hook.released.set()  # "a" now fails (its server ends the call without an answer)

        logger = logging.getLogger("kubeloop.server.webhooks")
        handler, level = ReleaseOnDenial(), logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            r = await client.post(CM, json=_cm("x"))
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
    assert r.status_code == 403, r.text
    assert r.json()["message"] == 'admission webhook "b.example.com" denied the request: b says no'
    assert len(slow.hook.reviews) == 1  # both were called, and the answer waited for both
    assert (await client.get(f"{CM}/x")).status_code == 404


async def test_delete_collection_keeps_the_webhooks_warnings(client: httpx.AsyncClient, tmp_path: Path) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True, "warnings": [f"deleting {request['name']}"]}

    for name in ("one", "two"):
        assert (await client.post(CM, json=_cm(name))).status_code == 201
    async with webhook_server(tmp_path, answer) as served:
        await _install(client, "cfg", webhook("warn.example.com", served.client_config(), operations=("DELETE",)))
        r = await client.delete(CM)
    assert r.status_code == 200, r.text
    assert sorted(r.headers.get_list("warning")) == ['299 - "deleting one"', '299 - "deleting two"']
    assert (await client.get(CM)).json()["items"] == []


async def test_a_create_admitted_again_after_its_namespace_changed_keeps_the_warnings(
        app: App, client: httpx.AsyncClient, tmp_path: Path) -> None:
    from .test_namespace_create_race import DeleteNamespaceOnce

    assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})).status_code == 201
    calls: list[int] = []

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        return {"allowed": True, "warnings": [f"call {len(calls)}"]}

    async with webhook_server(tmp_path, answer) as served:
        await _install(client, "cfg", webhook("warn.example.com", served.client_config()))
        plugin = DeleteNamespaceOnce(client, label=True)  # relabels "team" between admission and commit
        app.admission.append(plugin)
        r = await client.post("/api/v1/namespaces/team/configmaps", json={"metadata": {"name": "late"}})
    assert r.status_code == 201, r.text
    assert plugin.calls == 2 and len(calls) == 2  # admitted twice: the webhook called twice
    assert r.headers.get_list("warning") == ['299 - "call 1"', '299 - "call 2"']


async def test_audit_annotations_in_an_answer_change_nothing_for_the_client(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    # Upstream adds them to the audit event as "<webhook name>/<key>" (an invalid key is logged, not an
    # error); kubeloop has no audit log, and the request goes on as if they were not there.
    answer = {"allowed": True, "auditAnnotations": {"checked": "yes", "not a key!": "x"}}
    async with webhook_server(tmp_path, lambda request: answer) as served:
        await _install(client, "cfg", webhook("audit.example.com", served.client_config()))
        r = await client.post(CM, json=_cm("x"))
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == []
