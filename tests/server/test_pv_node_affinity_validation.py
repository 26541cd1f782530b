"""A PersistentVolume's ``spec.nodeAffinity`` follows upstream's node selector rules.

Upstream: k/k ``pkg/apis/core/validation/validation.go`` ``ValidatePersistentVolumeSpec`` →
``validateVolumeNodeAffinity`` (``required`` must be set, then ``ValidateNodeSelector``: at least one
term, ``ValidateNodeSelectorRequirement`` / ``ValidateNodeFieldSelectorRequirement``), the local
volume's "Local volume requires node affinity", and ``ValidationOptionsForPersistentVolume`` on update.
"""

from __future__ import annotations

from typing import Any

import httpx

from kubeloop.store import SqliteStore
from kubeloop.testing import store_as_is

PVS = "/api/v1/persistentvolumes"
TERMS = "spec.nodeAffinity.required.nodeSelectorTerms"
LABEL_VALUE_REGEX = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                     "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                     "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def pv(name: str = "pv", node_affinity: Any = None, **source: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                            **(source or {"hostPath": {"path": "/data"}})}
    if node_affinity is not None:
        spec["nodeAffinity"] = node_affinity
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def hostname_in(*values: str, operator: str = "In") -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": "kubernetes.io/hostname", "operator": operator}
    if values:
        requirement["values"] = list(values)
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}}


async def refused(client: httpx.AsyncClient, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    r = await client.post(PVS, json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"]) == ("Invalid", "PersistentVolume")
    assert (await client.get(f"{PVS}/{body['metadata']['name']}")).status_code == 404
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def test_a_valid_node_affinity_is_accepted(client: httpx.AsyncClient) -> None:
    r = await client.post(PVS, json=pv(node_affinity=hostname_in("node-1")))
    assert r.status_code == 201, r.text


async def test_node_affinity_without_required_is_refused(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(node_affinity={})) == [
        ("FieldValueRequired", "spec.nodeAffinity.required", "Required value: must specify required node constraints")]


async def test_required_needs_a_term_and_valid_requirements(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(node_affinity={"required": {"nodeSelectorTerms": []}})) == [
        ("FieldValueRequired", TERMS, "Required value: must have at least one node selector term")]
    assert await refused(client, pv(node_affinity=hostname_in(operator="In"))) == [
        ("FieldValueRequired", f"{TERMS}[0].matchExpressions[0].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'")]
    assert await refused(client, pv(node_affinity=hostname_in("a b"))) == [
        ("FieldValueInvalid", f"{TERMS}[0].matchExpressions[0].values[0]", f'Invalid value: "a b": {LABEL_VALUE_REGEX}')]
    fields = {"required": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.namespace", "operator": "In", "values": ["x"]}]}]}}
    assert await refused(client, pv(node_affinity=fields)) == [
        ("FieldValueInvalid", f"{TERMS}[0].matchFields[0].key", 'Invalid value: "metadata.namespace": not a valid field selector key')]


async def test_a_local_volume_requires_node_affinity(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(local={"path": "/mnt/disk"})) == [
        ("FieldValueRequired", "spec.nodeAffinity", "Required value: Local volume requires node affinity")]
    r = await client.post(PVS, json=pv("local", hostname_in("node-1"), local={"path": "/mnt/disk"}))
    assert r.status_code == 201, r.text


async def test_an_update_is_validated_but_keeps_label_values_the_stored_volume_had(
        client: httpx.AsyncClient, store: SqliteStore) -> None:
    created = (await client.post(PVS, json=pv(node_affinity=hostname_in("node-1")))).json()
    created["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["operator"] = "Exists"
    r = await client.put(f"{PVS}/pv", json=created)
    assert r.status_code == 422, r.text
    # ValidatePersistentVolumeUpdate validates the new volume a second time, then refuses the change
    # of a node affinity already set (1.32: validatePvNodeAffinity).
    assert [c["field"] for c in r.json()["details"]["causes"]] == [
        f"{TERMS}[0].matchExpressions[0].values", f"{TERMS}[0].matchExpressions[0].values", "nodeAffinity"]
    # ValidationOptionsForPersistentVolume: a bad label value already stored stays writable.
    body = {**pv("old", hostname_in("a b")), "status": {"phase": "Available"}}
    body["metadata"].update(uid="0b5b1d6e-8d51-4a53-9c32-000000000003", creationTimestamp="2026-01-01T00:00:00Z")
    await store_as_is(store, "/registry/core/persistentvolumes/old", body)
    r = await client.patch(f"{PVS}/old", json={"metadata": {"labels": {"a": "b"}}},
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    # /status is not validated against the spec.
    current = r.json()
    current["status"]["phase"] = "Released"
    assert (await client.put(f"{PVS}/old/status", json=current)).status_code == 200
