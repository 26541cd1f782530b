"""The DaemonSet controller's per-node decisions as pure functions (k/k ``pkg/controller/daemon`` 1.32:
``NodeShouldRunDaemonPod``, ``util.AddOrUpdateDaemonPodTolerations``, ``GetScaledValueFromIntOrPercent``
as ``SurgeCount``/``UnavailableCount`` use it, ``flowcontrol.Backoff`` as the failed-pod backoff)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.controllers._daemonset_util import (
    FailedPodBackoff,
    add_daemon_tolerations,
    is_pod_updated,
    pod_template,
    should_run,
    surge_count,
    target_node,
    template_generation,
    unavailable_count,
)


def ds(pod_spec: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "d", "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], **(pod_spec or {})}}, **spec}}


def node(name: str = "n1", *, taints: list[dict[str, str]] | None = None, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or []}}


def test_template_node_name_and_selector_and_required_affinity() -> None:
    assert should_run(node("n1"), ds({"nodeName": "n2"})) == (False, False)
    assert should_run(node("n2"), ds({"nodeName": "n2"})) == (True, True)
    assert should_run(node(zone="a"), ds({"nodeSelector": {"zone": "b"}})) == (False, False)
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    assert should_run(node(zone="a"), ds({"affinity": affinity})) == (True, True)
    assert should_run(node(zone="c"), ds({"affinity": affinity})) == (False, False)


def test_taints_against_template_and_daemon_tolerations() -> None:
    no_schedule = [{"key": "dedicated", "effect": "NoSchedule"}]
    no_execute = [{"key": "dedicated", "effect": "NoExecute"}]
    assert should_run(node(taints=no_schedule), ds()) == (False, True)
    assert should_run(node(taints=no_execute), ds()) == (False, False)
    tolerating = ds({"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    assert should_run(node(taints=no_execute), tolerating) == (True, True)
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        assert should_run(node(taints=[{"key": key, "effect": "NoExecute"}]), ds()) == (True, True)
    network = [{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]
    assert should_run(node(taints=network), ds()) == (False, True)
    assert should_run(node(taints=network), ds({"hostNetwork": True})) == (True, True)


def test_daemon_tolerations_replace_matching_ones_and_keep_others() -> None:
    spec: dict[str, Any] = {"tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "mine", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]}
    add_daemon_tolerations(spec)
    assert spec["tolerations"][0] == {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    assert spec["tolerations"][1]["key"] == "mine"
    assert len(spec["tolerations"]) == 7
    add_daemon_tolerations(spec)
    assert len(spec["tolerations"]) == 7


def test_surge_and_unavailable_counts_round_percentages_up() -> None:
    rolling = ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": "34%"}})
    assert (unavailable_count(rolling, 3), surge_count(rolling, 3)) == (1, 2)
    assert (unavailable_count(rolling, 0), surge_count(rolling, 0)) == (0, 0)
    on_delete = ds(updateStrategy={"type": "OnDelete"})
    assert (unavailable_count(on_delete, 5), surge_count(on_delete, 5)) == (0, 0)
    with pytest.raises(ValueError):
        unavailable_count(ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "x"}}), 3)


def test_target_node_from_node_name_or_the_affinity_term() -> None:
    assert target_node({"spec": {"nodeName": "a"}}) == "a"
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
    pod = {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}}}
    assert target_node(pod) == "b"
    assert target_node({"spec": {}}) is None


def test_failed_pod_backoff_doubles_to_fifteen_minutes_and_starts_over_when_idle() -> None:
    backoff = FailedPodBackoff()
    assert not backoff.in_backoff("k", 0.0)
    backoff.next("k", 0.0)
    assert backoff.in_backoff("k", 0.5) and not backoff.in_backoff("k", 1.0)
    for step in range(1, 15):
        backoff.next("k", float(step))
    assert backoff.delay("k") == 900.0
    backoff.next("k", 14.0 + 1801.0)
    assert backoff.delay("k") == 1.0


@pytest.mark.parametrize(("value", "generation"), [("3", 3), ("+7", 7), ("-2", -2), ("007", 7), ("abc", None), ("", None),
                                                   ("1.5", None), ("9223372036854775807", 2**63 - 1),
                                                   ("9223372036854775808", None), (" 1", None)])  # fmt: skip
def test_template_generation_parses_as_strconv_parse_int_and_a_bad_one_leaves_the_hash(value: str,
                                                                                      generation: int | None) -> None:
    # util.GetTemplateGeneration: ParseInt(v, 10, 64); its error makes the controller use nil (syncNodes,
    # updateDaemonSetStatus, getAllDaemonSetPods), so no generation label and only the hash matches.
    daemon = ds()
    daemon["metadata"]["annotations"] = {"deprecated.daemonset.template.generation": value}
    assert template_generation(daemon) == generation
    labels = pod_template(daemon, "n1", "h1")["metadata"]["labels"]
    assert labels.get("pod-template-generation") == (None if generation is None else str(generation))
    old_pod = {"metadata": {"labels": {"pod-template-generation": value, "controller-revision-hash": "h0"}}}
    assert is_pod_updated(old_pod, "h1", template_generation(daemon)) is (generation is not None and value == str(generation))
