"""Quota arithmetic (apiserver pkg/quota/v1/resources.go) and pod totals (component-helpers resource PodRequests,
LimitRanger's podRequests), as pure functions."""

from __future__ import annotations

from typing import Any

from kubeloop.api._quota_evaluators import usage
from kubeloop.api._quota_math import (
    add,
    less_than_or_equal,
    parse_list,
    pod_limits,
    pod_requests,
    remove_zeros,
    render,
    subtract,
    subtract_non_negative,
)


def container(name: str, requests: dict[str, str], limits: dict[str, str] | None = None,
              **fields: Any) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": requests, "limits": limits or {}}, **fields}


def test_sums_keep_upstream_formats() -> None:
    total = add(parse_list({"cpu": "500m", "memory": "1Gi", "pods": "1"}),
                parse_list({"cpu": "500m", "memory": "512Mi", "pods": "2"}))
    assert render(total) == {"cpu": "1", "memory": "1536Mi", "pods": "3"}
    # A zero left operand takes the other's format (Quantity.Add).
    assert render(add(parse_list({"memory": "0"}), parse_list({"memory": "1Gi"}))) == {"memory": "1Gi"}


def test_subtraction_and_comparisons() -> None:
    a, b = parse_list({"cpu": "1", "pods": "1"}), parse_list({"cpu": "2", "services": "1"})
    assert render(subtract(a, b)) == {"cpu": "-1", "pods": "1", "services": "-1"}
    assert render(subtract_non_negative(a, b)) == {"cpu": "0", "pods": "1", "services": "0"}
    assert render(remove_zeros(subtract_non_negative(a, b))) == {"pods": "1"}
    assert less_than_or_equal(parse_list({"cpu": "2", "pods": "1"}), parse_list({"cpu": "1500m", "pods": "1"})) == (
        False, ["cpu"])


def test_pod_totals_with_init_containers_sidecars_and_overhead() -> None:
    pod = {"spec": {
        "containers": [container("a", {"cpu": "100m"}), container("b", {"cpu": "200m"})],
        "initContainers": [container("init", {"cpu": "1"}),
                           container("sidecar", {"cpu": "50m"}, restartPolicy="Always"),
                           container("late-init", {"cpu": "500m"})],
        "overhead": {"cpu": "10m", "memory": "5Mi"},
    }}
    # containers 300m + sidecar 50m = 350m; init max(1, 500m + 50m) = 1; max(350m, 1) = 1; + overhead.
    assert render(pod_requests(pod)) == {"cpu": "1010m", "memory": "5Mi"}
    assert render(pod_requests(pod, with_overhead=False)) == {"cpu": "1"}
    # Limits get the overhead only for what they already have.
    limited = {"spec": {"containers": [container("a", {}, {"cpu": "1"})], "overhead": {"cpu": "10m", "memory": "5Mi"}}}
    assert render(pod_limits(limited)) == {"cpu": "1010m"}


def test_pod_usage_counts_compute_only_while_the_pod_runs() -> None:
    pod: dict[str, Any] = {"metadata": {}, "spec": {"containers": [container("a", {"cpu": "1", "nvidia.com/gpu": "1"})]},
                           "status": {}}
    assert render(usage("", "pods", pod, 0.0)) == {"count/pods": "1", "cpu": "1", "pods": "1", "requests.cpu": "1",
                                                   "requests.nvidia.com/gpu": "1"}
    pod["status"]["phase"] = "Failed"
    assert render(usage("", "pods", pod, 0.0)) == {"count/pods": "1"}
    pod["status"]["phase"] = "Running"
    pod["metadata"] = {"deletionTimestamp": "1970-01-01T00:01:00Z", "deletionGracePeriodSeconds": 30}
    assert "pods" in usage("", "pods", pod, 90.0)
    assert render(usage("", "pods", pod, 90.5)) == {"count/pods": "1"}
