"""apps/v1 DaemonSets through the HTTP API: discovery, defaults, generation, validation, status, Table.

Upstream (release 1.32): k/k ``pkg/apis/apps/v1/defaults.go`` ``SetDefaults_DaemonSet``;
``pkg/registry/apps/daemonset/strategy.go`` (``PrepareForCreate``/``PrepareForUpdate``: templateGeneration
and generation, the status strategy); ``pkg/apis/apps/v1/conversion.go`` (templateGeneration as the
``deprecated.daemonset.template.generation`` annotation); ``pkg/apis/apps/validation/validation.go``
(``ValidateDaemonSetSpec``, ``ValidateDaemonSetUpdateStrategy``, ``ValidateRollingUpdateDaemonSet``,
``ValidateDaemonSetStatusUpdate``); ``pkg/printers/internalversion/printers.go`` ``printDaemonSet``.
"""

from __future__ import annotations

from typing import Any

import httpx

DS = "/apis/apps/v1/namespaces/default/daemonsets"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
GEN = "deprecated.daemonset.template.generation"


def daemonset(name: str = "agent", *, labels: dict[str, str] | None = None, selector: Any = "same",
              image: str = "busybox", **spec: Any) -> dict[str, Any]:
    labels = {"app": name} if labels is None else labels
    body_spec: dict[str, Any] = {
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": image}]}},
        **spec,
    }
    if selector == "same":
        body_spec["selector"] = {"matchLabels": dict(labels)}
    elif selector is not None:
        body_spec["selector"] = selector
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name}, "spec": body_spec}


def causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == ("Invalid", "DaemonSet", "apps")
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(DS, json=body)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def test_daemonsets_are_discovered_with_short_name_category_and_status(client: httpx.AsyncClient) -> None:
    resources = {r["name"]: r for r in (await client.get("/apis/apps/v1")).json()["resources"]}
    ds = resources["daemonsets"]
    assert (ds["kind"], ds["namespaced"], ds["shortNames"], ds["categories"]) == ("DaemonSet", True, ["ds"], ["all"])
    assert "daemonsets/status" in resources and "daemonsets/scale" not in resources


async def test_create_defaults_strategy_history_and_template_generation(client: httpx.AsyncClient) -> None:
    body = await created(client, daemonset())
    spec = body["spec"]
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert spec["revisionHistoryLimit"] == 10
    pod_spec = spec["template"]["spec"]
    assert (pod_spec["restartPolicy"], pod_spec["dnsPolicy"], pod_spec["schedulerName"]) == (
        "Always", "ClusterFirst", "default-scheduler")
    assert body["metadata"]["generation"] == 1
    assert body["metadata"]["annotations"] == {GEN: "1"}
    assert body["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                              "numberReady": 0}


async def test_on_delete_strategy_gets_no_rolling_update(client: httpx.AsyncClient) -> None:
    body = await created(client, daemonset(updateStrategy={"type": "OnDelete"}))
    assert body["spec"]["updateStrategy"] == {"type": "OnDelete"}


async def test_template_change_moves_generation_and_template_generation(client: httpx.AsyncClient) -> None:
    body = await created(client, daemonset())
    body["spec"]["minReadySeconds"] = 5
    r = await client.put(f"{DS}/agent", json=body)
    assert r.status_code == 200, r.text
    body = r.json()
    # A spec change outside the template: generation only.
    assert (body["metadata"]["generation"], body["metadata"]["annotations"][GEN]) == (2, "1")
    body["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    r = await client.put(f"{DS}/agent", json=body)
    body = r.json()
    assert (body["metadata"]["generation"], body["metadata"]["annotations"][GEN]) == (3, "2")
    # The annotation is the server's: a client cannot move it.
    body["metadata"]["annotations"][GEN] = "40"
    body = (await client.put(f"{DS}/agent", json=body)).json()
    assert (body["metadata"]["generation"], body["metadata"]["annotations"][GEN]) == (3, "2")


async def test_set_image_patch_moves_template_generation(client: httpx.AsyncClient) -> None:
    await created(client, daemonset())
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    r = await client.patch(f"{DS}/agent", json=patch, headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert r.status_code == 200, r.text
    assert (r.json()["metadata"]["generation"], r.json()["metadata"]["annotations"][GEN]) == (2, "2")


async def test_status_write_keeps_spec_and_validates_counts(client: httpx.AsyncClient) -> None:
    body = await created(client, daemonset())
    body["status"] = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberMisscheduled": 0,
                      "numberReady": 2, "observedGeneration": 1, "collisionCount": 2}
    body["spec"]["minReadySeconds"] = 9
    r = await client.put(f"{DS}/agent/status", json=body)
    assert r.status_code == 200, r.text
    stored = r.json()
    assert stored["status"]["numberReady"] == 2 and "minReadySeconds" not in stored["spec"]
    assert stored["metadata"]["generation"] == 1
    stored["status"]["numberReady"] = -1
    stored["status"]["collisionCount"] = 1
    assert causes(await client.put(f"{DS}/agent/status", json=stored)) == [
        ("FieldValueInvalid", "status.numberReady", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "status.collisionCount", "Invalid value: 1: cannot be decremented"),
    ]
    assert (await client.get(f"{DS}/agent")).json()["status"]["numberReady"] == 2


async def test_selector_rules_as_upstream(client: httpx.AsyncClient) -> None:
    assert causes(await client.post(DS, json=daemonset(selector=None))) == [
        ("FieldValueInvalid", "spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"agent"}: `selector` does not match template `labels`'),
    ]
    assert causes(await client.post(DS, json=daemonset(selector={"matchLabels": {"app": "other"}}))) == [
        ("FieldValueInvalid", "spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"agent"}: `selector` does not match template `labels`'),
    ]
    assert causes(await client.post(DS, json=daemonset(selector={}))) == [
        ("FieldValueInvalid", "spec.selector",
         "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset"),
    ]
    assert (await client.get(f"{DS}/agent")).status_code == 404


async def test_template_rules_restart_policy_and_active_deadline(client: httpx.AsyncClient) -> None:
    body = daemonset()
    body["spec"]["template"]["spec"].update(restartPolicy="OnFailure", activeDeadlineSeconds=5)
    assert causes(await client.post(DS, json=body)) == [
        ("FieldValueNotSupported", "spec.template.spec.restartPolicy",
         'Unsupported value: "OnFailure": supported values: "Always"'),
        ("FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"),
    ]


async def test_update_strategy_rules(client: httpx.AsyncClient) -> None:
    both = daemonset(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "10%"}})
    assert causes(await client.post(DS, json=both)) == [
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxSurge",
         'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"10%"}: may not be set when maxUnavailable is non-zero'),
    ]
    neither = daemonset(updateStrategy={"rollingUpdate": {"maxUnavailable": "0%"}})
    assert causes(await client.post(DS, json=neither)) == [
        ("FieldValueRequired", "spec.updateStrategy.rollingUpdate.maxUnavailable",
         "Required value: cannot be 0 when maxSurge is 0"),
    ]
    bad = daemonset(updateStrategy={"rollingUpdate": {"maxUnavailable": "150%", "maxSurge": -1}}, minReadySeconds=-2,
                    revisionHistoryLimit=-1)
    assert causes(await client.post(DS, json=bad)) == [
        ("FieldValueInvalid", "spec.minReadySeconds", "Invalid value: -2: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxSurge",
         "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxUnavailable",
         'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%'),
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxSurge",
         'Invalid value: intstr.IntOrString{Type:0, IntVal:-1, StrVal:""}: may not be set when maxUnavailable is non-zero'),
        ("FieldValueInvalid", "spec.revisionHistoryLimit", "Invalid value: -1: must be greater than or equal to 0"),
    ]
    unknown = daemonset(updateStrategy={"type": "Sometimes"})
    assert causes(await client.post(DS, json=unknown)) == [
        ("FieldValueNotSupported", "spec.updateStrategy",
         'Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Sometimes", '
         'RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "RollingUpdate", "OnDelete"'),
    ]


async def test_selector_is_immutable_and_update_reports_spec_causes_twice(client: httpx.AsyncClient) -> None:
    body = await created(client, daemonset())
    body["spec"]["selector"] = {"matchLabels": {"app": "agent", "tier": "x"}}
    body["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    assert causes(await client.put(f"{DS}/agent", json=body)) == [
        ("FieldValueInvalid", "spec.selector",
         'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"agent", "tier":"x"}, '
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"),
    ]
    body = (await client.get(f"{DS}/agent")).json()
    body["spec"]["minReadySeconds"] = -1
    r = await client.put(f"{DS}/agent", json=body)
    assert causes(r) == [("FieldValueInvalid", "spec.minReadySeconds",
                          "Invalid value: -1: must be greater than or equal to 0")] * 2
    assert r.json()["message"] == ('DaemonSet.apps "agent" is invalid: spec.minReadySeconds: '
                                   "Invalid value: -1: must be greater than or equal to 0")
    assert (await client.get(f"{DS}/agent")).json()["metadata"]["generation"] == 1


async def test_table_has_print_daemonset_columns(client: httpx.AsyncClient) -> None:
    body = daemonset()
    body["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "b", "disk": "ssd"}
    stored = await created(client, body)
    stored["status"] = {"desiredNumberScheduled": 3, "currentNumberScheduled": 2, "numberMisscheduled": 0,
                        "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 1}
    assert (await client.put(f"{DS}/agent/status", json=stored)).status_code == 200
    table = (await client.get(DS, headers={"Accept": TABLE})).json()
    names = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
    assert names == [("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
                     ("Ready", "integer", 0), ("Up-to-date", "integer", 0), ("Available", "integer", 0),
                     ("Node Selector", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                     ("Images", "string", 1), ("Selector", "string", 1)]
    cells = table["rows"][0]["cells"]
    assert cells[:7] == ["agent", 3, 2, 1, 2, 1, "disk=ssd,zone=b"]
    assert cells[8:] == ["c", "busybox", "app=agent"]


async def test_pod_template_warnings_on_create_and_template_change_only(client: httpx.AsyncClient) -> None:
    body = daemonset()
    body["spec"]["template"]["spec"]["nodeSelector"] = {"beta.kubernetes.io/arch": "amd64"}
    r = await client.post(DS, json=body)
    assert r.status_code == 201
    warning = r.headers.get("Warning", "")
    assert "spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14" in warning
    stored = r.json()
    stored["spec"]["minReadySeconds"] = 3
    r = await client.put(f"{DS}/agent", json=stored)
    assert r.status_code == 200 and "Warning" not in r.headers
    stored = r.json()
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.36"
    r = await client.put(f"{DS}/agent", json=stored)
    assert "deprecated since v1.14" in r.headers.get("Warning", "")


async def test_apps_openapi_v3_document_carries_daemonset_schemas_and_paths(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi/v3/apis/apps/v1")).json()
    schema = doc["components"]["schemas"]["io.k8s.api.apps.v1.DaemonSetSpec"]
    assert {"selector", "template", "updateStrategy", "minReadySeconds", "revisionHistoryLimit"} <= set(schema["properties"])
    assert "/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}/status" in doc["paths"]


def _owns_generation(body: dict[str, Any], manager: str) -> bool:
    for entry in body["metadata"].get("managedFields") or []:
        if entry["manager"] == manager:
            return GEN in {k[2:] for k in entry["fieldsV1"].get("f:metadata", {}).get("f:annotations", {})}
    return False


async def test_template_generation_annotation_is_owned_as_upstreams_conversion_makes_it(client: httpx.AsyncClient) -> None:
    # The apps/v1 conversion writes the annotation before the field manager looks: its creator owns it
    # (kubectl get ds --show-managed-fields on a real cluster: f:deprecated.daemonset.template.generation).
    created_body = (await client.post(f"{DS}?fieldManager=creator", json=daemonset())).json()
    assert _owns_generation(created_body, "creator")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    r = await client.patch(f"{DS}/agent?fieldManager=kubectl-set", json=patch,
                           headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert r.json()["metadata"]["annotations"][GEN] == "2" and not _owns_generation(r.json(), "kubectl-set")
    # A server-side apply owns only what it applied.
    applied = daemonset("applied")
    r = await client.patch(f"{DS}/applied?fieldManager=applier", json=applied,
                           headers={"Content-Type": "application/apply-patch+yaml"})
    assert r.status_code == 201 and r.json()["metadata"]["annotations"] == {GEN: "1"}
    assert not _owns_generation(r.json(), "applier")


def _pb(number: int, value: bytes | str) -> bytes:
    """One length-delimited protobuf field (enough for a hand-built body)."""
    data = value.encode() if isinstance(value, str) else value
    return bytes([number << 3 | 2, len(data)]) + data


async def test_a_protobuf_body_creates_a_defaulted_daemonset(client: httpx.AsyncClient) -> None:
    # What a Go client's typed create sends (k8s.io/api apps/v1 generated.proto numbers).
    labels = _pb(1, _pb(1, "app") + _pb(2, "agent"))
    template = _pb(1, _pb(11, _pb(1, "app") + _pb(2, "agent"))) + _pb(2, _pb(2, _pb(1, "c") + _pb(2, "busybox")))
    spec = _pb(1, labels) + _pb(2, template)
    raw = _pb(1, _pb(1, "agent")) + _pb(2, spec)
    body = b"k8s\x00" + _pb(1, _pb(1, "apps/v1") + _pb(2, "DaemonSet")) + _pb(2, raw)
    r = await client.post(DS, content=body, headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert r.status_code == 201, r.text
    stored = (await client.get(f"{DS}/agent")).json()
    assert stored["spec"]["selector"] == {"matchLabels": {"app": "agent"}}
    assert stored["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert stored["metadata"]["annotations"] == {GEN: "1"}
