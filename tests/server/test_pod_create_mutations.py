"""A new pod is stored as upstream's pod strategy prepares it: gated fields dropped, gates' condition,
affinity selectors merged with matchLabelKeys, AppArmor annotations and fields in step.

Upstream: k/k ``pkg/registry/core/pod/strategy.go`` (release-1.32) ``PrepareForCreate`` /
``PrepareForUpdate``; ``pkg/api/pod/util.go`` ``DropDisabledPodFields`` / ``DropDisabledTemplateFields``
with 1.32's default feature gates; ``pkg/registry/apps/deployment/strategy.go`` for templates.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from kubeloop.api import format_time
from kubeloop.server._state import renderer
from kubeloop.store import SqliteStore
from kubeloop.testing import FakeClock

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
ANTI = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
APPARMOR = "container.apparmor.security.beta.kubernetes.io/"


def pod(name: str = "p", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **({"labels": labels} if labels else {})},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


async def created(client: httpx.AsyncClient, body: dict[str, Any], path: str = PODS) -> dict[str, Any]:
    r = await client.post(path, json=body)
    assert r.status_code == 201, r.text
    stored = (await client.get(f"{path}/{body['metadata']['name']}")).json()
    assert stored["spec"] == r.json()["spec"]
    return dict(stored)


def gated_spec() -> dict[str, Any]:
    """One field of each gate that 1.32 has off by default."""
    return {
        "hostUsers": False,  # UserNamespacesSupport
        "securityContext": {"supplementalGroupsPolicy": "Strict",  # SupplementalGroupsPolicy
                            "seLinuxChangePolicy": "Recursive"},  # SELinuxChangePolicy
        "resources": {"requests": {"cpu": "1"}},  # PodLevelResources
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],  # DynamicResourceAllocation
        "containers": [{
            "name": "c", "image": "nginx",
            "resources": {"claims": [{"name": "gpu"}]},
            "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],  # InPlacePodVerticalScaling
            "securityContext": {"procMount": "Unmasked"},  # ProcMountType: forced to Default
            "volumeMounts": [{"name": "img", "mountPath": "/img"}, {"name": "certs", "mountPath": "/certs"}],
        }],
        "volumes": [
            {"name": "img", "image": {"reference": "busybox:1.36"}},  # ImageVolume
            {"name": "certs", "projected": {"sources": [  # ClusterTrustBundleProjection
                {"clusterTrustBundle": {"signerName": "example.com/s", "path": "ca.pem"}},
                {"configMap": {"name": "ca"}}]}},
        ],
    }


async def test_a_new_pod_is_stored_without_the_fields_of_gates_that_are_off(client: httpx.AsyncClient) -> None:
    stored = await created(client, pod(**gated_spec()))
    spec = stored["spec"]
    assert "hostUsers" not in spec and "resources" not in spec and "resourceClaims" not in spec
    assert "supplementalGroupsPolicy" not in spec["securityContext"]
    assert "seLinuxChangePolicy" not in spec["securityContext"]
    (container,) = spec["containers"]
    assert "resizePolicy" not in container and "claims" not in container["resources"]
    assert container["securityContext"] == {"procMount": "Default"}
    assert container["volumeMounts"] == [{"name": "certs", "mountPath": "/certs"}]
    # The image volume is gone; the projected source stays, emptied, as upstream's nil pointer leaves it
    # (its defaultMode 0644 from SetDefaults_ProjectedVolumeSource, applied as the body was decoded).
    assert spec["volumes"] == [{"name": "certs", "projected": {"sources": [{}, {"configMap": {"name": "ca"}}],
                                                              "defaultMode": 420}}]


async def test_a_dropped_field_is_no_longer_validated(client: httpx.AsyncClient) -> None:
    # Upstream validates the pod after the drop: a value its gate would refuse is not even looked at.
    body = pod(securityContext={"supplementalGroupsPolicy": "Loose", "seLinuxChangePolicy": "MountOption"})
    stored = await created(client, body)
    assert "supplementalGroupsPolicy" not in stored["spec"]["securityContext"]


async def test_an_update_drops_a_gated_field_the_stored_pod_does_not_use(client: httpx.AsyncClient) -> None:
    stored = await created(client, pod())
    stored["metadata"]["labels"] = {"a": "b"}
    stored["spec"]["hostUsers"] = False
    stored["spec"]["securityContext"]["seLinuxChangePolicy"] = "Recursive"
    r = await client.put(f"{PODS}/p", json=stored)
    assert r.status_code == 200, r.text
    assert "hostUsers" not in r.json()["spec"]
    assert "seLinuxChangePolicy" not in r.json()["spec"]["securityContext"]
    assert r.json()["metadata"]["labels"] == {"a": "b"}


async def test_an_update_keeps_a_gated_field_the_stored_pod_already_uses(client: httpx.AsyncClient,
                                                                          store: SqliteStore) -> None:
    # A pod written while the gates were on (seeded in the store) stays writable with its fields.
    seeded = pod(hostUsers=False, securityContext={"seLinuxChangePolicy": "Recursive"})
    seeded["metadata"].update(namespace="default", uid="u-1", creationTimestamp="2024-01-01T00:00:00Z")
    seeded["spec"]["containers"][0].update(terminationMessagePath="/dev/termination-log",
                                           terminationMessagePolicy="File", imagePullPolicy="Always",
                                           resources={})
    seeded["spec"].update(restartPolicy="Always", terminationGracePeriodSeconds=30, dnsPolicy="ClusterFirst",
                          schedulerName="default-scheduler", enableServiceLinks=True)
    seeded["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    await store.create("/registry/core/pods/default/p", renderer(seeded))
    current = (await client.get(f"{PODS}/p")).json()
    current["metadata"]["labels"] = {"a": "b"}
    r = await client.put(f"{PODS}/p", json=current)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["hostUsers"] is False
    assert r.json()["spec"]["securityContext"]["seLinuxChangePolicy"] == "Recursive"


async def test_a_workload_template_drops_gated_fields_before_its_generation_is_compared(
        client: httpx.AsyncClient) -> None:
    template_spec = {"containers": [{"name": "c", "image": "nginx"}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                      "metadata": {"labels": {"app": "d"}}, "spec": {**template_spec, "hostUsers": False}}}}
    stored = await created(client, deployment, DEPLOYMENTS)
    assert "hostUsers" not in stored["spec"]["template"]["spec"]
    assert stored["metadata"]["generation"] == 1
    stored["spec"]["template"]["spec"]["containers"][0]["resizePolicy"] = [
        {"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    r = await client.put(f"{DEPLOYMENTS}/d", json=stored)
    assert r.status_code == 200, r.text
    assert "resizePolicy" not in r.json()["spec"]["template"]["spec"]["containers"][0]
    assert r.json()["metadata"]["generation"] == 1  # the spec did not change once the field was dropped


def anti_term(**extra: Any) -> dict[str, Any]:
    return {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}, **extra}


async def test_match_label_keys_are_merged_into_the_stored_affinity_selectors(client: httpx.AsyncClient) -> None:
    body = pod(labels={"app": "web", "rev": "2", "tenant": "a"}, affinity={
        "podAntiAffinity": {ANTI: [anti_term(matchLabelKeys=["rev", "absent"], mismatchLabelKeys=["tenant"]),
                                   {"topologyKey": "zone", "matchLabelKeys": []}]},
        "podAffinity": {PREFERRED: [{"weight": 5, "podAffinityTerm": {
            "topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "db", "operator": "Exists"}]},
            "matchLabelKeys": ["rev"]}}]}},
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                    "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["rev"]}])
    stored = await created(client, body)
    affinity = stored["spec"]["affinity"]
    (merged, untouched) = affinity["podAntiAffinity"][ANTI]
    assert merged["labelSelector"] == {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "rev", "operator": "In", "values": ["2"]}, {"key": "tenant", "operator": "NotIn", "values": ["a"]}]}
    assert merged["matchLabelKeys"] == ["rev", "absent"] and merged["mismatchLabelKeys"] == ["tenant"]
    assert "labelSelector" not in untouched  # a nil selector matches nothing: nothing merged into it
    preferred = affinity["podAffinity"][PREFERRED][0]["podAffinityTerm"]
    assert preferred["labelSelector"]["matchExpressions"] == [
        {"key": "db", "operator": "Exists"}, {"key": "rev", "operator": "In", "values": ["2"]}]
    # 1.32 does not merge a topology spread constraint's matchLabelKeys (1.34's SelectorMerge does).
    assert stored["spec"]["topologySpreadConstraints"][0]["labelSelector"] == {"matchLabels": {"app": "web"}}
    # An update validates the stored, merged selector: the key appears once, so it is accepted, and
    # nothing is merged again.
    stored["metadata"]["labels"]["extra"] = "x"
    r = await client.put(f"{PODS}/p", json=stored)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["affinity"] == affinity


async def test_a_template_is_stored_unmerged(client: httpx.AsyncClient) -> None:
    term = anti_term(matchLabelKeys=["rev"])
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web", "rev": "1"}}, "spec": {
                          "containers": [{"name": "c", "image": "nginx"}],
                          "affinity": {"podAntiAffinity": {ANTI: [term]}}}}}}
    stored = await created(client, deployment, DEPLOYMENTS)
    assert stored["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][ANTI] == [term]


async def test_a_gated_pod_is_created_with_the_scheduling_gated_condition(client: httpx.AsyncClient,
                                                                          clock: FakeClock) -> None:
    stored = await created(client, pod(schedulingGates=[{"name": "example.com/quota"}]))
    assert stored["status"]["conditions"] == [{
        "type": "PodScheduled", "status": "False", "lastProbeTime": None,
        "lastTransitionTime": format_time(clock.now()), "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates"}]
    ungated = await created(client, pod("free"))
    assert "conditions" not in ungated["status"]


async def test_apparmor_fields_and_deprecated_annotations_are_synced_on_create(client: httpx.AsyncClient) -> None:
    body = pod(securityContext={"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-default"}},
               containers=[
                   {"name": "own", "image": "nginx", "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}},
                   {"name": "inherits", "image": "nginx"},
                   {"name": "annotated", "image": "nginx"},
                   {"name": "same", "image": "nginx"}],
               initContainers=[{"name": "init", "image": "busybox"}])
    body["metadata"]["annotations"] = {f"{APPARMOR}annotated": "unconfined", f"{APPARMOR}same": "localhost/k8s-default"}
    stored = await created(client, body)
    assert stored["metadata"]["annotations"] == {
        f"{APPARMOR}annotated": "unconfined", f"{APPARMOR}same": "localhost/k8s-default",  # kept as sent
        f"{APPARMOR}init": "localhost/k8s-default", f"{APPARMOR}own": "runtime/default",
        f"{APPARMOR}inherits": "localhost/k8s-default"}
    own, inherits, annotated, same = stored["spec"]["containers"]
    assert own["securityContext"] == {"appArmorProfile": {"type": "RuntimeDefault"}}
    assert "securityContext" not in inherits
    # The annotation becomes the container's field, unless it says what the pod's profile says.
    assert annotated["securityContext"] == {"appArmorProfile": {"type": "Unconfined"}}
    assert "securityContext" not in same


async def test_the_stored_pod_is_what_the_watch_and_the_raw_bytes_show(client: httpx.AsyncClient,
                                                                        store: SqliteStore) -> None:
    await created(client, pod(labels={"rev": "1"}, hostUsers=False, affinity={"podAntiAffinity": {
        ANTI: [anti_term(matchLabelKeys=["rev"])]}}))
    kv = await store.get("/registry/core/pods/default/p")
    assert kv is not None
    raw = orjson.loads(kv.value)
    assert "hostUsers" not in raw["spec"]
    assert raw["spec"]["affinity"]["podAntiAffinity"][ANTI][0]["labelSelector"]["matchExpressions"] == [
        {"key": "rev", "operator": "In", "values": ["1"]}]


def seeded_pod(status: dict[str, Any]) -> dict[str, Any]:
    body = pod()
    body["metadata"].update(namespace="default", uid="u-2", creationTimestamp="2024-01-01T00:00:00Z")
    body["status"] = status
    return body


GATED_STATUS = {
    "phase": "Running", "qosClass": "BestEffort", "resize": "InProgress",
    "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}],
    "containerStatuses": [{
        "name": "c", "image": "nginx", "imageID": "", "ready": True, "restartCount": 0, "started": True,
        "state": {"running": {"startedAt": "2024-01-01T00:00:01Z"}},
        "allocatedResources": {"cpu": "1"}, "resources": {"requests": {"cpu": "1"}},
        "user": {"linux": {"uid": 0, "gid": 0}},
        "allocatedResourcesStatus": [{"name": "claim:gpu", "resources": []}]}],
}


async def test_a_main_resource_update_drops_gated_status_fields(client: httpx.AsyncClient,
                                                                store: SqliteStore) -> None:
    # PrepareForUpdate keeps the stored status, then DropDisabledPodFields clears what its gates (off
    # in 1.32) cover, as the stored spec does not use them (dropDisabledPodStatusFields).
    await store.create("/registry/core/pods/default/p", renderer(seeded_pod(orjson.loads(orjson.dumps(GATED_STATUS)))))
    current = (await client.get(f"{PODS}/p")).json()
    assert current["status"]["resize"] == "InProgress"  # stored as written
    current["metadata"]["labels"] = {"a": "b"}
    r = await client.put(f"{PODS}/p", json=current)
    assert r.status_code == 200, r.text
    status = r.json()["status"]
    assert "resize" not in status and "resourceClaimStatuses" not in status
    (container,) = status["containerStatuses"]
    assert container == {"name": "c", "image": "nginx", "imageID": "", "ready": True, "restartCount": 0,
                         "started": True, "state": {"running": {"startedAt": "2024-01-01T00:00:01Z"}}}


async def test_input_of_the_wrong_shape_is_never_a_server_error(client: httpx.AsyncClient) -> None:
    # The mutations leave what is not the expected JSON shape to the decoder's and validation's checks.
    shapes: list[dict[str, Any]] = [
        pod(affinity={"podAntiAffinity": {ANTI: [{"topologyKey": "z", "labelSelector": "app=web",
                                                  "matchLabelKeys": ["app"]}]}}),
        pod(affinity={"podAffinity": {PREFERRED: "x"}}, schedulingGates="gate"),
        pod(containers=[{"name": "c", "image": "nginx", "securityContext": "x", "resources": []}],
            volumes=[{"name": "v", "image": "x"}], securityContext=[]),
        {**pod(), "metadata": {"name": "p", "labels": ["app"], "annotations": "x"}},
    ]
    for i, body in enumerate(shapes):
        body["metadata"]["name"] = f"p{i}"
        r = await client.post(PODS, json=body)
        assert r.status_code < 500, r.text
