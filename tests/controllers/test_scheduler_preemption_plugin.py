"""DefaultPreemption's pure parts against upstream's test tables (1.32).

``pickOneNodeForPreemption``: ``TestPickOneNodeForPreemption`` in
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go``; victim selection and
the PDB split: ``TestSelectNodesForPreemption``'s PDB cases there; eligibility: ``TestPodEligibleToPreemptOthers``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.controllers._scheduler_preemption import (
    NEVER_POLICY,
    NO_VICTIMS,
    TERMINATING_ON_NOMINATED,
    Victims,
    candidate_count,
    disruption_condition,
    eligible_to_preempt,
    pick_node,
    select_victims,
    split_by_pdb,
)

LOW, MID, HIGH, VERY_HIGH = 0, 100, 1000, 10000
NEG = -100


def p(name: str, priority: int, *, cpu: int = 1, start: str = "2024-01-01T00:00:00Z",
      labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels or {}}
    meta.update(extra.pop("meta", {}))
    return {"metadata": meta, "spec": {"priority": priority, "cpu": cpu, **extra}, "status": {"startTime": start}}


def fits_in(capacity: int, pods: list[dict[str, Any]], incoming: int) -> Any:
    """A NodeResourcesFit stand-in: ``incoming`` cpu fits beside the pods not removed."""

    def fits(removed: frozenset[tuple[str, str]]) -> list[str]:
        used = sum(x["spec"]["cpu"] for x in pods if ("ns", x["metadata"]["name"]) not in removed)
        return [] if used + incoming <= capacity else ["Insufficient cpu"]

    return fits


def names(victims: Victims | None) -> list[str]:
    assert victims is not None
    return [v["metadata"]["name"] for v in victims.pods]


def pick(nodes: Mapping[str, list[dict[str, Any]]]) -> str:
    return pick_node({node: Victims(tuple(pods), 0) for node, pods in nodes.items()})


def test_the_node_whose_highest_priority_victim_is_lowest_is_picked() -> None:
    # "node with min highest priority pod is picked"
    assert pick({"node1": [p("p1.1", MID), p("p1.2", LOW)], "node2": [p("p2.1", MID), p("p2.2", LOW)],
                 "node3": [p("p3.1", LOW), p("p3.2", LOW)]}) == "node3"


def test_equal_highest_priorities_go_to_the_smallest_sum() -> None:
    # "when highest priorities are the same, minimum sum of lower priority pods is picked"
    assert pick({"node1": [p("p1.1", MID), p("p1.2", LOW)], "node2": [p("p2.1", MID), p("p2.2", NEG)],
                 "node3": [p("p3.1", MID), p("p3.2", LOW), p("p3.3", LOW)]}) == "node2"


def test_equal_sums_go_to_the_fewest_victims() -> None:
    # "when highest priority and sum are the same, minimum number of pods is picked"; priorities are
    # offset by 2^31 before summing, so more negative-priority victims still sum higher.
    assert pick({"node1": [p("p1.1", MID), p("p1.2", NEG), p("p1.3", NEG)],
                 "node2": [p("p2.1", MID), p("p2.2", NEG)]}) == "node2"
    assert pick({"node1": [p("p1.1", MID), p("p1.2", NEG), p("p1.3", NEG), p("p1.4", NEG)],
                 "node2": [p("p2.1", MID), p("p2.2", NEG), p("p2.3", NEG)]}) == "node2"


def test_equal_victims_go_to_the_latest_started_highest_priority_victim() -> None:
    # "same priority, same number of victims, different start time for each node's pod"
    assert pick({"node1": [p("p1.1", MID, start="2024-01-01T00:00:01Z"), p("p1.2", MID, start="2024-01-01T00:00:01Z")],
                 "node2": [p("p2.1", MID, start="2024-01-01T00:00:03Z"), p("p2.2", MID, start="2024-01-01T00:00:03Z")],
                 "node3": [p("p3.1", MID, start="2024-01-01T00:00:02Z"), p("p3.2", MID, start="2024-01-01T00:00:02Z")],
                 }) == "node2"
    # "different priority, same number of victims, different start time for all pods": only the
    # highest-priority victims' earliest start counts.
    assert pick({"node1": [p("p1.1", MID, start="2024-01-01T00:00:05Z"), p("p1.2", LOW, start="2024-01-01T00:00:09Z")],
                 "node2": [p("p2.1", MID, start="2024-01-01T00:00:07Z"), p("p2.2", LOW, start="2024-01-01T00:00:01Z")],
                 }) == "node2"


def test_fewer_pdb_violations_win_before_priorities() -> None:
    assert pick_node({"node1": Victims((p("a", LOW),), 1), "node2": Victims((p("b", MID),), 0)}) == "node2"
    assert pick_node({}) == ""


def test_all_lower_priority_pods_are_removed_then_the_most_important_reprieved() -> None:
    pods = [p("low-old", LOW, start="2024-01-01T00:00:00Z"), p("mid", MID), p("low-new", LOW, start="2024-01-02T00:00:00Z"),
            p("high", HIGH)]
    incoming = p("preemptor", HIGH)
    # Capacity 5, 4 used; the preemptor needs 2: one pod must go. The reprieve runs by importance
    # (mid, then low-old, then low-new), so the least important one is the victim.
    victims, failures = select_victims(incoming, "node1", pods, [], fits_in(5, pods, 2))
    assert failures == [] and names(victims) == ["low-new"]
    # Needs 3: two go; the victims are listed most important first.
    victims, _ = select_victims(incoming, "node1", pods, [], fits_in(5, pods, 3))
    assert names(victims) == ["low-old", "low-new"]


def test_no_lower_priority_pod_or_no_fit_even_without_them() -> None:
    pods = [p("same", HIGH), p("higher", VERY_HIGH)]
    assert select_victims(p("x", HIGH), "node1", pods, [], fits_in(2, pods, 1)) == (None, [NO_VICTIMS])
    pods = [p("low", LOW), p("same", HIGH)]
    assert select_victims(p("x", HIGH), "node1", pods, [], fits_in(2, pods, 2)) == (None, ["Insufficient cpu"])


def pdb(allowed: int, *, selector: dict[str, Any] | None = None, disrupted: dict[str, str] | None = None,
        namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": "budget", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": "foo"}} if selector is None else selector},
            "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted or {}}}


def test_pdb_split_counts_down_each_budget() -> None:
    a, b, c = (p(n, LOW, labels={"app": "foo"}) for n in ("a", "b", "c"))
    violating, fine = split_by_pdb([a, b, c], [pdb(1)])
    assert [x["metadata"]["name"] for x in violating] == ["b", "c"] and fine == [a]
    # A pod already in disruptedPods was counted by the eviction API: it uses no budget.
    violating, fine = split_by_pdb([a, b], [pdb(0, disrupted={"a": "2024-01-01T00:00:00Z"})])
    assert violating == [b] and fine == [a]
    # An empty selector, another namespace, or a pod without labels matches nothing.
    assert split_by_pdb([a], [pdb(0, selector={})]) == ([], [a])
    assert split_by_pdb([a], [pdb(0, namespace="other")]) == ([], [a])
    bare = p("bare", LOW)
    assert split_by_pdb([bare], [pdb(0, selector={"matchLabels": {}})]) == ([], [bare])


def test_pdb_violating_pods_are_reprieved_first_and_counted_when_evicted() -> None:
    # "PDB: Prefer lower priority pod for preemption": the protected pods are reprieved before the
    # others, so an unprotected pod is the victim when one victim is enough.
    protected = p("protected", LOW, labels={"app": "foo"})
    free = p("free", LOW, start="2024-01-01T00:00:00Z")
    pods = [protected, free]
    victims, _ = select_victims(p("x", HIGH), "node1", pods, [pdb(0)], fits_in(2, pods, 1))
    assert names(victims) == ["free"] and victims is not None and victims.pdb_violations == 0
    victims, _ = select_victims(p("x", HIGH), "node1", pods, [pdb(0)], fits_in(2, pods, 2))
    assert victims is not None and victims.pdb_violations == 1 and len(victims.pods) == 2


def test_eligibility() -> None:
    never = p("x", HIGH, preemptionPolicy="Never")
    assert eligible_to_preempt(never, [], nominated_unresolvable=False) == NEVER_POLICY
    nominated = p("x", HIGH)
    nominated["status"]["nominatedNodeName"] = "node1"
    terminating = p("victim", LOW, meta={"deletionTimestamp": "2024-01-01T00:00:00Z"})
    assert eligible_to_preempt(nominated, [terminating], nominated_unresolvable=False) is None  # not preempted
    terminating["status"]["conditions"] = [disruption_condition(terminating, "default-scheduler", "t")]
    assert eligible_to_preempt(nominated, [terminating], nominated_unresolvable=False) == TERMINATING_ON_NOMINATED
    assert eligible_to_preempt(nominated, [terminating], nominated_unresolvable=True) is None
    terminating["status"]["conditions"][0]["status"] = "False"  # podTerminatingByPreemption wants it True
    assert eligible_to_preempt(nominated, [terminating], nominated_unresolvable=False) is None


def test_disruption_condition_and_candidate_count() -> None:
    condition = disruption_condition(p("v", LOW), "default-scheduler", "2024-01-01T00:00:00Z")
    assert condition == {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                         "message": "default-scheduler: preempting to accommodate a higher priority pod",
                         "lastProbeTime": None, "lastTransitionTime": "2024-01-01T00:00:00Z"}
    assert disruption_condition({"status": {"conditions": [condition]}}, "default-scheduler", "later") is None
    evicted = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "lastTransitionTime": "t0"}
    # Already True for another reason: the reason and message change, the transition time stays.
    assert disruption_condition({"status": {"conditions": [evicted]}}, "default-scheduler", "later") == {
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod", "lastTransitionTime": "t0"}
    assert [candidate_count(n) for n in (3, 100, 500, 2000)] == [3, 100, 100, 200]
