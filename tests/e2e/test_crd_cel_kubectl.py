"""CRD validation rules (``x-kubernetes-validations``, kubebuilder's ``+kubebuilder:validation:XValidation``)
with real clients against ``kubeloop up``: kubectl 1.32 and the official ``kubernetes`` package.

Upstream (1.32): k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/cel/validation.go`` (a failed rule
is ``<path>: Invalid value: "object": <message>``), ``pkg/apis/apiextensions/validation/validation.go``
(a rule that does not compile refuses the CRD); kubectl's ``StandardErrorMessage`` prints a 422 as
``The <Kind> "<name>" is invalid: <causes>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from ._kubectl import Kubectl, unique

pytestmark = pytest.mark.slow
GROUP = "cel.kubeloop.test"


def rules_crd(rule: str = "self.replicas <= self.maxReplicas") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{
                     "name": "v1", "served": True, "storage": True,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object",
                                  "x-kubernetes-validations": [
                                      {"rule": rule, "message": "replicas must not exceed maxReplicas"},
                                      {"rule": "self.tier == oldSelf.tier", "message": "tier is immutable"}],
                                  "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                                                 "tier": {"type": "string"}}}}}},
                 }]},
    }  # fmt: skip


@pytest.fixture(scope="module")
def gadgets(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    kc = Kubectl(cluster, tmp_path_factory.mktemp("cel-crd-home"))
    out = kc("apply", "-f", kc.write("crd.yaml", rules_crd())).stdout
    assert out.strip() == f"customresourcedefinition.apiextensions.k8s.io/gadgets.{GROUP} created"
    kc("wait", "--for=condition=Established", f"crd/gadgets.{GROUP}", "--timeout=30s")
    yield GROUP


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def gadget(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "maxReplicas": 3, "tier": "gold", **spec}}


def test_kubectl_apply_of_an_object_a_rule_refuses(kc: Kubectl, namespace: str, gadgets: str) -> None:
    name = unique("g")
    result = kc("apply", "-f", kc.write("bad.yaml", gadget(name, namespace, replicas=9)), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'The Gadget "{name}" is invalid: spec: Invalid value: "object": replicas must not exceed maxReplicas')
    assert kc.api_status(f"/apis/{gadgets}/v1/namespaces/{namespace}/gadgets/{name}") == 404
    assert kc("apply", "-f", kc.write("ok.yaml", gadget(name, namespace))).stdout.strip() == f"gadget.{gadgets}/{name} created"
    # A transition rule: the stored tier is oldSelf's.
    changed = kc("apply", "-f", kc.write("tier.yaml", gadget(name, namespace, tier="silver")), check=False)
    assert changed.returncode == 1
    assert changed.stderr.strip().endswith('spec: Invalid value: "object": tier is immutable')
    patched = kc("patch", f"gadgets.{gadgets}", name, "-n", namespace, "--type=merge", "-p", json.dumps({"spec": {"maxReplicas": 5}}))
    assert patched.stdout.strip() == f"gadget.{gadgets}/{name} patched"


def test_kubectl_apply_of_a_crd_whose_rule_does_not_compile(kc: Kubectl) -> None:
    body = rules_crd("self.replicas <= self.maxReplica")
    body["metadata"]["name"] = f"widgets.{GROUP}"
    body["spec"]["names"] = {"plural": "widgets", "singular": "widget", "kind": "Widget"}
    result = kc("apply", "-f", kc.write("crd.yaml", body), check=False)
    assert result.returncode == 1
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert result.stderr.startswith(
        f'The CustomResourceDefinition "widgets.{GROUP}" is invalid: {at}: Invalid value: '
        'apiextensions.ValidationRule{Rule:"self.replicas <= self.maxReplica", Message:"replicas must not exceed '
        'maxReplicas", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
        "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:22: undefined field 'maxReplica'")
    assert kc.api_status(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}") == 404


def test_kubernetes_package_sees_the_422_body(cluster: Any, namespace: str, gadgets: str) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        custom = k8s.CustomObjectsApi(api_client)
        with pytest.raises(ApiException) as refused:
            custom.create_namespaced_custom_object(gadgets, "v1", namespace, "gadgets",
                                                   gadget("py", namespace, replicas=4))
        assert refused.value.status == 422
        status = json.loads(refused.value.body)
        assert status["reason"] == "Invalid" and status["details"]["kind"] == "Gadget"
        assert status["message"] == (
            'Gadget.cel.kubeloop.test "py" is invalid: spec: Invalid value: "object": '
            "replicas must not exceed maxReplicas")
        assert status["details"]["causes"] == [
            {"reason": "FieldValueInvalid", "field": "spec",
             "message": 'Invalid value: "object": replicas must not exceed maxReplicas'}]
        created = custom.create_namespaced_custom_object(gadgets, "v1", namespace, "gadgets", gadget("py", namespace))
        assert created["spec"]["replicas"] == 1
    finally:
        api_client.close()
