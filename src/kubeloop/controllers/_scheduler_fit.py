"""Scheduling predicates and the unschedulable message, as the default scheduler's filter plugins say them.

:func:`fit_failures` runs the filters a simulated cluster needs over one node (NodeUnschedulable,
NodeAffinity for ``nodeSelector`` and required ``nodeSelectorTerms``, TaintToleration, NodeResourcesFit)
and returns the reasons the node does not fit, in the plugins' words. Node selector terms follow
component-helpers ``scheduling/corev1/nodeaffinity``: ``matchExpressions`` against the node's labels,
``matchFields`` (In/NotIn with one value) against its one selectable field, ``metadata.name``.
:func:`preferred_affinity_score` is NodeAffinity's Score for the preferred terms, and
:func:`taint_toleration_score` TaintToleration's for ``PreferNoSchedule`` taints.
:func:`fit_error` is ``FitError.Error()``: ``0/N nodes are available: <count> <reason>, ...``
(reasons sorted); :func:`unschedulable_message` adds DefaultPreemption's sentence per node for a pod
with no lower-priority pod to evict. :func:`preemption_might_help` tells a node whose filter answered
Unschedulable (preemption is tried there) from one that answered UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.controllers._scheduler_resources import parse_quantity

__all__ = [
    "fit_error",
    "fit_failures",
    "matches_node_selector_terms",
    "matches_required_node_affinity",
    "preemption_might_help",
    "preferred_affinity_score",
    "taint_toleration_score",
    "tolerates",
    "unschedulable_message",
]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """v1 ``Toleration.ToleratesTaint`` for any of ``tolerations``."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        key = t.get("key") or ""
        if key and key != taint.get("key"):
            continue
        operator = t.get("operator") or "Equal"
        if operator == "Exists" or (operator == "Equal" and (t.get("value") or "") == (taint.get("value") or "")):
            return True
    return False


_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


def _expression_parses(expr: Mapping[str, Any]) -> bool:
    """``labels.NewRequirement``'s checks: In/NotIn need values, Exists/DoesNotExist none, Gt/Lt one integer."""
    op, values = expr.get("operator"), list(expr.get("values") or ())
    if op not in _LABEL_OPERATORS:
        return False
    if op in ("In", "NotIn"):
        return bool(values)
    if op in ("Exists", "DoesNotExist"):
        return not values
    if len(values) != 1:
        return False
    try:
        int(values[0])
    except (TypeError, ValueError):
        return False
    return True


def _match_expression(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    key, op, values = expr.get("key") or "", expr.get("operator"), list(expr.get("values") or ())
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _field_requirement_parses(expr: Mapping[str, Any]) -> bool:
    """``nodeSelectorRequirementsAsFieldSelector``: only In and NotIn, each with exactly one value."""
    return expr.get("operator") in ("In", "NotIn") and len(list(expr.get("values") or ())) == 1


def _match_field(fields: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    # fields.OneTermEqualSelector / OneTermNotEqualSelector over fields.Set: an absent field reads as "".
    have, want = fields.get(str(expr.get("key") or ""), ""), str(next(iter(expr.get("values") or ())))
    return have == want if expr.get("operator") == "In" else have != want


def _node_fields(node: Mapping[str, Any]) -> dict[str, str]:
    """``extractNodeFields``: the one node field a selector may name, ``metadata.name``."""
    name = str((node.get("metadata") or {}).get("name") or "")
    return {"metadata.name": name} if name else {}


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
    """One NodeSelectorTerm (component-helpers ``nodeaffinity.nodeSelectorTerm.match``).

    An empty term matches nothing; a term that does not parse matches nothing (the lazy selector's
    errors); ``matchExpressions`` are against the labels, ``matchFields`` against ``metadata.name``
    (skipped for a node without a name, as upstream's ``len(nodeFields) > 0`` check does). API
    validation refuses a pod or PersistentVolume whose terms break the operator, value-count or
    field-key rules (``api/_pod_scheduling_validation.py``, ``api/_pv_validation.py``), so only a
    ``Gt``/``Lt`` value that is not an integer (validation counts the values, it does not parse them)
    fails here."""
    expressions = [e for e in term.get("matchExpressions") or () if isinstance(e, Mapping)]
    field_reqs = [e for e in term.get("matchFields") or () if isinstance(e, Mapping)]
    if not expressions and not field_reqs:
        return False
    if not all(_expression_parses(e) for e in expressions) or not all(_field_requirement_parses(e) for e in field_reqs):
        return False
    if not all(_match_expression(labels, e) for e in expressions):
        return False
    return not fields or all(_match_field(fields, e) for e in field_reqs)


def matches_required_node_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: the pod's ``nodeSelector`` and required node affinity."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    return not terms or matches_node_selector_terms(terms, node)


def matches_node_selector_terms(terms: Iterable[Mapping[str, Any]], node: Mapping[str, Any]) -> bool:
    """A NodeSelector's terms (ORed; each term's requirements ANDed) against the node's labels and name."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    fields = _node_fields(node)
    return any(_term_matches(term, labels, fields) for term in terms if isinstance(term, Mapping))


def preferred_affinity_score(pod: Mapping[str, Any], node: Mapping[str, Any]) -> int:
    """NodeAffinity's Score before normalisation: the weights of the preferred terms the node matches.

    Upstream (``PreferredSchedulingTerms.Score``) skips terms of weight 0 and empty terms, and fails
    the pod's scheduling cycle on a term that does not parse (API validation refuses weights outside
    1-100 and most such terms; a ``Gt``/``Lt`` value that is not an integer gets through); here such a
    term scores nothing."""
    node_affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    fields = _node_fields(node)
    score = 0
    for term in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        preference = term.get("preference") if isinstance(term, Mapping) else None
        weight = int(term.get("weight") or 0) if isinstance(term, Mapping) else 0
        if weight and isinstance(preference, Mapping) and _term_matches(preference, labels, fields):
            score += weight
    return score


def taint_toleration_score(pod: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> list[int]:
    """TaintToleration's Score and NormalizeScore: per node, the ``PreferNoSchedule`` taints the pod's
    tolerations (those with that effect or none) do not tolerate, reversed into 0-100
    (``DefaultNormalizeScore(100, reverse=true)``): a node with none scores 100."""
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or ()
                   if isinstance(t, Mapping) and t.get("effect") in (None, "", "PreferNoSchedule")]
    counts = [sum(1 for taint in (node.get("spec") or {}).get("taints") or ()
                  if taint.get("effect") == "PreferNoSchedule" and not tolerates(tolerations, taint))
              for node in nodes]
    most = max(counts, default=0)
    return [100 if most == 0 else 100 - 100 * count // most for count in counts]


def fit_failures(pod: Mapping[str, Any], node: Mapping[str, Any], requested: Mapping[str, float], pods_on_node: int,
                 pod_request: Mapping[str, float]) -> list[str]:
    """Why ``pod`` does not fit ``node`` (already ``requested`` by ``pods_on_node`` pods); empty if it fits."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable") and not tolerates(
            tolerations, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}):
        return ["node(s) were unschedulable"]
    # The default profile's filter order: NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit;
    # a node reports only the first filter it fails.
    for taint in node_spec.get("taints") or ():
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"]
    if not matches_required_node_affinity(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    failures = []
    if pods_on_node + 1 > parse_quantity(allocatable.get("pods", 0)):
        failures.append("Too many pods")
    for name, amount in sorted(pod_request.items()):
        if amount <= 0:
            continue
        free = parse_quantity(allocatable.get(name, 0)) - requested.get(name, 0.0)
        if amount > free + 1e-9:
            failures.append(f"Insufficient {name}")
    return failures


# The filter reasons whose status is Unschedulable rather than UnschedulableAndUnresolvable: preemption
# (removing pods) could make the node fit. NodeResourcesFit's, InterPodAffinity's anti-affinity ones and
# PodTopologySpread's skew; every other filter here answers UnschedulableAndUnresolvable.
_RESOLVABLE = frozenset({
    "Too many pods",
    "node(s) didn't match pod anti-affinity rules",
    "node(s) didn't satisfy existing pods anti-affinity rules",
    "node(s) didn't match pod topology spread constraints",
})


def preemption_might_help(reasons: Iterable[str]) -> bool:
    """Whether a node failing for ``reasons`` (one filter plugin's) is Unschedulable, not
    UnschedulableAndUnresolvable (``nodesWherePreemptionMightHelp``)."""
    listed = list(reasons)
    return bool(listed) and all(r in _RESOLVABLE or r.startswith("Insufficient ") for r in listed)


def fit_error(total_nodes: int, reasons: Mapping[str, int]) -> str:
    """``FitError.Error()`` without a PostFilter message: ``0/N nodes are available: <count> <reason>, ...``
    (the "count reason" strings sorted)."""
    if total_nodes == 0:
        return "no nodes available to schedule pods"
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items() if count)
    return f"0/{total_nodes} nodes are available: {', '.join(parts)}."


def unschedulable_message(total_nodes: int, reasons: Mapping[str, int], resolvable_nodes: int = 0) -> str:
    """``FitError.Error()`` followed by DefaultPreemption's PostFilter message when no node has a
    lower-priority pod to evict: a node where preemption might help (``resolvable_nodes`` of them)
    says ``No preemption victims found for incoming pod`` (``SelectVictimsOnNode`` with no
    lower-priority pod), the others ``Preemption is not helpful for scheduling``."""
    if total_nodes == 0:
        return fit_error(0, reasons)
    preemption = {"No preemption victims found for incoming pod": resolvable_nodes,
                  "Preemption is not helpful for scheduling": total_nodes - resolvable_nodes}
    return f"{fit_error(total_nodes, reasons)} preemption: {fit_error(total_nodes, preemption)}"
