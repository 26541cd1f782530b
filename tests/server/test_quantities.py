"""Built-in objects come back with every ``resource.Quantity`` in canonical form, and a bad quantity is
refused as kube-apiserver's typed decode refuses it.

Upstream: apimachinery ``pkg/api/resource/quantity.go`` (``UnmarshalJSON``/``MarshalJSON``),
apiserver ``handlers/rest.go`` ``transformDecodeError`` (create and update: 400 ``<Kind> in version
"v1" cannot be handled as a <Kind>: <error>``), ``handlers/patch.go`` (a JSON or merge patch: 422 on
field ``patch`` with the patched JSON; a strategic merge patch: with the patch as Go prints a map),
fieldmanager ``structuredmerge.go`` Apply (server-side apply: the conversion error, a 500).
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

PODS = "/api/v1/namespaces/default/pods"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
NODES = "/api/v1/nodes"
PVS = "/api/v1/persistentvolumes"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def pod(name: str = "p", **resources: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}}


def container_resources(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["containers"][0]["resources"])


async def created(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(path, json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def test_pod_create_stores_canonical_quantities(client: httpx.AsyncClient) -> None:
    body = pod(requests={"cpu": "1000m", "memory": "1024Mi", "ephemeral-storage": "0.1Gi"},
               limits={"cpu": 1.5, "memory": "1.5Gi", "example.com/gpu": 2})
    out = await created(client, PODS, body)
    # The limit with no request is requested at its limit (SetDefaults_Pod).
    expected = {"requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "107374182400m", "example.com/gpu": "2"},
                "limits": {"cpu": "1500m", "memory": "1536Mi", "example.com/gpu": "2"}}
    assert container_resources(out) == expected
    stored = (await client.get(f"{PODS}/p")).json()
    assert container_resources(stored) == expected


async def test_every_pod_quantity_field_is_canonical(client: httpx.AsyncClient) -> None:
    body = pod(requests={"cpu": "2000m"})
    spec = body["spec"]
    spec["initContainers"] = [{"name": "i", "image": "busybox", "resources": {"limits": {"memory": "2048Ki"}},
                               "env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}]
    spec["overhead"] = {"cpu": "0.25"}
    spec["volumes"] = [
        {"name": "scratch", "emptyDir": {"sizeLimit": "1000Mi"}},
        {"name": "nolimit", "emptyDir": {"sizeLimit": None}},
        {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}}}}},
        {"name": "info", "downwardAPI": {"items": [
            {"path": "mem", "resourceFieldRef": {"containerName": "c", "resource": "limits.memory", "divisor": "1024Ki"}}]}},
    ]
    out = await created(client, PODS, body)
    spec = out["spec"]
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": "2"}}
    assert spec["initContainers"][0]["resources"] == {"limits": {"memory": "2Mi"}, "requests": {"memory": "2Mi"}}
    # ResourceFieldSelector.Divisor is a value, not a pointer: Go writes its zero value.
    assert spec["initContainers"][0]["env"][0]["valueFrom"]["resourceFieldRef"] == {
        "resource": "limits.cpu", "divisor": "0"}
    assert spec["overhead"] == {"cpu": "250m"}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["scratch"]["emptyDir"] == {"sizeLimit": "1000Mi"}
    assert volumes["nolimit"]["emptyDir"] == {}
    claim = volumes["eph"]["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["resources"] == {"requests": {"storage": "1Gi"}}
    assert volumes["info"]["downwardAPI"]["items"][0]["resourceFieldRef"]["divisor"] == "1Mi"


async def test_a_bad_quantity_is_a_decode_error_and_nothing_is_stored(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=pod(limits={"cpu": "abc"}))
    assert r.status_code == 400, r.text
    status = r.json()
    assert (status["reason"], status["code"]) == ("BadRequest", 400)
    assert status["message"] == f'Pod in version "v1" cannot be handled as a Pod: {FORMAT_WRONG}'
    assert (await client.get(f"{PODS}/p")).status_code == 404
    r = await client.post(PODS, json=pod(requests={"memory": "1mi"}))
    assert r.json()["message"] == "Pod in version \"v1\" cannot be handled as a Pod: unable to parse quantity's suffix"
    # Even in a part the create discards (a pod's status), and for a bool.
    body = pod("q")
    body["status"] = {"containerStatuses": [{"name": "c", "allocatedResources": {"cpu": True}}]}
    r = await client.post(PODS, json=body)
    assert r.status_code == 400 and r.json()["message"].endswith(FORMAT_WRONG)


async def test_pod_update_compares_quantities_by_value(client: httpx.AsyncClient) -> None:
    """A PUT that spells a request differently but means the same is no spec change (Semantic
    equality of Quantity is Cmp); a different value is."""
    stored = await created(client, PODS, pod(requests={"cpu": "1", "memory": "1Gi"}))
    body = {**stored, "spec": {**stored["spec"], "containers": [
        {**stored["spec"]["containers"][0], "resources": {"requests": {"cpu": "1000m", "memory": "1073741824"}}}]}}
    r = await client.put(f"{PODS}/p", json=body)
    assert r.status_code == 200, r.text
    assert container_resources(r.json()) == {"requests": {"cpu": "1", "memory": "1073741824"}}
    body["metadata"] = r.json()["metadata"]
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1001m", "memory": "1Gi"}}
    r = await client.put(f"{PODS}/p", json=body)
    assert r.status_code == 422, r.text
    assert "pod updates may not change fields" in r.json()["message"]


async def test_pod_patches_canonicalise_or_answer_upstream_errors(client: httpx.AsyncClient) -> None:
    await created(client, PODS, pod(requests={"cpu": "1"}))
    # Strategic merge patch: the resulting object is decoded like a body.
    patch = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": "1000m"}}}]}}
    r = await client.patch(f"{PODS}/p", json=patch, headers=STRATEGIC)
    assert r.status_code == 200, r.text
    assert container_resources(r.json()) == {"requests": {"cpu": "1"}}
    # A bad value: 422 on field "patch"; strategic shows the patch as Go's %+v of a map.
    bad = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "x"}}}]}}
    r = await client.patch(f"{PODS}/p", json=bad, headers=STRATEGIC)
    assert r.status_code == 422, r.text
    cause = r.json()["details"]["causes"][0]
    assert cause["field"] == "patch"
    # errors.NewInvalid(schema.GroupKind{}, "", ...): an empty kind and name lead the message.
    assert r.json()["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[containers:[map[name:c resources:map[requests:map[cpu:x]]]]]]": '
        + FORMAT_WRONG)
    # A merge patch shows the patched object as JSON.
    r = await client.patch(f"{PODS}/p", json={"metadata": {"labels": {"q": "1abc"}},
                                                "status": {"containerStatuses": [{"name": "c", "allocatedResources": {
                                                    "cpu": "1abc"}}]}}, headers=MERGE)
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert message.startswith(' "" is invalid: patch: Invalid value: "{') and message.endswith(FORMAT_WRONG)
    assert '\\"cpu\\":\\"1abc\\"' in message
    # A JSON patch decodes the same way.
    r = await client.patch(f"{PODS}/p", json=[{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu",
                                               "value": "2000m"}], headers=JSON_PATCH)
    assert r.status_code == 422  # a pod's requests are immutable: the patch decoded (2000m is 2) and failed validation
    assert container_resources((await client.get(f"{PODS}/p")).json()) == {"requests": {"cpu": "1"}}


async def test_pod_status_writes_canonicalise(client: httpx.AsyncClient) -> None:
    stored = await created(client, PODS, pod(requests={"cpu": "1"}))
    stored["status"] = {"phase": "Running", "containerStatuses": [{
        "name": "c", "image": "nginx", "imageID": "", "ready": True, "restartCount": 0, "started": True,
        "state": {"running": {}}, "allocatedResources": {"cpu": "1000m"},
        "resources": {"requests": {"cpu": "1000m"}, "limits": {"memory": "1024Mi"}}}]}
    r = await client.put(f"{PODS}/p/status", json=stored)
    assert r.status_code == 200, r.text
    status = r.json()["status"]["containerStatuses"][0]
    assert status["allocatedResources"] == {"cpu": "1"}
    assert status["resources"] == {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}
    r = await client.patch(f"{PODS}/p/status", json={"status": {"containerStatuses": [{
        "name": "c", "allocatedResources": {"cpu": "0.5"}}]}}, headers=STRATEGIC)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["containerStatuses"][0]["allocatedResources"] == {"cpu": "500m"}
    # A /status PUT decodes the whole body: a bad quantity in the spec it discards is still a 400.
    body = r.json()
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    r = await client.put(f"{PODS}/p/status", json=body)
    assert r.status_code == 400
    assert r.json()["message"] == f'Pod in version "v1" cannot be handled as a Pod: {FORMAT_WRONG}'


async def test_qos_class_compares_quantities_by_value(client: httpx.AsyncClient) -> None:
    """GetPodQOS: Guaranteed when summed requests equal summed limits by value; zero counts as unset."""
    out = await created(client, PODS, pod("g", requests={"cpu": "1000m", "memory": "1Gi"},
                                          limits={"cpu": "1", "memory": "1073741824"}))
    assert out["status"]["qosClass"] == "Guaranteed"
    out = await created(client, PODS, pod("z", requests={"cpu": "0"}, limits={"memory": "0"}))
    assert out["status"]["qosClass"] == "BestEffort"
    out = await created(client, PODS, pod("b", limits={"cpu": "1", "memory": "1Gi"}, requests={"cpu": "999m"}))
    assert out["status"]["qosClass"] == "Burstable"


async def test_pvc_spec_and_status_quantities(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}}}
    out = await created(client, PVCS, body)
    assert out["spec"]["resources"] == {"requests": {"storage": "1Gi"}}
    out["status"] = {"phase": "Bound", "capacity": {"storage": "1073741824"}, "allocatedResources": {"storage": "1e9"}}
    r = await client.put(f"{PVCS}/data/status", json=out)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["capacity"] == {"storage": "1073741824"}  # DecimalSI stays DecimalSI
    assert r.json()["status"]["allocatedResources"] == {"storage": "1e9"}
    r = await client.patch(f"{PVCS}/data", json={"spec": {"resources": {"requests": {"storage": "2048Mi"}}}},
                           headers=MERGE)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["resources"] == {"requests": {"storage": "2Gi"}}
    body = r.json()
    body["spec"]["resources"] = {"requests": {"storage": "10 Gi"}}
    r = await client.put(f"{PVCS}/data", json=body)
    assert r.status_code == 400
    assert r.json()["message"].startswith('PersistentVolumeClaim in version "v1" cannot be handled as a '
                                          "PersistentVolumeClaim: ")


async def test_pv_and_node_quantities(client: httpx.AsyncClient) -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
          "spec": {"capacity": {"storage": "5120Mi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}}
    assert (await created(client, PVS, pv))["spec"]["capacity"] == {"storage": "5Gi"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "4000m", "memory": "8192Mi", "pods": "110"},
                       "allocatable": {"cpu": "3.5", "memory": "7.5Gi", "pods": 110}}}
    out = await created(client, NODES, node)
    assert out["status"]["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert out["status"]["allocatable"] == {"cpu": "3500m", "memory": "7680Mi", "pods": "110"}
    r = await client.patch(f"{NODES}/n1/status", json={"status": {"allocatable": {"cpu": "3000m"}}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["allocatable"]["cpu"] == "3"
    r = await client.patch(f"{NODES}/n1/status", json={"status": {"allocatable": {"cpu": "3 cores"}}}, headers=MERGE)
    assert r.status_code == 422


async def test_templates_of_workloads_are_canonical(client: httpx.AsyncClient) -> None:
    template = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [
        {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1000m"}, "limits": {"memory": "1024Mi"}}}]}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}}, "template": template}}
    out = await created(client, DEPLOYMENTS, deployment)
    assert container_resources(out["spec"]["template"]) == {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}
    assert out["metadata"]["generation"] == 1
    # Writing the object back with the request spelt as the manifest had it changes nothing.
    container_resources(out["spec"]["template"])["requests"]["cpu"] = "1000m"
    r = await client.put(f"{DEPLOYMENTS}/w", json=out)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == 1
    r = await client.patch(f"{DEPLOYMENTS}/w", json={"spec": {"template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1.5"}}}]}}}}, headers=STRATEGIC)
    assert r.status_code == 200, r.text
    assert container_resources(r.json()["spec"]["template"])["requests"] == {"cpu": "1500m"}
    assert r.json()["metadata"]["generation"] == 2
    r = await client.post(DEPLOYMENTS, json={**deployment, "metadata": {"name": "bad"}, "spec": {
        **deployment["spec"], "template": {**template, "spec": {"containers": [
            {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1.1.1"}}}]}}}})
    assert r.status_code == 400
    assert r.json()["message"] == f'Deployment in version "v1" cannot be handled as a Deployment: {FORMAT_WRONG}'
    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                   "spec": {"selector": {"matchLabels": {"app": "w"}}, "serviceName": "s", "template": template,
                            "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {
                                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}}}]}}
    out = await created(client, STATEFULSETS, statefulset)
    assert out["spec"]["volumeClaimTemplates"][0]["spec"]["resources"] == {"requests": {"storage": "1Gi"}}


async def test_server_side_apply_canonicalises_and_refuses_like_upstream(client: httpx.AsyncClient) -> None:
    manifest = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "default"}, '
                '"spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "%s"}}}]}}')
    r = await client.patch(f"{PODS}/a?fieldManager=me", content=manifest % "1000m", headers=APPLY)
    assert r.status_code == 201, r.text
    assert container_resources(r.json()) == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    r = await client.patch(f"{PODS}/b?fieldManager=me", content=(manifest % "lots").replace('"a"', '"b"'),
                           headers=APPLY)
    assert r.status_code == 500, r.text
    assert "reason" not in r.json()  # StatusReasonUnknown is "" and omitted (meta/v1 types.go)
    assert r.json()["message"] == f"failed to convert new object (default/b; /v1, Kind=Pod) to proper version: {FORMAT_WRONG}"


async def test_kinds_without_quantities_keep_their_strings(client: httpx.AsyncClient) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"cpu": "1000m"}}
    assert (await created(client, "/api/v1/namespaces/default/configmaps", cm))["data"] == {"cpu": "1000m"}


async def test_a_pod_stored_before_canonical_form_updates_by_value(client: httpx.AsyncClient, store: Any) -> None:
    """A pod written with ``1000m`` by an older kubeloop: a client that sends it back as it read it
    changes nothing (upstream decodes the stored object too), and an image change stores canonical form."""
    stored = await created(client, PODS, pod(requests={"cpu": "1"}))
    key = "/registry/core/pods/default/p"
    current = await store.get(key)
    legacy = orjson.loads(current.value)
    legacy["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1000m"}}

    def render(revision: int) -> bytes:
        legacy["metadata"]["resourceVersion"] = str(revision)
        return orjson.dumps(legacy)

    await store.update(key, render, expected_revision=current.mod_revision)
    read = (await client.get(f"{PODS}/p")).json()
    assert container_resources(read) == {"requests": {"cpu": "1000m"}}
    r = await client.put(f"{PODS}/p", json=read)
    assert r.status_code == 200, r.text
    read["metadata"] = r.json()["metadata"]
    read["spec"]["containers"][0]["image"] = "nginx:1.27"
    r = await client.put(f"{PODS}/p", json=read)
    assert r.status_code == 200, r.text
    assert container_resources(r.json()) == {"requests": {"cpu": "1"}}
    assert stored["metadata"]["uid"] == r.json()["metadata"]["uid"]


async def test_a_template_stored_before_canonical_form_is_no_spec_change(client: httpx.AsyncClient, store: Any) -> None:
    """A Deployment stored with ``1000m`` in its template and written back as read keeps its generation:
    the stored object is decoded as well, so the two templates are the same."""
    template = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [
        {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}
    out = await created(client, DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}}, "template": template}})
    key = "/registry/apps/deployments/default/w"
    current = await store.get(key)
    legacy = orjson.loads(current.value)
    container_resources(legacy["spec"]["template"])["requests"]["cpu"] = "1000m"

    def render(revision: int) -> bytes:
        legacy["metadata"]["resourceVersion"] = str(revision)
        return orjson.dumps(legacy)

    await store.update(key, render, expected_revision=current.mod_revision)
    read = (await client.get(f"{DEPLOYMENTS}/w")).json()
    r = await client.put(f"{DEPLOYMENTS}/w", json=read)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == out["metadata"]["generation"] == 1


async def test_a_pod_container_with_a_limit_and_no_request_is_requested_at_its_limit(client: httpx.AsyncClient) -> None:
    # SetDefaults_Pod (k/k pkg/apis/core/v1/defaults.go): limits copied into missing requests, for
    # containers and init containers of a pod; a request the client set stays; pod templates are not
    # defaulted this way (their pods are, when created).
    body = pod("lim", limits={"cpu": "500m", "memory": "1024Mi"}, requests={"cpu": "250m"})
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]
    out = await created(client, PODS, body)
    assert container_resources(out) == {"limits": {"cpu": "500m", "memory": "1Gi"},
                                        "requests": {"cpu": "250m", "memory": "1Gi"}}
    assert out["spec"]["initContainers"][0]["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert out["status"]["qosClass"] == "Burstable"
    template = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "lim"}, "spec": {
        "selector": {"matchLabels": {"app": "lim"}}, "template": {"metadata": {"labels": {"app": "lim"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1"}}}]}}}}
    out = await created(client, DEPLOYMENTS, template)
    assert out["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
