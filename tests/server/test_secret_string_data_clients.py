"""kubectl and the official ``kubernetes`` client read back a Secret written with ``stringData`` as a real
cluster answers it: ``data`` only, each value the base64 of the string (k/k ``pkg/apis/core/v1/conversion.go``
``Convert_v1_Secret_To_core_Secret``), and a bad base64 value refused with the decoder's 400."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from kubeloop.server import App

from ._uvicorn import kubectl_for, serve

MANIFEST = """apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: s3cr3t pass
  user: admin
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_apply_of_string_data_then_get_shows_data_only(real_app: App, tmp_path: Path) -> None:
    manifest = tmp_path / "secret.yaml"
    manifest.write_text(MANIFEST)
    async with kubectl_for(real_app, tmp_path) as kubectl:
        assert (await kubectl("apply", "-f", str(manifest))).strip() == "secret/db created"
        shown = await kubectl("get", "secret", "db", "-o", "yaml")
        first = json.loads(await kubectl("get", "secret", "db", "-o", "json", "--show-managed-fields"))
        password = await kubectl("get", "secret", "db", "-o", "jsonpath={.data.password}")
        # kubectl's client-side apply diffs against the last-applied annotation (which keeps stringData) and
        # the live object (which has none): it sends stringData again, and the result is what is stored.
        await kubectl("apply", "-f", str(manifest))
        second = json.loads(await kubectl("get", "secret", "db", "-o", "json"))
    assert "stringData:" not in shown.split("metadata:")[0] and "\ndata:\n" in "\n" + shown
    assert "stringData" not in first
    assert base64.b64decode(password) == b"s3cr3t pass"
    assert first["data"] == {"password": base64.b64encode(b"s3cr3t pass").decode(),
                             "user": base64.b64encode(b"admin").decode()}
    last_applied = json.loads(first["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last_applied["stringData"] == {"password": "s3cr3t pass", "user": "admin"}
    assert second["data"] == first["data"] and "stringData" not in second
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"], "a no-op write stores nothing"
    owned = [e["fieldsV1"] for e in first["metadata"]["managedFields"]]
    assert all("f:stringData" not in f for f in owned) and any("f:data" in f for f in owned)


def _with_kubernetes_client(url: str) -> tuple[dict[str, Any], int, str]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        core = k8s.CoreV1Api(api_client)
        core.create_namespaced_secret("default", k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(name="token"), string_data={"token": "abc"}, type="Opaque"))
        read = core.read_namespaced_secret("token", "default")
        answered = {"data": read.data, "string_data": read.string_data}
        try:
            core.create_namespaced_secret("default", {"metadata": {"name": "bad"}, "data": {"k": "not base64"}})
        except k8s.ApiException as err:
            return answered, err.status, json.loads(err.body)["message"]
    raise AssertionError("the bad Secret was accepted")


async def test_kubernetes_client_reads_string_data_back_as_data(real_app: App) -> None:
    async with serve(real_app) as url:
        answered, status, message = await asyncio.to_thread(_with_kubernetes_client, url)
    assert answered == {"data": {"token": base64.b64encode(b"abc").decode()}, "string_data": None}
    assert (status, message) == (
        400, 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3')


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_server_side_apply_of_string_data_owns_string_data_keys(real_app: App, tmp_path: Path) -> None:
    """``kubectl apply --server-side``: the applier owns ``f:stringData`` keys (structuredmerge.go computes the
    field set before the conversion folds stringData into data), and a key dropped from the manifest stays in
    ``data`` (kubernetes/kubernetes#108008)."""
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(MANIFEST)
    second.write_text(MANIFEST.replace("  user: admin\n", ""))
    async with kubectl_for(real_app, tmp_path) as kubectl:
        assert (await kubectl("apply", "--server-side", "-f", str(first))).strip() == "secret/db serverside-applied"
        applied = json.loads(await kubectl("get", "secret", "db", "-o", "json", "--show-managed-fields"))
        await kubectl("apply", "--server-side", "-f", str(second))
        after = json.loads(await kubectl("get", "secret", "db", "-o", "json", "--show-managed-fields"))
    owned = {e["manager"]: e["fieldsV1"] for e in applied["metadata"]["managedFields"]}
    assert owned == {"kubectl": {"f:stringData": {"f:password": {}, "f:user": {}}}}
    assert applied["data"] == {"password": base64.b64encode(b"s3cr3t pass").decode(),
                               "user": base64.b64encode(b"admin").decode()}
    assert after["data"] == applied["data"] and "stringData" not in after
    assert {e["manager"]: e["fieldsV1"] for e in after["metadata"]["managedFields"]} == {
        "kubectl": {"f:stringData": {"f:password": {}}}}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_create_of_a_null_data_value_reads_it_back_empty(real_app: App, tmp_path: Path) -> None:
    """``data: {a: null}`` sent by ``kubectl create -f``: upstream's protobuf storage reads the nil ``[]byte``
    back as an empty one, ``""`` (see test_secret_null_data.py)."""
    manifest = tmp_path / "nulls.yaml"
    manifest.write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: nulls\ndata:\n  a: null\n  b: eA==\n")
    async with kubectl_for(real_app, tmp_path) as kubectl:
        created = json.loads(await kubectl("create", "-f", str(manifest), "-o", "json"))
        read = json.loads(await kubectl("get", "secret", "nulls", "-o", "json"))
    assert created["data"] == read["data"] == {"a": "", "b": "eA=="}
