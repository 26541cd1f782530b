"""Quantities as kube-apiserver 1.32 defaults and compares them.

Upstream: core v1 ``defaults.go`` ``SetDefaults_ResourceList`` (run by the generated defaulters on every
ResourceList of pods, pod templates, claims and claim templates, volumes and nodes) rounds each value
up to a whole milli with ``Quantity.RoundUp(-3)`` (``quantity.go``; a value already at milli scale or
coarser keeps its spelling); a lone Quantity (``emptyDir.sizeLimit``) has no such defaulter. The
apps strategies bump ``metadata.generation`` when ``apiequality.Semantic.DeepEqual`` says the spec
changed, and Semantic compares Quantities by value (``Cmp``). Server-side apply merges the applied
strings, then the typed decode writes them canonically: re-applying ``1000m`` over a stored ``1``
stores the same bytes, so nothing is written.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from kubeloop.testing import FakeClock

PODS = "/api/v1/namespaces/default/pods"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def deployment(resources: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}}}}


def template_resources(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["template"]["spec"]["containers"][0]["resources"])


async def test_resource_lists_are_rounded_up_to_a_whole_milli(client: httpx.AsyncClient) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "nginx", "resources": {
            "limits": {"cpu": "100u", "memory": "1.0001m", "ephemeral-storage": "1e-5"},
            "requests": {"cpu": "1e-3", "memory": "0.5m", "ephemeral-storage": "1n"}}}],
        "overhead": {"cpu": 0.0015},
        "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "100u"}}]}}
    r = await client.post(PODS, json=pod)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["containers"][0]["resources"] == {
        # Away from zero, in the value's own format (1e-5 is a DecimalExponent: 1e-3).
        "limits": {"cpu": "1m", "memory": "2m", "ephemeral-storage": "1e-3"},
        # At milli scale or coarser the spelling stays (1e-3), as RoundUp leaves the string alone.
        "requests": {"cpu": "1e-3", "memory": "1m", "ephemeral-storage": "1m"}}
    assert spec["overhead"] == {"cpu": "2m"}
    assert spec["volumes"][0]["emptyDir"]["sizeLimit"] == "100u"  # a *Quantity: no ResourceList defaulter
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5u"}}}}
    r = await client.post(PVCS, json=claim)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["resources"]["requests"] == {"storage": "1m"}
    r = await client.post(DEPLOYMENTS, json=deployment({"limits": {"cpu": "0.0000001"}}))
    assert r.status_code == 201, r.text
    assert template_resources(r.json()) == {"limits": {"cpu": "1m"}}


async def test_a_spec_equal_by_value_is_no_new_generation(client: httpx.AsyncClient) -> None:
    r = await client.post(DEPLOYMENTS, json=deployment({"limits": {"memory": "1Gi", "cpu": "1k"}}))
    assert r.status_code == 201, r.text
    body = r.json()
    body["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"memory": 1073741824, "cpu": "1e3"}
    r = await client.put(f"{DEPLOYMENTS}/d", json=body)
    assert r.status_code == 200, r.text
    # Stored as spelt (upstream keeps 1073741824 and 1e3: their canonical test passes), same generation.
    assert template_resources(r.json()) == {"limits": {"memory": "1073741824", "cpu": "1e3"}}
    assert r.json()["metadata"]["generation"] == 1
    body = r.json()
    body["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "2Gi"
    r = await client.put(f"{DEPLOYMENTS}/d", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == 2


async def test_reapplying_a_quantity_spelt_differently_writes_nothing(client: httpx.AsyncClient,
                                                                     clock: FakeClock) -> None:
    async def apply(limits: dict[str, Any]) -> dict[str, Any]:
        await clock.advance(5)
        r = await client.patch(f"{DEPLOYMENTS}/d?fieldManager=m", content=orjson.dumps(deployment({"limits": limits})),
                               headers=APPLY)
        assert r.status_code in (200, 201), r.text
        return dict(r.json())

    first = await apply({"cpu": "1", "memory": "1Gi"})
    for limits in ({"cpu": "1000m", "memory": "1024Mi"}, {"cpu": 1, "memory": "1Gi"}, {"cpu": 1.0, "memory": "1048576Ki"}):
        again = await apply(limits)
        assert template_resources(again) == {"limits": {"cpu": "1", "memory": "1Gi"}}, limits
        assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"], limits
        assert again["metadata"]["managedFields"] == first["metadata"]["managedFields"], limits
    half = await apply({"cpu": 0.5, "memory": "1Gi"})
    assert template_resources(half) == {"limits": {"cpu": "500m", "memory": "1Gi"}}
    assert half["metadata"]["generation"] == 2


async def test_applying_an_equal_quantity_spelt_differently_over_another_owner_is_a_conflict(
        client: httpx.AsyncClient) -> None:
    # structured-merge-diff compares the applied string with the stored one: "1000m" is not "1" to it.
    r = await client.post(f"{DEPLOYMENTS}?fieldManager=creator", json=deployment({"limits": {"cpu": "1"}}))
    assert r.status_code == 201, r.text
    r = await client.patch(f"{DEPLOYMENTS}/d?fieldManager=m", content=orjson.dumps(deployment({"limits": {"cpu": "1000m"}})),
                           headers=APPLY)
    assert r.status_code == 409, r.text
    assert r.json()["message"].startswith('Apply failed with ') and (
        '.spec.template.spec.containers[name="c"].resources.limits.cpu' in r.json()["message"])
    r = await client.patch(f"{DEPLOYMENTS}/d?fieldManager=m", content=orjson.dumps(deployment({"limits": {"cpu": "1"}})),
                           headers=APPLY)
    assert r.status_code == 200, r.text  # the same string: shared, no conflict
