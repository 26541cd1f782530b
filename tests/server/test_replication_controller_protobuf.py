"""ReplicationControllers and PodTemplates written with protobuf bodies, as client-go's typed clients send them.

The body is decoded to the JSON the client would have sent (k8s.io/api ``core/v1/generated.proto`` numbers,
``api/_protobuf_schema_core.py``), then takes the JSON body's path: the same defaults
(``SetDefaults_ReplicationController``), validation and answer. kubeloop answers JSON: client-go asks
``application/vnd.kubernetes.protobuf, application/json`` and takes either.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeloop.server import App

from ._uvicorn import kubectl_for

RCS = "/api/v1/namespaces/default/replicationcontrollers"
PODTEMPLATES = "/api/v1/namespaces/default/podtemplates"
PROTOBUF = {"Content-Type": "application/vnd.kubernetes.protobuf",
            "Accept": "application/vnd.kubernetes.protobuf, application/json"}


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def pb(number: int, value: bytes | str | int) -> bytes:
    """One protobuf field: a varint for an int, else length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + pb(1, pb(1, "v1") + pb(2, kind)) + pb(2, raw)


def entry(key: str, value: str) -> bytes:
    return pb(1, key) + pb(2, value)


def template(labels: dict[str, str]) -> bytes:
    """PodTemplateSpec: metadata.labels (11), spec.containers (2) with one nginx container."""
    meta = b"".join(pb(11, entry(k, v)) for k, v in labels.items())
    return pb(1, meta) + pb(2, pb(2, pb(1, "nginx") + pb(2, "nginx:1.25")))


def rc_body(name: str, *, labels: dict[str, str], replicas: int | None = None, selector: dict[str, str] | None = None,
            resource_version: str = "") -> bytes:
    meta = pb(1, name) + (pb(6, resource_version) if resource_version else b"")
    spec = (pb(1, replicas) if replicas is not None else b"") + b"".join(
        pb(2, entry(k, v)) for k, v in (selector or {}).items()) + pb(3, template(labels))
    return envelope("ReplicationController", pb(1, meta) + pb(2, spec))


def rc_json(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name}, "spec": {"template": {
        "metadata": {"labels": labels}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}}


async def test_a_protobuf_rc_is_created_and_defaulted_as_its_json_twin(client: httpx.AsyncClient) -> None:
    r = await client.post(RCS, content=rc_body("web", labels={"app": "web"}), headers=PROTOBUF)
    assert r.status_code == 201, r.text
    assert r.headers["content-type"].startswith("application/json")
    twin = (await client.post(RCS, json=rc_json("twin", {"app": "web"}))).json()
    stored = (await client.get(f"{RCS}/web")).json()
    assert stored["spec"] == twin["spec"] and stored["status"] == twin["status"] == {"replicas": 0}
    assert stored["spec"]["selector"] == {"app": "web"} and stored["spec"]["replicas"] == 1
    assert stored["metadata"]["labels"] == {"app": "web"} and stored["metadata"]["generation"] == 1


async def test_a_protobuf_update_keeps_an_explicit_zero_replicas(client: httpx.AsyncClient) -> None:
    created = (await client.post(RCS, content=rc_body("web", labels={"app": "web"}, replicas=2), headers=PROTOBUF)).json()
    assert created["spec"]["replicas"] == 2
    body = rc_body("web", labels={"app": "web"}, replicas=0, selector={"app": "web"},
                   resource_version=created["metadata"]["resourceVersion"])
    r = await client.put(f"{RCS}/web", content=body, headers=PROTOBUF)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["replicas"] == 0 and r.json()["metadata"]["generation"] == 2


async def test_an_invalid_protobuf_rc_gets_the_json_bodys_causes_and_nothing_is_stored(
        client: httpx.AsyncClient) -> None:
    r = await client.post(RCS, content=rc_body("bad", labels={"app": "other"}, selector={"app": "web"}),
                          headers=PROTOBUF)
    twin = rc_json("bad", {"app": "other"})
    twin["spec"]["selector"] = {"app": "web"}
    expected = await client.post(RCS, json=twin)
    assert (r.status_code, r.json()) == (422, expected.json())
    assert r.json()["details"]["causes"][0]["field"] == "spec.template.metadata.labels"
    assert (await client.get(f"{RCS}/bad")).status_code == 404


async def test_a_protobuf_pod_template_is_created_with_pod_defaults(client: httpx.AsyncClient) -> None:
    raw = pb(1, pb(1, "batch")) + pb(2, template({"tier": "batch"}))
    r = await client.post(PODTEMPLATES, content=envelope("PodTemplate", raw), headers=PROTOBUF)
    assert r.status_code == 201, r.text
    stored = (await client.get(f"{PODTEMPLATES}/batch")).json()
    assert stored["template"]["metadata"]["labels"] == {"tier": "batch"}
    pod = stored["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["containers"][0]["imagePullPolicy"]) == (
        "Always", "ClusterFirst", "IfNotPresent")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_reads_protobuf_written_rcs_and_pod_templates(real_app: App, tmp_path: Path) -> None:
    async with kubectl_for(real_app, tmp_path) as kubectl:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=real_app), base_url="http://kubeloop") as http:
            r = await http.post(RCS, content=rc_body("web", labels={"app": "web"}, replicas=3), headers=PROTOBUF)
            assert r.status_code == 201, r.text
            raw = pb(1, pb(1, "batch")) + pb(2, template({"tier": "batch"}))
            r = await http.post(PODTEMPLATES, content=envelope("PodTemplate", raw), headers=PROTOBUF)
            assert r.status_code == 201, r.text
        rc = json.loads(await kubectl("get", "rc", "web", "-o", "json"))
        rows = (await kubectl("get", "rc,podtemplates", "--no-headers")).splitlines()
    assert rc["spec"]["replicas"] == 3 and rc["spec"]["selector"] == {"app": "web"}
    assert rc["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert rows[0].split()[:4] == ["replicationcontroller/web", "3", "0", "0"]
    assert rows[1].split()[:4] == ["podtemplate/batch", "nginx", "nginx:1.25", "tier=batch"]
