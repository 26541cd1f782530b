"""A StatefulSet is defaulted and validated as upstream's statefulset strategy does it (release 1.32).

Upstream: k/k ``pkg/apis/apps/v1/defaults.go`` ``SetDefaults_StatefulSet`` and the generated defaulter,
which defaults each claim template as a claim (``status.phase`` Pending, ``volumeMode`` Filesystem,
k/k issues #65706, #80473); ``pkg/apis/apps/validation/validation.go`` ``ValidateStatefulSetName``
(a DNS label since 1.27, k/k PR #114172), ``ValidateStatefulSetSpec``, ``ValidateStatefulSetUpdate``
and ``ValidateStatefulSetStatusUpdate``; ``pkg/registry/apps/statefulset/strategy.go``
(``dropStatefulSetDisabledFields``, ``WarningsOnCreate``, ``WarningsOnUpdate``).
"""

from __future__ import annotations

from typing import Any

import httpx

STS = "/apis/apps/v1/namespaces/default/statefulsets"
FORBIDDEN = ("Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
             "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")


def claim(name: str = "data", storage: str = "1Gi") -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}}


def sts(name: str = "web", *, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    labels = {"app": name} if labels is None else labels
    body_spec: dict[str, Any] = {
        "serviceName": name, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        "volumeClaimTemplates": [claim()], **spec}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {k: v for k, v in body_spec.items() if v is not None}}


def causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == ("Invalid", "StatefulSet", "apps")
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    r = await client.post(STS, json=body)
    assert r.status_code == 201, r.text
    return r


async def test_claim_templates_get_a_claims_defaults(client: httpx.AsyncClient) -> None:
    body = (await created(client, sts())).json()
    # The claim's ObjectMeta is a value struct: its zero creationTimestamp reads null in 1.32, as the
    # `kubectl get sts -o yaml` output quoted in k/k issue #65706 shows.
    assert body["spec"]["volumeClaimTemplates"] == [{
        "metadata": {"name": "data", "creationTimestamp": None},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"}}]
    assert body["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert body["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert body["spec"]["podManagementPolicy"] == "OrderedReady"


async def test_defaults_fill_only_what_is_unset(client: httpx.AsyncClient) -> None:
    body = (await created(client, sts(
        updateStrategy={"type": "RollingUpdate"}, persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"}))).json()
    # An explicit RollingUpdate gets no rollingUpdate; half a retention policy gets the other half.
    assert body["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    assert body["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Delete", "whenScaled": "Retain"}
    on_delete = (await created(client, sts("od", updateStrategy={"type": "OnDelete"}))).json()
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}


async def test_max_unavailable_is_dropped_with_its_feature_gate_off(client: httpx.AsyncClient) -> None:
    body = (await created(client, sts(updateStrategy={"type": "RollingUpdate",
                                                      "rollingUpdate": {"partition": 1, "maxUnavailable": 2}}))).json()
    assert body["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}


async def test_spec_fields_are_checked_in_upstreams_order(client: httpx.AsyncClient) -> None:
    body = sts(podManagementPolicy="Random", updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 2}},
               persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep", "whenScaled": "Delete"},
               replicas=-1, minReadySeconds=-5, ordinals={"start": -2}, labels={"app": "other"})
    assert causes(await client.post(STS, json=body)) == [
        ("FieldValueInvalid", "spec.podManagementPolicy", "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"),
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate",
         "Invalid value: apps.RollingUpdateStatefulSetStrategy{Partition:2, MaxUnavailable:(*intstr.IntOrString)(nil)}: "
         "only allowed for updateStrategy 'RollingUpdate'"),
        ("FieldValueNotSupported", "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
         'Unsupported value: "Keep": supported values: "Retain", "Delete"'),
        ("FieldValueInvalid", "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.minReadySeconds", "Invalid value: -5: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.ordinals.start", "Invalid value: -2: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`'),
    ]


async def test_selector_is_required_and_not_empty(client: httpx.AsyncClient) -> None:
    # No selector is labels.Nothing(): it matches no template either.
    assert causes(await client.post(STS, json=sts(selector=None))) == [
        ("FieldValueRequired", "spec.selector", "Required value"),
        ("FieldValueInvalid", "spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`'),
    ]
    assert causes(await client.post(STS, json=sts(selector={"matchLabels": {}}))) == [
        ("FieldValueInvalid", "spec.selector",
         "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset"),
    ]


async def test_unknown_update_strategy_and_a_negative_partition(client: httpx.AsyncClient) -> None:
    assert causes(await client.post(STS, json=sts(updateStrategy={"type": "Sometimes"}))) == [
        ("FieldValueInvalid", "spec.updateStrategy",
         'Invalid value: apps.StatefulSetUpdateStrategy{Type:"Sometimes", '
         "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be 'RollingUpdate' or 'OnDelete'"),
    ]
    assert causes(await client.post(STS, json=sts(updateStrategy={"type": "RollingUpdate",
                                                                  "rollingUpdate": {"partition": -1}}))) == [
        ("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.partition",
         "Invalid value: -1: must be greater than or equal to 0"),
    ]


async def test_a_statefulset_name_is_a_dns_label(client: httpx.AsyncClient) -> None:
    body = sts("web.v1")
    body["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    body["spec"]["template"]["metadata"]["labels"] = {"app": "web"}
    assert causes(await client.post(STS, json=body)) == [
        ("FieldValueInvalid", "metadata.name", 'Invalid value: "web.v1": must not contain dots'),
    ]


async def test_template_labels_and_annotations_are_validated(client: httpx.AsyncClient) -> None:
    body = sts()
    body["spec"]["template"]["metadata"]["labels"] = {"app": "web", "tier": "-bad-"}
    body["spec"]["template"]["metadata"]["annotations"] = {"no good/key": "x"}
    found = causes(await client.post(STS, json=body))
    assert [(reason, field) for reason, field, _ in found] == [
        ("FieldValueInvalid", "spec.template.labels"),
        ("FieldValueInvalid", "spec.template.annotations")]


async def test_claim_templates_and_the_selector_are_immutable(client: httpx.AsyncClient) -> None:
    stored = (await created(client, sts())).json()
    changed = {**stored, "spec": {**stored["spec"], "volumeClaimTemplates": [claim(storage="2Gi")]}}
    assert causes(await client.put(f"{STS}/web", json=changed)) == [("FieldValueForbidden", "spec", FORBIDDEN)]
    renamed = {**stored, "spec": {**stored["spec"], "serviceName": "other"}}
    assert causes(await client.put(f"{STS}/web", json=renamed)) == [("FieldValueForbidden", "spec", FORBIDDEN)]
    limited = {**stored, "spec": {**stored["spec"], "revisionHistoryLimit": 3}}
    assert causes(await client.put(f"{STS}/web", json=limited)) == [("FieldValueForbidden", "spec", FORBIDDEN)]


async def test_the_allowed_fields_may_change_and_a_manifest_without_defaults_is_no_change(client: httpx.AsyncClient) -> None:
    stored = (await created(client, sts())).json()
    allowed = {**stored, "spec": {**stored["spec"], "replicas": 3, "minReadySeconds": 5, "ordinals": {"start": 2},
                                  "updateStrategy": {"type": "OnDelete"},
                                  "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"}}}
    r = await client.put(f"{STS}/web", json=allowed)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == 2
    # The manifest as first sent, without the defaulted claim template fields, compares equal to the stored spec.
    again = sts(replicas=3, minReadySeconds=5, ordinals={"start": 2}, updateStrategy={"type": "OnDelete"},
                persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Delete"})
    r = await client.put(f"{STS}/web", json=again)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == 2


async def test_status_counts_are_checked_on_the_status_subresource(client: httpx.AsyncClient) -> None:
    stored = (await created(client, sts())).json()
    status = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 2, "currentReplicas": -1, "collisionCount": 1}
    assert causes(await client.put(f"{STS}/web/status", json={**stored, "status": status})) == [
        ("FieldValueInvalid", "status.currentReplicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "status.readyReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
        ("FieldValueInvalid", "status.availableReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
    ]
    r = await client.put(f"{STS}/web/status", json={**stored, "status": {"replicas": 1, "collisionCount": 2}})
    assert r.status_code == 200, r.text
    assert causes(await client.put(f"{STS}/web/status", json={**r.json(), "status": {"replicas": 1}})) == [
        ("FieldValueInvalid", "status.collisionCount", "Invalid value: 0: cannot be decremented")]


async def test_a_fractional_claim_template_size_is_a_warning(client: httpx.AsyncClient) -> None:
    body = sts()
    body["spec"]["volumeClaimTemplates"] = [claim(), claim("logs", storage="1.5")]
    r = await created(client, body)
    assert r.headers.get_list("warning") == [
        '299 - "spec.volumeClaimTemplates[1].resources.requests[storage]: fractional byte value \\"1500m\\" is invalid, '
        'must be an integer"']
    # On update upstream names the field ".Spec" (statefulset strategy WarningsOnUpdate).
    r = await client.put(f"{STS}/web", json={**r.json(), "spec": {**r.json()["spec"], "replicas": 2}})
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == [
        '299 - "spec.volumeClaimTemplates[1].Spec.resources.requests[storage]: fractional byte value \\"1500m\\" is '
        'invalid, must be an integer"']
    # /status has no warnings.
    r = await client.put(f"{STS}/web/status", json={**r.json(), "status": {"replicas": 0}})
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == []


async def test_a_refused_statefulset_has_no_strategy_warning(client: httpx.AsyncClient) -> None:
    body = sts(replicas=-1)
    body["spec"]["volumeClaimTemplates"] = [claim(storage="1.5")]
    r = await client.post(STS, json=body)
    assert r.status_code == 422
    assert r.headers.get_list("warning") == []
