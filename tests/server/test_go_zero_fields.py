"""Built-in kinds show the top-level fields Go's JSON encoding always writes, and nobody owns them.

Upstream decodes every body into the kind's Go struct and encodes it back, so a field without
``omitempty`` appears at its zero value and a struct-typed field appears even with ``omitempty``
(``{}``, or ``null`` for a zero ``metav1.Time``/``MicroTime``). The field manager compares the object
with the kind's empty object, so these values are in no managedFields entry: a real cluster's
scheduler Events read ``reportingInstance: ""`` and ``eventTime: null`` with neither in their
``fieldsV1``. Each row cites its k8s.io/api release-1.32 ``types.go`` field.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

NS = "/api/v1/namespaces/default"
RBAC = "/apis/rbac.authorization.k8s.io/v1"

# kind -> (collection, minimal body, the always-present fields and their values, the Go source)
CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any], str]] = {
    "Event": (
        f"{NS}/events",
        {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
         "reason": "Started", "message": "m"},
        {"source": {}, "firstTimestamp": None, "lastTimestamp": None, "eventTime": None,
         "reportingComponent": "", "reportingInstance": ""},
        "core/v1 types.go Event: Source EventSource, FirstTimestamp/LastTimestamp metav1.Time, EventTime "
        "metav1.MicroTime (structs), ReportingController `json:\"reportingComponent\"`, ReportingInstance "
        "`json:\"reportingInstance\"` (no omitempty)",
    ),
    "Role": (f"{RBAC}/namespaces/default/roles", {"metadata": {"name": "r"}}, {"rules": None},
             "rbac/v1 types.go Role: Rules []PolicyRule `json:\"rules\"` (no omitempty)"),
    "ClusterRole": (f"{RBAC}/clusterroles", {"metadata": {"name": "cr"}}, {"rules": None},
                    "rbac/v1 types.go ClusterRole: Rules []PolicyRule `json:\"rules\"` (no omitempty)"),
    "Node": ("/api/v1/nodes", {"metadata": {"name": "n"}}, {"spec": {}},
             "core/v1 types.go Node: Spec NodeSpec `json:\"spec,omitempty\"` (a struct)"),
    "Lease": ("/apis/coordination.k8s.io/v1/namespaces/default/leases", {"metadata": {"name": "l"}}, {"spec": {}},
              "coordination/v1 types.go Lease: Spec LeaseSpec `json:\"spec,omitempty\"` (a struct)"),
    "ReplicaSet": (
        "/apis/apps/v1/namespaces/default/replicasets",
        {"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        {"status": {"replicas": 0}},
        "apps/v1 types.go ReplicaSetStatus: Replicas int32 `json:\"replicas\"` (no omitempty)",
    ),
    "PodDisruptionBudget": (
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        {"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}},
        {"status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}},
        "policy/v1 types.go PodDisruptionBudgetStatus: DisruptionsAllowed, CurrentHealthy, DesiredHealthy, "
        "ExpectedPods int32 (no omitempty)",
    ),
}


def _owned(obj: dict[str, Any]) -> set[str]:
    return {key for entry in obj["metadata"].get("managedFields") or () for key in entry["fieldsV1"]}


@pytest.mark.parametrize("kind", sorted(CASES))
async def test_a_created_object_shows_its_go_zero_fields_and_no_manager_owns_them(
    client: httpx.AsyncClient, kind: str
) -> None:
    collection, body, always, source = CASES[kind]
    created = await client.post(collection, json=body)
    assert created.status_code == 201, created.text
    obj = created.json()
    for key, value in always.items():
        assert key in obj and (obj[key] == value if key != "status" else value.items() <= obj[key].items()), \
            (kind, key, obj.get(key), source)  # fmt: skip
    if "status" not in always:  # a defaulted status is the strategy's, not a manager's field either way
        assert not {f"f:{key}" for key in always} & _owned(obj), (obj["metadata"].get("managedFields"), source)
    read = (await client.get(f"{collection}/{body['metadata']['name']}")).json()
    assert read == obj


@pytest.mark.parametrize("kind", ["Event", "Role", "Node", "Lease"])
async def test_a_put_of_the_body_without_the_zero_fields_is_a_no_op(client: httpx.AsyncClient, kind: str) -> None:
    collection, body, _, _ = CASES[kind]
    obj = (await client.post(collection, json=body)).json()
    again = {**body, "metadata": {**body["metadata"], "resourceVersion": obj["metadata"]["resourceVersion"]}}
    put = await client.put(f"{collection}/{body['metadata']['name']}", json=again)
    assert put.status_code == 200, put.text
    assert put.json()["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert put.json() == obj


async def test_client_sent_zero_values_are_owned_by_no_manager(client: httpx.AsyncClient) -> None:
    # client-go encodes reportingInstance "" and eventTime null itself; upstream owns neither.
    collection, body, always, _ = CASES["Event"]
    obj = (await client.post(collection, json={**body, **always, "reportingComponent": "kubelet"})).json()
    assert obj["reportingInstance"] == "" and obj["eventTime"] is None
    owned = _owned(obj)
    assert "f:reportingComponent" in owned
    assert not {"f:reportingInstance", "f:eventTime", "f:source", "f:firstTimestamp"} & owned
    # A merge patch that sets a zero field back to its value changes nothing.
    patched = await client.patch(f"{collection}/e", content=b'{"reportingInstance":""}',
                                 headers={"content-type": "application/merge-patch+json"})
    assert patched.json()["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
