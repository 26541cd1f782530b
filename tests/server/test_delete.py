"""delete: preconditions, finalizers, propagation finalizers, graceful pods, dryRun, deletecollection."""

from __future__ import annotations

import httpx
import orjson

from kubeloop.server import App
from kubeloop.server._delete import delete_listed
from kubeloop.server._options import parse_delete_options
from kubeloop.server._state import collection_prefix

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
MERGE = {"content-type": "application/merge-patch+json"}


def configmap(name: str, finalizers: list[str] | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def deployment(name: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}


async def delete(client: httpx.AsyncClient, url: str, body: dict[str, object] | None = None) -> httpx.Response:
    return await client.request("DELETE", url, json=body)


async def test_uid_precondition_mismatch_is_409_with_upstream_message(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json=configmap("a"))).json()
    r = await delete(client, f"{CM}/a", {"preconditions": {"uid": "other"}})
    assert r.status_code == 409
    assert r.json()["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (other) does not match the UID '
        f"in record ({created['metadata']['uid']}). The object might have been deleted and then recreated")
    assert (await client.get(f"{CM}/a")).status_code == 200


async def test_resource_version_precondition_mismatch_is_409(client: httpx.AsyncClient) -> None:
    created = (await client.post(CM, json=configmap("a"))).json()
    r = await client.delete(f"{CM}/a", params={"preconditions.resourceVersion": "1"})
    assert r.status_code == 409
    assert r.json()["message"].endswith(
        f"the ResourceVersion in the precondition (1) does not match the ResourceVersion in record "
        f"({created['metadata']['resourceVersion']}). The object might have been modified")


async def test_delete_options_as_query_parameters(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    r = await client.delete(f"{CM}/a", params={"propagationPolicy": "Orphan"})
    assert r.status_code == 200
    assert r.json()["metadata"]["finalizers"] == ["orphan"]


async def test_finalizers_turn_delete_into_deletion_timestamp(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", ["example.com/keep"]))
    r = await delete(client, f"{CM}/a")
    assert r.status_code == 200
    meta = r.json()["metadata"]
    assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    # Removing the last finalizer deletes the object during that update.
    r = await client.patch(f"{CM}/a", content=b'{"metadata":{"finalizers":null}}', headers=MERGE)
    assert r.status_code == 200
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_no_new_finalizers_while_deleting(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", ["example.com/keep"]))
    await delete(client, f"{CM}/a")
    r = await client.patch(f"{CM}/a", content=b'{"metadata":{"finalizers":["example.com/keep","example.com/new"]}}',
                           headers=MERGE)
    assert r.status_code == 422
    assert "no new finalizers can be added if the object is being deleted" in r.json()["message"]


async def test_deletion_timestamp_is_immutable(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", ["example.com/keep"]))
    ts = (await delete(client, f"{CM}/a")).json()["metadata"]["deletionTimestamp"]
    r = await client.patch(f"{CM}/a", content=b'{"metadata":{"deletionTimestamp":"2000-01-01T00:00:00Z"}}',
                           headers=MERGE)
    assert r.status_code == 200
    assert r.json()["metadata"]["deletionTimestamp"] == ts


async def test_foreground_adds_foreground_deletion_finalizer(client: httpx.AsyncClient) -> None:
    await client.post(DEPLOY, json=deployment("d"))
    r = await delete(client, f"{DEPLOY}/d", {"propagationPolicy": "Foreground"})
    assert r.status_code == 200
    meta = r.json()["metadata"]
    assert meta["finalizers"] == ["foregroundDeletion"]
    assert meta["generation"] == 2, "generation bumps once when deletionTimestamp is first set"
    again = (await delete(client, f"{DEPLOY}/d", {"propagationPolicy": "Foreground"})).json()["metadata"]
    assert again["generation"] == 2 and again["deletionTimestamp"] == meta["deletionTimestamp"]


async def test_orphan_dependents_false_answers_202(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", ["example.com/keep"]))
    r = await delete(client, f"{CM}/a", {"orphanDependents": False})
    assert r.status_code == 202


async def test_orphan_and_policy_together_are_422(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    r = await delete(client, f"{CM}/a", {"orphanDependents": True, "propagationPolicy": "Orphan"})
    assert r.status_code == 422
    assert r.json()["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                                   '"Orphan": orphanDependents and deletionPropagation cannot be both set')


async def test_background_removes_an_existing_orphan_finalizer_and_deletes(client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a", ["orphan"]))
    r = await delete(client, f"{CM}/a", {"propagationPolicy": "Background"})
    assert r.json()["kind"] == "Status"
    assert (await client.get(f"{CM}/a")).status_code == 404


async def test_dry_run_delete_changes_nothing(app: App, client: httpx.AsyncClient) -> None:
    await client.post(CM, json=configmap("a"))
    before = app.state.store.revision
    r = await delete(client, f"{CM}/a", {"dryRun": ["All"]})
    assert r.status_code == 200 and r.json()["status"] == "Success"
    assert app.state.store.revision == before
    assert (await client.get(f"{CM}/a")).status_code == 200


async def test_scheduled_pod_is_deleted_gracefully_and_returns_the_object(client: httpx.AsyncClient) -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}}
    await client.post(PODS, json=pod)
    r = await delete(client, f"{PODS}/p")
    assert r.status_code == 200 and r.json()["kind"] == "Pod"
    assert r.json()["metadata"]["deletionGracePeriodSeconds"] == 30
    r = await delete(client, f"{PODS}/p", {"gracePeriodSeconds": 0})
    assert r.json()["kind"] == "Pod"
    assert (await client.get(f"{PODS}/p")).status_code == 404


async def test_unscheduled_pod_is_deleted_at_once(client: httpx.AsyncClient) -> None:
    await client.post(PODS, json={"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    r = await delete(client, f"{PODS}/p")
    assert r.status_code == 200 and r.json()["kind"] == "Pod"
    assert (await client.get(f"{PODS}/p")).status_code == 404


async def test_deletecollection_deletes_matching_items(client: httpx.AsyncClient) -> None:
    for name, app_label in (("a", "x"), ("b", "x"), ("c", "y")):
        await client.post(CM, json={"metadata": {"name": name, "labels": {"app": app_label}}})
    r = await client.delete(CM, params={"labelSelector": "app=x"})
    assert r.status_code == 200 and r.json()["kind"] == "ConfigMapList"
    assert sorted(i["metadata"]["name"] for i in r.json()["items"]) == ["a", "b"]
    names = [i["metadata"]["name"] for i in (await client.get(CM)).json()["items"]]
    assert names == ["c"]


async def test_deleting_a_namespace_marks_it_terminating(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/namespaces", json={"metadata": {"name": "team"}})
    r = await delete(client, "/api/v1/namespaces/team")
    assert r.status_code == 200
    ns = r.json()
    assert ns["status"]["phase"] == "Terminating" and ns["metadata"]["deletionTimestamp"]
    r = await client.post("/api/v1/namespaces/team/configmaps", json=configmap("a"))
    assert r.status_code == 403
    assert r.json()["message"] == ('configmaps "a" is forbidden: unable to create new content in namespace team '
                                   "because it is being terminated")
    assert r.json()["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    # /finalize with the spec finalizer removed purges it.
    ns["spec"]["finalizers"] = []
    r = await client.put("/api/v1/namespaces/team/finalize", json=ns)
    assert r.status_code == 200
    assert (await client.get("/api/v1/namespaces/team")).status_code == 404


async def test_creating_in_a_missing_namespace_is_404(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/namespaces/ghost/configmaps", json=configmap("a"))
    assert r.status_code == 404
    assert r.json()["message"] == 'namespaces "ghost" not found'


async def test_system_namespaces_cannot_be_deleted(client: httpx.AsyncClient) -> None:
    for name in ("default", "kube-system", "kube-public"):
        r = await delete(client, f"/api/v1/namespaces/{name}")
        assert r.status_code == 403
        assert r.json()["message"] == f'namespaces "{name}" is forbidden: this namespace may not be deleted'


async def test_deletecollection_of_an_item_changed_since_the_list_deletes_its_current_state(
    app: App, client: httpx.AsyncClient
) -> None:
    await client.post(CM, json=configmap("a"))
    await client.post(CM, json=configmap("b"))
    info = app.kinds.get("", "v1", "configmaps")
    assert info is not None
    listed = (await app.state.store.range(collection_prefix(info, "default"))).items
    # After the list: "a" gains a finalizer (so its delete only marks it), "b" is already gone.
    patched = await client.patch(f"{CM}/a", json={"metadata": {"finalizers": ["example.com/keep"]}}, headers=MERGE)
    assert patched.status_code == 200
    assert (await delete(client, f"{CM}/b")).status_code == 200
    answers = await delete_listed(app.state, info, listed, parse_delete_options({}, None))
    [only] = [orjson.loads(a) for a in answers]
    assert only["metadata"]["name"] == "a" and only["metadata"]["finalizers"] == ["example.com/keep"]
    assert only["metadata"]["deletionTimestamp"]  # the fresh state was marked, not the stale listing
    stored = (await client.get(f"{CM}/a")).json()
    assert stored["metadata"]["deletionTimestamp"] and stored["metadata"]["finalizers"] == ["example.com/keep"]
