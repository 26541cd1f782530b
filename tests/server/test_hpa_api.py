"""HorizontalPodAutoscalers through the HTTP API: discovery, defaults, validation, the status subresource, the
Table, and autoscaling/v1 served by conversion from the stored autoscaling/v2 objects.

Upstream (release 1.32): k/k ``pkg/apis/autoscaling/v2/defaults.go`` (``SetDefaults_HorizontalPodAutoscaler``,
``GenerateHPAScaleUpRules``/``ScaleDownRules``); ``pkg/apis/autoscaling/validation/validation.go``
(``validateHorizontalPodAutoscalerSpec``, ``validateMetricSpec``, ``validateScalingRules``,
``ValidateHorizontalPodAutoscalerStatusUpdate``); ``pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go``;
``pkg/apis/autoscaling/v1/conversion.go``; ``pkg/printers/internalversion/printers.go``
``printHorizontalPodAutoscaler``/``formatHPAMetrics``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import orjson

from kubeloop.server import App

from ._asgi import stream

V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
MERGE = {"content-type": "application/merge-patch+json"}


def hpa(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 5, **spec}}


def hpa_v1(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {**hpa(name, **spec), "apiVersion": "autoscaling/v1"}


def cpu(target: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}


MEMORY = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}


def causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == (
        "Invalid", "HorizontalPodAutoscaler", "autoscaling")
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, body: dict[str, Any], path: str = V2) -> dict[str, Any]:
    r = await client.post(path, json=body)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def test_autoscaling_is_discovered_with_v2_preferred_and_both_versions_listing_hpa(client: httpx.AsyncClient) -> None:
    group = (await client.get("/apis/autoscaling")).json()
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    for version in ("v2", "v1"):
        resources = {r["name"]: r for r in (await client.get(f"/apis/autoscaling/{version}")).json()["resources"]}
        main = resources["horizontalpodautoscalers"]
        assert (main["kind"], main["namespaced"], main["shortNames"], main["categories"]) == (
            "HorizontalPodAutoscaler", True, ["hpa"], ["all"])
        assert "horizontalpodautoscalers/status" in resources
    aggregated = (await client.get("/apis", headers={
        "accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})).json()
    autoscaling = next(g for g in aggregated["items"] if g["metadata"]["name"] == "autoscaling")
    assert [v["version"] for v in autoscaling["versions"]] == ["v2", "v1"]


async def test_create_defaults_min_replicas_and_a_cpu_metric_at_80_percent(client: httpx.AsyncClient) -> None:
    body = await created(client, hpa())
    assert body["spec"]["minReplicas"] == 1
    assert body["spec"]["metrics"] == [cpu(80)]
    assert "behavior" not in body["spec"]
    assert body["status"] == {"desiredReplicas": 0}  # not omitempty in v2; the create's status is dropped


async def test_a_behavior_gets_both_rule_sets_filled_with_upstreams_defaults(client: httpx.AsyncClient) -> None:
    body = await created(client, hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}))
    assert body["spec"]["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
    }


async def test_the_spec_is_validated_with_upstreams_messages(client: httpx.AsyncClient) -> None:
    body = hpa(minReplicas=0, maxReplicas=0, metrics=[{"type": "Pods"}])
    body["spec"]["scaleTargetRef"] = {"kind": "", "name": "a/b"}
    assert causes(await client.post(V2, json=body)) == [
        ("FieldValueInvalid", "spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
        ("FieldValueInvalid", "spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
        ("FieldValueRequired", "spec.scaleTargetRef.kind", "Required value"),
        ("FieldValueInvalid", "spec.scaleTargetRef.name", "Invalid value: \"a/b\": may not contain '/'"),
        ("FieldValueRequired", "spec.metrics[0].pods", "Required value: must populate information for the given metric source"),
        ("FieldValueForbidden", "spec.metrics",
         "Forbidden: must specify at least one Object or External metric to support scaling to zero replicas"),
    ]
    assert (await client.get(V2)).json()["items"] == []


async def test_max_below_min_and_bad_metric_targets_are_refused(client: httpx.AsyncClient) -> None:
    metrics = [cpu(0), {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Wrong"}}},
               {"type": "Bogus"}]
    assert causes(await client.post(V2, json=hpa(minReplicas=6, metrics=metrics))) == [
        ("FieldValueInvalid", "spec.maxReplicas", "Invalid value: 5: must be greater than or equal to `minReplicas`"),
        ("FieldValueInvalid", "spec.metrics[0].resource.target.averageUtilization", "Invalid value: 0: must be greater than 0"),
        ("FieldValueInvalid", "spec.metrics[1].resource.target.type",
         'Invalid value: "Wrong": must be either Utilization, Value, or AverageValue'),
        ("FieldValueRequired", "spec.metrics[1].resource.target.averageUtilization",
         "Required value: must set either a target raw value or a target utilization"),
        ("FieldValueNotSupported", "spec.metrics[2].type",
         'Unsupported value: "Bogus": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"'),
        ("FieldValueNotSupported", "spec.metrics[2].type",
         'Unsupported value: "Bogus": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"'),
    ]


async def test_behavior_policies_are_validated(client: httpx.AsyncClient) -> None:
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 3601, "selectPolicy": "Some", "policies": []},
                "scaleDown": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}}
    assert causes(await client.post(V2, json=hpa(behavior=behavior))) == [
        ("FieldValueInvalid", "spec.behavior.scaleUp.stabilizationWindowSeconds",
         "Invalid value: 3601: must be less than or equal to 3600"),
        ("FieldValueNotSupported", "spec.behavior.scaleUp.selectPolicy",
         'Unsupported value: "Some": supported values: "Disabled", "Max", "Min"'),
        ("FieldValueRequired", "spec.behavior.scaleUp.policies", "Required value: must specify at least one Policy"),
        ("FieldValueInvalid", "spec.behavior.scaleDown.policies[0].value", "Invalid value: 0: must be greater than zero"),
        ("FieldValueInvalid", "spec.behavior.scaleDown.policies[0].periodSeconds",
         "Invalid value: 1801: must be less than or equal to 1800"),
    ]


async def test_status_is_a_subresource_validated_on_its_own(client: httpx.AsyncClient) -> None:
    body = await created(client, {**hpa(), "status": {"currentReplicas": 3}})
    assert body["status"] == {"desiredReplicas": 0}
    status = {"status": {"currentReplicas": 3, "desiredReplicas": 4}}
    r = await client.patch(f"{V2}/web/status", content=orjson.dumps(status), headers=MERGE)
    assert r.status_code == 200, r.text
    r = await client.patch(f"{V2}/web", content=orjson.dumps({"spec": {"maxReplicas": 7}, "status": {}}), headers=MERGE)
    assert (r.json()["spec"]["maxReplicas"], r.json()["status"]) == (7, {"currentReplicas": 3, "desiredReplicas": 4})
    bad = {"status": {"currentReplicas": -1}}
    r = await client.patch(f"{V2}/web/status", content=orjson.dumps(bad), headers=MERGE)
    assert causes(r) == [("FieldValueInvalid", "status.currentReplicas", "Invalid value: -1: must be greater than or equal to 0")]


async def test_the_table_shows_reference_targets_and_replica_bounds(client: httpx.AsyncClient) -> None:
    await created(client, hpa(minReplicas=2))
    await created(client, hpa("many", metrics=[cpu(50), MEMORY, {"type": "Pods", "pods": {
        "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}]))
    table = (await client.get(V2, headers={"accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]
    rows = {row["cells"][0]: row["cells"][:6] for row in table["rows"]}
    assert rows["web"] == ["web", "Deployment/web", "cpu: <unknown>/80%", "2", 5, 0]
    assert rows["many"] == ["many", "Deployment/web", "cpu: <unknown>/50%, memory: <unknown>/500Mi + 1 more...", "1", 5, 0]


async def test_a_v1_create_is_stored_as_v2_and_read_back_at_either_version(client: httpx.AsyncClient) -> None:
    body = hpa_v1(minReplicas=2, targetCPUUtilizationPercentage=50)
    answered = await created(client, body, V1)
    assert answered["apiVersion"] == "autoscaling/v1"
    assert answered["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                                "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}
    assert answered["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    v2 = (await client.get(f"{V2}/web")).json()
    assert v2["spec"]["metrics"] == [cpu(50)]
    assert "annotations" not in v2["metadata"]
    # Without a target the conversion gives the internal object v1's former implicit default, cpu at 80%.
    no_target = await created(client, hpa_v1("plain"), V1)
    assert no_target["spec"]["targetCPUUtilizationPercentage"] == 80
    assert (await client.get(f"{V2}/plain")).json()["spec"]["metrics"] == [cpu(80)]


async def test_v2_fields_v1_cannot_say_ride_in_annotations_and_survive_a_v1_round_trip(client: httpx.AsyncClient) -> None:
    await created(client, hpa(metrics=[MEMORY, cpu(60)], behavior={"scaleUp": {"selectPolicy": "Disabled"}}))
    conditions = [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2023-11-14T22:13:20Z",
                   "reason": "SucceededGetScale", "message": "scale <unknown>"}]
    r = await client.patch(f"{V2}/web/status", headers=MERGE, content=orjson.dumps({"status": {
        "currentReplicas": 2, "desiredReplicas": 2, "conditions": conditions, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40, "averageValue": "100m"}}}]}}))
    assert r.status_code == 200, r.text
    v1 = (await client.get(f"{V1}/web")).json()
    assert (v1["spec"]["targetCPUUtilizationPercentage"], v1["status"]["currentCPUUtilizationPercentage"]) == (60, 40)
    notes = v1["metadata"]["annotations"]
    assert json.loads(notes["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}}]
    assert json.loads(notes["autoscaling.alpha.kubernetes.io/current-metrics"]) == [
        {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 40, "currentAverageValue": "100m"}}]
    # json.Marshal's text: Go field order, HTML characters escaped.
    assert notes["autoscaling.alpha.kubernetes.io/conditions"] == (
        '[{"type":"AbleToScale","status":"True","lastTransitionTime":"2023-11-14T22:13:20Z",'
        '"reason":"SucceededGetScale","message":"scale \\u003cunknown\\u003e"}]')
    behavior = json.loads(notes["autoscaling.alpha.kubernetes.io/behavior"])
    assert behavior["ScaleUp"]["SelectPolicy"] == "Disabled" and behavior["ScaleDown"]["StabilizationWindowSeconds"] is None
    # A v1 client writes the object back as it read it: nothing v2 said is lost.
    r = await client.put(f"{V1}/web", json={**v1, "spec": {**v1["spec"], "maxReplicas": 9}})
    assert r.status_code == 200, r.text
    v2 = (await client.get(f"{V2}/web")).json()
    assert v2["spec"]["maxReplicas"] == 9
    assert v2["spec"]["metrics"] == [MEMORY, cpu(60)]
    assert v2["spec"]["behavior"]["scaleUp"]["selectPolicy"] == "Disabled"
    assert "annotations" not in v2["metadata"]


async def test_a_v1_merge_patch_applies_to_the_v1_object(client: httpx.AsyncClient) -> None:
    await created(client, hpa(metrics=[MEMORY, cpu(60)]))
    r = await client.patch(f"{V1}/web", headers=MERGE,
                           content=orjson.dumps({"spec": {"targetCPUUtilizationPercentage": 75, "minReplicas": 3}}))
    assert r.status_code == 200, r.text
    assert r.json()["apiVersion"] == "autoscaling/v1" and r.json()["spec"]["targetCPUUtilizationPercentage"] == 75
    v2 = (await client.get(f"{V2}/web")).json()
    assert (v2["spec"]["minReplicas"], v2["spec"]["metrics"]) == (3, [MEMORY, cpu(75)])
    r = await client.patch(f"{V1}/web", headers={"content-type": "application/json-patch+json"},
                           content=orjson.dumps([{"op": "replace", "path": "/spec/maxReplicas", "value": 8}]))
    assert r.status_code == 200 and r.json()["spec"]["maxReplicas"] == 8
    strategic = {"metadata": {"labels": {"tier": "web"}}, "spec": {"targetCPUUtilizationPercentage": 65}}
    r = await client.patch(f"{V1}/web", headers={"content-type": "application/strategic-merge-patch+json"},
                           content=orjson.dumps(strategic))
    assert r.status_code == 200, r.text
    v2 = (await client.get(f"{V2}/web")).json()
    assert (v2["metadata"]["labels"], v2["spec"]["metrics"]) == ({"tier": "web"}, [MEMORY, cpu(65)])
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"maxReplicas": 6}}
    r = await client.patch(f"{V1}/web", headers=MERGE, content=orjson.dumps(stale))
    assert (r.status_code, r.json()["reason"]) == (409, "Conflict")  # the patch's own precondition
    r = await client.patch(f"{V1}/nope", headers=MERGE, content=b"{}")
    assert (r.status_code, r.json()["message"]) == (404, 'horizontalpodautoscalers.autoscaling "nope" not found')


async def test_v1_errors_name_the_v2_fields_as_upstream_validates_the_internal_object(client: httpx.AsyncClient) -> None:
    r = await client.post(V1, json=hpa_v1(maxReplicas=0, targetCPUUtilizationPercentage=0))
    assert causes(r) == [
        ("FieldValueInvalid", "spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
        ("FieldValueInvalid", "spec.maxReplicas", "Invalid value: 0: must be greater than or equal to `minReplicas`"),
        ("FieldValueInvalid", "spec.metrics[0].resource.target.averageUtilization", "Invalid value: 0: must be greater than 0"),
    ]
    assert (await client.get(V2)).json()["items"] == []


async def test_v1_lists_and_watches_are_converted(app: App, client: httpx.AsyncClient) -> None:
    await created(client, hpa(metrics=[cpu(70)]))
    listed = (await client.get(V1)).json()
    assert (listed["apiVersion"], listed["kind"]) == ("autoscaling/v1", "HorizontalPodAutoscalerList")
    assert listed["items"][0]["spec"]["targetCPUUtilizationPercentage"] == 70
    assert "metrics" not in listed["items"][0]["spec"]
    rv = listed["metadata"]["resourceVersion"]
    await client.patch(f"{V2}/web", headers=MERGE, content=orjson.dumps({"spec": {"metrics": [cpu(20)]}}))
    async with stream(app, V1, f"watch=1&resourceVersion={rv}") as s:
        [event] = await s.events(1)
    assert event["type"] == "MODIFIED"
    assert (event["object"]["apiVersion"], event["object"]["spec"]["targetCPUUtilizationPercentage"]) == ("autoscaling/v1", 20)


async def test_both_openapi_documents_describe_both_versions(client: httpx.AsyncClient) -> None:
    for version in ("v2", "v1"):
        doc = (await client.get(f"/openapi/v3/apis/autoscaling/{version}")).json()
        assert f"io.k8s.api.autoscaling.{version}.HorizontalPodAutoscaler" in doc["components"]["schemas"]
    swagger = (await client.get("/openapi/v2")).json()
    assert {"io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler"} \
        <= set(swagger["definitions"])


def test_the_v1_route_imports_pyyaml_only_for_a_yaml_body() -> None:
    # The API server's start-up imports no PyYAML (its YAML paths import it on first use); the v1 route too.
    code = "import sys, kubeloop.server._app; assert 'yaml' not in sys.modules, 'yaml imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_a_v1_yaml_body_is_converted_too(client: httpx.AsyncClient) -> None:
    body = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec:\n" \
           "  scaleTargetRef: {kind: Deployment, name: web}\n  maxReplicas: 3\n  targetCPUUtilizationPercentage: 40\n"
    r = await client.post(V1, content=body, headers={"content-type": "application/yaml"})
    assert r.status_code == 201, r.text
    assert (await client.get(f"{V2}/web")).json()["spec"]["metrics"] == [cpu(40)]
    r = await client.post(V1, content="a: [", headers={"content-type": "application/yaml"})
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"


async def test_metric_quantities_are_decoded_as_upstream_decodes_them(client: httpx.AsyncClient) -> None:
    pods = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "0.5"}}}
    body = await created(client, hpa(metrics=[pods]))
    assert body["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "500m"  # canonical form
    pods["pods"]["target"]["averageValue"] = "lots"
    r = await client.post(V2, json=hpa("bad", metrics=[pods]))
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith('HorizontalPodAutoscaler in version "v2" cannot be handled as a '
                                          "HorizontalPodAutoscaler: quantities must match the regular expression")
    negative = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "-1"}}}
    assert causes(await client.post(V2, json=hpa("neg", metrics=[negative]))) == [
        ("FieldValueInvalid", "spec.metrics[0].pods.target.averageValue", 'Invalid value: "-1": must be positive')]
