"""kubectl against ``kubeloop up``: ``apply``/``create -f`` of a ``kind: List``, validated on the client.

Upstream: cli-runtime ``query_param_verifier_v3.go`` reports ``v1/List`` unsupported for server-side
field validation, so kubectl (``pkg/validation/schema.go``, ``paramVerifyingSchema``) validates each item
itself against ``/openapi/v2`` read as gnostic protobuf (client-go ``discovery.OpenAPISchema``). Before
``/openapi/v2`` was served, every such command failed with ``error validating data: the server could
not find the requested resource``. Unknown fields are reported by kube-openapi
``pkg/util/proto/validation`` as ``ValidationError(<path>): unknown field "<f>" in <definition>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow

HINT = "; if you choose to ignore these errors, turn validation off with --validate=false"


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def config_map(name: str, namespace: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"k": "v"}, **extra}


def as_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_apply_and_create_of_a_list_are_validated_and_applied(kc: Kubectl, namespace: str) -> None:
    a, b, c = unique("a"), unique("b"), unique("c")
    kc("apply", "-f", kc.write("apply.yaml", as_list(config_map(a, namespace), config_map(b, namespace))))
    assert kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{a}")["data"] == {"k": "v"}
    kc("create", "-f", kc.write("create.yaml", as_list(config_map(c, namespace))))
    assert kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{c}")["data"] == {"k": "v"}
    changed = config_map(b, namespace)
    changed["data"] = {"k": "w"}
    # b was applied client-side: taking .data.k over is a conflict, as upstream, hence the force.
    kc("apply", "--server-side", "--force-conflicts", "-f", kc.write("ssa.yaml", as_list(changed)))
    assert kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{b}")["data"] == {"k": "w"}
    # The round trip the task started from: what `get -o yaml` prints applies again.
    listed = kc("get", "cm", "-n", namespace, "-o", "yaml").stdout
    path = kc.home / "listed.yaml"
    path.write_text(listed)
    result = kc("apply", "-f", str(path))
    assert f"configmap/{a}" in result.stdout


def test_a_list_item_with_an_unknown_field_is_refused_by_kubectl(kc: Kubectl, namespace: str) -> None:
    name = unique("bad")
    body = kc.write("bad.yaml", as_list(config_map(name, namespace, foo="bar")))
    for command in (("apply", "-f", body), ("create", "-f", body), ("apply", "--server-side", "-f", body)):
        result = kc(*command, check=False)
        assert result.returncode != 0, command
        assert result.stderr.strip() == (
            f'error: error validating "{body}": error validating data: ValidationError(ConfigMap): '
            f'unknown field "foo" in io.k8s.api.core.v1.ConfigMap{HINT}'), command
    assert kc.api_status(f"/api/v1/namespaces/{namespace}/configmaps/{name}") == 404
    # --validate=false sends it; the server drops the unknown field (fieldValidation=Ignore).
    kc("apply", "--validate=false", "-f", body)
    assert "foo" not in kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{name}")


def test_a_custom_resource_in_a_list_is_checked_against_its_crd(kc: Kubectl, namespace: str) -> None:
    group = f"{unique('g')}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"sprockets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "sprockets", "kind": "Sprocket", "singular": "sprocket"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "teeth": {"type": "integer"},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}}]}}
    kc("apply", "-f", kc.write("crd.yaml", crd))
    kc("wait", "--for=condition=Established", f"crd/sprockets.{group}", "--timeout=60s")

    def sprocket(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": f"{group}/v1", "kind": "Sprocket",
                "metadata": {"name": name, "namespace": namespace}, "spec": spec}

    good = unique("s")
    kc("apply", "-f", kc.write("good.yaml", as_list(sprocket(good, {"teeth": 12, "extra": {"any": {"thing": 1}}}))))
    assert kc.api(f"/apis/{group}/v1/namespaces/{namespace}/sprockets/{good}")["spec"]["teeth"] == 12

    bad = unique("s")
    definition = ".".join([*reversed(group.split(".")), "v1", "Sprocket"])
    body = kc.write("bad.yaml", as_list(sprocket(bad, {"teeth": 3, "cogs": 1})))
    result = kc("apply", "-f", body, check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        f'error: error validating "{body}": error validating data: ValidationError(Sprocket.spec): '
        f'unknown field "cogs" in {definition}.spec{HINT}')
    wrong_type = kc.write("type.yaml", as_list(sprocket(bad, {"teeth": "many"})))
    result = kc("create", "-f", wrong_type, check=False)
    assert result.returncode != 0
    assert (f'ValidationError(Sprocket.spec.teeth): invalid type for {definition}.spec.teeth: '
            'got "string", expected "integer"') in result.stderr
    assert kc.api_status(f"/apis/{group}/v1/namespaces/{namespace}/sprockets/{bad}") == 404
