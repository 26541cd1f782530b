"""ValidatingAdmissionPolicy with real clients: kubectl (apply, get, create deployment refused) and ``kubernetes``.

The refusal kubectl prints is upstream's (the Kubernetes docs' "Validating Admission Policy" walk-through
shows ``error: failed to create deployment: deployments.apps "nginx" is forbidden: ValidatingAdmissionPolicy
'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression:
object.spec.replicas <= 5``); the table columns are k/k ``pkg/printers/internalversion/printers.go``'s.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeloop.server import App

from ._uvicorn import Kubectl, serve, write_kubeconfig

POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding-test.example.com
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_applies_a_policy_and_create_deployment_is_refused_with_its_message(
    real_app: App, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = Kubectl(kubeconfig)
    async with serve(real_app) as url:
        write_kubeconfig(kubeconfig, url)
        await kubectl.run("create", "namespace", "test")
        await kubectl.run("label", "namespace", "test", "environment=test")
        _, applied, _ = await kubectl.run("apply", "-f", "-", stdin=POLICY.encode())
        assert applied.split("\n")[:2] == [
            "validatingadmissionpolicy.admissionregistration.k8s.io/demo-policy.example.com created",
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/demo-binding-test.example.com created"]
        code, _, err = await kubectl.run("create", "deployment", "nginx", "--image=nginx", "--replicas=6",
                                         "-n", "test", ok=False)
        assert code == 1
        assert err.strip() == (
            'error: failed to create deployment: deployments.apps "nginx" is forbidden: ValidatingAdmissionPolicy '
            "'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed "
            "expression: object.spec.replicas <= 5")
        # The binding's namespace selector leaves other namespaces alone; 5 replicas pass in "test".
        await kubectl.run("create", "deployment", "nginx", "--image=nginx", "--replicas=6")
        await kubectl.run("create", "deployment", "nginx", "--image=nginx", "--replicas=5", "-n", "test")
        _, table, _ = await kubectl.run("get", "validatingadmissionpolicies", "--no-headers")
        assert table.split()[:3] == ["demo-policy.example.com", "1", "<unset>"]
        _, table, _ = await kubectl.run("get", "validatingadmissionpolicybindings")
        assert table.splitlines()[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
        assert table.splitlines()[1].split()[:3] == ["demo-binding-test.example.com", "demo-policy.example.com",
                                                     "<unset>"]
        _, shown, _ = await kubectl.run("get", "validatingadmissionpolicy", "demo-policy.example.com", "-o", "json")
        assert json.loads(shown)["spec"]["failurePolicy"] == "Fail"
        # A server-side dry run of an edit is judged too (a patch: "deployments" does not match deployments/scale).
        code, _, err = await kubectl.run("patch", "deployment", "nginx", "-n", "test", "-p",
                                         '{"spec": {"replicas": 9}}', "--dry-run=server", ok=False)
        assert code == 1 and "denied request: failed expression: object.spec.replicas <= 5" in err


def _policy_round_trip(url: str) -> tuple[Any, Any, ApiException, ApiException]:
    with k8s.ApiClient(k8s.Configuration(host=url)) as api_client:
        admission = k8s.AdmissionregistrationV1Api(api_client)
        created = admission.create_validating_admission_policy(k8s.V1ValidatingAdmissionPolicy(
            metadata=k8s.V1ObjectMeta(name="labels"),
            spec=k8s.V1ValidatingAdmissionPolicySpec(
                match_constraints=k8s.V1MatchResources(resource_rules=[k8s.V1NamedRuleWithOperations(
                    api_groups=[""], api_versions=["v1"], operations=["CREATE"], resources=["configmaps"])]),
                variables=[k8s.V1Variable(name="owner", expression="has(object.metadata.labels) && 'owner' in object.metadata.labels ? "
                                                                     "object.metadata.labels.owner : ''")],
                validations=[k8s.V1Validation(expression="variables.owner != ''", reason="Forbidden",
                                              message_expression="'configmap ' + object.metadata.name + ' has no owner'")])))
        admission.create_validating_admission_policy_binding(k8s.V1ValidatingAdmissionPolicyBinding(
            metadata=k8s.V1ObjectMeta(name="labels"),
            spec=k8s.V1ValidatingAdmissionPolicyBindingSpec(policy_name="labels", validation_actions=["Deny"])))
        read = admission.read_validating_admission_policy("labels")
        core = k8s.CoreV1Api(api_client)
        core.create_namespaced_config_map("default", {"metadata": {"name": "owned", "labels": {"owner": "me"}}})
        try:
            core.create_namespaced_config_map("default", {"metadata": {"name": "orphan"}})
        except ApiException as error:
            refused = error
        else:
            raise AssertionError("the configmap without an owner was created")
        try:
            admission.create_validating_admission_policy({
                "metadata": {"name": "broken"}, "spec": {
                    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                            "operations": ["CREATE"], "resources": ["pods"]}]},
                    "validations": [{"expression": "object.spec.("}]}})
        except ApiException as error:
            invalid = error
        else:
            raise AssertionError("a policy that does not compile was created")
        return created, read, refused, invalid


async def test_the_kubernetes_client_writes_policies_and_sees_the_refusal(real_app: App) -> None:
    async with serve(real_app) as url:
        created, read, refused, invalid = await asyncio.to_thread(_policy_round_trip, url)
    assert created.spec.failure_policy == "Fail"
    assert created.spec.match_constraints.match_policy == "Equivalent"
    assert read.metadata.generation == 1
    assert refused.status == 403
    assert json.loads(refused.body)["message"] == (
        "configmaps \"orphan\" is forbidden: ValidatingAdmissionPolicy 'labels' with binding 'labels' denied "
        "request: configmap orphan has no owner")
    assert invalid.status == 422
    assert json.loads(invalid.body)["details"]["causes"][0]["field"] == "spec.validations[0].expression"


WARN_ON_DELETE = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: keep-config
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["DELETE"]
      resources: ["configmaps"]
  validations:
  - expression: "false"
    messageExpression: "'deleting ' + oldObject.metadata.name"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: keep-config
spec:
  policyName: keep-config
  validationActions: [Warn]
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_delete_prints_the_warn_actions_warning(real_app: App, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubectl = Kubectl(kubeconfig)
    async with serve(real_app) as url:
        write_kubeconfig(kubeconfig, url)
        await kubectl.run("apply", "-f", "-", stdin=WARN_ON_DELETE.encode())
        await kubectl.run("create", "configmap", "settings", "--from-literal=a=b")
        _, out, err = await kubectl.run("delete", "configmap", "settings")
        assert out.strip() == 'configmap "settings" deleted'
        assert err.strip() == ("Warning: Validation failed for ValidatingAdmissionPolicy 'keep-config' with binding "
                               "'keep-config': deleting settings")
