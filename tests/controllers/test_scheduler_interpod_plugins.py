"""The InterPodAffinity and PodTopologySpread plugins on their own, over upstream's test tables.

The cases follow ``pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go``
(``TestRequiredAffinitySingleNode``, ``TestRequiredAffinityMultipleNodes``) and
``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go`` (``TestSingleConstraint``,
``TestMultipleConstraints``): same nodes, labels and pods, same expected reason per node. The plugins
run on real pod and node objects and a real :class:`PlacedPods`.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeloop.api import LabelSelector
from kubeloop.controllers._scheduler_cache import PlacedPods
from kubeloop.controllers._scheduler_fit import (
    preemption_might_help,
    taint_toleration_score,
    unschedulable_message,
)
from kubeloop.controllers._scheduler_interpod import (
    AFFINITY_RULES_NOT_MATCH as AFFINITY,
)
from kubeloop.controllers._scheduler_interpod import (
    ANTI_AFFINITY_RULES_NOT_MATCH as ANTI,
)
from kubeloop.controllers._scheduler_interpod import (
    EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING,
)
from kubeloop.controllers._scheduler_interpod import InterPodAffinity, pod_affinity_terms
from kubeloop.controllers._scheduler_spread import (
    SPREAD_CONSTRAINTS_NOT_MATCH as SKEW,
)
from kubeloop.controllers._scheduler_spread import (
    SPREAD_LABEL_MISSING as MISSING,
)
from kubeloop.controllers._scheduler_spread import TopologySpread, spread_scores

SEC = {"service": "securityscan"}
SEC2 = {"security": "S1"}


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}, "spec": {}}


def a_pod(name: str = "p", labels: dict[str, str] | None = None, *, namespace: str = "", node_name: str = "",
          affinity: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None,
          **spec: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = dict(spec)
    if node_name:
        pod_spec["nodeName"] = node_name
    if affinity is not None or anti is not None:
        pod_spec["affinity"] = {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity or []},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti or []}}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": pod_spec}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def term(*expressions: dict[str, Any], key: str = "region", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(expressions)}, "topologyKey": key, **extra}


def placed_pods(*pods: dict[str, Any]) -> PlacedPods:
    placed = PlacedPods()
    for i, p in enumerate(pods):
        placed.place((p["metadata"]["namespace"], f"existing-{i}"), p["spec"]["nodeName"], p)
    return placed


NAMESPACES: dict[str, dict[str, str]] = {"": {}, "ns": {"team": "blue"}, "other": {"team": "red"}}


def interpod(pod: dict[str, Any], nodes: list[dict[str, Any]], *existing: dict[str, Any]) -> list[str | None]:
    plugin = InterPodAffinity(pod, nodes, placed_pods(*existing), NAMESPACES.get)
    return [None if plugin.skipped else plugin.filter(n) for n in nodes]


MACHINE1 = node("machine1", region="r1", zone="z11")
IN_SEC = expr("service", "In", "securityscan", "value2")

SINGLE_NODE_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], str | None]] = [
    ("no_required_rules_on_an_empty_node", a_pod(), [], None),
    ("affinity_in_matches_the_existing_pod",
     a_pod(labels=SEC2, affinity=[term(IN_SEC)]), [a_pod("e", SEC, node_name="machine1")], None),
    ("affinity_not_in_matches_the_existing_pod",
     a_pod(labels=SEC2, affinity=[term(expr("service", "NotIn", "securityscan3", "value3"))]),
     [a_pod("e", SEC, node_name="machine1")], None),
    ("affinity_in_another_namespace_does_not_match",
     a_pod(labels=SEC2, affinity=[term(IN_SEC, namespaces=["DiffNameSpace"])]),
     [a_pod("e", SEC, namespace="ns", node_name="machine1")], AFFINITY),
    ("affinity_selector_matching_no_pod_fails",
     a_pod(labels=SEC, affinity=[term(expr("service", "In", "antivirusscan", "value2"))]),
     [a_pod("e", SEC, node_name="machine1")], AFFINITY),
    ("several_terms_with_different_operators_all_match",
     a_pod(labels=SEC2, affinity=[term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                                  term(expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue"))]),
     [a_pod("e", SEC, node_name="machine1")], None),
    ("requirements_of_a_selector_are_anded",
     a_pod(labels=SEC2, affinity=[term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                                  term(expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue"))]),
     [a_pod("e", SEC, node_name="machine1")], AFFINITY),
    ("affinity_and_anti_affinity_on_a_key_the_node_lacks",
     a_pod(labels=SEC2, affinity=[term(IN_SEC)], anti=[term(expr("service", "In", "antivirusscan"), key="node")]),
     [a_pod("e", SEC, node_name="machine1")], None),
    ("existing_anti_affinity_on_a_key_the_node_lacks",
     a_pod(labels=SEC2, affinity=[term(IN_SEC)], anti=[term(expr("service", "In", "antivirusscan"), key="node")]),
     [a_pod("e", SEC, node_name="machine1", anti=[term(expr("service", "In", "antivirusscan"), key="node")])], None),
    ("anti_affinity_matching_the_existing_pod_in_the_zone",
     a_pod(labels=SEC2, affinity=[term(IN_SEC)], anti=[term(IN_SEC, key="zone")]),
     [a_pod("e", SEC, node_name="machine1")], ANTI),
    ("the_existing_pods_anti_affinity_matches_the_incoming_pod",
     a_pod(labels=SEC, affinity=[term(IN_SEC)], anti=[term(expr("service", "In", "antivirusscan"), key="node")]),
     [a_pod("e", SEC, node_name="machine1", anti=[term(IN_SEC, key="zone")])], EXISTING),
    ("a_pod_not_matching_its_own_terms_is_not_the_first_of_a_group",
     a_pod(labels=SEC, affinity=[term(expr("service", "NotIn", "securityscan", "value2"))]),
     [a_pod("e", SEC, node_name="machine2")], AFFINITY),
    ("existing_anti_affinity_is_respected_without_own_constraints",
     a_pod(labels=SEC), [a_pod("e", SEC, node_name="machine1", anti=[term(IN_SEC, key="zone")])], EXISTING),
    ("existing_anti_affinity_not_matching_the_incoming_pod",
     a_pod(labels=SEC),
     [a_pod("e", SEC, node_name="machine1", anti=[term(expr("service", "NotIn", "securityscan", "value2"), key="zone")])],
     None),
    ("existing_anti_affinity_with_an_empty_namespace_selector_covers_every_namespace",
     a_pod(labels=SEC, namespace="other"),
     [a_pod("e", SEC2, node_name="machine1", anti=[term(IN_SEC, key="zone", namespaceSelector={})])], EXISTING),
    ("namespace_selector_by_labels_of_the_existing_pods_namespace",
     a_pod(labels=SEC2, affinity=[term(IN_SEC, namespaceSelector={"matchLabels": {"team": "blue"}})]),
     [a_pod("e", SEC, namespace="ns", node_name="machine1")], None),
    ("namespace_selector_not_matching_the_existing_pods_namespace",
     a_pod(labels=SEC2, affinity=[term(IN_SEC, namespaceSelector={"matchLabels": {"team": "red"}})]),
     [a_pod("e", SEC, namespace="ns", node_name="machine1")], AFFINITY),
]


@pytest.mark.parametrize(("pod", "existing", "reason"), [c[1:] for c in SINGLE_NODE_CASES],
                         ids=[c[0] for c in SINGLE_NODE_CASES])
def test_required_affinity_single_node(pod: dict[str, Any], existing: list[dict[str, Any]], reason: str | None) -> None:
    assert interpod(pod, [MACHINE1], *existing) == [reason]


def test_nodes_in_the_matching_pods_domain_pass_and_others_fail() -> None:
    nodes = [node("machine1", region="r1", zone="z11"), node("machine2", region="r1", zone="z12"),
             node("machine3", region="r2", zone="z21")]
    pod = a_pod(labels={"foo": "bar"}, affinity=[term(expr("foo", "In", "bar"))])
    assert interpod(pod, nodes, a_pod("e", {"foo": "bar"}, node_name="machine1")) == [None, None, AFFINITY]


def test_the_first_pod_of_a_group_goes_anywhere_with_the_topology_labels() -> None:
    nodes = [node("n1", region="r1"), node("n2", region="r2"), node("n3")]
    pod = a_pod(labels={"foo": "bar"}, affinity=[term(expr("foo", "In", "bar"))])
    assert interpod(pod, nodes) == [None, None, AFFINITY]
    # Once one pod matches anywhere, the rule no longer applies: other domains fail.
    assert interpod(pod, nodes, a_pod("e", {"foo": "bar"}, node_name="n1")) == [None, AFFINITY, AFFINITY]


def test_anti_affinity_by_hostname_leaves_only_empty_nodes() -> None:
    nodes = [node(f"n{i}", **{"kubernetes.io/hostname": f"n{i}"}) for i in range(1, 4)]
    pod = a_pod(labels={"app": "web"}, anti=[term(expr("app", "In", "web"), key="kubernetes.io/hostname")])
    existing = a_pod("e", {"app": "web"}, node_name="n2",
                     anti=[term(expr("app", "In", "web"), key="kubernetes.io/hostname")])
    assert interpod(pod, nodes, existing) == [None, ANTI, None]


def test_match_label_keys_are_not_merged_by_the_scheduler_it_reads_the_stored_selector() -> None:
    # Upstream's API server merges matchLabelKeys / mismatchLabelKeys into the stored labelSelector on
    # create (mutatePodAffinity); the 1.32 scheduler uses the stored selector as it is
    # (kubernetes/kubernetes#129480), so an unmerged term matches by its selector alone.
    pod = a_pod(labels={"app": "web", "rev": "2", "tenant": "a"})
    anti_term = {**term(expr("app", "In", "web")), "matchLabelKeys": ["rev"], "mismatchLabelKeys": ["tenant"]}
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti_term]}}
    (unmerged,) = pod_affinity_terms(pod, "podAntiAffinity")
    assert unmerged.selector.matches({"app": "web", "rev": "2", "tenant": "b"})
    assert unmerged.selector.matches({"app": "web", "rev": "1", "tenant": "b"})  # other revision: not merged
    assert unmerged.selector.matches({"app": "web", "rev": "2", "tenant": "a"})  # same tenant: not merged
    # The selector as the server stores it (merged) narrows the term to the pod's own values.
    anti_term["labelSelector"]["matchExpressions"] += [{"key": "rev", "operator": "In", "values": ["2"]},
                                                       {"key": "tenant", "operator": "NotIn", "values": ["a"]}]
    (merged,) = pod_affinity_terms(pod, "podAntiAffinity")
    assert merged.selector.matches({"app": "web", "rev": "2", "tenant": "b"})
    assert not merged.selector.matches({"app": "web", "rev": "1", "tenant": "b"})  # other revision
    assert not merged.selector.matches({"app": "web", "rev": "2", "tenant": "a"})  # same tenant
    # A nil labelSelector stays nil (matches nothing).
    del anti_term["labelSelector"]
    (nothing,) = pod_affinity_terms(pod, "podAntiAffinity")
    assert not nothing.selector.matches({"app": "web", "rev": "2", "tenant": "b"})


def test_preferred_terms_score_between_the_lowest_and_the_highest_node() -> None:
    nodes = [node("n1", zone="a"), node("n2", zone="a"), node("n3", zone="b")]
    pod = a_pod(labels={"app": "x"})
    pod["spec"]["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": term(expr("app", "In", "db"), key="zone")}]}, "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": term(expr("app", "In", "x"), key="zone")}]}}
    existing = [a_pod("db", {"app": "db"}, node_name="n1"), a_pod("x1", {"app": "x"}, node_name="n3")]
    plugin = InterPodAffinity(pod, nodes, placed_pods(*existing), NAMESPACES.get)
    # Zone a: +10 (db), zone b: -5 (another x): a scores 100, b 0.
    assert plugin.scores(nodes) == [100, 100, 0]
    # An existing pod's required affinity draws a matching pod (hardPodAffinityWeight 1).
    drawn = a_pod("lonely", {"app": "x"}, node_name="n3", affinity=[term(expr("app", "In", "x"), key="zone")])
    plugin = InterPodAffinity(a_pod(labels={"app": "x"}), nodes, placed_pods(drawn), NAMESPACES.get)
    assert plugin.scores(nodes) == [0, 0, 100]
    assert InterPodAffinity(a_pod(), nodes, placed_pods(), NAMESPACES.get).scores(nodes) == [0, 0, 0]


# -- PodTopologySpread (filtering_test.go TestSingleConstraint / TestMultipleConstraints) --------------------

SPREAD_NODES = [node("node-a", zone="zone1", node="node-a"), node("node-b", zone="zone1", node="node-b"),
                node("node-x", zone="zone2", node="node-x"), node("node-y", zone="zone2", node="node-y")]


def constraint(key: str, max_skew: int = 1, *, selector: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector if selector is not None else {"matchExpressions": [expr("foo", "Exists")]},
            **extra}


def spread_pod(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return a_pod(labels={"foo": ""} if labels is None else labels, topologySpreadConstraints=list(constraints), **spec)


def on(node_name: str, count: int, labels: dict[str, str] | None = None, *, namespace: str = "",
       **meta: Any) -> list[dict[str, Any]]:
    pods = []
    for i in range(count):
        p = a_pod(f"{node_name}-{len(meta)}-{i}-{sorted((labels or {'foo': ''}).items())}",
                  {"foo": ""} if labels is None else labels, namespace=namespace, node_name=node_name)
        p["metadata"].update(meta)
        pods.append(p)
    return pods


def spread_filter(pod: dict[str, Any], existing: list[dict[str, Any]], nodes: list[dict[str, Any]] = SPREAD_NODES
                  ) -> list[str | None]:
    placed = PlacedPods()
    for p in existing:
        placed.place((p["metadata"]["namespace"], p["metadata"]["name"]), p["spec"]["nodeName"], p)
    plugin = TopologySpread(pod, nodes, placed.count_matching)
    return [plugin.filter(n) for n in nodes]


SPREAD_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[str | None]]] = [
    ("no_existing_pods", spread_pod(constraint("zone")), [], [None] * 4),
    ("no_existing_pods_and_a_selector_missing_the_pods_label",
     spread_pod(constraint("zone", selector={"matchExpressions": [expr("foo", "Exists")]}), labels={"bar": ""}), [],
     [None] * 4),
    ("pods_of_other_namespaces_do_not_count",
     spread_pod(constraint("zone")), on("node-a", 1, namespace="ns1") + on("node-x", 2, namespace="ns2"), [None] * 4),
    ("spread_3_3_fits_everywhere",
     spread_pod(constraint("zone")), on("node-a", 1) + on("node-b", 2) + on("node-x", 2) + on("node-y", 1),
     [None] * 4),
    ("spread_2_1_0_3_by_node_only_node_x_fits",
     spread_pod(constraint("node")), on("node-a", 2) + on("node-b", 1) + on("node-y", 3), [SKEW, SKEW, None, SKEW]),
    ("spread_2_1_0_3_max_skew_2",
     spread_pod(constraint("node", 2)), on("node-a", 2) + on("node-b", 1) + on("node-y", 3), [SKEW, None, None, SKEW]),
    ("spread_2_1_0_3_the_pod_does_not_match_itself",
     spread_pod(constraint("node", selector={"matchExpressions": [expr("bar", "Exists")]})),
     on("node-a", 2, {"bar": ""}) + on("node-b", 1, {"bar": ""}) + on("node-y", 3, {"bar": ""}),
     [SKEW, None, None, SKEW]),
    ("terminating_pods_do_not_count",
     spread_pod(constraint("node")), on("node-a", 1) + on("node-b", 3, deletionTimestamp="2026-01-01T00:00:00Z"),
     [SKEW, None, None, None]),
    ("min_domains_above_the_domain_count_makes_the_minimum_zero",
     spread_pod(constraint("zone", 1, minDomains=3)), on("node-a", 1) + on("node-x", 1), [SKEW] * 4),
    ("min_domains_at_the_domain_count_keeps_the_real_minimum",
     spread_pod(constraint("zone", 1, minDomains=2)), on("node-a", 1) + on("node-x", 1), [None] * 4),
    ("zone_and_node_constraints_both_apply",
     spread_pod(constraint("zone"), constraint("node")), on("node-a", 1) + on("node-b", 1) + on("node-x", 1),
     [SKEW, SKEW, SKEW, None]),
]


@pytest.mark.parametrize(("pod", "existing", "reasons"), [c[1:] for c in SPREAD_CASES], ids=[c[0] for c in SPREAD_CASES])
def test_pod_topology_spread_filter(pod: dict[str, Any], existing: list[dict[str, Any]],
                                    reasons: list[str | None]) -> None:
    assert spread_filter(pod, existing) == reasons


def test_a_node_without_the_topology_key_is_missing_the_label_and_is_no_domain() -> None:
    nodes = [*SPREAD_NODES[:3], node("node-y", node="node-y")]  # node-y has no zone
    pod = spread_pod(constraint("zone"))
    existing = on("node-a", 1) + on("node-b", 1) + on("node-x", 1) + on("node-y", 5)
    # Zone counts: zone1 2, zone2 1 (node-y's pods count nowhere).
    assert spread_filter(pod, existing, nodes) == [SKEW, SKEW, None, MISSING]


def test_node_inclusion_policies() -> None:
    taint = {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}
    nodes = [SPREAD_NODES[0], SPREAD_NODES[1], {**SPREAD_NODES[2], "spec": taint}, {**SPREAD_NODES[3], "spec": taint}]
    existing = on("node-a", 1) + on("node-b", 1)
    # nodeTaintsPolicy Ignore (default): zone2's tainted nodes count, zone2 holds 0, zone1 is at skew 3.
    assert spread_filter(spread_pod(constraint("zone")), existing, nodes) == [SKEW, SKEW, None, None]
    # Honor: nodes with an untolerated NoSchedule taint are left out, so zone1 is the only domain.
    honour = spread_pod(constraint("zone", nodeTaintsPolicy="Honor"))
    assert spread_filter(honour, existing, nodes) == [None] * 4
    tolerant = spread_pod(constraint("zone", nodeTaintsPolicy="Honor"), tolerations=[{"key": "k", "operator": "Exists"}])
    assert spread_filter(tolerant, existing, nodes) == [SKEW, SKEW, None, None]
    # nodeAffinityPolicy Honor (default): only nodes the pod's nodeSelector allows are domains.
    pinned = spread_pod(constraint("zone"), nodeSelector={"zone": "zone1"})
    assert spread_filter(pinned, existing) == [None] * 4
    ignoring = spread_pod(constraint("zone", nodeAffinityPolicy="Ignore"), nodeSelector={"zone": "zone1"})
    assert spread_filter(ignoring, existing) == [SKEW, SKEW, None, None]


def test_match_label_keys_narrow_the_selector_to_the_pods_own_values() -> None:
    pod = spread_pod(constraint("node", matchLabelKeys=["rev"]), labels={"foo": "", "rev": "2"})
    existing = on("node-a", 2, {"foo": "", "rev": "1"}) + on("node-b", 1, {"foo": "", "rev": "2"})
    assert spread_filter(pod, existing) == [None, SKEW, None, None]


def test_schedule_anyway_scores_the_emptiest_domain_highest() -> None:
    nodes = SPREAD_NODES
    placed = PlacedPods()
    for p in on("node-a", 2) + on("node-x", 1):
        placed.place(("", p["metadata"]["name"]), p["spec"]["nodeName"], p)
    soft = {**constraint("zone"), "whenUnsatisfiable": "ScheduleAnyway"}
    scores = spread_scores(spread_pod(soft), nodes, nodes, placed.count_matching, LabelSelector())
    # zone1 holds 2, zone2 1; weight log(2 + 2): raw round(2.77)=3 and round(1.39)=1; normalised
    # 100 * (3 + 1 - raw) // 3.
    assert scores == [33, 33, 100, 100]
    # No ScheduleAnyway constraint and no default selector: the plugin skips.
    assert spread_scores(spread_pod(constraint("zone")), nodes, nodes, placed.count_matching, LabelSelector()) is None
    # System defaults (hostname maxSkew 3, zone maxSkew 5) with a controller's selector: node-a 2 pods,
    # node-x 1; raw 12, 9, 9, 7 (hostname weight log 6, zone weight log 4), normalised
    # 100 * (12 + 7 - raw) // 12.
    real = [node(n["metadata"]["name"], **{"kubernetes.io/hostname": n["metadata"]["name"],
                                           "topology.kubernetes.io/zone": n["metadata"]["labels"]["zone"]})
            for n in nodes]
    defaults = spread_scores(a_pod(labels={"foo": ""}), real, real, placed.count_matching,
                             LabelSelector.from_labels({"foo": ""}))
    assert defaults == [58, 83, 83, 100]
    # A node without a zone label still takes part in hostname spreading under the system defaults.
    real[3]["metadata"]["labels"].pop("topology.kubernetes.io/zone")
    partial = spread_scores(a_pod(labels={"foo": ""}), real, real, placed.count_matching,
                            LabelSelector.from_labels({"foo": ""}))
    assert partial is not None and partial[3] > 0


def test_taint_toleration_score_counts_untolerated_prefer_no_schedule_taints() -> None:
    def tainted(*keys: str) -> dict[str, Any]:
        return {"metadata": {"name": "n"}, "spec": {"taints": [{"key": k, "effect": "PreferNoSchedule"} for k in keys]}}

    nodes = [tainted(), tainted("a"), tainted("a", "b")]
    assert taint_toleration_score(a_pod(), nodes) == [100, 50, 0]
    tolerant = a_pod(tolerations=[{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert taint_toleration_score(tolerant, nodes) == [100, 100, 0]
    # A NoSchedule toleration does not count for PreferNoSchedule taints.
    no_schedule = a_pod(tolerations=[{"key": "a", "operator": "Exists", "effect": "NoSchedule"}])
    assert taint_toleration_score(no_schedule, nodes) == [100, 50, 0]


def test_preemption_sentence_follows_each_nodes_status() -> None:
    assert preemption_might_help(["Insufficient cpu", "Too many pods"])
    assert preemption_might_help([ANTI]) and preemption_might_help([EXISTING]) and preemption_might_help([SKEW])
    assert not preemption_might_help([AFFINITY]) and not preemption_might_help([MISSING])
    assert unschedulable_message(3, {ANTI: 2, AFFINITY: 1}, 2) == (
        "0/3 nodes are available: 1 node(s) didn't match pod affinity rules, 2 node(s) didn't match pod anti-affinity "
        "rules. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption "
        "victims found for incoming pod.")
