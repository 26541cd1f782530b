"""core/v1 ReplicationControllers and PodTemplates through the HTTP API.

Upstream (release 1.32): k/k ``pkg/apis/core/v1/defaults.go`` ``SetDefaults_ReplicationController``;
``pkg/apis/core/validation/validation.go`` (``ValidateReplicationControllerSpec``, ``ValidatePodTemplateSpecForRC``,
``ValidateNonEmptySelector``, ``ValidateReplicationControllerStatus``, ``ValidatePodTemplate``);
``pkg/registry/core/replicationcontroller/strategy.go`` (generation, status strategy, ``status.replicas``
field selector, ``DefaultGarbageCollectionPolicy``) and ``storage/storage.go`` (``scaleFromRC``);
``pkg/registry/core/podtemplate/strategy.go`` (generation moved by template changes);
``pkg/printers/internalversion/printers.go`` (``printReplicationController``, ``printPodTemplate``).
"""

from __future__ import annotations

from typing import Any

import httpx

RCS = "/api/v1/namespaces/default/replicationcontrollers"
PODTEMPLATES = "/api/v1/namespaces/default/podtemplates"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
MERGE = {"content-type": "application/merge-patch+json"}


def rc(name: str = "web", *, labels: dict[str, str] | None = None, restart: str | None = None,
       **spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}
    if restart is not None:
        pod["restartPolicy"] = restart
    template = {"metadata": {"labels": labels if labels is not None else {"app": name}}, "spec": pod}
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"template": template, **spec}}


def podtemplate(name: str = "pt", **pod: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name},
            "template": {"metadata": {"labels": {"tier": "batch"}},
                         "spec": {"containers": [{"name": "job", "image": "busybox:1.36"}], **pod}}}


def causes(r: httpx.Response, kind: str = "ReplicationController") -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"]) == ("Invalid", kind)
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(path, json=body)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def test_discovery_serves_rc_with_status_scale_short_name_and_category_and_podtemplates(
        client: httpx.AsyncClient) -> None:
    by_name = {r["name"]: r for r in (await client.get("/api/v1")).json()["resources"]}
    rcs = by_name["replicationcontrollers"]
    assert (rcs["kind"], rcs["namespaced"], rcs["shortNames"], rcs["categories"]) == (
        "ReplicationController", True, ["rc"], ["all"])
    assert "replicationcontrollers/status" in by_name
    scale = by_name["replicationcontrollers/scale"]
    assert (scale["kind"], scale["group"], scale["version"]) == ("Scale", "autoscaling", "v1")
    templates = by_name["podtemplates"]
    assert (templates["kind"], templates["namespaced"]) == ("PodTemplate", True)
    assert "shortNames" not in templates and "categories" not in templates


async def test_an_rc_without_selector_or_labels_takes_the_templates_labels_and_one_replica(
        client: httpx.AsyncClient) -> None:
    body = await created(client, RCS, rc(labels={"app": "web", "tier": "fe"}))
    assert body["spec"]["selector"] == {"app": "web", "tier": "fe"}
    assert body["metadata"]["labels"] == {"app": "web", "tier": "fe"}
    assert body["spec"]["replicas"] == 1
    assert body["metadata"]["generation"] == 1 and body["status"] == {"replicas": 0}
    pod = body["spec"]["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["terminationGracePeriodSeconds"]) == ("Always", "ClusterFirst", 30)
    assert pod["containers"][0]["imagePullPolicy"] == "IfNotPresent"


async def test_a_given_selector_labels_and_replicas_are_kept(client: httpx.AsyncClient) -> None:
    body = rc(labels={"app": "web", "tier": "fe"}, selector={"app": "web"}, replicas=0)
    body["metadata"]["labels"] = {"owner": "team-a"}
    out = await created(client, RCS, body)
    assert (out["spec"]["selector"], out["metadata"]["labels"], out["spec"]["replicas"]) == (
        {"app": "web"}, {"owner": "team-a"}, 0)


async def test_invalid_rcs_get_upstreams_causes_and_nothing_is_stored(client: httpx.AsyncClient) -> None:
    bad = rc("bad", labels={"app": "other"}, restart="Never", selector={"app": "web"}, replicas=-1, minReadySeconds=-2)
    bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert causes(await client.post(RCS, json=bad)) == [
        ("FieldValueInvalid", "spec.minReadySeconds", "Invalid value: -2: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`'),
        ("FieldValueNotSupported", "spec.template.spec.restartPolicy",
         'Unsupported value: "Never": supported values: "Always"'),
        ("FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"),
    ]
    # No template labels, no selector: nothing to default from (ValidateNonEmptySelector), and no template.
    r = await client.post(RCS, json={"apiVersion": "v1", "kind": "ReplicationController",
                                     "metadata": {"name": "empty"}, "spec": {}})
    assert causes(r) == [("FieldValueRequired", "spec.selector", "Required value"),
                         ("FieldValueRequired", "spec.template", "Required value")]
    assert r.json()["message"] == ('ReplicationController "empty" is invalid: '
                                   "[spec.selector: Required value, spec.template: Required value]")
    assert (await client.get(RCS)).json()["items"] == []


async def test_generation_moves_with_the_spec_and_status_goes_through_its_subresource(client: httpx.AsyncClient) -> None:
    await created(client, RCS, rc())
    labelled = await client.patch(f"{RCS}/web", json={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
    assert labelled.json()["metadata"]["generation"] == 1
    scaled = await client.patch(f"{RCS}/web", json={"spec": {"replicas": 2}, "status": {"replicas": 9}}, headers=MERGE)
    assert scaled.json()["metadata"]["generation"] == 2
    assert scaled.json()["status"] == {"replicas": 0}  # the main resource cannot write status

    status = {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 2}
    written = await client.patch(f"{RCS}/web/status", json={"spec": {"replicas": 7}, "status": status}, headers=MERGE)
    assert written.status_code == 200, written.text
    assert (written.json()["status"], written.json()["spec"]["replicas"]) == (status, 2)
    assert written.json()["metadata"]["generation"] == 2
    bad = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3}
    r = await client.patch(f"{RCS}/web/status", json={"status": bad}, headers=MERGE)
    assert causes(r) == [
        ("FieldValueInvalid", "status.readyReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 3: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 3: cannot be greater than readyReplicas"),
    ]
    assert (await client.get(f"{RCS}/web")).json()["status"] == status


async def test_an_invalid_update_names_each_cause_twice_and_the_selector_may_change(client: httpx.AsyncClient) -> None:
    stored = await created(client, RCS, rc())
    stored["spec"]["replicas"] = -3
    r = await client.put(f"{RCS}/web", json=stored)
    # The strategy's ValidateUpdate runs ValidateReplicationController and ValidateReplicationControllerUpdate.
    assert causes(r) == [("FieldValueInvalid", "spec.replicas", "Invalid value: -3: must be greater than or equal to 0")] * 2
    stored["spec"]["replicas"] = 1
    stored["spec"]["selector"] = {"app": "web", "extra": "x"}
    stored["spec"]["template"]["metadata"]["labels"]["extra"] = "x"
    r = await client.put(f"{RCS}/web", json=stored)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["selector"] == {"app": "web", "extra": "x"}


async def test_scale_shows_the_label_map_as_a_selector_string_and_sets_replicas(client: httpx.AsyncClient) -> None:
    stored = await created(client, RCS, rc(labels={"tier": "fe", "app": "web"}))
    scale = (await client.get(f"{RCS}/web/scale")).json()
    assert scale == {"kind": "Scale", "apiVersion": "autoscaling/v1",
                     "metadata": {"name": "web", "namespace": "default", "uid": stored["metadata"]["uid"],
                                  "resourceVersion": stored["metadata"]["resourceVersion"],
                                  "creationTimestamp": stored["metadata"]["creationTimestamp"]},
                     "spec": {"replicas": 1}, "status": {"replicas": 0, "selector": "app=web,tier=fe"}}
    r = await client.patch(f"{RCS}/web/scale", json={"spec": {"replicas": 5}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert r.json()["spec"] == {"replicas": 5}
    after = (await client.get(f"{RCS}/web")).json()
    assert (after["spec"]["replicas"], after["metadata"]["generation"]) == (5, 2)
    r = await client.put(f"{RCS}/web/scale", json={**scale, "spec": {"replicas": -1},
                                                  "metadata": {"name": "web", "namespace": "default"}})
    assert r.status_code == 422, r.text
    assert r.json()["message"] == 'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    assert (await client.get(f"{RCS}/web")).json()["spec"]["replicas"] == 5


async def test_table_has_upstreams_columns_and_wide_cells(client: httpx.AsyncClient) -> None:
    await created(client, RCS, rc(replicas=3, labels={"app": "web", "tier": "fe"}))
    table = (await client.get(RCS, headers={"accept": TABLE})).json()
    columns = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
                       ("Ready", "integer", 0), ("Age", "string", 0), ("Containers", "string", 1),
                       ("Images", "string", 1), ("Selector", "string", 1)]
    assert table["rows"][0]["cells"] == ["web", 3, 0, 0, "0s", "nginx", "nginx:1.25", "app=web,tier=fe"]


async def test_field_selector_status_replicas_and_no_other(client: httpx.AsyncClient) -> None:
    await created(client, RCS, rc())
    matched = (await client.get(RCS, params={"fieldSelector": "status.replicas=0"})).json()["items"]
    assert [i["metadata"]["name"] for i in matched] == ["web"]
    assert (await client.get(RCS, params={"fieldSelector": "status.replicas!=0"})).json()["items"] == []
    r = await client.get(RCS, params={"fieldSelector": "spec.replicas=1"})
    assert r.status_code == 400
    assert r.json()["message"] == 'field label not supported: spec.replicas'


async def test_a_delete_naming_no_policy_orphans_and_background_does_not(client: httpx.AsyncClient) -> None:
    """core/v1 RCs' DefaultGarbageCollectionPolicy is OrphanDependents: the orphan finalizer is added."""
    await created(client, RCS, rc("a"))
    await created(client, RCS, rc("b"))
    r = await client.delete(f"{RCS}/a")
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["finalizers"] == ["orphan"] and r.json()["metadata"]["deletionTimestamp"]
    r = await client.request("DELETE", f"{RCS}/b", json={"propagationPolicy": "Background"})
    assert r.status_code == 200 and r.json()["kind"] == "Status"
    assert (await client.get(f"{RCS}/b")).status_code == 404


async def test_podtemplates_default_their_template_and_move_generation_with_it(client: httpx.AsyncClient) -> None:
    out = await created(client, PODTEMPLATES, podtemplate(restartPolicy="Never"))
    assert out["metadata"]["generation"] == 1 and "status" not in out and "spec" not in out
    pod = out["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["schedulerName"]) == ("Never", "ClusterFirst", "default-scheduler")
    assert out["template"]["metadata"] == {"labels": {"tier": "batch"}, "creationTimestamp": None}
    labelled = await client.patch(f"{PODTEMPLATES}/pt", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE)
    assert labelled.json()["metadata"]["generation"] == 1
    changed = await client.patch(f"{PODTEMPLATES}/pt", json={"template": {"metadata": {"labels": {"tier": "web"}}}},
                                 headers=MERGE)
    assert changed.json()["metadata"]["generation"] == 2


async def test_podtemplate_validation_names_fields_under_template(client: httpx.AsyncClient) -> None:
    body = podtemplate()
    body["template"]["spec"]["containers"] = []
    body["template"]["metadata"]["labels"] = {"bad key!": "x"}
    found = causes(await client.post(PODTEMPLATES, json=body), kind="PodTemplate")
    assert ("FieldValueInvalid", "template.labels",
            "Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')") in found
    assert ("FieldValueRequired", "template.spec.containers", "Required value") in found
    assert (await client.get(PODTEMPLATES)).json()["items"] == []


async def test_podtemplate_table_shows_containers_images_and_pod_labels(client: httpx.AsyncClient) -> None:
    await created(client, PODTEMPLATES, podtemplate())
    table = (await client.get(PODTEMPLATES, headers={"accept": TABLE})).json()
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Containers", 0), ("Images", 0), ("Pod Labels", 0)]
    assert table["rows"][0]["cells"] == ["pt", "job", "busybox:1.36", "tier=batch"]


async def test_warnings_name_the_rc_and_podtemplate_paths(client: httpx.AsyncClient) -> None:
    """WarningsOnCreate: the RC name as a DNS label, then GetWarningsForPodTemplate under spec.template; a
    PodTemplate's under template; an update warns only when the generation moved."""
    body = rc("web.v1", labels={"app": "web"})
    body["spec"]["template"]["spec"]["nodeSelector"] = {"beta.kubernetes.io/os": "linux"}
    r = await client.post(RCS, json=body)
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == [
        '299 - "metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; '
        'a DNS label is recommended: [must not contain dots]"',
        '299 - "spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use '
        '\\"kubernetes.io/os\\" instead"']
    unchanged = await client.patch(f"{RCS}/web.v1", json={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
    assert unchanged.status_code == 200 and unchanged.headers.get_list("warning") == []
    template = podtemplate(nodeSelector={"beta.kubernetes.io/os": "linux"})
    r = await client.post(PODTEMPLATES, json=template)
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == [
        '299 - "template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use '
        '\\"kubernetes.io/os\\" instead"']


async def test_openapi_v3_and_v2_describe_both_kinds_and_the_rc_scale(client: httpx.AsyncClient) -> None:
    """Upstream's api__v1_openapi.json: readCoreV1NamespacedReplicationControllerScale takes and gives an
    autoscaling/v1 Scale; both kinds' schemas (what kubectl explain and field validation read)."""
    doc = (await client.get("/openapi/v3/api/v1")).json()
    scale = doc["paths"]["/api/v1/namespaces/{namespace}/replicationcontrollers/{name}/scale"]
    assert scale["get"]["operationId"] == "readCoreV1NamespacedReplicationControllerScale"
    assert scale["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}
    assert "/api/v1/namespaces/{namespace}/replicationcontrollers/{name}/status" in doc["paths"]
    assert "/api/v1/namespaces/{namespace}/podtemplates" in doc["paths"]
    schemas = doc["components"]["schemas"]
    rc_spec = schemas["io.k8s.api.core.v1.ReplicationControllerSpec"]["properties"]
    assert rc_spec["selector"]["type"] == "object" and rc_spec["selector"]["x-kubernetes-map-type"] == "atomic"
    assert schemas["io.k8s.api.core.v1.PodTemplate"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "PodTemplate", "version": "v1"}]
    definitions = (await client.get("/openapi/v2", headers={"accept": "application/json"})).json()["definitions"]
    assert {"io.k8s.api.core.v1.ReplicationController", "io.k8s.api.core.v1.PodTemplate"} <= set(definitions)


async def test_a_non_convertible_selector_annotation_freezes_the_selector(client: httpx.AsyncClient) -> None:
    """The RC strategy's ValidateUpdate reads helper.NonConvertibleFields of the stored RC's annotations."""
    body = rc()
    body["metadata"]["annotations"] = {"non-convertible.kubernetes.io/selector": "app in (web)"}
    stored = await created(client, RCS, body)
    stored["spec"]["selector"] = {"app": "web", "tier": "fe"}
    stored["spec"]["template"]["metadata"]["labels"]["tier"] = "fe"
    assert causes(await client.put(f"{RCS}/web", json=stored)) == [
        ("FieldValueInvalid", "spec.selector",
         'Invalid value: map[string]string{"app":"web", "tier":"fe"}: cannot update non-convertible selector')]
    other = rc("other")
    other["metadata"]["annotations"] = {"non-convertible.kubernetes.io/minReadySeconds": "x"}
    stored = await created(client, RCS, other)
    stored["spec"]["replicas"] = 2
    assert causes(await client.put(f"{RCS}/other", json=stored)) == [
        ("FieldValueNotFound", "minReadySeconds", 'Not found: "x": unknown non-convertible field')]
