"""PersistentVolumes and claims get upstream's defaults, data source normalisation and warnings (release 1.32).

Upstream: k/k ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_PersistentVolume``, ``SetDefaults_PersistentVolumeClaim``
and the volume sources' defaulters: ISCSI, RBD, ScaleIO, AzureDisk, HostPath);
``pkg/api/persistentvolumeclaim/util.go`` (``DropDisabledFields``, ``EnforceDataSourceBackwardsCompatibility``,
``NormalizeDataSources``, ``GetWarningsForPersistentVolumeClaim``) as the claim strategy's ``PrepareForCreate``
and ``PrepareForUpdate`` run them; ``pkg/api/persistentvolume/util.go`` ``GetWarningsForPersistentVolume`` and
``pkg/api/node/util.go`` ``GetWarningsForNodeSelectorTerm``.
"""

from __future__ import annotations

from typing import Any

import httpx

PVS = "/api/v1/persistentvolumes"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"


def pv(name: str, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": {**base, **spec}}


def pvc(name: str = "data", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    meta: dict[str, Any] = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": {**base, **spec}}


async def post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> httpx.Response:
    r = await client.post(url, json=body)
    assert r.status_code == 201, r.text
    return r


def warnings(r: httpx.Response) -> list[str]:
    return r.headers.get_list("warning")


async def test_volume_sources_get_their_defaults(client: httpx.AsyncClient) -> None:
    sources: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "iscsi": ({"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0},
                  {"iscsiInterface": "default"}),
        "rbd": ({"monitors": ["10.0.0.1:6789"], "image": "foo"},
                {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"}),
        "scaleIO": ({"gateway": "https://gw", "system": "sys", "secretRef": {"name": "s"}, "volumeName": "vol"},
                    {"storageMode": "ThinProvisioned", "fsType": "xfs"}),
        "azureDisk": ({"diskName": "d", "diskURI": "https://disk"},
                      {"cachingMode": "ReadWrite", "kind": "Shared", "fsType": "ext4", "readOnly": False}),
        "hostPath": ({"path": "/mnt/data"}, {"type": ""}),
    }
    for i, (key, (given, defaults)) in enumerate(sources.items()):
        body = (await post(client, PVS, pv(f"v{i}", **{key: given}))).json()
        assert body["spec"][key] == {**given, **defaults}, key
        assert (body["spec"]["persistentVolumeReclaimPolicy"], body["spec"]["volumeMode"]) == ("Retain", "Filesystem")
        assert body["status"] == {"phase": "Pending"}


async def test_source_defaults_keep_what_was_set(client: httpx.AsyncClient) -> None:
    body = (await post(client, PVS, pv("v", azureDisk={"diskName": "d", "diskURI": "https://disk", "cachingMode": "None",
                                                       "fsType": "", "readOnly": True, "kind": "Dedicated"}))).json()
    # AzureDisk's fields are pointers upstream: "" is a value there.
    assert body["spec"]["azureDisk"] == {"diskName": "d", "diskURI": "https://disk", "cachingMode": "None", "fsType": "",
                                         "readOnly": True, "kind": "Dedicated"}
    body = (await post(client, PVS, pv("w", rbd={"monitors": ["m"], "image": "i", "pool": "", "user": "u"}))).json()
    assert body["spec"]["rbd"] == {"monitors": ["m"], "image": "i", "pool": "rbd", "user": "u", "keyring": "/etc/ceph/keyring"}


async def test_a_volume_sent_again_without_source_defaults_is_the_same_source(client: httpx.AsyncClient) -> None:
    stored = (await post(client, PVS, pv("v", hostPath={"path": "/mnt/data"}))).json()
    # The manifest sent again as written (no hostPath.type) is the same source.
    r = await client.put(f"{PVS}/v", json={**pv("v", hostPath={"path": "/mnt/data"}),
                                            "metadata": {"name": "v", "labels": {"a": "b"}}})
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["hostPath"] == {"path": "/mnt/data", "type": ""}
    assert r.json()["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]


async def test_a_claim_data_source_is_copied_to_data_source_ref_and_back(client: httpx.AsyncClient) -> None:
    body = (await post(client, PVCS, pvc("a", dataSource={"kind": "PersistentVolumeClaim", "name": "src"}))).json()
    # core/v1 TypedObjectReference: APIGroup *string `json:"apiGroup"` (no omitempty): the nil group copied
    # from dataSource (NormalizeDataSources) encodes as null, as dataSource's own does.
    assert body["spec"]["dataSourceRef"] == {"apiGroup": None, "kind": "PersistentVolumeClaim", "name": "src"}
    assert body["spec"]["dataSource"] == body["spec"]["dataSourceRef"]
    ref = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}
    body = (await post(client, PVCS, pvc("b", dataSourceRef=ref))).json()
    assert body["spec"]["dataSource"] == ref
    # A populator's kind, given through dataSourceRef, is kept in both fields.
    populated = {"apiGroup": "example.com", "kind": "Populator", "name": "p"}
    body = (await post(client, PVCS, pvc("c", dataSourceRef=populated))).json()
    assert (body["spec"]["dataSource"], body["spec"]["dataSourceRef"]) == (populated, populated)


async def test_a_data_source_of_another_kind_is_dropped_as_before_1_22(client: httpx.AsyncClient) -> None:
    body = (await post(client, PVCS, pvc("a", dataSource={"apiGroup": "example.com", "kind": "Populator", "name": "p"}))).json()
    assert "dataSource" not in body["spec"] and "dataSourceRef" not in body["spec"]


async def test_a_cross_namespace_data_source_ref_is_dropped_with_its_gate_off(client: httpx.AsyncClient) -> None:
    ref = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap", "namespace": "other"}
    body = (await post(client, PVCS, pvc("a", dataSourceRef=ref))).json()
    assert "dataSource" not in body["spec"] and "dataSourceRef" not in body["spec"]


async def test_data_sources_that_disagree_are_still_refused(client: httpx.AsyncClient) -> None:
    r = await client.post(PVCS, json=pvc("a", dataSource={"kind": "PersistentVolumeClaim", "name": "one"},
                                         dataSourceRef={"kind": "PersistentVolumeClaim", "name": "two"}))
    assert r.status_code == 422
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        ("spec", 'Invalid value: "spec.dataSource": must match dataSourceRef')]


async def test_claim_warnings_on_create_and_update(client: httpx.AsyncClient) -> None:
    body = pvc(annotations={"volume.beta.kubernetes.io/storage-class": "fast"},
               resources={"requests": {"storage": "1.5"}, "limits": {"storage": "2500m"}})
    r = await post(client, PVCS, body)
    expected = [
        '299 - "metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; '
        'use \\"storageClassName\\" attribute instead"',
        '299 - "spec.resources.requests[storage]: fractional byte value \\"1500m\\" is invalid, must be an integer"',
        '299 - "spec.resources.limits[storage]: fractional byte value \\"2500m\\" is invalid, must be an integer"',
    ]
    assert warnings(r) == expected
    meta = {**r.json()["metadata"], "labels": {"a": "b"}}
    r = await client.put(f"{PVCS}/data", json={**r.json(), "metadata": meta})
    assert r.status_code == 200, r.text
    assert warnings(r) == expected
    r = await client.put(f"{PVCS}/data/status", json={**r.json(), "status": {"phase": "Pending"}})
    assert r.status_code == 200, r.text
    assert warnings(r) == []


async def test_a_whole_number_of_bytes_is_no_warning(client: httpx.AsyncClient) -> None:
    r = await post(client, PVCS, pvc(resources={"requests": {"storage": "1500"}, "limits": {"storage": "2000m"}}))
    assert warnings(r) == []


async def test_volume_warnings(client: httpx.AsyncClient) -> None:
    affinity = {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]},
                              {"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["z"]}]}]}}
    body = pv("v", persistentVolumeReclaimPolicy="Recycle", nodeAffinity=affinity, nfs={"server": "s", "path": "/p"})
    body["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "slow"}
    r = await post(client, PVS, body)
    expected = [
        '299 - "metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; '
        'use \\"storageClassName\\" attribute instead"',
        '299 - "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended '
        'approach is to use dynamic provisioning."',
        '299 - "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[1].key: '
        'failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \\"topology.kubernetes.io/zone\\" instead"',
    ]
    assert warnings(r) == expected
    r = await client.put(f"{PVS}/v", json={**r.json(), "metadata": {**r.json()["metadata"], "labels": {"a": "b"}}})
    assert r.status_code == 200, r.text
    assert warnings(r) == expected


async def test_a_volume_plugin_that_no_longer_works_is_a_warning(client: httpx.AsyncClient) -> None:
    r = await post(client, PVS, pv("v", rbd={"monitors": ["m"], "image": "i"}))
    assert warnings(r) == ['299 - "spec.rbd: deprecated in v1.28, non-functional in v1.31+"']


async def test_dry_run_has_the_warnings_too(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{PVS}?dryRun=All", json=pv("v", persistentVolumeReclaimPolicy="Recycle", nfs={"server": "s", "path": "/p"}))
    assert r.status_code == 201, r.text
    assert len(warnings(r)) == 1
