"""Deployments and ReplicaSets are validated as upstream's strategies do it (release 1.32), on create, update,
patch, server-side apply, ``/status`` and ``/scale``.

Upstream: k/k ``pkg/apis/apps/validation/validation.go`` (``ValidateDeploymentSpec``,
``ValidateDeploymentStrategy``, ``ValidateRollingUpdateDeployment``, ``ValidatePositiveIntOrPercent``,
``IsNotMoreThan100Percent``, ``ValidateDeploymentStatus``, ``ValidateDeploymentStatusUpdate``,
``ValidateReplicaSetSpec``, ``ValidatePodTemplateSpecForReplicaSet``, ``ValidateReplicaSetStatus``);
``pkg/registry/apps/{deployment,replicaset}/strategy.go`` (``ValidateUpdate``: the selector is immutable
in apps/v1; a ReplicaSet's spec is checked by ``ValidateReplicaSet`` and ``ValidateReplicaSetUpdate``);
``pkg/registry/apps/deployment/storage/storage.go`` (``ScaleREST``: ``ValidateScale``); apimachinery
``field.Error.ErrorBody`` (a pointer value dereferenced, then printed with ``%#v``).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
RS = "/apis/apps/v1/namespaces/default/replicasets"
MERGE = {"Content-Type": "application/merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}
NOT_MATCHING = 'Invalid value: map[string]string{"app":"y"}: `selector` does not match template `labels`'
PERCENT = ("a valid percent string must be a numeric string followed by an ending '%' "
           "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")


def workload(kind: str = "Deployment", name: str = "web", *, labels: dict[str, str] | None = None,
             **spec: Any) -> dict[str, Any]:
    body_spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "x"}},
        "template": {"metadata": {"labels": {"app": "x"} if labels is None else labels},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, **spec}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {k: v for k, v in body_spec.items() if v is not None}}


def causes(r: httpx.Response, kind: str = "Deployment") -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == ("Invalid", kind, "apps")
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(path, json=body)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


async def test_negative_replicas_and_a_selector_not_matching_the_template_are_refused(client: httpx.AsyncClient) -> None:
    r = await client.post(DEPLOY, json=workload(replicas=-1, labels={"app": "y"}))
    assert causes(r) == [
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.template.metadata.labels", NOT_MATCHING),
    ]
    assert r.json()["message"] == (
        'Deployment.apps "web" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, '
        f"spec.template.metadata.labels: {NOT_MATCHING}]")
    assert (await client.get(f"{DEPLOY}/web")).status_code == 404


async def test_deployment_spec_is_checked_in_upstreams_order(client: httpx.AsyncClient) -> None:
    body = workload(replicas=-1, labels={"app": "y"}, minReadySeconds=10, revisionHistoryLimit=-1,
                    progressDeadlineSeconds=10,
                    strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%", "maxSurge": "5"}})
    body["spec"]["template"]["spec"].update(restartPolicy="OnFailure", activeDeadlineSeconds=30)
    assert causes(await client.post(DEPLOY, json=body)) == [
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.template.metadata.labels", NOT_MATCHING),
        ("FieldValueNotSupported", "spec.template.spec.restartPolicy",
         'Unsupported value: "OnFailure": supported values: "Always"'),
        ("FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"),
        ("FieldValueInvalid", "spec.strategy.rollingUpdate.maxSurge",
         f'Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:"5"}}: {PERCENT}'),
        ("FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable",
         'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%'),
        ("FieldValueInvalid", "spec.revisionHistoryLimit", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.progressDeadlineSeconds", "Invalid value: 10: must be greater than minReadySeconds"),
    ]


async def test_rolling_update_may_not_stand_still(client: httpx.AsyncClient) -> None:
    zero = workload(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}})
    assert causes(await client.post(DEPLOY, json=zero)) == [
        ("FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable",
         'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: may not be 0 when `maxSurge` is 0'),
    ]
    negative = workload(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": -1, "maxSurge": 250}})
    assert causes(await client.post(DEPLOY, json=negative)) == [
        ("FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable",
         "Invalid value: -1: must be greater than or equal to 0"),
    ]
    # maxSurge may be above 100%; maxUnavailable unset is defaulted to 25%.
    body = await created(client, DEPLOY, workload(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "200%"}}))
    assert body["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "200%", "maxUnavailable": "25%"}}


async def test_strategy_type_rules(client: httpx.AsyncClient) -> None:
    recreate = workload(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})
    assert causes(await client.post(DEPLOY, json=recreate)) == [
        ("FieldValueForbidden", "spec.strategy.rollingUpdate",
         "Forbidden: may not be specified when strategy `type` is 'Recreate'"),
    ]
    assert causes(await client.post(DEPLOY, json=workload(strategy={"type": "BlueGreen"}))) == [
        ("FieldValueNotSupported", "spec.strategy",
         'Unsupported value: apps.DeploymentStrategy{Type:"BlueGreen", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: '
         'supported values: "Recreate", "RollingUpdate"'),
    ]
    # SetDefaults_Deployment: an empty type is RollingUpdate, with its defaults.
    body = await created(client, DEPLOY, workload(strategy={"type": ""}))
    assert body["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (await created(client, DEPLOY, workload(name="again", strategy={"type": "Recreate"})))["spec"]["strategy"] == {
        "type": "Recreate"}


async def test_selector_is_required_valid_and_not_empty(client: httpx.AsyncClient) -> None:
    # No selector is labels.Nothing(): it matches no template either.
    assert causes(await client.post(DEPLOY, json=workload(selector=None))) == [
        ("FieldValueRequired", "spec.selector", "Required value"),
        ("FieldValueInvalid", "spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"x"}: `selector` does not match template `labels`'),
    ]
    assert causes(await client.post(DEPLOY, json=workload(selector={}))) == [
        ("FieldValueInvalid", "spec.selector",
         "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"),
    ]
    # A selector that does not parse skips the template's checks (restartPolicy Never would fail them).
    bad = workload(selector={"matchExpressions": [{"key": "app", "operator": "Like", "values": ["x"]}]})
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    found = causes(await client.post(DEPLOY, json=bad))
    assert found[-1] == (
        "FieldValueInvalid", "spec.selector",
        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{'
        'v1.LabelSelectorRequirement{Key:"app", Operator:"Like", Values:[]string{"x"}}}}: invalid label selector')
    assert [f for _, f, _ in found[:-1]] == ["spec.selector.matchExpressions[0].operator"]


async def test_template_labels_and_annotations_are_validated(client: httpx.AsyncClient) -> None:
    body = workload(selector={"matchLabels": {"app": "x"}}, labels={"app": "x", "bad key": "v"})
    body["spec"]["template"]["metadata"]["annotations"] = {"-no": "v"}
    assert [f for _, f, _ in causes(await client.post(DEPLOY, json=body))] == [
        "spec.template.labels", "spec.template.annotations"]


async def test_selector_is_immutable_on_update_patch_and_apply(client: httpx.AsyncClient) -> None:
    await created(client, DEPLOY, workload())
    changed = workload(selector={"matchLabels": {"app": "x", "tier": "web"}}, labels={"app": "x", "tier": "web"})
    immutable = ("FieldValueInvalid", "spec.selector",
                 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"x", "tier":"web"}, '
                 "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable")
    current = (await client.get(f"{DEPLOY}/web")).json()
    current["spec"]["selector"] = changed["spec"]["selector"]
    current["spec"]["template"]["metadata"]["labels"] = changed["spec"]["template"]["metadata"]["labels"]
    assert causes(await client.put(f"{DEPLOY}/web", json=current)) == [immutable]
    patch = {"spec": {"selector": changed["spec"]["selector"], "template": {"metadata": {"labels": {"tier": "web"}}}}}
    assert causes(await client.patch(f"{DEPLOY}/web", json=patch, headers=MERGE)) == [immutable]
    r = await client.patch(f"{DEPLOY}/web?fieldManager=me&force=true", content=json.dumps(changed), headers=APPLY)
    assert causes(r) == [immutable]
    # A merge patch to a negative count is refused too; the same selector written again is no change.
    assert causes(await client.patch(f"{DEPLOY}/web", json={"spec": {"replicas": -2}}, headers=MERGE)) == [
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -2: must be greater than or equal to 0")]
    same = await client.patch(f"{DEPLOY}/web", json={"spec": {"selector": {"matchLabels": {"app": "x"}, "matchExpressions": []}}},
                              headers=MERGE)
    assert same.status_code == 200, same.text


async def test_server_side_apply_of_an_invalid_deployment_is_refused(client: httpx.AsyncClient) -> None:
    body = workload(name="applied", replicas=-1, labels={"app": "y"})
    r = await client.patch(f"{DEPLOY}/applied?fieldManager=me", content=json.dumps(body), headers=APPLY)
    assert causes(r) == [
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.template.metadata.labels", NOT_MATCHING),
    ]
    assert (await client.get(f"{DEPLOY}/applied")).status_code == 404


async def test_deployment_status_counts(client: httpx.AsyncClient) -> None:
    await created(client, DEPLOY, workload())
    current = (await client.get(f"{DEPLOY}/web")).json()
    current["status"] = {"observedGeneration": -1, "replicas": 1, "updatedReplicas": 2, "readyReplicas": 2,
                         "availableReplicas": 3, "unavailableReplicas": -1, "collisionCount": -1}
    assert causes(await client.put(f"{DEPLOY}/web/status", json=current)) == [
        ("FieldValueInvalid", "status.observedGeneration", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "status.unavailableReplicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "status.collisionCount", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "status.updatedReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.readyReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 3: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 3: cannot be greater than readyReplicas"),
    ]
    current["status"] = {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "availableReplicas": 1,
                         "collisionCount": 2}
    r = await client.put(f"{DEPLOY}/web/status", json=current)
    assert r.status_code == 200, r.text
    current = r.json()
    current["status"]["collisionCount"] = 1
    assert causes(await client.put(f"{DEPLOY}/web/status", json=current)) == [
        ("FieldValueInvalid", "status.collisionCount", "Invalid value: 1: cannot be decremented")]
    del current["status"]["collisionCount"]
    assert causes(await client.put(f"{DEPLOY}/web/status", json=current)) == [
        ("FieldValueInvalid", "status.collisionCount", "Invalid value: 0: cannot be decremented")]


async def test_replicaset_spec_and_update(client: httpx.AsyncClient) -> None:
    bad = workload("ReplicaSet", "rs", replicas=-1, minReadySeconds=-3, labels={"app": "y"})
    assert causes(await client.post(RS, json=bad), "ReplicaSet") == [
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.minReadySeconds", "Invalid value: -3: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.template.metadata.labels", NOT_MATCHING),
    ]
    assert causes(await client.post(RS, json=workload("ReplicaSet", "rs", selector={"matchLabels": {}})), "ReplicaSet") == [
        ("FieldValueInvalid", "spec.selector",
         "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"),
    ]
    await created(client, RS, workload("ReplicaSet", "rs"))
    # ValidateReplicaSet and ValidateReplicaSetUpdate both check the spec; the selector is checked once.
    patch = {"spec": {"replicas": -1, "selector": {"matchLabels": {"app": "x", "v": "2"}}}}
    negative = ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")
    mismatch = ("FieldValueInvalid", "spec.template.metadata.labels",
                'Invalid value: map[string]string{"app":"x"}: `selector` does not match template `labels`')
    r = await client.patch(f"{RS}/rs", json=patch, headers=MERGE)
    assert causes(r, "ReplicaSet") == [negative, mismatch, negative, mismatch, (
        "FieldValueInvalid", "spec.selector",
        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"x", "v":"2"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable")]
    assert r.json()["message"].count("spec.replicas") == 1  # ToAggregate names each error once


async def test_replicaset_status_counts(client: httpx.AsyncClient) -> None:
    await created(client, RS, workload("ReplicaSet", "rs"))
    current = (await client.get(f"{RS}/rs")).json()
    current["status"] = {"replicas": 1, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 2,
                         "observedGeneration": -1}
    assert causes(await client.put(f"{RS}/rs/status", json=current), "ReplicaSet") == [
        ("FieldValueInvalid", "status.observedGeneration", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "status.fullyLabeledReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 2: cannot be greater than readyReplicas"),
    ]
    current["status"] = {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 1,
                         "observedGeneration": 1}
    assert (await client.put(f"{RS}/rs/status", json=current)).status_code == 200


async def test_scale_refuses_negative_replicas_as_a_scale(client: httpx.AsyncClient) -> None:
    await created(client, RS, workload("ReplicaSet", "rs"))
    r = await client.patch(f"{RS}/rs/scale", json={"spec": {"replicas": -1}}, headers=MERGE)
    assert r.status_code == 422
    status = r.json()
    assert (status["details"]["kind"], status["details"]["group"]) == ("Scale", "autoscaling")
    assert status["message"] == ('Scale.autoscaling "rs" is invalid: spec.replicas: Invalid value: -1: '
                                 "must be greater than or equal to 0")
    r = await client.patch(f"{RS}/rs/scale", json={"spec": {"replicas": 3}}, headers=MERGE)
    assert r.status_code == 200 and r.json()["spec"]["replicas"] == 3
