"""``GET .../pods/NAME/log`` as upstream 1.32 answers it (pkg/registry/core/pod/rest/log.go LogREST.Get,
strategy.go LogLocation/validateContainer, pkg/apis/core/validation ValidatePodLogOptions, the kubelet's
validateContainerLogStatus), with kubeloop's simulated containers, whose logs are empty."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ._kubelet_fixtures import PODS, node, pod, running, set_status, terminated, waiting

LOG = f"{PODS}/p/log"


def status_of(r: httpx.Response) -> tuple[int, str, str]:
    body = r.json()
    return r.status_code, body.get("reason", ""), body["message"]


async def test_a_running_containers_log_is_empty_text(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    await set_status(client, "p", running("app", "kubeloop://1"))
    r = await client.get(LOG)
    assert (r.status_code, r.headers["content-type"], r.content) == (200, "text/plain", b"")
    # The options change nothing: there is no output to cut.
    r = await client.get(LOG, params={"tailLines": "10", "limitBytes": "5", "timestamps": "true",
                                      "sinceSeconds": "60", "container": "app", "insecureSkipTLSVerifyBackend": ""})
    assert (r.status_code, r.content) == (200, b"")


async def test_container_selection_is_the_servers_validate_container(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client, containers=("app", "side"), init=("setup",),
              annotations={"kubectl.kubernetes.io/default-container": "side"})
    # Several containers and none named: every container, init ones first, as Go prints a []string. The
    # default-container annotation is kubectl's: the server does not read it.
    assert status_of(await client.get(LOG)) == (
        400, "BadRequest", "a container name must be specified for pod p, choose one of: [setup app side]")
    assert status_of(await client.get(LOG, params={"container": "nope"})) == (
        400, "BadRequest", "container nope is not valid for pod p")
    # An init container is a valid choice.
    await set_status(client, "p", running("app", "kubeloop://a"), running("side", "kubeloop://s"),
                     init=(terminated("setup", "kubeloop://i"),))
    for container in ("setup", "app", "side"):
        r = await client.get(LOG, params={"container": container})
        assert (r.status_code, r.content) == (200, b""), container


@pytest.mark.parametrize(("state", "message"), [
    (waiting("app", "ContainerCreating"), 'container "app" in pod "p" is waiting to start: ContainerCreating'),
    (waiting("app", "ErrImagePull"), 'container "app" in pod "p" is waiting to start: image can\'t be pulled'),
    (waiting("app", "ImagePullBackOff"),
     'container "app" in pod "p" is waiting to start: trying and failing to pull image'),
    ({"name": "app", "image": "nginx", "imageID": "", "ready": False, "restartCount": 0, "state": {}},
     'container "app" in pod "p" is waiting to start - no logs yet'),
])
async def test_a_container_that_has_not_started_is_the_kubelets_400(
        client: httpx.AsyncClient, state: dict[str, Any], message: str) -> None:
    await node(client)
    await pod(client)
    await set_status(client, "p", state, phase="Pending")
    assert status_of(await client.get(LOG)) == (400, "BadRequest", message)


async def test_a_container_without_status_is_not_available(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    assert status_of(await client.get(LOG)) == (400, "BadRequest", 'container "app" in pod "p" is not available')


async def test_previous_needs_a_terminated_earlier_run(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    await set_status(client, "p", running("app", "kubeloop://2"))
    assert status_of(await client.get(LOG, params={"previous": "true"})) == (
        400, "BadRequest", 'previous terminated container "app" in pod "p" not found')
    last = {"exitCode": 1, "reason": "Error", "startedAt": "2026-12-01T00:00:00Z",
            "finishedAt": "2026-12-01T00:00:10Z", "containerID": "kubeloop://1"}
    await set_status(client, "p", running("app", "kubeloop://2", restarts=1, last=last))
    r = await client.get(LOG, params={"previous": "1"})
    assert (r.status_code, r.content) == (200, b"")


async def test_a_terminated_container_has_a_log_unless_it_never_ran(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    await set_status(client, "p", terminated("app", "kubeloop://1"), phase="Succeeded")
    assert (await client.get(LOG)).status_code == 200
    never_ran = terminated("app", "")
    never_ran["state"]["terminated"].pop("containerID")
    await set_status(client, "p", never_ran, phase="Failed")
    assert status_of(await client.get(LOG)) == (400, "BadRequest", 'container "app" in pod "p" is terminated')


async def test_a_pod_without_a_node_answers_no_content(client: httpx.AsyncClient) -> None:
    await pod(client, node_name=None)
    r = await client.get(LOG)
    assert (r.status_code, r.content) == (204, b"")
    # The container is still checked first (LogLocation validates it before it looks at the node).
    assert status_of(await client.get(LOG, params={"container": "x"}))[0] == 400


async def test_a_missing_pod_or_node(client: httpx.AsyncClient) -> None:
    assert status_of(await client.get(LOG)) == (404, "NotFound", 'pods "p" not found')
    await pod(client, node_name="gone")
    assert status_of(await client.get(LOG)) == (404, "NotFound", 'nodes "gone" not found')


@pytest.mark.parametrize("annotations", [{}, {"kubeloop.dev/simulated": "true", "kubeloop.dev/fault": "kubelet-stopped"}])
async def test_a_node_without_a_running_kubelet_is_the_dial_error(
        client: httpx.AsyncClient, annotations: dict[str, str]) -> None:
    await node(client, annotations=annotations)
    await pod(client)
    await set_status(client, "p", running("app", "kubeloop://1"))
    r = await client.get(LOG)
    body = r.json()
    # ErrorToAPIStatus of a transport error: a 500 with no reason, the error's text as the message.
    assert (r.status_code, "reason" in body) == (500, False)
    assert body["message"] == ('Get "https://172.18.0.2:10250/containerLogs/default/p/app": '
                               "dial tcp 172.18.0.2:10250: connect: connection refused")


async def test_a_node_without_addresses(client: httpx.AsyncClient) -> None:
    await node(client, address=None)
    await pod(client)
    assert status_of(await client.get(LOG)) == (500, "", "no preferred addresses found; known addresses: []")


async def test_a_log_request_is_get_only(client: httpx.AsyncClient) -> None:
    await node(client)
    await pod(client)
    r = await client.post(LOG, json={})
    assert (r.status_code, r.json()["reason"]) == (405, "MethodNotAllowed")
