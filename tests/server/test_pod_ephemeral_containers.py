"""``pods/NAME/ephemeralcontainers`` over HTTP, as upstream 1.32 serves it (k/k ``pkg/registry/core/pod/storage/
storage.go`` EphemeralContainersREST: get, update, patch of the Pod; ``strategy.go`` podEphemeralContainersStrategy;
``validation.go`` ValidatePodEphemeralContainersUpdate and validateEphemeralContainers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.api import KindRegistry, NotFound
from kubeloop.server import User
from kubeloop.server._strategy import strategy_for

from ._kubelet_fixtures import PODS, pod
from ._rbac import rbac_clients
from ._webhooks import configuration, webhook, webhook_server

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
EPHEMERAL = f"{PODS}/p/ephemeralcontainers"


def debugger(name: str = "debugger", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", **fields}


async def add(client: httpx.AsyncClient, *containers: dict[str, Any], content_type: str = SMP,
              params: dict[str, str] | None = None) -> httpx.Response:
    body = json.dumps({"spec": {"ephemeralContainers": list(containers)}})
    return await client.patch(EPHEMERAL, content=body, headers={"content-type": content_type}, params=params)


def invalid(r: httpx.Response) -> tuple[str, list[tuple[str, str, str]]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"], status["details"]["name"]) == ("Invalid", "Pod", "p")
    return status["message"], [(c["reason"], c.get("field", ""), c["message"]) for c in status["details"]["causes"]]


async def test_get_answers_the_pod(client: httpx.AsyncClient) -> None:
    await pod(client, containers=("app",))
    r = await client.get(EPHEMERAL)
    assert r.status_code == 200
    assert r.json() == (await client.get(f"{PODS}/p")).json()
    assert (await client.get(f"{PODS}/nope/ephemeralcontainers")).json()["message"] == 'pods "nope" not found'


async def test_a_strategic_merge_patch_adds_a_defaulted_ephemeral_container_and_nothing_else(
        client: httpx.AsyncClient) -> None:
    created = await pod(client, containers=("app",), labels={"a": "b"})
    body = {"metadata": {"labels": {"a": "changed"}, "annotations": {"x": "y"}},
            "spec": {"containers": [{"name": "app", "image": "httpd"}], "activeDeadlineSeconds": 5,
                     "ephemeralContainers": [debugger(targetContainerName="app", stdin=True, tty=True)]},
            "status": {"phase": "Failed"}}
    r = await client.patch(EPHEMERAL, content=json.dumps(body), headers={"content-type": SMP},
                           params={"fieldManager": "kubectl-debug"})
    assert r.status_code == 200, r.text
    patched = r.json()
    # SetDefaults_EphemeralContainer fills what it fills for any container.
    assert patched["spec"]["ephemeralContainers"] == [{
        "name": "debugger", "image": "busybox", "targetContainerName": "app", "stdin": True, "tty": True,
        "imagePullPolicy": "Always", "resources": {}, "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"}]
    # dropNonEphemeralContainerUpdates: the rest of the spec, the status, and (ResetObjectMetaForStatus) the
    # labels and annotations are the stored pod's.
    assert {k: v for k, v in patched["spec"].items() if k != "ephemeralContainers"} == created["spec"]
    assert patched["status"] == created["status"]
    assert patched["metadata"]["labels"] == {"a": "b"} and "annotations" not in patched["metadata"]
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    # The field manager's entry is the subresource's, owning the ephemeral containers only (the strategy's
    # reset-fields filter includes spec.ephemeralContainers alone).
    entry = next(e for e in patched["metadata"]["managedFields"] if e["manager"] == "kubectl-debug")
    assert entry["subresource"] == "ephemeralcontainers" and list(entry["fieldsV1"]) == ["f:spec"]
    assert list(entry["fieldsV1"]["f:spec"]) == ["f:ephemeralContainers"]
    assert (await client.get(f"{PODS}/p")).json() == patched


@pytest.mark.parametrize("content_type", [MERGE, JSON_PATCH, "put"])
async def test_merge_json_patch_and_put_add_one_too(client: httpx.AsyncClient, content_type: str) -> None:
    await pod(client, containers=("app",))
    if content_type == MERGE:
        r = await add(client, debugger(), content_type=MERGE)
    elif content_type == JSON_PATCH:
        ops = [{"op": "add", "path": "/spec/ephemeralContainers", "value": [debugger()]}]
        r = await client.patch(EPHEMERAL, content=json.dumps(ops), headers={"content-type": JSON_PATCH})
    else:
        current = (await client.get(EPHEMERAL)).json()
        current["spec"]["ephemeralContainers"] = [debugger()]
        r = await client.put(EPHEMERAL, json=current)
    assert r.status_code == 200, r.text
    assert [c["name"] for c in r.json()["spec"]["ephemeralContainers"]] == ["debugger"]


async def test_a_stale_resource_version_is_a_conflict_and_dry_run_stores_nothing(client: httpx.AsyncClient) -> None:
    created = await pod(client, containers=("app",))
    stale = (await client.get(EPHEMERAL)).json()
    assert (await client.patch(f"{PODS}/p", json={"metadata": {"labels": {"n": "1"}}},
                               headers={"content-type": MERGE})).status_code == 200
    stale["spec"]["ephemeralContainers"] = [debugger()]
    r = await client.put(EPHEMERAL, json=stale)
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (
        409, "Conflict", 'Operation cannot be fulfilled on pods "p": the object has been modified; please apply '
                         "your changes to the latest version and try again")
    before = (await client.get(f"{PODS}/p")).json()
    r = await add(client, debugger(), params={"dryRun": "All"})
    assert r.status_code == 200 and r.json()["spec"]["ephemeralContainers"][0]["name"] == "debugger"
    assert (await client.get(f"{PODS}/p")).json() == before
    assert "ephemeralContainers" not in before["spec"] and created["metadata"]["uid"] == before["metadata"]["uid"]


async def test_each_rule_of_validate_ephemeral_containers(client: httpx.AsyncClient) -> None:
    await pod(client, containers=("app",), init=("setup",))
    before = (await client.get(f"{PODS}/p")).json()
    probe = {"exec": {"command": ["true"]}}
    r = await add(client, debugger("app"), debugger("setup"), debugger("d", targetContainerName="nope"),
                  {"name": "noimage"},
                  debugger("e", ports=[{"containerPort": 80}], livenessProbe=probe, readinessProbe=probe,
                           startupProbe=probe, lifecycle={"postStart": probe},
                           resources={"limits": {"cpu": "1"}}),
                  debugger("d"), debugger("sub", volumeMounts=[{"name": "v", "mountPath": "/v", "subPath": "x"}]))
    message, causes = invalid(r)
    assert causes == [
        ("FieldValueDuplicate", "spec.ephemeralContainers[0].name", 'Duplicate value: "app"'),
        ("FieldValueDuplicate", "spec.ephemeralContainers[1].name", 'Duplicate value: "setup"'),
        ("FieldValueNotFound", "spec.ephemeralContainers[2].targetContainerName", 'Not found: "nope"'),
        ("FieldValueRequired", "spec.ephemeralContainers[3].image", "Required value"),
        *[("FieldValueForbidden", f"spec.ephemeralContainers[4].{field}",
           "Forbidden: cannot be set for an Ephemeral Container")
          for field in ("ports", "resources", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle")],
        ("FieldValueDuplicate", "spec.ephemeralContainers[5].name", 'Duplicate value: "d"'),
        ("FieldValueNotFound", "spec.ephemeralContainers[6].volumeMounts[0].name", 'Not found: "v"'),
        ("FieldValueForbidden", "spec.ephemeralContainers[6].volumeMounts[0].subPath",
         "Forbidden: cannot be set for an Ephemeral Container"),
    ]
    assert message.startswith('Pod "p" is invalid: [spec.ephemeralContainers[0].name: Duplicate value: "app", ')
    assert (await client.get(f"{PODS}/p")).json() == before  # the store is unchanged


async def test_an_ephemeral_container_cannot_be_changed_or_removed(client: httpx.AsyncClient) -> None:
    await pod(client, containers=("app",))
    assert (await add(client, debugger(targetContainerName="app"))).status_code == 200
    before = (await client.get(f"{PODS}/p")).json()
    # The same container again (a patch listing it unchanged) is no change.
    r = await add(client, debugger(targetContainerName="app"))
    assert r.status_code == 200 and r.json()["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    _, causes = invalid(await add(client, debugger(image="busybox:1.36", targetContainerName="app")))
    assert [c[:2] for c in causes] == [("FieldValueForbidden", "spec.ephemeralContainers.debugger")]
    assert causes[0][2].startswith('Forbidden: existing ephemeral containers "debugger" may not be changed\n')
    assert '+ image: "busybox:1.36"' in causes[0][2]
    current = (await client.get(EPHEMERAL)).json()
    current["spec"]["ephemeralContainers"] = []
    _, causes = invalid(await client.put(EPHEMERAL, json=current))
    assert causes == [("FieldValueForbidden", "spec.ephemeralContainers",
                       'Forbidden: existing ephemeral containers "debugger" may not be removed\n')]
    assert (await client.get(f"{PODS}/p")).json() == before


async def test_a_static_pod_supports_no_ephemeral_containers(client: httpx.AsyncClient) -> None:
    await pod(client, containers=("app",), annotations={"kubernetes.io/config.mirror": "abc"})
    message, causes = invalid(await add(client, debugger()))
    # One error on the empty path: field.Error prints ": Forbidden: ...", and the cause has no field.
    assert causes == [("FieldValueForbidden", "", "Forbidden: static pods do not support ephemeral containers")]
    assert message == 'Pod "p" is invalid: : Forbidden: static pods do not support ephemeral containers'



async def test_the_main_resource_cannot_add_one(client: httpx.AsyncClient) -> None:
    await pod(client, containers=("app",))
    r = await client.patch(f"{PODS}/p", content=json.dumps({"spec": {"ephemeralContainers": [debugger()]}}),
                           headers={"content-type": SMP})
    _, causes = invalid(r)
    assert [c[:2] for c in causes] == [("FieldValueForbidden", "spec")]
    assert causes[0][2].startswith("Forbidden: pod updates may not change fields other than")


async def test_only_get_put_and_patch_are_served(client: httpx.AsyncClient) -> None:
    await pod(client, containers=("app",))
    for method in ("POST", "DELETE"):
        r = await client.request(method, EPHEMERAL, json={})
        assert (r.status_code, r.json()["reason"]) == (405, "MethodNotAllowed")


async def test_no_other_kind_serves_it_and_its_object_is_unchanged(client: httpx.AsyncClient) -> None:
    # The router's 404 for a subresource a kind does not have (upstream: no such route); the strategy's
    # hook, should anything reach it for another kind, gives the same Status.
    url = "/api/v1/namespaces/default/configmaps"
    assert (await client.post(url, json={"metadata": {"name": "c"}, "data": {"a": "b"}})).status_code == 201
    before = (await client.get(f"{url}/c")).json()
    for method in ("GET", "PUT", "PATCH"):
        r = await client.request(method, f"{url}/c/ephemeralcontainers", content=json.dumps(before),
                                 headers={"content-type": MERGE})
        assert (r.status_code, r.json()["reason"]) == (404, "NotFound"), r.text
    assert (await client.get(f"{url}/c")).json() == before
    configmaps = KindRegistry().get("", "v1", "configmaps")
    assert configmaps is not None
    strategy = strategy_for(configmaps)
    with pytest.raises(NotFound) as raised:
        strategy.prepare_for_ephemeral_containers(before, before)
    assert raised.value.message == "the server could not find the requested resource"


async def test_discovery_and_both_openapi_documents_list_the_subresource(client: httpx.AsyncClient) -> None:
    resources = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    entry = resources["pods/ephemeralcontainers"]
    assert (entry["kind"], entry["verbs"], entry["namespaced"], "group" in entry) == (
        "Pod", ["get", "patch", "update"], True, False)
    aggregated = (await client.get("/api", headers={
        "accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})).json()
    core = {r["resource"]: r for r in aggregated["items"][0]["versions"][0]["resources"]}
    subs = {s["subresource"]: s for s in core["pods"]["subresources"]}
    assert subs["ephemeralcontainers"] == {"subresource": "ephemeralcontainers", "verbs": ["get", "patch", "update"],
                                           "responseKind": {"group": "", "version": "v1", "kind": "Pod"}}
    path = "/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers"
    v3 = (await client.get("/openapi/v3/api/v1")).json()["paths"][path]
    assert {m: v3[m]["operationId"] for m in ("get", "put", "patch")} == {
        "get": "readCoreV1NamespacedPodEphemeralcontainers", "put": "replaceCoreV1NamespacedPodEphemeralcontainers",
        "patch": "patchCoreV1NamespacedPodEphemeralcontainers"}
    assert v3["patch"]["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    v2 = (await client.get("/openapi/v2")).json()["paths"][path]
    assert v2["put"]["parameters"][0]["schema"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}
    assert SMP in v2["patch"]["consumes"]


async def test_no_bootstrap_role_grants_it(tmp_path: Path) -> None:
    # Upstream leaves pods/ephemeralcontainers out of edit and admin on purpose (kubernetes#109332,
    # kubernetes#121217: adding one bypasses admission written before the subresource existed); an
    # administrator grants it with a role of their own.
    async with rbac_clients(tmp_path, User("dev", groups=("system:authenticated",))) as (admin, dev):
        await pod(admin, containers=("app",))
        rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
        edit = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "edit"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "system:aggregate-to-edit"},
                "subjects": [{"kind": "User", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}]}
        assert (await admin.post(f"{rbac}/rolebindings", json=edit)).status_code == 201
        assert (await dev.patch(f"{PODS}/p", json={"metadata": {"labels": {"a": "b"}}},
                                headers={"content-type": MERGE})).status_code == 200
        r = await add(dev, debugger())
        assert (r.status_code, r.json()["message"]) == (
            403, 'pods "p" is forbidden: User "dev" cannot patch resource "pods/ephemeralcontainers" in API group "" '
                 'in the namespace "default"')
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "debug"},
                "rules": [{"apiGroups": [""], "resources": ["pods/ephemeralcontainers"], "verbs": ["patch"]}]}
        binding = {**edit, "metadata": {"name": "debug"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "debug"}}
        assert (await admin.post(f"{rbac}/roles", json=role)).status_code == 201
        assert (await admin.post(f"{rbac}/rolebindings", json=binding)).status_code == 201
        assert (await add(dev, debugger())).status_code == 200
        current = (await dev.get(EPHEMERAL)).json()
        assert (await dev.put(EPHEMERAL, json=current)).status_code == 403  # update is its own verb


def vap(name: str, resources: list[str], expression: str) -> list[dict[str, Any]]:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": resources}
    return [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
             "metadata": {"name": name}, "spec": {"matchConstraints": {"resourceRules": [rule]},
                                                   "validations": [{"expression": expression}]}},
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
             "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}]


async def test_admission_sees_an_update_of_the_subresource(client: httpx.AsyncClient, tmp_path: Path) -> None:
    await pod(client, containers=("app",))
    base = "/apis/admissionregistration.k8s.io/v1"
    # "pods" names the main resource only; "pods/ephemeralcontainers" the subresource.
    for obj in [*vap("main-only", ["pods"], "false"),
                *vap("registry", ["pods/ephemeralcontainers"],
                     "request.subResource == 'ephemeralcontainers' && "
                     "object.spec.ephemeralContainers.all(c, c.image.startsWith('registry.example/'))")]:
        plural = "validatingadmissionpolicies" if obj["kind"] == "ValidatingAdmissionPolicy" else (
            "validatingadmissionpolicybindings")
        assert (await client.post(f"{base}/{plural}", json=obj)).status_code == 201
    before = (await client.get(f"{PODS}/p")).json()
    r = await add(client, debugger())
    assert (r.status_code, r.json()["message"]) == (
        422, "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'registry' with binding 'registry' denied request: "
             "failed expression: request.subResource == 'ephemeralcontainers' && "
             "object.spec.ephemeralContainers.all(c, c.image.startsWith('registry.example/'))")
    assert (await client.get(f"{PODS}/p")).json() == before
    assert (await add(client, debugger(image="registry.example/busybox"))).status_code == 200

    def seen(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True}

    async with webhook_server(tmp_path, seen) as served:
        hook = webhook("ec.example.com", served.client_config(), operations=("UPDATE",),
                       resources=("pods/ephemeralcontainers",))
        r = await client.post(f"{base}/validatingwebhookconfigurations",
                              json=configuration("ValidatingWebhookConfiguration", "cfg", hook))
        assert r.status_code == 201, r.text
        assert (await add(client, debugger(image="registry.example/busybox"),
                          debugger("second", image="registry.example/alpine"))).status_code == 200
        [request] = served.hook.requests
        assert (request["operation"], request["subResource"], request["kind"]["kind"]) == (
            "UPDATE", "ephemeralcontainers", "Pod")
        assert [c["name"] for c in request["oldObject"]["spec"]["ephemeralContainers"]] == ["debugger"]
        assert [c["name"] for c in request["object"]["spec"]["ephemeralContainers"]] == ["debugger", "second"]
