"""Dynamic admission: the API server calls the webhooks its stored configurations name.

Upstream: k8s.io/apiserver ``pkg/admission/plugin/webhook`` (release-1.32): ``generic/webhook.go``
ShouldCallHook, ``mutating/dispatcher.go``, ``validating/dispatcher.go``, ``request/admissionreview.go``,
``errors/statuserror.go`` ToStatusErr. Each test runs a real webhook over TLS (tests/server/_webhooks.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from ._webhooks import HANG, configuration, patch_response, webhook, webhook_server

CM = "/api/v1/namespaces/default/configmaps"
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def _cm(name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "1"}}


async def _install(client: httpx.AsyncClient, path: str, kind: str, *hooks: dict[str, Any], name: str = "cfg") -> None:
    r = await client.post(path, json=configuration(kind, name, *hooks))
    assert r.status_code == 201, r.text


def _deny_named(bad: str) -> Any:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request.get("name") == bad:
            return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": f"{bad} is not welcome"}}
        return {"allowed": True}
    return answer


async def test_a_validating_webhook_denial_is_the_webhooks_status_and_nothing_is_stored(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path, _deny_named("bad")) as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration",
                       webhook("deny.example.com", served.client_config()))
        r = await client.post(CM, json=_cm("bad"))
        assert r.status_code == 403
        body = r.json()
        assert body["message"] == 'admission webhook "deny.example.com" denied the request: bad is not welcome'
        assert body["reason"] == "Forbidden"
        assert (await client.get(f"{CM}/bad")).status_code == 404
        assert (await client.post(CM, json=_cm("good"))).status_code == 201
        request = served.hook.requests[-1]
        assert request["operation"] == "CREATE"
        assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert request["requestKind"] == request["kind"] and request["requestResource"] == request["resource"]
        assert request["namespace"] == "default" and request["name"] == "good"
        assert request["object"]["metadata"]["uid"]  # validating webhooks see the object as it will be stored
        assert request["oldObject"] is None and request["dryRun"] is False
        assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        assert served.hook.paths[-1] == "/hook?timeout=10s"


async def test_a_denial_without_a_code_is_400_and_without_a_message_says_so(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path, lambda request: {"allowed": False}) as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration", webhook("no.reason.example", served.client_config()))
        r = await client.post(CM, json=_cm("x"))
    assert r.status_code == 400
    assert r.json()["message"] == 'admission webhook "no.reason.example" denied the request without explanation'


async def test_a_mutating_webhook_patch_is_applied_then_validated_and_its_warnings_reach_the_client(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return patch_response([{"op": "add", "path": "/metadata/labels", "value": {"injected": "yes"}}],
                              warnings=["labels were injected"])
    async with webhook_server(tmp_path, answer) as served:
        await _install(client, MWC, "MutatingWebhookConfiguration", webhook("inject.example.com", served.client_config()))
        r = await client.post(CM, json=_cm("m"))
        assert r.status_code == 201, r.text
        assert r.json()["metadata"]["labels"] == {"injected": "yes"}
        assert r.headers.get_list("warning") == ['299 - "labels were injected"']
        assert (await client.get(f"{CM}/m")).json()["metadata"]["labels"] == {"injected": "yes"}
        # Mutating webhooks run before the strategy: no uid yet.
        assert "uid" not in served.hook.requests[0]["object"]["metadata"]


async def test_a_mutation_that_breaks_validation_is_refused_by_validation(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    answer = lambda request: patch_response([{"op": "add", "path": "/metadata/labels", "value": {"bad key!": "x"}}])  # noqa: E731
    async with webhook_server(tmp_path, answer) as served:
        await _install(client, MWC, "MutatingWebhookConfiguration", webhook("break.example.com", served.client_config()))
        r = await client.post(CM, json=_cm("m"))
    assert r.status_code == 422
    assert "metadata.labels" in r.json()["message"]


async def test_reinvocation_if_needed_calls_an_earlier_webhook_again_after_a_later_change(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        labels = request["object"]["metadata"].get("labels") or {}
        if request["object"]["metadata"]["name"] and "second" not in labels and "first" in labels:
            return patch_response([{"op": "add", "path": "/metadata/labels/second", "value": "1"}])
        if "first" not in labels:
            return patch_response([{"op": "add", "path": "/metadata/labels", "value": {"first": "1"}}])
        return {"allowed": True}
    async with webhook_server(tmp_path, answer) as served:
        first = webhook("a.first.example", served.client_config("/first"), reinvocationPolicy="IfNeeded")
        second = webhook("b.second.example", served.client_config("/second"))
        await _install(client, MWC, "MutatingWebhookConfiguration", first, name="a")
        await _install(client, MWC, "MutatingWebhookConfiguration", second, name="b")
        r = await client.post(CM, json=_cm("r"))
        assert r.status_code == 201, r.text
        # a (first), b (adds "second": a change after a), a again (IfNeeded); b is not called again.
        assert [p.split("?")[0] for p in served.hook.paths] == ["/first", "/second", "/first"]
        assert r.json()["metadata"]["labels"] == {"first": "1", "second": "1"}


async def test_a_webhook_skipped_in_the_first_round_is_not_called_in_the_reinvocation_round(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    # mutating/dispatcher.go: "during reinvocation, a webhook will not be called for the first time".
    answer = lambda request: patch_response([{"op": "add", "path": "/metadata/labels", "value": {"now": "matching"}}])  # noqa: E731
    async with webhook_server(tmp_path, answer) as served:
        first = webhook("a.late.example", served.client_config("/first"), reinvocationPolicy="IfNeeded",
                        objectSelector={"matchLabels": {"now": "matching"}})
        second = webhook("b.labeller.example", served.client_config("/second"))
        await _install(client, MWC, "MutatingWebhookConfiguration", first, name="a")
        await _install(client, MWC, "MutatingWebhookConfiguration", second, name="b")
        r = await client.post(CM, json=_cm("late"))
        assert r.status_code == 201, r.text
        assert [p.split("?")[0] for p in served.hook.paths] == ["/second"]


async def test_failure_policy_fail_refuses_with_500_and_ignore_lets_the_request_through(
        client: httpx.AsyncClient) -> None:
    gone = {"url": "https://127.0.0.1:9/hook"}  # the discard port: nothing listens there
    await _install(client, VWC, "ValidatingWebhookConfiguration", webhook("closed.example.com", gone), name="fail")
    r = await client.post(CM, json=_cm("f"))
    assert r.status_code == 500
    body = r.json()
    assert body["reason"] == "InternalError"
    assert body["message"] == ('Internal error occurred: failed calling webhook "closed.example.com": failed to call '
                               'webhook: Post "https://127.0.0.1:9/hook?timeout=10s": dial tcp 127.0.0.1:9: connect: '
                               "connection refused")
    assert (await client.delete(f"{VWC}/fail")).status_code == 200
    await _install(client, VWC, "ValidatingWebhookConfiguration",
                   webhook("open.example.com", gone, failurePolicy="Ignore"), name="ignore")
    assert (await client.post(CM, json=_cm("f"))).status_code == 201


async def test_a_webhook_that_never_answers_times_out_under_its_failure_policy(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path, lambda request: HANG) as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration",
                       webhook("slow.example.com", served.client_config(), timeoutSeconds=1))
        r = await client.post(CM, json=_cm("t"))
        assert r.status_code == 500
        assert r.json()["message"].endswith(f'Post "{served.url}/hook?timeout=1s": context deadline exceeded')
        assert (await client.get(f"{CM}/t")).status_code == 404


async def test_an_untrusted_certificate_is_a_call_failure(client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path) as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration",
                       webhook("untrusted.example.com", {"url": served.url + "/hook"}))
        r = await client.post(CM, json=_cm("u"))
    assert r.status_code == 500
    assert "x509: certificate signed by unknown authority" in r.json()["message"]
    assert served.hook.reviews == []


async def test_a_bad_answer_is_a_call_failure(client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path, lambda request: {"allowed": True, "patch": "W10=", "patchType": "JSONPatch"}) \
            as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration", webhook("patchy.example.com", served.client_config()))
        r = await client.post(CM, json=_cm("b"))
    assert r.status_code == 500
    assert r.json()["message"] == ('Internal error occurred: failed calling webhook "patchy.example.com": received '
                                   "invalid webhook response: validating webhook may not return response.patch")


async def test_selectors_and_match_conditions_decide_which_requests_are_sent(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path) as served:
        assert (await client.post("/api/v1/namespaces", json={"metadata": {"name": "team", "labels": {"hooked": "y"}}})
                ).status_code == 201
        hook = webhook("sel.example.com", served.client_config(), operations=("*",),
                       namespaceSelector={"matchLabels": {"hooked": "y"}},
                       objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
                       matchConditions=[{"name": "not-ignored", "expression": "object == null || !object.metadata.name.startsWith('ignored')"}])
        await _install(client, VWC, "ValidatingWebhookConfiguration", hook)
        assert (await client.post(CM, json=_cm("in-default"))).status_code == 201  # namespace not selected
        team = "/api/v1/namespaces/team/configmaps"
        assert (await client.post(team, json=_cm("skipped", skip="1"))).status_code == 201  # object not selected
        assert (await client.post(team, json=_cm("ignored-one"))).status_code == 201  # condition false
        assert (await client.post(team, json=_cm("sent"))).status_code == 201
        r = await client.patch(f"{team}/skipped", json={"metadata": {"labels": {"skip": None}}},
                                headers={"content-type": "application/merge-patch+json"})
        assert r.status_code == 200  # the new object lost the label: objectSelector matches it (new or old)
        assert (await client.delete(f"{team}/sent")).status_code == 200
        sent = [(q["operation"], q.get("name")) for q in served.hook.requests]
    assert sent == [("CREATE", "sent"), ("UPDATE", "skipped"), ("DELETE", "sent")]
    delete = served.hook.requests[-1]
    assert delete["object"] is None and delete["oldObject"]["metadata"]["name"] == "sent"
    assert delete["options"]["kind"] == "DeleteOptions"


async def test_dry_run_reaches_webhooks_without_side_effects_and_stores_nothing(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path) as served:
        await _install(client, VWC, "ValidatingWebhookConfiguration", webhook("dry.example.com", served.client_config(),
                                                                              sideEffects="NoneOnDryRun"))
        r = await client.post(f"{CM}?dryRun=All", json=_cm("d"))
        assert r.status_code == 201
        assert served.hook.requests[0]["dryRun"] is True
        assert served.hook.requests[0]["options"]["dryRun"] == ["All"]
        assert (await client.get(f"{CM}/d")).status_code == 404


async def test_subresource_rules_and_a_rule_for_another_operation(client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path, _deny_named("web")) as served:
        r = await client.post("/apis/apps/v1/namespaces/default/deployments", json={
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        assert r.status_code == 201
        await _install(client, VWC, "ValidatingWebhookConfiguration",
                       webhook("scale.example.com", served.client_config(), operations=("UPDATE",), groups=("apps",),
                               resources=("deployments/scale",)))
        # The main resource is not in the rule: an update of it is not sent.
        r = await client.patch("/apis/apps/v1/namespaces/default/deployments/web", json={"metadata": {"labels": {"x": "y"}}},
                               headers={"content-type": "application/merge-patch+json"})
        assert r.status_code == 200
        assert served.hook.reviews == []
        r = await client.patch("/apis/apps/v1/namespaces/default/deployments/web/scale", json={"spec": {"replicas": 3}},
                               headers={"content-type": "application/merge-patch+json"})
        assert r.status_code == 403
        assert r.json()["message"] == 'admission webhook "scale.example.com" denied the request: web is not welcome'
        (request,) = served.hook.requests
        assert request["subResource"] == "scale"
        assert request["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
        assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}


async def test_service_references_cannot_be_reached_and_say_so(client: httpx.AsyncClient) -> None:
    service = {"service": {"name": "hooks", "namespace": "default", "path": "/validate"}}
    await _install(client, VWC, "ValidatingWebhookConfiguration", webhook("svc.example.com", service))
    r = await client.post(CM, json=_cm("s"))
    assert r.status_code == 500
    message = r.json()["message"]
    assert 'Post "https://hooks.default.svc:443/validate?timeout=10s"' in message
    assert "kubeloop cannot reach the pods behind a Service" in message and "clientConfig.url" in message


async def test_webhook_configurations_themselves_are_never_sent_to_webhooks(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    async with webhook_server(tmp_path, lambda request: {"allowed": False}) as served:
        everything = webhook("all.example.com", served.client_config(), operations=("*",), groups=("*",),
                             versions=("*",), resources=("*/*",))
        await _install(client, VWC, "ValidatingWebhookConfiguration", everything)
        assert (await client.delete(f"{VWC}/cfg")).status_code == 200
    assert served.hook.reviews == []
