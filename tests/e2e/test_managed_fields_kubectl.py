"""kubectl against ``kubeloop up``: what mutating admission adds is no manager's, and warnings come with errors.

Upstream: apiserver ``handlers/create.go`` records managedFields (``FieldManager.UpdateNoErrors``) before
mutating admission, so a pod made by ``kubectl create`` shows ``kubectl-create`` owning what it sent and
the decode-time defaults, not DefaultTolerationSeconds' tolerations or Priority's ``spec.priority``, and
another manager's server-side apply of those fields does not conflict. ``endpoints/filters/warning.go``
adds each ``Warning`` header as it is recorded, so kubectl prints ``Warning:`` lines for a write that
then fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, configmap, unique

pytestmark = pytest.mark.slow
ADVICE = ("API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; "
          "please fix your requests; duplicate UID(s) observed: ")
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def pod(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}


def test_kubectl_create_owns_what_it_sent_not_what_admission_added(kc: Kubectl, namespace: str) -> None:
    name = unique("pod")
    kc("create", "-f", kc.write("pod.yaml", pod(name, namespace)))
    shown = kc("get", "pod", name, "-n", namespace, "-o", "json", "--show-managed-fields")
    live = json.loads(shown.stdout)
    assert live["spec"]["tolerations"] == DEFAULT_TOLERATIONS and live["spec"]["priority"] == 0
    (created,) = [e for e in live["metadata"]["managedFields"] if e["manager"] == "kubectl-create"]
    spec = created["fieldsV1"]["f:spec"]
    assert "f:restartPolicy" in spec and "f:dnsPolicy" in spec  # decode-time defaults are the creator's
    assert "f:tolerations" not in spec and "f:priority" not in spec and "f:preemptionPolicy" not in spec
    # Another manager changes the tolerations (adding one is allowed on a pod): no conflict with the creator.
    extra = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
              "spec": {"tolerations": [*DEFAULT_TOLERATIONS, extra]}}
    result = kc("apply", "--server-side", "--field-manager=tolerator", "-f", kc.write("tolerations.yaml", config))
    assert result.stdout.strip() == f"pod/{name} serverside-applied"
    stored = kc.api(f"/api/v1/namespaces/{namespace}/pods/{name}")
    assert stored["spec"]["tolerations"] == [*DEFAULT_TOLERATIONS, extra]
    owners = [e["manager"] for e in stored["metadata"]["managedFields"] if "f:tolerations" in e["fieldsV1"].get("f:spec", {})]
    assert owners == ["tolerator"]


def test_kubectl_prints_the_warnings_of_a_create_that_fails(kc: Kubectl, namespace: str) -> None:
    name = unique("bad")
    owner = kc.post(f"/api/v1/namespaces/{namespace}/configmaps", configmap(unique("owner"), namespace))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    bad = configmap(name, namespace, a="1")
    bad["metadata"]["ownerReferences"] = [ref, dict(ref)]
    bad["metadata"]["labels"] = {"tier": "not valid!"}
    result = kc("create", "-f", kc.write("bad.yaml", bad), check=False)
    assert result.returncode != 0
    assert f"Warning: .metadata.ownerReferences contains duplicate entries; {ADVICE}{ref['uid']}" in result.stderr
    assert f'The ConfigMap "{name}" is invalid' in result.stderr
    assert kc.api_status(f"/api/v1/namespaces/{namespace}/configmaps/{name}") == 404
    # fieldValidation=Warn (kubectl --validate=warn): the unknown field's warning, then the 422.
    bad = configmap(name, namespace, a="1")
    bad["metadata"]["labels"] = {"tier": "not valid!"}
    bad["surprise"] = True
    result = kc("create", "--validate=warn", "-f", kc.write("unknown.yaml", bad), check=False)
    assert result.returncode != 0
    assert 'Warning: unknown field "surprise"' in result.stderr
    assert f'The ConfigMap "{name}" is invalid' in result.stderr


def test_kubectl_server_side_apply_of_the_same_values_shares_ownership(kc: Kubectl, namespace: str) -> None:
    # fieldmanager/equality.go IgnoreManagedFieldsTimestampsTransformer: only a change of the entries' times is
    # no write; a second applier of the same value is stored as a co-owner, and the first can no longer
    # change the value alone.
    name = unique("cm")
    path = kc.write("cm.yaml", configmap(name, namespace, a="1"))
    kc("apply", "--server-side", "--field-manager=one", "-f", path)
    first = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    kc("apply", "--server-side", "--field-manager=two", "-f", path)
    second = kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    owners = sorted(e["manager"] for e in second["metadata"]["managedFields"] if "f:a" in e["fieldsV1"].get("f:data", {}))
    assert owners == ["one", "two"]
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    kc("apply", "--server-side", "--field-manager=two", "-f", path)  # the same again: no write
    assert kc.api(f"/api/v1/namespaces/{namespace}/configmaps/{name}")["metadata"]["resourceVersion"] == (
        second["metadata"]["resourceVersion"])
    changed = kc("apply", "--server-side", "--field-manager=one", "-f",
                 kc.write("cm2.yaml", configmap(name, namespace, a="2")), check=False)
    assert changed.returncode != 0 and 'conflict with "two"' in changed.stderr
