"""A pod's spec is immutable on update except what upstream's ``ValidatePodUpdate`` allows.

Upstream: k/k ``pkg/apis/core/validation/validation.go`` (1.32) ``ValidatePodUpdate`` and its helpers
``ValidateContainerUpdates``, ``validateOnlyAddedTolerations``, ``validateOnlyDeletedSchedulingGates``,
``validateNodeSelectorMutation``, ``validateNodeAffinityMutation``, ``ValidatePodSpecificAnnotationUpdates``;
the message prefix is ``updatablePodSpecFields`` joined with ",".
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import orjson

from kubeloop.store import SqliteStore

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
FORBIDDEN_PREFIX = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)\n")
REQUIRED = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}], **spec}}


async def create(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def patched(client: httpx.AsyncClient, patch: dict[str, Any], *, name: str = "p",
                  headers: dict[str, str] = MERGE) -> dict[str, Any]:
    r = await client.patch(f"{PODS}/{name}", json=patch, headers=headers)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def refused(client: httpx.AsyncClient, patch: dict[str, Any], *, name: str = "p",
                  headers: dict[str, str] = MERGE) -> list[tuple[str, str, str]]:
    """PATCH: a 422 Invalid with its causes as (reason, field, message); the stored pod is unchanged."""
    before = (await client.get(f"{PODS}/{name}")).json()
    r = await client.patch(f"{PODS}/{name}", json=patch, headers=headers)
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["code"], status["details"]["kind"]) == ("Invalid", 422, "Pod")
    after = (await client.get(f"{PODS}/{name}")).json()
    assert after == before
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def test_changing_restart_policy_is_forbidden_with_upstreams_message_and_a_diff(client: httpx.AsyncClient) -> None:
    await create(client, pod())
    [(reason, field, message)] = await refused(client, {"spec": {"restartPolicy": "Never"}})
    assert (reason, field) == ("FieldValueForbidden", "spec")
    assert message.startswith(FORBIDDEN_PREFIX)
    # Not Go's cmp.Diff format: one line per side of each changed field.
    assert message[len(FORBIDDEN_PREFIX):].splitlines() == [
        '- spec.restartPolicy: "Always"', '+ spec.restartPolicy: "Never"']


async def test_images_of_containers_and_init_containers_may_change(client: httpx.AsyncClient) -> None:
    await create(client, pod(initContainers=[{"name": "i", "image": "busybox:1"}]))
    updated = await patched(client, {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}],
                                              "initContainers": [{"name": "i", "image": "busybox:2"}]}},
                            headers=STRATEGIC)
    assert updated["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert updated["spec"]["initContainers"][0]["image"] == "busybox:2"


async def test_a_put_of_the_stored_pod_with_new_labels_and_image_is_accepted(client: httpx.AsyncClient) -> None:
    created = await create(client, pod())
    body = json.loads(json.dumps(created))
    body["metadata"]["labels"] = {"a": "b"}
    body["spec"]["containers"][0]["image"] = "nginx:1.27"
    # A PUT that leaves out the tolerations DefaultTolerationSeconds added keeps them (admission
    # runs before upstream validates), and fields the client leaves at their zero value are unchanged.
    body["spec"].pop("tolerations")
    body["spec"]["hostNetwork"] = False
    body["spec"]["volumes"] = []
    r = await client.put(f"{PODS}/p", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["containers"][0]["image"] == "nginx:1.27"


async def test_adding_or_removing_a_container_is_forbidden(client: httpx.AsyncClient) -> None:
    await create(client, pod())
    # ValidateContainerUpdates stops there: no spec-wide error follows.
    assert await refused(client, {"spec": {"containers": [{"name": "c", "image": "nginx"}, {"name": "d", "image": "x"}]}}) == [
        ("FieldValueForbidden", "spec.containers", "Forbidden: pod updates may not add or remove containers")]


async def test_an_image_may_not_be_blank_or_padded(client: httpx.AsyncClient) -> None:
    await create(client, pod())
    # ValidatePodUpdate reports each twice: validatePodMetadataAndSpec (validateContainerCommon,
    # validateContainersOnlyForPod) on the new pod, then ValidateContainerUpdates.
    assert await refused(client, {"spec": {"containers": [{"name": "c", "image": " nginx"}]}}, headers=STRATEGIC) == [
        ("FieldValueInvalid", "spec.containers[0].image", 'Invalid value: " nginx": must not have leading or trailing whitespace')] * 2
    assert await refused(client, {"spec": {"containers": [{"name": "c", "image": ""}]}}, headers=STRATEGIC) == [
        ("FieldValueRequired", "spec.containers[0].image", "Required value")] * 2


async def test_active_deadline_may_be_set_and_lowered_but_not_raised_or_unset(client: httpx.AsyncClient) -> None:
    await create(client, pod())
    assert (await patched(client, {"spec": {"activeDeadlineSeconds": 60}}))["spec"]["activeDeadlineSeconds"] == 60
    assert (await patched(client, {"spec": {"activeDeadlineSeconds": 30}}))["spec"]["activeDeadlineSeconds"] == 30
    assert await refused(client, {"spec": {"activeDeadlineSeconds": 40}}) == [
        ("FieldValueInvalid", "spec.activeDeadlineSeconds", "Invalid value: 40: must be less than or equal to previous value")]
    assert await refused(client, {"spec": {"activeDeadlineSeconds": -1}}) == [
        ("FieldValueInvalid", "spec.activeDeadlineSeconds", "Invalid value: -1: must be between 0 and 2147483647, inclusive")]
    assert await refused(client, {"spec": {"activeDeadlineSeconds": None}}) == [
        ("FieldValueInvalid", "spec.activeDeadlineSeconds",
         "Invalid value: null: must not update from a positive integer to nil value")]


async def test_tolerations_may_only_be_added_or_change_their_seconds(client: httpx.AsyncClient) -> None:
    created = await create(client, pod(tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]))
    tolerations = created["spec"]["tolerations"]
    more = [{**tolerations[0], "tolerationSeconds": 5}, *tolerations[1:], {"key": "gpu", "operator": "Exists"}]
    assert (await patched(client, {"spec": {"tolerations": more}}))["spec"]["tolerations"] == more
    assert await refused(client, {"spec": {"tolerations": [{**more[0], "key": "other"}, *more[1:]]}}) == [
        ("FieldValueForbidden", "spec.tolerations", "Forbidden: existing toleration can not be modified except its tolerationSeconds")]


async def test_scheduling_gates_may_only_be_removed(client: httpx.AsyncClient) -> None:
    await create(client, pod(schedulingGates=[{"name": "a"}, {"name": "b"}]))
    assert await refused(client, {"spec": {"schedulingGates": [{"name": "a"}, {"name": "c"}]}}) == [
        ("FieldValueForbidden", "spec.schedulingGates[1].name",
         "Forbidden: only deletion is allowed, but found new scheduling gate 'c'")]
    assert (await patched(client, {"spec": {"schedulingGates": [{"name": "b"}]}}))["spec"]["schedulingGates"] == [{"name": "b"}]


async def test_a_gated_pod_may_gain_node_selector_entries_and_node_affinity_requirements(client: httpx.AsyncClient) -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    await create(client, pod(schedulingGates=[{"name": "g"}], nodeSelector={"disk": "ssd"},
                             affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                 "nodeSelectorTerms": [term]}}}))
    added = await patched(client, {"spec": {"nodeSelector": {"gpu": "yes"}}})
    assert added["spec"]["nodeSelector"] == {"disk": "ssd", "gpu": "yes"}
    longer = {"matchExpressions": [*term["matchExpressions"], {"key": "rack", "operator": "Exists"}]}
    narrowed = await patched(client, {"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [longer]}}}}})
    assert narrowed["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"] == [longer]
    assert await refused(client, {"spec": {"nodeSelector": {"disk": "hdd"}}}) == [
        ("FieldValueInvalid", "spec.nodeSelector", 'Invalid value: {"disk": "hdd", "gpu": "yes"}: '
         "only additions to spec.nodeSelector are allowed (no mutations or deletions)")]
    [cause] = await refused(client, {"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [longer, term]}}}}})
    assert cause[:2] == ("FieldValueInvalid", f"{REQUIRED}.nodeSelectorTerms")
    assert cause[2].endswith("no additions/deletions to non-empty NodeSelectorTerms list are allowed")
    [cause] = await refused(client, {"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}}})
    assert cause[:2] == ("FieldValueInvalid", f"{REQUIRED}.nodeSelectorTerms[0]")
    assert cause[2].endswith("only additions are allowed (no mutations or deletions)")


async def test_an_ungated_pod_may_not_gain_a_node_selector(client: httpx.AsyncClient) -> None:
    await create(client, pod())
    [(reason, field, message)] = await refused(client, {"spec": {"nodeSelector": {"disk": "ssd"}}})
    assert (reason, field) == ("FieldValueForbidden", "spec")
    assert message == FORBIDDEN_PREFIX + '+ spec.nodeSelector: {"disk": "ssd"}'


async def test_grace_period_may_go_from_negative_to_one_only(client: httpx.AsyncClient, store: SqliteStore) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "old", "namespace": "default", "uid": "0b5b1d6e-8d51-4a53-9c32-000000000002",
        "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "terminationGracePeriodSeconds": -1},
        "status": {"phase": "Pending"}}

    def render(revision: int) -> bytes:
        body["metadata"]["resourceVersion"] = str(revision)
        return orjson.dumps(body)

    # Written raw, as an older release stored it (and without the defaults the API fills now: the
    # stored pod is compared as upstream decodes it, defaulted).
    await store.create("/registry/core/pods/default/old", render)
    [(_, field, _)] = await refused(client, {"spec": {"terminationGracePeriodSeconds": 2}}, name="old")
    assert field == "spec"
    assert (await patched(client, {"spec": {"terminationGracePeriodSeconds": 1}}, name="old"))["spec"][
        "terminationGracePeriodSeconds"] == 1


async def test_the_mirror_pod_annotation_may_not_be_added_changed_or_removed(client: httpx.AsyncClient) -> None:
    mirror = "kubernetes.io/config.mirror"
    await create(client, pod())
    assert await refused(client, {"metadata": {"annotations": {mirror: "x"}}}) == [
        ("FieldValueForbidden", f"metadata.annotations[{mirror}]", "Forbidden: may not add mirror pod annotation")]
    await create(client, {**pod("static"), "metadata": {"name": "static", "annotations": {mirror: "x"}}})
    assert await refused(client, {"metadata": {"annotations": {mirror: None}}}, name="static") == [
        ("FieldValueForbidden", f"metadata.annotations[{mirror}]", "Forbidden: may not remove or update mirror pod annotation")]


async def test_status_and_binding_are_not_held_to_the_spec_rules(client: httpx.AsyncClient) -> None:
    await create(client, pod())
    current = (await client.get(f"{PODS}/p")).json()
    current["status"]["phase"] = "Running"
    current["spec"]["restartPolicy"] = "Never"  # /status ignores spec changes (takes the stored spec)
    r = await client.put(f"{PODS}/p/status", json=current)
    assert r.status_code == 200, r.text
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    r = await client.post(f"{PODS}/p/binding", json=binding)
    assert r.status_code == 201, r.text
    assert (await client.get(f"{PODS}/p")).json()["spec"]["nodeName"] == "node-1"
    # Once bound, the main resource may not change nodeName (part of the immutable spec).
    [(_, field, message)] = await refused(client, {"spec": {"nodeName": "node-2"}})
    assert field == "spec" and message.endswith('- spec.nodeName: "node-1"\n+ spec.nodeName: "node-2"')


async def test_a_bad_toleration_on_update_is_named_once_in_the_message(client: httpx.AsyncClient) -> None:
    created = await create(client, pod())
    more = [*created["spec"]["tolerations"], {"key": "k", "operator": "Exists", "value": "v"}]
    r = await client.patch(f"{PODS}/p", json={"spec": {"tolerations": more}}, headers=MERGE)
    assert r.status_code == 422, r.text
    # ValidatePodSpec and validateOnlyAddedTolerations both run ValidateTolerations: two causes, and
    # field.ErrorList.ToAggregate names the error once in the message.
    causes = r.json()["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.tolerations[2].operator"] * 2
    assert r.json()["message"] == ('Pod "p" is invalid: spec.tolerations[2].operator: Invalid value: "v": '
                                   "value must be empty when `operator` is 'Exists'")
