"""/openapi/v3 lists the one-operation subresources discovery lists, as upstream 1.32's spec has them.

Upstream ``api/openapi-spec/v3/api__v1_openapi.json`` (1.32): ``/api/v1/namespaces/{namespace}/pods/{name}/eviction``
(POST ``createCoreV1NamespacedPodEviction``, policy/v1 Eviction in and out), ``.../pods/{name}/binding``
(POST ``createCoreV1NamespacedPodBinding``, v1 Binding), ``.../serviceaccounts/{name}/token`` (POST
``createCoreV1NamespacedServiceAccountToken``, authentication.k8s.io/v1 TokenRequest) and
``/api/v1/namespaces/{name}/finalize`` (PUT ``replaceCoreV1NamespaceFinalize``, Namespace). Each path
carries dryRun, fieldManager, fieldValidation, name ("name of the <kind it takes>"), namespace and pretty;
POST answers 200/201/202, PUT 200/201; ``x-kubernetes-action`` is the method and
``x-kubernetes-group-version-kind`` the kind the operation takes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from kubeloop.api import KindRegistry, SystemClock
from kubeloop.server import App, create_app
from kubeloop.server._discovery import api_resource_list
from kubeloop.server._openapi import OpenAPIDocuments
from kubeloop.store import SqliteStore

from ._uvicorn import serve

COMPONENTS = "#/components/schemas/"
EXPECTED = {
    "/api/v1/namespaces/{namespace}/pods/{name}/eviction": (
        "post", "createCoreV1NamespacedPodEviction", "create eviction of a Pod", "io.k8s.api.policy.v1.Eviction",
        {"group": "policy", "version": "v1", "kind": "Eviction"}, ["200", "201", "202", "401"]),
    "/api/v1/namespaces/{namespace}/pods/{name}/binding": (
        "post", "createCoreV1NamespacedPodBinding", "create binding of a Pod", "io.k8s.api.core.v1.Binding",
        {"group": "", "version": "v1", "kind": "Binding"}, ["200", "201", "202", "401"]),
    "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token": (
        "post", "createCoreV1NamespacedServiceAccountToken", "create token of a ServiceAccount",
        "io.k8s.api.authentication.v1.TokenRequest",
        {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}, ["200", "201", "202", "401"]),
    "/api/v1/namespaces/{name}/finalize": (
        "put", "replaceCoreV1NamespaceFinalize", "replace finalize of the specified Namespace",
        "io.k8s.api.core.v1.Namespace", {"group": "", "version": "v1", "kind": "Namespace"}, ["200", "201", "401"]),
}


def core_document() -> dict[str, Any]:
    response = OpenAPIDocuments(KindRegistry()).respond("/openapi/v3/api/v1", {}, {})
    assert response.status == 200
    parsed: dict[str, Any] = orjson.loads(response.body)
    return parsed


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_the_one_operation_subresources_are_paths_with_upstreams_operation(path: str) -> None:
    method, op_id, description, schema, gvk, codes = EXPECTED[path]
    doc = core_document()
    entry = doc["paths"][path]
    assert sorted(entry) == ["parameters", method]
    op = entry[method]
    assert (op["operationId"], op["description"], op["x-kubernetes-action"]) == (op_id, description, method)
    assert op["x-kubernetes-group-version-kind"] == gvk
    assert op["requestBody"]["content"]["application/json"]["schema"] == {"$ref": COMPONENTS + schema}
    assert sorted(op["responses"]) == codes
    assert all(op["responses"][c]["content"]["application/json"]["schema"] == {"$ref": COMPONENTS + schema}
               for c in codes if c != "401")
    params = {p["name"]: p for p in entry["parameters"]}
    namespaced = "{namespace}" in path
    assert sorted(params) == sorted(["dryRun", "fieldManager", "fieldValidation", "name", "pretty",
                                     *(["namespace"] if namespaced else [])])
    assert params["name"]["description"] == f"name of the {gvk['kind']}" and params["name"]["in"] == "path"
    # The schema it references is in the document, with its own group/version/kind.
    assert doc["components"]["schemas"][schema]["x-kubernetes-group-version-kind"] == [gvk]


def test_every_subresource_discovery_lists_has_a_path_in_its_document() -> None:
    kinds = KindRegistry()
    docs = OpenAPIDocuments(kinds)
    for group, version in sorted(kinds.group_versions()):
        listed = api_resource_list(kinds, group, version)
        assert listed is not None
        gv = f"apis/{group}/{version}" if group else f"api/{version}"
        paths = orjson.loads(docs.respond(f"/openapi/v3/{gv}", {}, {}).body)["paths"]
        for resource in listed["resources"]:
            if "/" not in resource["name"]:
                continue
            plural, sub = resource["name"].split("/")
            scope = "/namespaces/{namespace}" if resource["namespaced"] else ""
            assert f"/{gv}{scope}/{plural}/{{name}}/{sub}" in paths, resource["name"]


def kubectl(url: str, home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--server", url, *args], input=stdin, capture_output=True, text=True,
                          env={"HOME": str(home), "KUBECONFIG": str(home / "none"), "PATH": "/usr/bin:/bin:/usr/local/bin"},
                          check=False, timeout=120)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_explain_and_create_token_work_with_the_new_paths(store: SqliteStore, tmp_path: Path) -> None:
    app: App = create_app(store=store, clock=SystemClock())  # kubectl times its requests on the wall clock
    async with serve(app) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            assert "createCoreV1NamespacedPodEviction" in (await http.get("/openapi/v3/api/v1")).text

        def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return kubectl(url, tmp_path, *args, stdin=stdin)

        created = await asyncio.to_thread(run, "create", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot", "namespace": "default"}}))
        assert created.returncode == 0, created.stderr
        token = await asyncio.to_thread(run, "create", "token", "robot", "-n", "default")
        assert token.returncode == 0, token.stderr
        claims = json.loads(base64.urlsafe_b64decode(token.stdout.split(".")[1] + "=="))
        assert claims["sub"] == "system:serviceaccount:default:robot"
        explained = await asyncio.to_thread(run, "explain", "pods.spec.serviceAccountName")
        assert explained.returncode == 0, explained.stderr
        assert "KIND:       Pod" in explained.stdout and "FIELD: serviceAccountName <string>" in explained.stdout
        namespace = await asyncio.to_thread(run, "explain", "namespace.spec.finalizers")
        assert namespace.returncode == 0 and "FIELD: finalizers <[]string>" in namespace.stdout, namespace.stderr
