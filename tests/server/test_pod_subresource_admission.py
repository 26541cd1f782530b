"""pods/eviction and pods/binding are CREATEs of a subresource, admitted as upstream admits them, over HTTP.

Upstream (release-1.32): the create handler (apiserver ``handlers/create.go``) runs mutating admission on
the decoded Binding or Eviction before the REST's ``Create`` (``pkg/registry/core/pod/storage``:
``BindingREST.Create``, ``eviction.go`` ``EvictionREST.Create``) checks the name, and validating
admission as that ``Create``'s ``createValidation``. Of the built-in plugins kubeloop implements only
NamespaceLifecycle (``plugin/pkg/admission/namespace/lifecycle``) acts on them: it exempts no
subresource, so a binding or an eviction in a Terminating namespace is 403 with the
``NamespaceTerminating`` cause ``kubectl drain`` looks for, and one in a missing namespace is the
namespace's 404. Priority and DefaultTolerationSeconds skip every subresource.
"""

from __future__ import annotations

from typing import Any

import httpx

from kubeloop.api import Forbidden, ResourceInfo
from kubeloop.server import App
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin, ValidatingPlugin

NS = "/api/v1/namespaces"
PODS = "/api/v1/namespaces/gone/pods"
DEFAULT_PODS = "/api/v1/namespaces/default/pods"
TERMINATING = "unable to create new content in namespace gone because it is being terminated"


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}


def binding(name: str, node: str = "node-a") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}}


def eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}


async def pods_in_a_terminating_namespace(client: httpx.AsyncClient, *names: str) -> None:
    """Namespace ``gone`` with the pods ``names``, deleted: Terminating (no namespace controller runs)."""
    assert (await client.post(NS, json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
            ).status_code == 201
    for name in names:
        assert (await client.post(PODS, json=pod(name))).status_code == 201
    assert (await client.delete(f"{NS}/gone")).status_code == 200
    assert (await client.get(f"{NS}/gone")).json()["status"]["phase"] == "Terminating"


def assert_terminating(r: httpx.Response, name: str) -> None:
    assert r.status_code == 403, r.text
    status = r.json()
    assert status["reason"] == "Forbidden"
    assert status["message"] == f'pods "{name}" is forbidden: {TERMINATING}'
    assert status["details"]["name"] == name and status["details"]["kind"] == "pods"
    assert status["details"]["causes"] == [{"reason": "NamespaceTerminating", "message": "namespace gone is being terminated",
                                            "field": "metadata.namespace"}]


async def test_an_eviction_in_a_terminating_namespace_is_refused_and_the_pod_stays(client: httpx.AsyncClient) -> None:
    await pods_in_a_terminating_namespace(client, "p")
    r = await client.post(f"{PODS}/p/eviction", json=eviction("p"))
    assert_terminating(r, "p")
    stored = (await client.get(f"{PODS}/p")).json()
    assert "deletionTimestamp" not in stored["metadata"]
    assert not any(c["type"] == "DisruptionTarget" for c in stored["status"].get("conditions", []))


async def test_a_binding_in_a_terminating_namespace_is_refused_and_the_pod_stays_unbound(
        client: httpx.AsyncClient) -> None:
    await pods_in_a_terminating_namespace(client, "p")
    r = await client.post(f"{PODS}/p/binding", json=binding("p"))
    assert_terminating(r, "p")
    assert "nodeName" not in (await client.get(f"{PODS}/p")).json()["spec"]


async def test_the_namespace_is_judged_before_the_body_name_and_the_pod(client: httpx.AsyncClient) -> None:
    # Mutating admission runs in the handler, before the REST's Create compares the names or reads the pod.
    await pods_in_a_terminating_namespace(client, "p")
    assert_terminating(await client.post(f"{PODS}/p/binding", json=binding("other")), "p")
    assert_terminating(await client.post(f"{PODS}/p/eviction", json=eviction("other")), "p")
    assert_terminating(await client.post(f"{PODS}/absent/eviction", json=eviction("absent")), "absent")


async def test_in_a_missing_namespace_both_are_the_namespaces_404(client: httpx.AsyncClient) -> None:
    for sub, body in (("eviction", eviction("p")), ("binding", binding("p"))):
        r = await client.post(f"/api/v1/namespaces/nowhere/pods/p/{sub}", json=body)
        assert r.status_code == 404, r.text
        assert r.json()["message"] == 'namespaces "nowhere" not found'
        assert r.json()["details"] == {"name": "nowhere", "kind": "namespaces"}


async def test_in_a_live_namespace_builtin_plugins_change_nothing(client: httpx.AsyncClient) -> None:
    # Priority and DefaultTolerationSeconds return at once for a subresource: the bound pod keeps what its
    # create gave it, and the eviction deletes it as before.
    assert (await client.post(DEFAULT_PODS, json=pod("p"))).status_code == 201
    before = (await client.get(f"{DEFAULT_PODS}/p")).json()
    r = await client.post(f"{DEFAULT_PODS}/p/binding", json=binding("p"))
    assert r.status_code == 201, r.text
    bound = (await client.get(f"{DEFAULT_PODS}/p")).json()
    assert bound["spec"] == {**before["spec"], "nodeName": "node-a"}
    r = await client.post(f"{DEFAULT_PODS}/p/eviction", json=eviction("p"))
    assert r.status_code == 201, r.text


class Recorder(MutatingPlugin, ValidatingPlugin):
    """Records what each phase sees; refuses evictions of pods named ``keep`` when validating."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str, str]] = []

    def handles(self, operation: str, resource: ResourceInfo) -> bool:
        return resource.plural == "pods" and operation == "CREATE"

    def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None and old is None
        self.seen.append(("mutate", attributes.operation, attributes.subresource, attributes.name, obj["kind"]))
        if obj["kind"] == "Binding":  # a mutating plugin may change the Binding: the REST binds what it left
            obj["target"]["name"] = "node-b"

    def validate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: Any) -> None:
        assert obj is not None
        self.seen.append(("validate", attributes.operation, attributes.subresource, attributes.name, obj["kind"]))
        if obj["kind"] == "Eviction" and attributes.name == "keep":
            raise Forbidden('pods "keep" is forbidden: kept')


async def test_both_phases_see_the_subresource_create_with_its_body(app: App, client: httpx.AsyncClient) -> None:
    recorder = Recorder()
    app.admission.append(recorder)
    for name in ("p", "keep"):
        assert (await client.post(DEFAULT_PODS, json=pod(name))).status_code == 201
    recorder.seen.clear()
    r = await client.post(f"{DEFAULT_PODS}/p/binding", json=binding("p"))
    assert r.status_code == 201, r.text
    assert (await client.get(f"{DEFAULT_PODS}/p")).json()["spec"]["nodeName"] == "node-b"
    r = await client.post(f"{DEFAULT_PODS}/keep/eviction", json=eviction("keep"))
    assert r.status_code == 403, r.text
    assert (await client.get(f"{DEFAULT_PODS}/keep")).status_code == 200
    # A refused name check stops between the phases (the REST's Create checks it before createValidation).
    r = await client.post(f"{DEFAULT_PODS}/p/eviction", json=eviction("other"))
    assert r.status_code == 400, r.text
    assert recorder.seen == [
        ("mutate", "CREATE", "binding", "p", "Binding"), ("validate", "CREATE", "binding", "p", "Binding"),
        ("mutate", "CREATE", "eviction", "keep", "Eviction"), ("validate", "CREATE", "eviction", "keep", "Eviction"),
        ("mutate", "CREATE", "eviction", "p", "Eviction"),
    ]
