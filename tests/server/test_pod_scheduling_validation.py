"""Pods and pod templates with bad scheduling constraints are refused with upstream's 422 causes.

Upstream: k/k ``pkg/apis/core/validation/validation.go`` (``ValidatePodSpec`` → ``ValidateLabels`` on
``nodeSelector``, ``validateAffinity`` → ``validateNodeAffinity`` / ``ValidateNodeSelector`` /
``ValidateNodeSelectorTerm`` / ``ValidateNodeSelectorRequirement`` / ``ValidateNodeFieldSelectorRequirement``
/ ``ValidatePreferredSchedulingTerms`` / ``validatePodAffinityTerm`` / ``validateWeightedPodAffinityTerms``,
``validateTopologySpreadConstraints``, ``ValidateTolerations``; ``ValidatePodTemplateSpec`` for
workloads) and ``pkg/api/pod/util.go`` ``GetValidationOptionsFromPodSpecAndMeta`` for updates.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import orjson
import pytest

from kubeloop.store import SqliteStore

PODS = "/api/v1/namespaces/default/pods"
NODE_AFFINITY = "spec.affinity.nodeAffinity"
REQUIRED = f"{NODE_AFFINITY}.requiredDuringSchedulingIgnoredDuringExecution"
TERM = f"{REQUIRED}.nodeSelectorTerms[0]"
PREFERRED = f"{NODE_AFFINITY}.preferredDuringSchedulingIgnoredDuringExecution"
ANTI = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
QUALIFIED_NAME_REGEX = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE_REGEX = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                     "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                     "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, **({"values": list(values)} if values else {})}]}


def match_field(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchFields": [{"key": key, "operator": operator, "values": list(values)}]}


async def refused(client: httpx.AsyncClient, body: dict[str, Any], path: str = PODS) -> list[tuple[str, str, str]]:
    """POST ``body``: a 422 whose causes come back as (reason, field, message); nothing is stored."""
    r = await client.post(path, json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["kind"], status["status"], status["reason"], status["code"]) == ("Status", "Failure", "Invalid", 422)
    assert (await client.get(f"{path}/{body['metadata']['name']}")).status_code == 404
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


# -- node affinity -------------------------------------------------------------------------------------


async def test_match_fields_on_a_key_other_than_metadata_name_is_invalid(client: httpx.AsyncClient) -> None:
    # ValidateNodeFieldSelectorRequirement: nodeFieldSelectorValidators holds metadata.name only.
    assert await refused(client, pod(affinity=required(match_field("metadata.namespace", "In", "x")))) == [
        ("FieldValueInvalid", f"{TERM}.matchFields[0].key", 'Invalid value: "metadata.namespace": not a valid field selector key')]


@pytest.mark.parametrize("values", [[], ["node-1", "node-2"]])
async def test_match_fields_in_and_not_in_take_exactly_one_value(client: httpx.AsyncClient, values: list[str]) -> None:
    for operator in ("In", "NotIn"):
        assert await refused(client, pod(affinity=required(match_field("metadata.name", operator, *values)))) == [
            ("FieldValueRequired", f"{TERM}.matchFields[0].values", "Required value: must be only one value when "
             "`operator` is 'In' or 'NotIn' for node field selector")]


async def test_match_fields_take_only_in_and_not_in_and_a_node_name_value(client: httpx.AsyncClient) -> None:
    assert await refused(client, pod(affinity=required(match_field("metadata.name", "Exists")))) == [
        ("FieldValueInvalid", f"{TERM}.matchFields[0].operator", 'Invalid value: "Exists": not a valid selector operator')]
    causes = await refused(client, pod(affinity=required(match_field("metadata.name", "In", "Node_1"))))
    assert [(reason, field) for reason, field, _ in causes] == [("FieldValueInvalid", f"{TERM}.matchFields[0].values[0]")]
    assert causes[0][2].startswith('Invalid value: "Node_1": a lowercase RFC 1123 subdomain must consist of')


async def test_match_expressions_operator_outside_the_allowed_set_is_invalid(client: httpx.AsyncClient) -> None:
    assert await refused(client, pod(affinity=required(expression("zone", "Equals", "a")))) == [
        ("FieldValueInvalid", f"{TERM}.matchExpressions[0].operator", 'Invalid value: "Equals": not a valid selector operator')]


async def test_exists_and_does_not_exist_take_no_values(client: httpx.AsyncClient) -> None:
    for operator in ("Exists", "DoesNotExist"):
        assert await refused(client, pod(affinity=required(expression("zone", operator, "a")))) == [
            ("FieldValueForbidden", f"{TERM}.matchExpressions[0].values",
             "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")]


async def test_in_and_not_in_need_values(client: httpx.AsyncClient) -> None:
    assert await refused(client, pod(affinity=required(expression("zone", "NotIn")))) == [
        ("FieldValueRequired", f"{TERM}.matchExpressions[0].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'")]


async def test_gt_and_lt_need_exactly_one_value(client: httpx.AsyncClient) -> None:
    for values in ((), ("1", "2")):
        for operator in ("Gt", "Lt"):
            assert await refused(client, pod(affinity=required(expression("cores", operator, *values)))) == [
                ("FieldValueRequired", f"{TERM}.matchExpressions[0].values",
                 "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'")]


async def test_a_gt_value_is_not_parsed_by_validation(client: httpx.AsyncClient) -> None:
    # Upstream checks the count only; "many" is a valid label value, so the pod is accepted.
    r = await client.post(PODS, json=pod(affinity=required(expression("cores", "Gt", "many"))))
    assert r.status_code == 201, r.text


async def test_bad_label_key_in_a_node_selector_requirement_is_invalid(client: httpx.AsyncClient) -> None:
    assert await refused(client, pod(affinity=required(expression("-zone", "Exists")))) == [
        ("FieldValueInvalid", f"{TERM}.matchExpressions[0].key", f'Invalid value: "-zone": {QUALIFIED_NAME_REGEX}')]


async def test_required_terms_check_label_values_and_preferred_terms_do_not(client: httpx.AsyncClient) -> None:
    # ValidatePreferredSchedulingTerms: "we always allow invalid label-value for preferred affinity".
    assert await refused(client, pod(affinity=required(expression("zone", "In", "a b")))) == [
        ("FieldValueInvalid", f"{TERM}.matchExpressions[0].values[0]", f'Invalid value: "a b": {LABEL_VALUE_REGEX}')]
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": expression("zone", "In", "a b")}]}}
    assert (await client.post(PODS, json=pod("preferred", affinity=preferred))).status_code == 201


async def test_an_empty_node_selector_terms_list_is_required(client: httpx.AsyncClient) -> None:
    for selector in ({"nodeSelectorTerms": []}, {}):
        body = pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}})
        assert await refused(client, body) == [
            ("FieldValueRequired", f"{REQUIRED}.nodeSelectorTerms", "Required value: must have at least one node selector term")]


async def test_an_empty_node_selector_term_is_valid(client: httpx.AsyncClient) -> None:
    # It matches no node, but ValidateNodeSelectorTerm has nothing to say about it.
    assert (await client.post(PODS, json=pod(affinity=required({})))).status_code == 201


@pytest.mark.parametrize("weight", [0, -1, 101])
async def test_preferred_node_affinity_weight_is_1_to_100(client: httpx.AsyncClient, weight: int) -> None:
    body = pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": expression("zone", "Exists")},
        {"weight": weight, "preference": expression("zone", "Exists")}]}})
    assert await refused(client, body) == [
        ("FieldValueInvalid", f"{PREFERRED}[1].weight", f"Invalid value: {weight}: must be in the range 1-100")]


async def test_node_selector_labels_are_validated(client: httpx.AsyncClient) -> None:
    assert await refused(client, pod(nodeSelector={"disk": "ssd!"})) == [
        ("FieldValueInvalid", "spec.nodeSelector", f'Invalid value: "ssd!": {LABEL_VALUE_REGEX}')]


# -- pod (anti-)affinity ---------------------------------------------------------------------------------


async def test_pod_affinity_term_without_topology_key_is_refused(client: httpx.AsyncClient) -> None:
    # validatePodAffinityTerm: Required "can not be empty", then ValidateLabelName("") adds its two.
    body = pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}}]}})
    assert await refused(client, body) == [
        ("FieldValueRequired", f"{ANTI}.topologyKey", "Required value: can not be empty"),
        ("FieldValueInvalid", f"{ANTI}.topologyKey", 'Invalid value: "": name part must be non-empty'),
        ("FieldValueInvalid", f"{ANTI}.topologyKey", f'Invalid value: "": {QUALIFIED_NAME_REGEX}'),
    ]


async def test_pod_affinity_selectors_namespaces_and_weights_are_validated(client: httpx.AsyncClient) -> None:
    term = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
    body = pod(affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 200,
        "podAffinityTerm": {
            "topologyKey": "topology.kubernetes.io/zone",
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["web"]}]},
            "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Is", "values": ["a"]}]},
            "namespaces": ["Prod"],
            "matchLabelKeys": ["pod-template-hash"], "mismatchLabelKeys": ["pod-template-hash"],
        }}]}})
    assert await refused(client, body) == [
        ("FieldValueInvalid", f"{term}.weight", "Invalid value: 200: must be in the range 1-100"),
        ("FieldValueForbidden", f"{term}.podAffinityTerm.labelSelector.matchExpressions[0].values",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ("FieldValueInvalid", f"{term}.podAffinityTerm.namespaceSelector.matchExpressions[0].operator",
         'Invalid value: "Is": not a valid selector operator'),
        # Upstream reports namespaces at ".namespace" (validatePodAffinityTerm's path).
        ("FieldValueInvalid", f"{term}.podAffinityTerm.namespace",
         'Invalid value: "Prod": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '
         "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
         "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        ("FieldValueInvalid", f"{term}.podAffinityTerm.matchLabelKeys[0]",
         'Invalid value: "pod-template-hash": exists in both matchLabelKeys and mismatchLabelKeys'),
    ]


# -- topology spread, tolerations ------------------------------------------------------------------------


async def test_topology_spread_constraints_are_validated(client: httpx.AsyncClient) -> None:
    zone = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}
    body = pod(topologySpreadConstraints=[
        {"maxSkew": 0, "whenUnsatisfiable": "Sometimes", "nodeAffinityPolicy": "Maybe"},
        zone,
        {**zone, "minDomains": 0},
        {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2,
         "matchLabelKeys": ["app"]},
    ])
    c = "spec.topologySpreadConstraints"
    assert await refused(client, body) == [
        ("FieldValueInvalid", f"{c}[0].maxSkew", "Invalid value: 0: must be greater than zero"),
        ("FieldValueRequired", f"{c}[0].topologyKey", "Required value: can not be empty"),
        ("FieldValueNotSupported", f"{c}[0].whenUnsatisfiable",
         'Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"'),
        ("FieldValueNotSupported", f"{c}[0].nodeAffinityPolicy", 'Unsupported value: "Maybe": supported values: "Honor", "Ignore"'),
        ("FieldValueDuplicate", f"{c}[1].{{topologyKey, whenUnsatisfiable}}", 'Duplicate value: "{zone, DoNotSchedule}"'),
        ("FieldValueInvalid", f"{c}[2].minDomains", "Invalid value: 0: must be greater than zero"),
        ("FieldValueInvalid", f"{c}[3].minDomains",
         "Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
        ("FieldValueForbidden", f"{c}[3].matchLabelKeys", "Forbidden: must not be specified when labelSelector is not set"),
    ]


async def test_bad_tolerations_are_refused(client: httpx.AsyncClient) -> None:
    t = "spec.tolerations"
    body = pod(tolerations=[
        {"key": "dedicated", "operator": "Exists", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoRun"},
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule", "tolerationSeconds": 60},
        {"operator": "Equal", "value": "gpu"},
        {"key": "dedicated", "operator": "Matches", "value": "gpu"},
        {"key": "dedicated", "value": "g p u"},
    ])
    assert await refused(client, body) == [
        ("FieldValueInvalid", f"{t}[0].operator", "Invalid value: \"gpu\": value must be empty when `operator` is 'Exists'"),
        ("FieldValueNotSupported", f"{t}[1].effect",
         'Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
        ("FieldValueInvalid", f"{t}[2].effect",
         "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"),
        ("FieldValueInvalid", f"{t}[3].operator",
         'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"'),
        ("FieldValueNotSupported", f"{t}[4].operator", 'Unsupported value: "Matches": supported values: "Equal", "Exists"'),
        ("FieldValueInvalid", f"{t}[5].operator", f'Invalid value: "g p u": {LABEL_VALUE_REGEX}'),
    ]


async def test_valid_scheduling_constraints_are_accepted(client: httpx.AsyncClient) -> None:
    body = pod(
        nodeSelector={"kubernetes.io/os": "linux"},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {**expression("cores", "Gt", "2"), **match_field("metadata.name", "NotIn", "node-9")}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": expression("disk", "DoesNotExist")}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["pod-template-hash"]}}]}},
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                    "minDomains": 2, "nodeTaintsPolicy": "Honor",
                                    "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["rev"]}],
        tolerations=[{"operator": "Exists"}, {"key": "gpu", "effect": "NoExecute", "tolerationSeconds": 5}],
    )
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text


async def test_a_match_label_key_also_in_the_selector_is_invalid_when_the_pod_has_that_label(
        client: httpx.AsyncClient) -> None:
    # validateMatchLabelKeysAndMismatchLabelKeys step 2, after PrepareForCreate's mutatePodAffinity
    # appended "app In (web)" for the pod's label: the key is in the selector twice. Upstream reports
    # it at the term's path indexed by the key's position (fldPath.Index(i)).
    term = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["rev", "app"]}
    body = pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    body["metadata"]["labels"] = {"app": "web", "rev": "1"}
    assert await refused(client, body) == [
        ("FieldValueInvalid", f"{ANTI}[1]", 'Invalid value: "app": exists in both matchLabelKeys and labelSelector')]
    in_expressions = {**term, "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}
    body["spec"]["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": in_expressions}]}}
    assert await refused(client, body) == [
        ("FieldValueInvalid", "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
         ".podAffinityTerm[1]", 'Invalid value: "app": exists in both matchLabelKeys and labelSelector')]


async def test_a_match_label_key_in_the_selector_is_allowed_without_that_pod_label_or_in_a_template(
        client: httpx.AsyncClient) -> None:
    # Nothing is merged for a key the pod lacks, nor into a pod template, nor for a mismatchLabelKeys key.
    term = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": ["app"], "mismatchLabelKeys": ["tier"]}
    body = pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {**term, "labelSelector": {"matchLabels": {"app": "web", "tier": "x"}}}]}})
    body["metadata"]["labels"] = {"tier": "front"}
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    deployment = workload("Deployment", "d", {"containers": [{"name": "c", "image": "nginx"}], "affinity": {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}})
    r = await client.post("/apis/apps/v1/namespaces/default/deployments", json=deployment)
    assert r.status_code == 201, r.text


async def test_scheduling_gates_need_qualified_unique_names_and_no_node_name(client: httpx.AsyncClient) -> None:
    # validateSchedulingGates (ValidatePodSpec) and ValidatePodCreate's nodeName rule.
    body = pod(schedulingGates=[{"name": "example.com/quota"}, {"name": "-bad"}, {"name": "example.com/quota"}],
               nodeName="node-1")
    assert await refused(client, body) == [
        ("FieldValueInvalid", "spec.schedulingGates[1]", f'Invalid value: "-bad": {QUALIFIED_NAME_REGEX}'),
        ("FieldValueDuplicate", "spec.schedulingGates[2]", 'Duplicate value: "example.com/quota"'),
        ("FieldValueForbidden", "spec.nodeName", "Forbidden: cannot be set until all schedulingGates have been cleared"),
    ]


async def test_the_whole_status_reads_as_upstream(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=pod("bad", tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]))
    assert r.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Pod \"bad\" is invalid: spec.tolerations[0].operator: Invalid value: \"v\": "
                   "value must be empty when `operator` is 'Exists'",
        "reason": "Invalid", "code": 422,
        "details": {"name": "bad", "kind": "Pod", "causes": [{
            "reason": "FieldValueInvalid", "field": "spec.tolerations[0].operator",
            "message": "Invalid value: \"v\": value must be empty when `operator` is 'Exists'"}]},
    }


# -- update ------------------------------------------------------------------------------------------------


async def test_an_update_that_breaks_the_constraints_is_refused_and_changes_nothing(client: httpx.AsyncClient) -> None:
    created = (await client.post(PODS, json=pod(tolerations=[{"key": "k", "operator": "Exists"}]))).json()
    broken = json.loads(json.dumps(created))
    broken["spec"]["tolerations"][0]["value"] = "v"
    r = await client.put(f"{PODS}/p", json=broken)
    assert r.status_code == 422, r.text
    # ValidatePodUpdate also refuses the change itself: validateOnlyAddedTolerations.
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["spec.tolerations[0].operator", "spec.tolerations"]
    patch = {"spec": {"affinity": required(match_field("metadata.name", "In"))}}
    r = await client.patch(f"{PODS}/p", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 422, r.text
    # ... and an affinity added to a pod without scheduling gates (the spec: Forbidden of ValidatePodUpdate).
    assert [c["field"] for c in r.json()["details"]["causes"]] == [f"{TERM}.matchFields[0].values", "spec"]
    stored = (await client.get(f"{PODS}/p")).json()
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert stored["spec"] == created["spec"]


async def _seed_old_pod(store: SqliteStore, spec: dict[str, Any]) -> None:
    # A pod a laxer release stored (the API refuses to create it now).
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "old", "namespace": "default", "uid": "0b5b1d6e-8d51-4a53-9c32-000000000001",
        "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": spec, "status": {"phase": "Pending"}}

    def render(revision: int) -> bytes:
        body["metadata"]["resourceVersion"] = str(revision)
        return orjson.dumps(body)

    await store.create("/registry/core/pods/default/old", render)


async def test_status_updates_do_not_validate_the_spec(client: httpx.AsyncClient, store: SqliteStore) -> None:
    # ValidatePodStatusUpdate leaves the spec alone: a kubelet can report on a pod stored earlier.
    await _seed_old_pod(store, {"containers": [{"name": "c", "image": "nginx"}],
                                "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]})
    current = (await client.get(f"{PODS}/old")).json()
    current["status"] = {"phase": "Running"}
    r = await client.put(f"{PODS}/old/status", json=current)
    assert r.status_code == 200, r.text
    current = r.json()
    current["metadata"]["labels"] = {"touched": "yes"}
    r = await client.put(f"{PODS}/old", json=current)
    assert r.status_code == 422, r.text  # the main resource is validated as on create


async def test_label_values_the_stored_pod_already_had_wrong_stay_allowed(
        client: httpx.AsyncClient, store: SqliteStore) -> None:
    # GetValidationOptionsFromPodSpecAndMeta: AllowInvalidLabelValueInRequiredNodeAffinity and
    # AllowInvalidLabelValueInSelector come from the old spec.
    affinity = {**required(expression("zone", "In", "a b")), "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": "zone", "labelSelector": {"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["w e b"]}]}}]}}
    await _seed_old_pod(store, {"containers": [{"name": "c", "image": "nginx"}], "affinity": affinity})
    current = (await client.get(f"{PODS}/old")).json()
    current["metadata"]["labels"] = {"touched": "yes"}
    r = await client.put(f"{PODS}/old", json=current)
    assert r.status_code == 200, r.text
    # The relaxation covers label values only: another rule still applies.
    current = r.json()
    current["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]["operator"] = "Exists"
    r = await client.put(f"{PODS}/old", json=current)
    assert r.status_code == 422, r.text
    # The spec: Forbidden is ValidatePodUpdate's (the affinity of a pod without gates is immutable).
    assert [c["field"] for c in r.json()["details"]["causes"]] == [f"{TERM}.matchExpressions[0].values", "spec"]


# -- pod templates --------------------------------------------------------------------------------------


def workload(kind: str, name: str, template_spec: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}], **template_spec}}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
async def test_workload_pod_templates_are_validated_on_create_and_update(client: httpx.AsyncClient, kind: str) -> None:
    # ValidatePodTemplateSpec runs ValidatePodSpec on spec.template.spec.
    path = f"/apis/apps/v1/namespaces/default/{kind.lower()}s"
    bad = workload(kind, "bad", {"tolerations": [{"key": "k", "operator": "Exists", "effect": "Sometimes"}]})
    assert await refused(client, bad, path) == [
        ("FieldValueNotSupported", "spec.template.spec.tolerations[0].effect",
         'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"')]
    created = await client.post(path, json=workload(kind, "good", {"affinity": required(expression("zone", "Exists"))}))
    assert created.status_code == 201, created.text
    patch = {"spec": {"template": {"spec": {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}}}}}
    r = await client.patch(f"{path}/good", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 422, r.text
    # The ReplicaSet strategy's ValidateUpdate runs ValidateReplicaSet and ValidateReplicaSetUpdate, each with
    # the spec's checks: the cause comes twice (pkg/registry/apps/replicaset/strategy.go).
    assert r.json()["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "message": "Invalid value: 0: must be in the range 1-100",
        "field": "spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    }] * (2 if kind == "ReplicaSet" else 1)
    # /status does not validate the template (ValidateDeploymentStatusUpdate and the like).
    current = (await client.get(f"{path}/good")).json()
    current["status"] = {"replicas": 0, "observedGeneration": 1}
    assert (await client.put(f"{path}/good/status", json=current)).status_code == 200
