"""A PersistentVolume is validated as upstream's persistentvolume strategy validates it (release 1.32).

Upstream: k/k ``pkg/apis/core/validation/validation.go`` ``ValidatePersistentVolumeSpec`` (access modes,
capacity, reclaim policy, node affinity, exactly one volume source and each source's rules, hostPath
``/`` with ``Recycle``, storage class name, volume mode), ``pkg/volume/validation/pv_validation.go``
``checkMountOption``, and ``ValidatePersistentVolumeUpdate`` (the source, ``volumeMode`` and a node
affinity once set are immutable); ``pkg/registry/core/persistentvolume/strategy.go`` runs
``ValidatePersistentVolume`` again inside the update, so an update's causes come twice.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from kubeloop.store import SqliteStore
from kubeloop.testing import store_as_is

PVS = "/api/v1/persistentvolumes"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
MODES = 'supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'


def pv(name: str = "pv", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    if not any(key in spec for key in ("hostPath", "local", "nfs", "csi", "iscsi", "fc", "rbd", "gcePersistentDisk")):
        base["hostPath"] = {"path": "/data"}
    body_spec = {k: v for k, v in {**base, **spec}.items() if v is not None}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": body_spec}


def hostname_in(*values: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}}


def causes(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def refused(client: httpx.AsyncClient, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    r = await client.post(PVS, json=body)
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"]) == ("Invalid", "PersistentVolume")
    assert (await client.get(f"{PVS}/{body['metadata']['name']}")).status_code == 404
    return causes(status)


async def created(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(PVS, json=body)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


async def test_a_valid_volume_of_each_common_source_is_accepted(client: httpx.AsyncClient) -> None:
    await created(client, pv("host", hostPath={"path": "/data", "type": "DirectoryOrCreate"},
                             persistentVolumeReclaimPolicy="Recycle", storageClassName="fast", volumeMode="Block"))
    await created(client, pv("local", local={"path": "/mnt/disk"}, nodeAffinity=hostname_in("node-1")))
    await created(client, pv("nfs", nfs={"server": "nfs.example", "path": "/exports"}, accessModes=["ReadWriteMany"],
                             mountOptions=["nfsvers=4.1"]))
    await created(client, pv("csi", csi={"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1",
                                         "nodePublishSecretRef": {"name": "creds", "namespace": "kube-system"}},
                             accessModes=["ReadWriteOncePod"]))
    await created(client, pv("iscsi", iscsi={"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage",
                                             "lun": 0}))
    await created(client, pv("fc", fc={"targetWWNs": ["500a0982991b8dc5"], "lun": 2}))


async def test_a_spec_without_modes_capacity_or_source_is_refused_in_upstreams_order(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "empty"}, "spec": {}}
    assert await refused(client, body) == [
        ("FieldValueRequired", "spec.accessModes", "Required value"),
        ("FieldValueRequired", "spec.capacity", "Required value"),
        ("FieldValueNotSupported", "spec.capacity", 'Unsupported value: core.ResourceList(nil): supported values: "storage"'),
        ("FieldValueRequired", "spec", "Required value: must specify a volume type"),
    ]


async def test_access_modes_must_be_known_and_read_write_once_pod_alone(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(accessModes=["ReadWriteSometimes"])) == [
        ("FieldValueNotSupported", "spec.accessModes", f'Unsupported value: "ReadWriteSometimes": {MODES}')]
    assert await refused(client, pv(accessModes=["ReadWriteOncePod", "ReadOnlyMany"])) == [
        ("FieldValueForbidden", "spec.accessModes", "Forbidden: may not use ReadWriteOncePod with other access modes")]


async def test_capacity_is_a_positive_storage_quantity_and_nothing_else(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(capacity={})) == [
        ("FieldValueRequired", "spec.capacity", "Required value"),
        ("FieldValueNotSupported", "spec.capacity", 'Unsupported value: core.ResourceList{}: supported values: "storage"')]
    assert await refused(client, pv(capacity={"storage": "0"})) == [
        ("FieldValueInvalid", "spec.capacity[storage]", 'Invalid value: "0": must be greater than zero')]
    assert await refused(client, pv(capacity={"storage": "-1Gi"})) == [
        ("FieldValueInvalid", "spec.capacity[storage]", "Invalid value: -1073741824: must be a valid resource quantity"),
        ("FieldValueInvalid", "spec.capacity[storage]", 'Invalid value: "-1Gi": must be greater than zero')]
    fields = [c[1] for c in await refused(client, pv(capacity={"storage": "1Gi", "cpu": "1"}))]
    assert fields == ["spec.capacity"]


async def test_reclaim_policy_volume_mode_and_class_name_are_checked(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(persistentVolumeReclaimPolicy="Keep", storageClassName="Fast_Disks",
                                    volumeMode="Raw")) == [
        ("FieldValueNotSupported", "spec.persistentVolumeReclaimPolicy",
         'Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"'),
        ("FieldValueInvalid", "spec.storageClassName", f'Invalid value: "Fast_Disks": {SUBDOMAIN}'),
        ("FieldValueNotSupported", "spec.volumeMode", 'Unsupported value: "Raw": supported values: "Block", "Filesystem"'),
    ]
    assert await refused(client, pv(hostPath={"path": "/tmp/.."}, persistentVolumeReclaimPolicy="Recycle")) == [
        ("FieldValueInvalid", "spec.hostPath.path", 'Invalid value: "/tmp/..": must not contain \'..\''),
        ("FieldValueForbidden", "spec.persistentVolumeReclaimPolicy", "Forbidden: may not be 'recycle' for a hostPath mount of '/'"),
    ]


async def test_exactly_one_volume_source(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(hostPath={"path": "/a"}, nfs={"server": "s", "path": "/b"},
                                    csi={"driver": "d", "volumeHandle": "h"})) == [
        ("FieldValueForbidden", "spec.nfs", "Forbidden: may not specify more than 1 volume type"),
        ("FieldValueForbidden", "spec.csi", "Forbidden: may not specify more than 1 volume type"),
    ]


async def test_each_common_source_follows_its_rules(client: httpx.AsyncClient) -> None:
    assert await refused(client, pv(hostPath={"path": "/data", "type": "Folder"})) == [
        ("FieldValueNotSupported", "spec.hostPath.type", 'Unsupported value: "Folder": supported values: "", "BlockDevice", '
         '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"')]
    assert await refused(client, pv(local={"path": ""})) == [
        ("FieldValueRequired", "spec.local.path", "Required value"),
        ("FieldValueRequired", "spec.nodeAffinity", "Required value: Local volume requires node affinity")]
    assert await refused(client, pv(nfs={"path": "exports"})) == [
        ("FieldValueRequired", "spec.nfs.server", "Required value"),
        ("FieldValueInvalid", "spec.nfs.path", 'Invalid value: "exports": must be an absolute path')]
    assert await refused(client, pv(csi={"driver": "Bad_Driver", "nodeExpandSecretRef": {"name": "s"}})) == [
        ("FieldValueInvalid", "spec.csi.driver", f'Invalid value: "Bad_Driver": {SUBDOMAIN}'),
        ("FieldValueRequired", "spec.csi.volumeHandle", "Required value"),
        ("FieldValueRequired", "spec.csi.nodeExpandSecretRef.namespace", "Required value")]
    assert await refused(client, pv("iscsi-bad", iscsi={"iqn": "iqn.bad", "lun": 300, "chapAuthSession": True,
                                                        "initiatorName": "x"})) == [
        ("FieldValueRequired", "spec.iscsi.targetPortal", "Required value"),
        ("FieldValueInvalid", "spec.iscsi.iqn", 'Invalid value: "iqn.bad": must be valid format'),
        ("FieldValueInvalid", "spec.iscsi.lun", "Invalid value: 300: must be between 0 and 255, inclusive"),
        ("FieldValueRequired", "spec.iscsi.secretRef", "Required value"),
        ("FieldValueInvalid", "spec.iscsi.initiatorname", 'Invalid value: "x": must be valid format')]
    assert await refused(client, pv(fc={"targetWWNs": ["a"], "wwids": ["b"]})) == [
        ("FieldValueInvalid", "spec.fc.targetWWNs",
         'Invalid value: []string{"a"}: targetWWNs and wwids can not be specified simultaneously'),
        ("FieldValueRequired", "spec.fc.lun", "Required value: lun is required if targetWWNs is specified")]
    assert await refused(client, pv(gcePersistentDisk={"partition": 300})) == [
        ("FieldValueRequired", "spec.persistentDisk.pdName", "Required value"),
        ("FieldValueInvalid", "spec.persistentDisk.partition", "Invalid value: 300: must be between 1 and 255, inclusive")]


async def test_the_mount_options_annotation_is_refused_where_the_source_takes_no_options(client: httpx.AsyncClient) -> None:
    annotated = pv("annotated")
    annotated["metadata"]["annotations"] = {"volume.beta.kubernetes.io/mount-options": "ro"}
    assert await refused(client, annotated) == [
        ("FieldValueForbidden", "metadata.annotations.volume.beta.kubernetes.io/mount-options",
         "Forbidden: may not specify mount options for this volume type")]
    nfs = pv("nfs-annotated", nfs={"server": "s", "path": "/x"})
    nfs["metadata"]["annotations"] = {"volume.beta.kubernetes.io/mount-options": "ro"}
    await created(client, nfs)
    # Upstream's API server does not look at spec.mountOptions (the kubelet refuses them at mount time).
    await created(client, pv("host-options", mountOptions=["ro"]))


async def test_the_source_is_immutable_but_a_claim_ref_and_an_expand_secret_may_be_set(client: httpx.AsyncClient) -> None:
    stored = await created(client, pv(csi={"driver": "d.example", "volumeHandle": "h"}))
    stored["spec"]["claimRef"] = {"namespace": "default", "name": "data"}
    stored["spec"]["csi"]["controllerExpandSecretRef"] = {"name": "s", "namespace": "kube-system"}
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 200, r.text
    stored = r.json()
    stored["spec"]["csi"]["volumeHandle"] = "other"
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 422, r.text
    assert [(reason, field, message.splitlines()) for reason, field, message in causes(r.json())] == [
        ("FieldValueForbidden", "spec.persistentvolumesource", [
            "Forbidden: spec.persistentvolumesource is immutable after creation",
            '- spec.csi.volumeHandle: "h"', '+ spec.csi.volumeHandle: "other"'])]


async def test_volume_mode_is_immutable(client: httpx.AsyncClient) -> None:
    stored = await created(client, pv())
    assert stored["spec"]["volumeMode"] == "Filesystem"
    stored["spec"]["volumeMode"] = "Block"
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 422, r.text
    assert r.json()["message"] == 'PersistentVolume "pv" is invalid: volumeMode: Invalid value: "Block": field is immutable'


async def test_node_affinity_may_be_set_once_then_only_move_from_beta_labels(client: httpx.AsyncClient) -> None:
    stored = await created(client, pv())
    stored["spec"]["nodeAffinity"] = hostname_in("a", key="failure-domain.beta.kubernetes.io/zone")
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 200, r.text
    stored = r.json()
    stored["spec"]["nodeAffinity"] = hostname_in("a", key="topology.kubernetes.io/zone")
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 200, r.text
    stored = r.json()
    stored["spec"]["nodeAffinity"] = hostname_in("b", key="topology.kubernetes.io/zone")
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 422, r.text
    shown = orjson.dumps(stored["spec"]["nodeAffinity"], option=orjson.OPT_SORT_KEYS).decode()
    assert causes(r.json()) == [
        ("FieldValueInvalid", "nodeAffinity", f"Invalid value: {shown}: field is immutable, except for updating from beta label to GA")]
    del stored["spec"]["nodeAffinity"]
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 422, r.text
    assert causes(r.json()) == [
        ("FieldValueInvalid", "nodeAffinity", 'Invalid value: "null": field is immutable, except for updating from beta label to GA')]


async def test_an_update_reports_the_spec_errors_twice_in_the_causes_and_once_in_the_message(
        client: httpx.AsyncClient) -> None:
    stored = await created(client, pv())
    stored["spec"]["accessModes"] = ["Everything"]
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 422, r.text
    status = r.json()
    cause = ("FieldValueNotSupported", "spec.accessModes", f'Unsupported value: "Everything": {MODES}')
    assert causes(status) == [cause, cause]
    assert status["message"] == f'PersistentVolume "pv" is invalid: spec.accessModes: Unsupported value: "Everything": {MODES}'


async def test_status_updates_and_stored_objects_without_defaults_are_not_refused(
        client: httpx.AsyncClient, store: SqliteStore) -> None:
    body = {**pv("legacy"), "status": {"phase": "Available"}}
    body["metadata"].update(uid="0b5b1d6e-8d51-4a53-9c32-000000000004", creationTimestamp="2026-01-01T00:00:00Z")
    await store_as_is(store, "/registry/core/persistentvolumes/legacy", body)
    # Stored without volumeMode: upstream reads it back defaulted, so the defaulted PUT changes nothing.
    r = await client.patch(f"{PVS}/legacy", json={"metadata": {"labels": {"a": "b"}}},
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    current = r.json()
    current["status"]["phase"] = "Released"
    r = await client.put(f"{PVS}/legacy/status", json=current)
    assert r.status_code == 200, r.text


async def test_volume_attributes_class_is_dropped_as_with_the_feature_gate_off(client: httpx.AsyncClient) -> None:
    # pkg/api/persistentvolume DropDisabledSpecFields: VolumeAttributesClass is off by default in 1.32.
    stored = await created(client, pv(csi={"driver": "d.example", "volumeHandle": "h"}, volumeAttributesClassName="gold"))
    assert "volumeAttributesClassName" not in stored["spec"]
    stored["spec"]["volumeAttributesClassName"] = "gold"
    r = await client.put(f"{PVS}/pv", json=stored)
    assert r.status_code == 200, r.text
    assert "volumeAttributesClassName" not in r.json()["spec"]
