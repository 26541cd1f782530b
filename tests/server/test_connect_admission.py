"""Admission of the connect subresources with operation CONNECT, before anything is read, as upstream 1.32's
``ConnectResource`` (apiserver ``pkg/endpoints/handlers/rest.go``): dryRun refused, the options decoded from the
query (``getRequestOptions``), mutating then validating admission on them; only then the simulation's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, ValidatingPlugin

from ._kubelet_fixtures import PODS, node, pod, running, set_status
from ._webhooks import configuration, webhook, webhook_server

BASE = "/apis/admissionregistration.k8s.io/v1"
NO_PROCESS = "simulated containers run no process"


def policy(name: str, expression: str, *, resources: tuple[str, ...] = ("pods/exec",),
           operations: tuple[str, ...] = ("CONNECT",), **validation: str) -> dict[str, Any]:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": list(operations), "resources": list(resources)}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": {"matchConstraints": {"resourceRules": [rule]},
                                                  "validations": [{"expression": expression, **validation}]}}


def binding(name: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}


async def install(client: httpx.AsyncClient, *objects: dict[str, Any]) -> None:
    for obj in objects:
        plural = "validatingadmissionpolicies" if obj["kind"] == "ValidatingAdmissionPolicy" else (
            "validatingadmissionpolicybindings")
        r = await client.post(f"{BASE}/{plural}", json=obj)
        assert r.status_code == 201, r.text


async def running_pod(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client, containers=("app",))
    await set_status(client, "p", running("app", "kubeloop://a"))


def answer(r: httpx.Response) -> tuple[int, str, str]:
    return r.status_code, r.json()["reason"], r.json()["message"]


class Recorder(ValidatingPlugin):
    """Records what a validating plugin is given for a CONNECT."""

    def __init__(self) -> None:
        self.seen: list[tuple[AdmissionAttributes, dict[str, Any] | None, dict[str, Any] | None]] = []

    def handles(self, operation: str, resource: Any) -> bool:
        return operation == "CONNECT"

    def validate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                 old: dict[str, Any] | None) -> None:
        self.seen.append((attributes, obj, old))


async def test_a_policy_on_connect_refuses_exec_with_its_answer_before_the_pod_is_read(
        client: httpx.AsyncClient) -> None:
    await running_pod(client)
    await install(client, policy("no-rm", "!object.command.exists(c, c == 'rm')"), binding("no-rm"),
                  policy("no-exec-into-x", "request.name != 'x'", reason="Forbidden", message="not into x"),
                  binding("no-exec-into-x"))
    r = await client.post(f"{PODS}/p/exec", params={"container": "app", "command": ["rm", "-rf", "/"]})
    assert answer(r) == (422, "Invalid", 'pods "p" is forbidden: ValidatingAdmissionPolicy \'no-rm\' with binding '
                                         "'no-rm' denied request: failed expression: !object.command.exists(c, c == "
                                         "'rm')")
    # Admission runs before the REST's Connect reads the pod: a missing pod is refused, not 404.
    r = await client.get(f"{PODS}/x/exec", params={"command": "ls"})
    assert answer(r) == (403, "Forbidden", 'pods "x" is forbidden: ValidatingAdmissionPolicy \'no-exec-into-x\' '
                                           "with binding 'no-exec-into-x' denied request: not into x")
    # Allowed: the simulation's answer, as before.
    r = await client.post(f"{PODS}/p/exec", params={"container": "app", "command": "ls"})
    assert answer(r) == (400, "BadRequest", f'kubeloop\'s simulated kubelet cannot exec in container "app" of pod '
                                            f'"p": {NO_PROCESS}')
    # attach is its own subresource: the exec policies do not match it.
    r = await client.post(f"{PODS}/x/attach")
    assert answer(r)[:2] == (404, "NotFound")


async def test_the_policy_sees_the_options_object_and_the_connect_request(client: httpx.AsyncClient) -> None:
    await running_pod(client)
    expression = ("object.kind == 'PodExecOptions' && object.apiVersion == 'v1' && object.container == 'app' "
                  "&& object.command == ['ls', '-l'] && object.stdout && !has(object.stdin) && oldObject == null "
                  "&& request.operation == 'CONNECT' && request.subResource == 'exec' "
                  "&& request.kind.kind == 'PodExecOptions' && request.resource.resource == 'pods' "
                  "&& request.namespace == 'default' && request.name == 'p' && !request.dryRun")
    await install(client, policy("shape", expression), binding("shape"))
    r = await client.post(f"{PODS}/p/exec", params={"container": "app", "command": ["ls", "-l"], "stdout": "1",
                                                    "stdin": "false"})
    assert answer(r)[:2] == (400, "BadRequest")  # admitted: the expression held
    r = await client.post(f"{PODS}/p/exec", params={"container": "app", "command": "ls", "stdout": "true"})
    assert answer(r)[:2] == (422, "Invalid")


async def test_a_policy_on_create_and_update_leaves_connect_alone(client: httpx.AsyncClient) -> None:
    await running_pod(client)
    await install(client, policy("pods", "false", resources=("pods/exec", "pods"), operations=("CREATE", "UPDATE")),
                  binding("pods"))
    r = await client.post(f"{PODS}/p/exec", params={"container": "app", "command": "ls"})
    assert answer(r)[:2] == (400, "BadRequest")


async def test_dry_run_is_not_supported(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{PODS}/nope/exec", params={"command": "ls", "dryRun": "All"})
    assert answer(r) == (400, "BadRequest", "dryRun is not supported")


async def test_each_options_kind_as_plugins_receive_it(app: App, client: httpx.AsyncClient) -> None:
    await running_pod(client)
    recorder = Recorder()
    app.admission.append(recorder)
    await client.post(f"{PODS}/p/exec", params={"container": "app", "command": "ls", "tty": "x", "stderr": "0"})
    await client.get(f"{PODS}/p/attach", params={"stdin": "TRUE", "stdout": "False"})
    await client.post(f"{PODS}/p/portforward", params={"ports": ["80,8080", "9090"]})
    await client.get(f"{PODS}/p/proxy/metrics/", params={"path": "/ignored"})
    await client.get("/api/v1/namespaces/default/services/s:http/proxy")
    await client.get("/api/v1/nodes/n1/proxy/stats")
    await client.post(f"{PODS}/p/exec", params={"container": "app"})
    assert [(a.operation, a.resource.plural, a.subresource, a.namespace, a.name, a.dry_run, old)
            for a, _, old in recorder.seen] == [
        ("CONNECT", "pods", "exec", "default", "p", False, None),
        ("CONNECT", "pods", "attach", "default", "p", False, None),
        ("CONNECT", "pods", "portforward", "default", "p", False, None),
        ("CONNECT", "pods", "proxy", "default", "p", False, None),
        ("CONNECT", "services", "proxy", "default", "s:http", False, None),
        ("CONNECT", "nodes", "proxy", "", "n1", False, None),
        ("CONNECT", "pods", "exec", "default", "p", False, None)]
    v1 = {"apiVersion": "v1"}
    assert [obj for _, obj, _ in recorder.seen] == [
        {**v1, "kind": "PodExecOptions", "tty": True, "container": "app", "command": ["ls"]},
        {**v1, "kind": "PodAttachOptions", "stdin": True},
        {**v1, "kind": "PodPortForwardOptions", "ports": [80, 8080, 9090]},
        {**v1, "kind": "PodProxyOptions", "path": "/metrics/"},
        {**v1, "kind": "ServiceProxyOptions"},
        {**v1, "kind": "NodeProxyOptions", "path": "/stats"},
        {**v1, "kind": "PodExecOptions", "container": "app", "command": None}]
    r = await client.post(f"{PODS}/p/portforward", params={"ports": "http"})
    assert answer(r) == (400, "BadRequest",
                         'cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax')
    assert len(recorder.seen) == 7


async def test_a_webhook_on_connect_gets_the_review_and_its_denial_is_the_answer(
        client: httpx.AsyncClient, tmp_path: Path) -> None:
    await running_pod(client)

    def deny_rm(request: dict[str, Any]) -> dict[str, Any]:
        if "rm" in (request["object"].get("command") or []):
            return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": "no rm"}}
        return {"allowed": True}

    async with webhook_server(tmp_path, deny_rm) as served:
        hook = webhook("exec.example.com", served.client_config(), operations=("CONNECT",), resources=("pods/exec",))
        r = await client.post(f"{BASE}/validatingwebhookconfigurations",
                              json=configuration("ValidatingWebhookConfiguration", "cfg", hook))
        assert r.status_code == 201, r.text
        r = await client.post(f"{PODS}/p/exec", params={"container": "app", "command": ["rm", "x"], "stdout": "1"})
        assert answer(r) == (403, "Forbidden", 'admission webhook "exec.example.com" denied the request: no rm')
        request = served.hook.requests[-1]
        assert (request["operation"], request["subResource"], request["name"], request["namespace"]) == (
            "CONNECT", "exec", "p", "default")
        assert request["kind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
        assert request["object"] == {"kind": "PodExecOptions", "apiVersion": "v1", "stdout": True,
                                     "container": "app", "command": ["rm", "x"]}
        assert request["oldObject"] is None and request["dryRun"] is False and request["options"] is None
        r = await client.post(f"{PODS}/p/exec", params={"container": "app", "command": "ls"})
        assert answer(r)[:2] == (400, "BadRequest")
        assert len(served.hook.requests) == 2
