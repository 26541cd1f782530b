"""A PersistentVolumeClaim is validated as upstream's persistentvolumeclaim strategy validates it (release 1.32).

Upstream: k/k ``pkg/apis/core/validation/validation.go`` ``ValidatePersistentVolumeClaimSpec`` (access
modes, selector, a positive storage request, class name, volume mode, data sources),
``ValidatePersistentVolumeClaimUpdate`` (the spec is immutable but for a first ``volumeName``, a
``storageClassName`` set from nothing, and a bound claim's storage request, which may not shrink to
``status.capacity``; ``volumeMode`` immutable) and ``ValidatePersistentVolumeClaimStatusUpdate``;
``pkg/registry/core/persistentvolumeclaim/strategy.go`` runs ``ValidatePersistentVolumeClaim`` twice on update.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from kubeloop.store import SqliteStore

PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
GROUP_REGEX = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
               "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def pvc(name: str = "data", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    body_spec = {k: v for k, v in {**base, **spec}.items() if v is not None}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": body_spec}


def causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"]) == ("Invalid", "PersistentVolumeClaim")
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(PVCS, json=body)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


async def test_a_claim_needs_access_modes_and_a_positive_storage_request(client: httpx.AsyncClient) -> None:
    assert causes(await client.post(PVCS, json=pvc(accessModes=[], resources={}))) == [
        ("FieldValueRequired", "spec.accessModes", "Required value: at least 1 access mode is required"),
        ("FieldValueRequired", "spec.resources[storage]", "Required value")]
    assert causes(await client.post(PVCS, json=pvc(resources={"requests": {"storage": "0"}},
                                                   accessModes=["ReadWriteOncePod", "ReadWriteOnce"]))) == [
        ("FieldValueForbidden", "spec.accessModes", "Forbidden: may not use ReadWriteOncePod with other access modes"),
        ("FieldValueInvalid", "spec.resources[storage]", 'Invalid value: "0": must be greater than zero')]


async def test_selector_class_mode_and_data_sources_are_checked(client: httpx.AsyncClient) -> None:
    body = pvc(selector={"matchExpressions": [{"key": "tier", "operator": "In"}]}, storageClassName="Fast",
               volumeMode="Raw", dataSource={"kind": "Snapshot", "name": "s1"},
               dataSourceRef={"apiGroup": "Snapshot.Storage", "kind": "VolumeSnapshot", "name": "s1"})
    assert causes(await client.post(PVCS, json=body)) == [
        ("FieldValueRequired", "spec.selector.matchExpressions[0].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("FieldValueInvalid", "spec.storageClassName", f'Invalid value: "Fast": {GROUP_REGEX}'),
        ("FieldValueNotSupported", "spec.volumeMode", 'Unsupported value: "Raw": supported values: "Block", "Filesystem"'),
        ("FieldValueInvalid", "spec.dataSource",
         "Invalid value: \"Snapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup"),
        ("FieldValueInvalid", "spec.dataSourceRef.apiGroup", f'Invalid value: "Snapshot.Storage": {GROUP_REGEX}'),
        ("FieldValueInvalid", "spec", 'Invalid value: "spec.dataSource": must match dataSourceRef'),
    ]
    clone = {"kind": "PersistentVolumeClaim", "name": "origin"}
    await created(client, pvc("clone", dataSource=clone, dataSourceRef=clone))


async def test_the_spec_is_immutable_but_the_binder_may_set_the_volume_and_the_class(client: httpx.AsyncClient) -> None:
    stored = await created(client, pvc())
    stored["spec"].update(volumeName="pv-1", storageClassName="standard")
    r = await client.put(f"{PVCS}/data", json=stored)
    assert r.status_code == 200, r.text
    stored = r.json()
    stored["spec"].update(volumeName="pv-2", accessModes=["ReadOnlyMany"])
    [(reason, field, message)] = causes(await client.put(f"{PVCS}/data", json=stored))
    assert (reason, field) == ("FieldValueForbidden", "spec")
    assert message.splitlines() == [
        "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        '- spec.accessModes[0]: "ReadWriteOnce"', '+ spec.accessModes[0]: "ReadOnlyMany"',
        '- spec.volumeName: "pv-1"', '+ spec.volumeName: "pv-2"']


async def test_an_unbound_claims_request_is_immutable(client: httpx.AsyncClient) -> None:
    stored = await created(client, pvc())
    stored["spec"]["resources"]["requests"]["storage"] = "2Gi"
    [(reason, field, message)] = causes(await client.put(f"{PVCS}/data", json=stored))
    assert (reason, field) == ("FieldValueForbidden", "spec")
    assert message.splitlines()[1:] == ['- spec.resources.requests.storage: "1Gi"', '+ spec.resources.requests.storage: "2Gi"']


async def test_a_bound_claim_may_grow_and_shrink_only_above_its_capacity(client: httpx.AsyncClient) -> None:
    stored = await created(client, pvc(resources={"requests": {"storage": "2Gi"}}))
    stored["status"] = {"phase": "Bound", "capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"]}
    r = await client.put(f"{PVCS}/data/status", json=stored)
    assert r.status_code == 200, r.text
    stored = r.json()
    stored["spec"]["resources"]["requests"]["storage"] = "5Gi"
    r = await client.put(f"{PVCS}/data", json=stored)
    assert r.status_code == 200, r.text
    stored = r.json()
    # RecoverVolumeExpansionFailure: a failed expansion may be walked back to above the capacity.
    stored["spec"]["resources"]["requests"]["storage"] = "3Gi"
    r = await client.put(f"{PVCS}/data", json=stored)
    assert r.status_code == 200, r.text
    stored = r.json()
    stored["spec"]["resources"]["requests"]["storage"] = "2Gi"
    assert causes(await client.put(f"{PVCS}/data", json=stored)) == [
        ("FieldValueForbidden", "spec.resources.requests.storage", "Forbidden: field can not be less than status.capacity")]


async def test_volume_mode_and_the_beta_class_annotation_are_immutable(client: httpx.AsyncClient) -> None:
    body = pvc(storageClassName="standard")
    body["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "standard"}
    stored = await created(client, body)
    stored["spec"]["volumeMode"] = "Block"
    stored["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"] = "fast"
    found = causes(await client.put(f"{PVCS}/data", json=stored))
    assert [(reason, field) for reason, field, _ in found] == [
        ("FieldValueInvalid", "metadata.annotations.volume.beta.kubernetes.io/storage-class"),
        ("FieldValueForbidden", "spec"), ("FieldValueInvalid", "volumeMode")]
    assert found[0][2] == 'Invalid value: "fast": field is immutable'
    assert found[2][2] == 'Invalid value: "Block": field is immutable'


async def test_an_update_reports_the_spec_errors_twice_in_the_causes(client: httpx.AsyncClient) -> None:
    stored = await created(client, pvc())
    stored["spec"]["accessModes"] = []
    found = causes(await client.put(f"{PVCS}/data", json=stored))
    required = ("FieldValueRequired", "spec.accessModes", "Required value: at least 1 access mode is required")
    assert found[:2] == [required, required]
    assert [field for _, field, _ in found[2:]] == ["spec"]


async def test_a_status_update_may_not_record_a_negative_capacity(client: httpx.AsyncClient) -> None:
    stored = await created(client, pvc())
    stored["status"] = {"phase": "Bound", "capacity": {"storage": "-1Gi"}, "allocatedResourceStatuses": {"cpu": "Done"}}
    assert causes(await client.put(f"{PVCS}/data/status", json=stored)) == [
        ("FieldValueInvalid", "status.capacity[storage]", "Invalid value: -1073741824: must be a valid resource quantity"),
        ("FieldValueNotSupported", "status.allocatedResourceStatus", 'Unsupported value: "cpu": supported values: "storage"'),
        ("FieldValueNotSupported", "status.allocatedResourceStatus",
         'Unsupported value: "cpu": supported values: "ControllerResizeFailed", "ControllerResizeInProgress", '
         '"NodeResizeFailed", "NodeResizeInProgress", "NodeResizePending"'),
    ]


async def test_volume_attributes_class_is_dropped_as_with_the_feature_gate_off(
        client: httpx.AsyncClient, store: SqliteStore) -> None:
    # pkg/api/persistentvolumeclaim DropDisabledFields: VolumeAttributesClass is off by default in 1.32.
    stored = await created(client, pvc(volumeAttributesClassName="gold"))
    assert "volumeAttributesClassName" not in stored["spec"]
    stored["spec"]["volumeAttributesClassName"] = "gold"
    r = await client.put(f"{PVCS}/data", json=stored)
    assert r.status_code == 200, r.text
    assert "volumeAttributesClassName" not in r.json()["spec"]
    # A claim stored with a class (while the gate was on) keeps it, and may not change it.
    body = {**pvc("kept", volumeAttributesClassName="gold", volumeMode="Filesystem"), "status": {"phase": "Pending"}}
    body["metadata"].update(namespace="default", uid="0b5b1d6e-8d51-4a53-9c32-000000000005",
                            creationTimestamp="2026-01-01T00:00:00Z")

    def render(revision: int) -> bytes:
        body["metadata"]["resourceVersion"] = str(revision)
        return orjson.dumps(body)

    await store.create("/registry/core/persistentvolumeclaims/default/kept", render)
    kept = (await client.get(f"{PVCS}/kept")).json()
    kept["spec"]["volumeAttributesClassName"] = "silver"
    assert causes(await client.put(f"{PVCS}/kept", json=kept)) == [
        ("FieldValueForbidden", "spec.volumeAttributesClassName",
         "Forbidden: update is forbidden when the VolumeAttributesClass feature gate is disabled")]
