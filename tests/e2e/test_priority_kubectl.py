"""PriorityClasses and pod priority with kubectl 1.32 against ``kubeloop up``: ``get pc``, ``create
priorityclass`` (a protobuf body), a pod of a class, the Priority admission plugin's refusals. The
cluster is shared, so no test here makes a class the global default (it would reach every pod).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._kubectl import Kubectl, table, unique

pytestmark = pytest.mark.slow


@pytest.fixture
def kc(cluster: Any, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def _pod(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec}}


def test_get_pc_lists_the_system_classes_with_upstreams_columns(kc: Kubectl) -> None:
    rows = table(kc("get", "pc").stdout)
    assert rows[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    by_name = {r[0]: r for r in rows[1:]}
    assert [by_name["system-node-critical"][i] for i in (1, 2, 4)] == ["2000001000", "false", "PreemptLowerPriority"]
    assert [by_name["system-cluster-critical"][i] for i in (1, 2, 4)] == ["2000000000", "false",
                                                                          "PreemptLowerPriority"]
    explained = kc("explain", "priorityclass.preemptionPolicy").stdout
    assert "KIND:       PriorityClass" in explained and "FIELD: preemptionPolicy <string>" in explained
    resources = {r[0]: r for r in table(kc("api-resources", "--api-group=scheduling.k8s.io").stdout)[1:]}
    assert resources["priorityclasses"] == ["priorityclasses", "pc", "scheduling.k8s.io/v1", "false",
                                            "PriorityClass"]


def test_create_priorityclass_then_a_pod_of_it_gets_its_priority(kc: Kubectl, namespace: str) -> None:
    name = unique("batch")
    out = kc("create", "priorityclass", name, "--value=500", "--description=batch jobs",
             "--preemption-policy=Never").stdout
    assert out.strip() == f"priorityclass.scheduling.k8s.io/{name} created"
    stored = kc.api(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
    assert (stored["value"], stored["preemptionPolicy"], stored["description"]) == (500, "Never", "batch jobs")
    row = table(kc("get", "priorityclass", name).stdout)[1]
    assert [row[0], row[1], row[2], row[4]] == [name, "500", "false", "Never"]
    described = kc("describe", "priorityclass", name).stdout
    assert "Value:" in described and "500" in described and "Never" in described

    kc("apply", "-f", kc.write("pod.yaml", _pod("worker", namespace, priorityClassName=name)))
    printed = kc("get", "pod", "worker", "-n", namespace,
                 "-o", "jsonpath={.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}").stdout
    assert printed == f"{name} 500 Never"
    # Applying the same manifest again changes nothing (the stored priority is kept on update).
    assert kc("apply", "-f", kc.write("pod.yaml", _pod("worker", namespace, priorityClassName=name))).stdout.strip() \
        == "pod/worker unchanged"


def test_pod_without_a_class_gets_priority_zero(kc: Kubectl, namespace: str) -> None:
    kc("run", "plain", "-n", namespace, "--image=nginx:1.27")
    printed = kc("get", "pod", "plain", "-n", namespace, "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy}")
    assert printed.stdout == "0 PreemptLowerPriority"


def test_unknown_class_and_a_hand_set_priority_are_refused(kc: Kubectl, namespace: str) -> None:
    result = kc("apply", "-f", kc.write("pod.yaml", _pod("ghost", namespace, priorityClassName="no-such-class")),
                check=False)
    assert result.returncode == 1
    assert 'pods "ghost" is forbidden: no PriorityClass with name no-such-class was found' in result.stderr
    result = kc("apply", "-f", kc.write("pod.yaml", _pod("pinned", namespace, priority=99)), check=False)
    assert result.returncode == 1
    assert ("the integer value of priority (99) must not be provided in pod spec; "
            "priority admission controller computed 0 from the given PriorityClass name") in result.stderr


def test_system_classes_cannot_be_deleted_or_imitated(kc: Kubectl) -> None:
    result = kc("delete", "pc", "system-cluster-critical", check=False)
    assert result.returncode == 1
    assert ('Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-cluster-critical" is forbidden: '
            "this is a system priority class and cannot be deleted") in result.stderr
    result = kc("create", "priorityclass", "system-mine", "--value=1", check=False)
    assert result.returncode == 1
    assert "priority class names with 'system-' prefix are reserved for system use only" in result.stderr
    result = kc("create", "priorityclass", unique("huge"), "--value=1000000001", check=False)
    assert "maximum allowed value of a user defined priority is 1000000000" in result.stderr


def test_server_side_apply_of_a_class_changes_its_description_but_not_its_value(kc: Kubectl) -> None:
    name = unique("ssa")
    manifest = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": 42, "description": "first"}
    assert kc("apply", "--server-side", "-f", kc.write("pc.yaml", manifest)).stdout.strip() == \
        f"priorityclass.scheduling.k8s.io/{name} serverside-applied"
    kc("apply", "--server-side", "-f", kc.write("pc.yaml", {**manifest, "description": "second"}))
    stored = kc.api(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
    assert (stored["description"], stored["value"], stored["metadata"]["generation"]) == ("second", 42, 1)
    result = kc("apply", "--server-side", "-f", kc.write("pc.yaml", {**manifest, "value": 43}), check=False)
    assert result.returncode == 1
    assert "value: Forbidden: may not be changed in an update." in result.stderr
