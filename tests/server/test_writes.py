"""create/update/patch rules: generateName, dryRun, no-op writes, status and generation, scale, leases."""

from __future__ import annotations

import httpx
import pytest

from kubeloop.server import App

CM = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
MERGE = {"content-type": "application/merge-patch+json"}
JSON_PATCH = {"content-type": "application/json-patch+json"}
SMP = {"content-type": "application/strategic-merge-patch+json"}
APPLY = {"content-type": "application/apply-patch+yaml"}


def deployment(name: str, replicas: int = 1) -> dict[str, object]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}


async def test_generate_name_appends_five_safe_characters(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json={"metadata": {"generateName": "web-"}})
    assert r.status_code == 201
    name = r.json()["metadata"]["name"]
    assert name.startswith("web-") and len(name) == 9
    assert set(name[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")


async def test_dry_run_create_stores_nothing(app: App, client: httpx.AsyncClient) -> None:
    before = app.state.store.revision
    r = await client.post(f"{CM}?dryRun=All", json={"metadata": {"name": "a"}})
    assert r.status_code == 201 and r.json()["metadata"]["name"] == "a"
    assert app.state.store.revision == before
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_dry_run_update_and_patch_store_nothing(app: App, client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json={"metadata": {"name": "a"}, "data": {"x": "1"}})).json()
    before = app.state.store.revision
    created["data"] = {"x": "2"}
    assert (await client.put(f"{CM}/a?dryRun=All", json=created)).json()["data"] == {"x": "2"}
    r = await client.patch(f"{CM}/a?dryRun=All", content=b'{"data":{"x":"3"}}', headers=MERGE)
    assert r.json()["data"] == {"x": "3"}
    assert app.state.store.revision == before
    assert (await client.get(f"{CM}/a")).json()["data"] == {"x": "1"}


async def test_identical_write_is_a_no_op(app: App, client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json={"metadata": {"name": "a"}, "data": {"x": "1"}})).json()
    before = app.state.store.revision
    r = await client.put(f"{CM}/a", json=created)
    assert r.json()["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    r = await client.patch(f"{CM}/a", content=b'{"data":{"x":"1"}}', headers=MERGE)
    assert r.json()["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert app.state.store.revision == before


async def test_unconditional_update_allowed_for_configmaps(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}})
    r = await client.put(f"{CM}/a", json={"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert r.status_code == 200 and r.json()["data"] == {"k": "v"}


async def test_lease_update_without_resource_version_is_422(client: httpx.AsyncClient) -> None:
    await client.post(LEASES, json={"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}})
    r = await client.put(f"{LEASES}/l", json={"metadata": {"name": "l"}, "spec": {"holderIdentity": "b"}})
    assert r.status_code == 422
    assert r.json()["message"] == ('Lease.coordination.k8s.io "l" is invalid: metadata.resourceVersion: '
                                   "Invalid value: \"0x0\": must be specified for an update")


async def test_lease_put_creates_when_missing(client: httpx.AsyncClient) -> None:
    r = await client.put(f"{LEASES}/l", json={"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}})
    assert r.status_code == 201


async def test_configmap_put_on_missing_is_404(client: httpx.AsyncClient) -> None:
    r = await client.put(f"{CM}/ghost", json={"metadata": {"name": "ghost"}})
    assert r.status_code == 404


async def test_status_is_reset_on_create_and_ignored_on_main_update(client: httpx.AsyncClient) -> None:
    body = deployment("d")
    body["status"] = {"replicas": 9}
    created = (await client.post(DEPLOY, json=body)).json()
    assert created["status"] == {}
    assert created["metadata"]["generation"] == 1
    created["status"] = {"replicas": 5}
    r = await client.put(f"{DEPLOY}/d", json=created)
    assert r.json()["status"] == {}


async def test_status_subresource_changes_only_status_and_not_generation(client: httpx.AsyncClient) -> None:
    created = (await client.post(DEPLOY, json=deployment("d"))).json()
    created["status"] = {"replicas": 2}
    created["spec"]["replicas"] = 7
    r = await client.put(f"{DEPLOY}/d/status", json=created)
    assert r.status_code == 200
    assert r.json()["status"] == {"replicas": 2}
    assert r.json()["spec"]["replicas"] == 1
    assert r.json()["metadata"]["generation"] == 1
    r = await client.patch(f"{DEPLOY}/d/status", content=b'{"status":{"readyReplicas":1}}', headers=MERGE)
    assert r.json()["status"] == {"replicas": 2, "readyReplicas": 1}


async def test_generation_bumps_on_spec_and_annotation_changes_only(client: httpx.AsyncClient) -> None:
    await client.post(DEPLOY, json=deployment("d"))
    r = await client.patch(f"{DEPLOY}/d", content=b'{"metadata":{"labels":{"x":"y"}}}', headers=MERGE)
    assert r.json()["metadata"]["generation"] == 1
    r = await client.patch(f"{DEPLOY}/d", content=b'{"spec":{"replicas":3}}', headers=MERGE)
    assert r.json()["metadata"]["generation"] == 2
    r = await client.patch(f"{DEPLOY}/d", content=b'{"metadata":{"annotations":{"a":"b"}}}', headers=MERGE)
    assert r.json()["metadata"]["generation"] == 3


async def test_a_manifest_put_back_without_its_defaulted_fields_keeps_the_generation(client: httpx.AsyncClient) -> None:
    # `kubectl replace -f` of the manifest that created the object: upstream defaults the body as it
    # decodes it (strategy, template's restartPolicy, containers' pull policy ...) before
    # PrepareForUpdate compares the specs, so the spec is unchanged and generation stays.
    created = (await client.post(DEPLOY, json=deployment("d"))).json()
    assert created["spec"]["strategy"]["type"] == "RollingUpdate"  # a defaulted field the manifest lacks
    manifest = deployment("d")
    manifest["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]  # type: ignore[index]
    r = await client.put(f"{DEPLOY}/d", json=manifest)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == 1
    assert r.json()["spec"] == created["spec"]
    manifest["spec"]["replicas"] = 2  # type: ignore[index]
    manifest["metadata"]["resourceVersion"] = r.json()["metadata"]["resourceVersion"]  # type: ignore[index]
    r = await client.put(f"{DEPLOY}/d", json=manifest)
    assert r.json()["metadata"]["generation"] == 2


async def test_configmaps_have_no_generation(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json={"metadata": {"name": "a", "generation": 5}})
    assert "generation" not in r.json()["metadata"]


async def test_scale_reads_and_writes_replicas(client: httpx.AsyncClient) -> None:
    await client.post(DEPLOY, json=deployment("d", replicas=2))
    scale = (await client.get(f"{DEPLOY}/d/scale")).json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 0, "selector": "app=d"}
    r = await client.patch(f"{DEPLOY}/d/scale", content=b'{"spec":{"replicas":5}}', headers=MERGE)
    assert r.json()["spec"]["replicas"] == 5
    deploy = (await client.get(f"{DEPLOY}/d")).json()
    assert deploy["spec"]["replicas"] == 5 and deploy["metadata"]["generation"] == 2
    scale = r.json()
    scale["spec"]["replicas"] = 1
    assert (await client.put(f"{DEPLOY}/d/scale", json=scale)).json()["spec"]["replicas"] == 1
    r = await client.put(f"{DEPLOY}/d/scale", json=scale)  # stale resourceVersion
    assert r.status_code == 409


async def test_a_null_scale_replicas_is_zero_as_gos_decode_leaves_it(client: httpx.AsyncClient) -> None:
    # encoding/json (sigs.k8s.io/json) unmarshals a null into a non-pointer int32 as a no-op: the
    # ScaleSpec's replicas keeps its zero value, and the parent scales to 0 (no 400).
    await client.post(DEPLOY, json=deployment("d", replicas=2))
    scale = (await client.get(f"{DEPLOY}/d/scale")).json()
    scale["spec"]["replicas"] = None
    r = await client.put(f"{DEPLOY}/d/scale", json=scale)
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {}  # omitempty: a zero replicas is not written
    assert (await client.get(f"{DEPLOY}/d")).json()["spec"]["replicas"] == 0
    await client.patch(f"{DEPLOY}/d/scale", content=b'{"spec":{"replicas":3}}', headers=MERGE)
    r = await client.patch(f"{DEPLOY}/d/scale", content=b'[{"op":"replace","path":"/spec/replicas","value":null}]',
                           headers={"content-type": "application/json-patch+json"})
    assert r.status_code == 200, r.text
    assert (await client.get(f"{DEPLOY}/d")).json()["spec"]["replicas"] == 0


async def test_negative_scale_is_422(client: httpx.AsyncClient) -> None:
    await client.post(DEPLOY, json=deployment("d"))
    r = await client.patch(f"{DEPLOY}/d/scale", content=b'{"spec":{"replicas":-1}}', headers=MERGE)
    assert r.status_code == 422
    assert r.json()["message"] == ('Scale.autoscaling "d" is invalid: spec.replicas: Invalid value: -1: '
                                   "must be greater than or equal to 0")


@pytest.mark.parametrize(("replicas", "says"), [(b'"3"', "string"), (b"1.5", "number 1.5"), (b"true", "bool"),
                                              (b"[3]", "array"), (b'{"n":3}', "object")])
async def test_scale_replicas_of_another_json_type_are_named_as_go_names_them(
    client: httpx.AsyncClient, replicas: bytes, says: str
) -> None:
    # encoding/json's UnmarshalTypeError names the JSON value ("string", "number 1.5"), not Python's type.
    await client.post(DEPLOY, json=deployment("d"))
    r = await client.patch(f"{DEPLOY}/d/scale", content=b'{"spec":{"replicas":' + replicas + b"}}", headers=MERGE)
    assert r.status_code == 400
    assert r.json()["message"] == (f"json: cannot unmarshal {says} into Go struct field ScaleSpec.spec.replicas "
                                   "of type int32")


async def test_json_patch(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}, "data": {"x": "1"}})
    r = await client.patch(f"{CM}/a", content=b'[{"op":"replace","path":"/data/x","value":"q"}]', headers=JSON_PATCH)
    assert r.json()["data"] == {"x": "q"}
    r = await client.patch(f"{CM}/a", content=b'[{"op":"test","path":"/data/x","value":"no"}]', headers=JSON_PATCH)
    assert r.status_code == 422


async def test_strategic_merge_patch_merges_containers_by_name(client: httpx.AsyncClient) -> None:
    await client.post(DEPLOY, json=deployment("d"))
    patch = b'{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}'
    r = await client.patch(f"{DEPLOY}/d", content=patch, headers=SMP)
    [container] = r.json()["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx:2" and container["terminationMessagePath"] == "/dev/termination-log"


async def test_resource_version_in_a_patch_is_a_precondition(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}})
    r = await client.patch(f"{CM}/a", content=b'{"metadata":{"resourceVersion":"1"},"data":{"x":"1"}}', headers=MERGE)
    assert r.status_code == 409


async def test_server_side_apply_creates_then_conflicts(client: httpx.AsyncClient) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"one"}}'
    r = await client.patch(f"{CM}/a?fieldManager=alice", content=body, headers=APPLY)
    assert r.status_code == 201
    assert r.json()["metadata"]["managedFields"][0]["manager"] == "alice"
    r = await client.patch(f"{CM}/a?fieldManager=bob", content=body.replace(b"one", b"two"), headers=APPLY)
    assert r.status_code == 409 and r.json()["reason"] == "Conflict"
    r = await client.patch(f"{CM}/a?fieldManager=bob&force=true", content=body.replace(b"one", b"two"), headers=APPLY)
    assert r.status_code == 200 and r.json()["data"] == {"k": "two"}


@pytest.mark.parametrize(("query", "ctype", "message"), [
    ("", APPLY, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'),
    ("?force=true", MERGE, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
                           "non-apply patch"),
])
async def test_patch_options_validation(client: httpx.AsyncClient, query: str, ctype: dict[str, str], message: str) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}})
    r = await client.patch(f"{CM}/a{query}", content=b'{"data":{"k":"v"}}', headers=ctype)
    assert (r.status_code, r.json()["message"]) == (422, message)


async def test_unknown_patch_type_is_415(client: httpx.AsyncClient) -> None:
    await client.post(CM, json={"metadata": {"name": "a"}})
    r = await client.patch(f"{CM}/a", content=b"{}", headers={"content-type": "application/json"})
    assert r.status_code == 415


async def test_field_manager_defaults_to_user_agent_prefix(client: httpx.AsyncClient) -> None:
    r = await client.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "v"}},
                          headers={"user-agent": "kubectl/v1.32.5 (linux/amd64) kubernetes/abc"})
    assert r.json()["metadata"]["managedFields"][0]["manager"] == "kubectl"
    r = await client.patch(f"{CM}/a?fieldManager=kubectl-label", content=b'{"metadata":{"labels":{"x":"y"}}}',
                           headers=MERGE)
    assert {m["manager"] for m in r.json()["metadata"]["managedFields"]} == {"kubectl", "kubectl-label"}


async def test_namespace_gets_phase_and_kubernetes_finalizer(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})
    assert r.json()["status"] == {"phase": "Active"} and r.json()["spec"] == {"finalizers": ["kubernetes"]}
