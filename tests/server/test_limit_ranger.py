"""The LimitRanger admission plugin through the HTTP API (upstream plugin/pkg/admission/limitranger/admission.go)."""

from __future__ import annotations

from typing import Any

import httpx

PODS = "/api/v1/namespaces/default/pods"
CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
LIMITS = "/api/v1/namespaces/default/limitranges"


def pod(name: str = "web", *containers: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers) or [{"name": "app", "image": "nginx"}]}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def container(name: str = "app", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "image": "nginx", "resources": resources}


async def make_range(client: httpx.AsyncClient, *limits: dict[str, Any], name: str = "limits") -> None:
    r = await client.post(LIMITS, json={"metadata": {"name": name}, "spec": {"limits": list(limits)}})
    assert r.status_code == 201, r.text


async def test_containers_get_the_default_requests_and_limits_and_an_annotation(client: httpx.AsyncClient) -> None:
    await make_range(client, {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
                              "defaultRequest": {"cpu": "250m", "memory": "64Mi"}})
    body = pod("web", container("app", limits={"cpu": "300m"}), container("side"),
               init=[{"name": "setup", "image": "busybox"}])
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    stored = (await client.get(f"{PODS}/web")).json()
    app, side = stored["spec"]["containers"]
    # The pod's own limit stays; its request was defaulted from that limit when the body was decoded.
    assert app["resources"] == {"limits": {"cpu": "300m", "memory": "128Mi"},
                                "requests": {"cpu": "300m", "memory": "64Mi"}}
    assert side["resources"] == {"limits": {"cpu": "500m", "memory": "128Mi"},
                                 "requests": {"cpu": "250m", "memory": "64Mi"}}
    assert stored["spec"]["initContainers"][0]["resources"]["requests"] == {"cpu": "250m", "memory": "64Mi"}
    assert stored["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container app; memory limit for container app; "
        "cpu, memory request for container side; cpu, memory limit for container side; "
        "cpu, memory request for init container setup; cpu, memory limit for init container setup")


async def test_no_range_changes_nothing(client: httpx.AsyncClient) -> None:
    r = await client.post(PODS, json=pod())
    assert r.status_code == 201, r.text
    assert "annotations" not in r.json()["metadata"]
    assert r.json()["spec"]["containers"][0]["resources"] == {}


async def test_container_max_is_a_403_with_upstream_message(client: httpx.AsyncClient) -> None:
    await make_range(client, {"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "10Mi"}})
    r = await client.post(PODS, json=pod("big", container(limits={"cpu": "2", "memory": "5Mi"})))
    assert r.status_code == 403
    assert r.json()["reason"] == "Forbidden"
    assert r.json()["message"] == (
        'pods "big" is forbidden: [minimum memory usage per Container is 10Mi, but request is 5Mi, '
        "maximum cpu usage per Container is 1, but limit is 2]")
    assert (await client.get(f"{PODS}/big")).status_code == 404


async def test_missing_limit_under_a_max_without_default_is_refused(client: httpx.AsyncClient) -> None:
    # A max defaults the Container default limit (SetDefaults_LimitRangeItem), so only a Pod max leaves
    # a container without a limit to compare.
    await make_range(client, {"type": "Pod", "max": {"memory": "1Gi"}})
    r = await client.post(PODS, json=pod())
    assert r.status_code == 403
    assert r.json()["message"] == 'pods "web" is forbidden: maximum memory usage per Pod is 1Gi.  No limit is specified'


async def test_pod_totals_and_ratio(client: httpx.AsyncClient) -> None:
    await make_range(client, {"type": "Pod", "max": {"cpu": "1"}},
                     {"type": "Container", "maxLimitRequestRatio": {"memory": "2"}})
    two = pod("sum", container("a", limits={"cpu": "600m", "memory": "100Mi"}),
              container("b", limits={"cpu": "600m", "memory": "100Mi"}))
    r = await client.post(PODS, json=two)
    assert r.status_code == 403
    assert r.json()["message"] == 'pods "sum" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m'
    ratio = pod("ratio", container(limits={"cpu": "100m", "memory": "300Mi"}, requests={"memory": "100Mi"}))
    r = await client.post(PODS, json=ratio)
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "ratio" is forbidden: memory max limit to request ratio per Container is 2, '
                                   "but provided ratio is 3.000000")


async def test_generate_name_pod_is_named_by_its_final_name_in_the_validating_phase(client: httpx.AsyncClient) -> None:
    await make_range(client, {"type": "Container", "max": {"cpu": "1"}})
    body = pod("", container(limits={"cpu": "2"}))
    body["metadata"] = {"generateName": "web-"}
    r = await client.post(PODS, json=body)
    assert r.status_code == 403
    assert r.json()["message"].startswith('pods "web-')
    assert r.json()["message"].endswith('" is forbidden: maximum cpu usage per Container is 1, but limit is 2')


async def test_claims_are_bounded_by_their_request(client: httpx.AsyncClient) -> None:
    await make_range(client, {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}})
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "20Gi"}}}}
    r = await client.post(CLAIMS, json=claim)
    assert r.status_code == 403
    assert r.json()["message"] == ('persistentvolumeclaims "data" is forbidden: maximum storage usage per '
                                   "PersistentVolumeClaim is 10Gi, but request is 20Gi")
    claim["spec"]["resources"]["requests"]["storage"] = "500Mi"
    r = await client.post(CLAIMS, json=claim)
    assert r.json()["message"] == ('persistentvolumeclaims "data" is forbidden: minimum storage usage per '
                                   "PersistentVolumeClaim is 1Gi, but request is 500Mi")
    claim["spec"]["resources"]["requests"]["storage"] = "5Gi"
    assert (await client.post(CLAIMS, json=claim)).status_code == 201


async def test_a_range_written_just_before_a_create_applies_to_it(client: httpx.AsyncClient) -> None:
    assert (await client.post(PODS, json=pod("first"))).status_code == 201
    await make_range(client, {"type": "Container", "max": {"cpu": "1"}})
    r = await client.post(PODS, json=pod("second", container(limits={"cpu": "3"})))
    assert r.status_code == 403
    assert (await client.delete(f"{LIMITS}/limits")).status_code == 200
    assert (await client.post(PODS, json=pod("third", container(limits={"cpu": "3"})))).status_code == 201
