"""What the DaemonSet controller decides per node and per pod, as pure functions over JSON dicts.

Upstream (release 1.32): k/k ``pkg/controller/daemon/daemon_controller.go`` (``NodeShouldRunDaemonPod``,
``predicates``, ``NewPod``, ``podByCreationTimestampAndPhase``, ``shouldIgnoreNodeUpdate``) and
``pkg/controller/daemon/util/daemonset_util.go`` (``AddOrUpdateDaemonPodTolerations``,
``CreatePodTemplate``, ``SurgeCount``, ``UnavailableCount``, ``IsPodUpdated``,
``ReplaceDaemonSetPodNodeNameNodeAffinity``, ``GetTargetNodeName``).

- :func:`should_run` is ``NodeShouldRunDaemonPod``: ``(shouldRun, shouldContinueRunning)``. A node
  fits when the template's ``nodeName`` (if any) is the node's, its ``nodeSelector`` and required node
  affinity match, and no ``NoSchedule``/``NoExecute`` taint goes untolerated by the template's
  tolerations plus the daemon tolerations (:func:`add_daemon_tolerations`); a pod already there keeps
  running as long as every ``NoExecute`` taint is tolerated.
- :func:`add_daemon_tolerations`: ``not-ready`` and ``unreachable`` ``NoExecute``, ``disk-pressure``,
  ``memory-pressure``, ``pid-pressure`` and ``unschedulable`` ``NoSchedule`` (``network-unavailable``
  too for a ``hostNetwork`` pod), each replacing a toleration with the same key, operator, value and
  effect (``AddOrUpdateTolerationInPodSpec``).
- :func:`pod_template` is ``CreatePodTemplate`` then the node affinity of one node: the labels
  ``pod-template-generation`` and ``controller-revision-hash``, required node affinity
  ``metadata.name In [node]`` replacing the template's required terms, so the scheduler binds it there.
- :func:`target_node` is ``GetTargetNodeName`` (``spec.nodeName``, else that affinity term).
- :class:`FailedPodBackoff` is the ``flowcontrol.Backoff`` (1 s doubling to 15 min) that paces the
  deletion of failed daemon pods per (DaemonSet uid, observed generation, node), on the injected clock.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubeloop.api import copy_json, parse_time
from kubeloop.controllers._scheduler_fit import matches_required_node_affinity, tolerates

__all__ = [
    "REVISION_LABEL",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "FailedPodBackoff",
    "add_daemon_tolerations",
    "by_creation",
    "is_pod_updated",
    "node_update_ignored",
    "pod_template",
    "scaled_value",
    "should_run",
    "surge_count",
    "target_node",
    "template_generation",
    "unavailable_count",
]

Obj = Mapping[str, Any]

REVISION_LABEL = "controller-revision-hash"  # apps/v1 DefaultDaemonSetUniqueLabelKey
TEMPLATE_GENERATION_LABEL = "pod-template-generation"  # extensions/v1beta1 DaemonSetTemplateGenerationKey
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"

_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def _spec(obj: Obj) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _template(ds: Obj) -> Mapping[str, Any]:
    template = _spec(ds).get("template")
    return template if isinstance(template, Mapping) else {}


def template_generation(ds: Obj) -> int | None:
    """``GetTemplateGeneration``: the annotation's integer (``strconv.ParseInt(v, 10, 64)``), ``None`` when
    absent or not one; the controller then goes by the revision hash alone, as upstream's does when the
    parse fails (the API server refuses such a value on every write, so only a set stored before that
    check can carry one)."""
    value = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if not isinstance(value, str) or not re.fullmatch(r"[+-]?[0-9]+", value):
        return None
    generation = int(value)
    return generation if -(1 << 63) <= generation < 1 << 63 else None


def _same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``Toleration.MatchToleration``: same key, operator, value and effect (tolerationSeconds aside)."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def add_daemon_tolerations(pod_spec: dict[str, Any]) -> None:
    """``AddOrUpdateDaemonPodTolerations`` on ``pod_spec`` in place."""
    wanted = [*_DAEMON_TOLERATIONS, *((_NETWORK_UNAVAILABLE,) if pod_spec.get("hostNetwork") is True else ())]
    tolerations = [t for t in pod_spec.get("tolerations") or () if isinstance(t, Mapping)]
    for key, effect in wanted:
        toleration = {"key": key, "operator": "Exists", "effect": effect}
        if any(_same_toleration(t, toleration) and dict(t) == toleration for t in tolerations):
            continue
        replaced = False
        for index, existing in enumerate(tolerations):
            if _same_toleration(existing, toleration):
                tolerations[index] = toleration
                replaced = True
        if not replaced:
            tolerations.append(toleration)
    pod_spec["tolerations"] = [dict(t) for t in tolerations]


def _daemon_pod(ds: Obj, node_name: str) -> dict[str, Any]:
    """``NewPod``: the template's metadata and spec on ``node_name``, with the daemon tolerations."""
    template = _template(ds)
    spec = copy_json(dict(template.get("spec") or {}))
    spec["nodeName"] = node_name
    add_daemon_tolerations(spec)
    return {"metadata": copy_json(dict(template.get("metadata") or {})), "spec": spec}


def _untolerated(taints: Iterable[Mapping[str, Any]], tolerations: list[Mapping[str, Any]],
                 effects: frozenset[str]) -> bool:
    """``FindMatchingUntoleratedTaint`` with an effect filter: is any such taint not tolerated?"""
    return any(t.get("effect") in effects and not tolerates(tolerations, t) for t in taints)


_SCHEDULE_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_EXECUTE_EFFECTS = frozenset({"NoExecute"})


def should_run(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (shouldRun, shouldContinueRunning) of ``ds`` on ``node``."""
    node_name = str((node.get("metadata") or {}).get("name") or "")
    wanted_node = _spec(_template(ds)).get("nodeName") or ""
    if wanted_node and wanted_node != node_name:
        return False, False
    pod = _daemon_pod(ds, node_name)
    if not matches_required_node_affinity(pod, node):
        return False, False
    taints = [t for t in _spec(node).get("taints") or () if isinstance(t, Mapping)]
    tolerations = [t for t in pod["spec"].get("tolerations") or () if isinstance(t, Mapping)]
    if _untolerated(taints, tolerations, _SCHEDULE_EFFECTS):
        return False, not _untolerated(taints, tolerations, _EXECUTE_EFFECTS)
    return True, True


def pod_template(ds: Obj, node_name: str, revision_hash: str) -> dict[str, Any]:
    """``CreatePodTemplate`` with ``ReplaceDaemonSetPodNodeNameNodeAffinity`` for ``node_name``."""
    template: dict[str, Any] = copy_json(dict(_template(ds)))
    spec = template.setdefault("spec", {})
    add_daemon_tolerations(spec)
    meta = template.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if revision_hash:
        labels[REVISION_LABEL] = revision_hash
    meta["labels"] = labels
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict):
        required["nodeSelectorTerms"] = [term]
    else:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    return template


def target_node(pod: Obj) -> str | None:
    """``GetTargetNodeName``: the node a daemon pod is for, or ``None`` when it names none."""
    spec = _spec(pod)
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        for expr in (term or {}).get("matchFields") or ():
            if expr.get("key") == "metadata.name" and expr.get("operator") == "In":
                values = list(expr.get("values") or ())
                return str(values[0]) if len(values) == 1 else None
    return None


def is_pod_updated(pod: Obj, revision_hash: str, generation: int | None) -> bool:
    """``IsPodUpdated``: the pod carries the current revision hash, or the current template generation."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    template_matches = generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)
    return template_matches or (bool(revision_hash) and labels.get(REVISION_LABEL) == revision_hash)


def scaled_value(value: Any, total: int) -> int:
    """``GetScaledValueFromIntOrPercent(value, total, roundUp=true)``; ValueError for a bad string."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].lstrip("-").isdigit():
        raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {text!r}")
    return math.ceil(int(text[:-1]) * total / 100)


def _rolling(ds: Obj) -> Mapping[str, Any] | None:
    strategy = _spec(ds).get("updateStrategy") or {}
    if strategy.get("type") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate")
    return rolling if isinstance(rolling, Mapping) else None


def surge_count(ds: Obj, total: int) -> int:
    """``SurgeCount`` (DaemonSetUpdateSurge is GA)."""
    rolling = _rolling(ds)
    return 0 if rolling is None or rolling.get("maxSurge") is None else scaled_value(rolling["maxSurge"], total)


def unavailable_count(ds: Obj, total: int) -> int:
    """``UnavailableCount``."""
    rolling = _rolling(ds)
    return 0 if rolling is None else scaled_value(rolling.get("maxUnavailable"), total)


def _created(pod: Obj) -> float:
    value = (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_time(value) if isinstance(value, str) else 0.0
    except ValueError:
        return 0.0


def _compare(a: Obj, b: Obj) -> int:
    scheduled_a, scheduled_b = bool(_spec(a).get("nodeName")), bool(_spec(b).get("nodeName"))
    if scheduled_a != scheduled_b:
        return -1 if scheduled_a else 1
    ta, tb = _created(a), _created(b)
    if ta != tb:
        return -1 if ta < tb else 1
    na, nb = str((a.get("metadata") or {}).get("name")), str((b.get("metadata") or {}).get("name"))
    return (na > nb) - (na < nb)


by_creation: Callable[[Obj], Any] = functools.cmp_to_key(_compare)
"""``podByCreationTimestampAndPhase`` as a sort key: scheduled first, then oldest, then by name."""


def _true_conditions(node: Obj) -> set[Any]:
    return {c.get("type") for c in (node.get("status") or {}).get("conditions") or () if c.get("status") == "True"}


def node_update_ignored(old: Obj, cur: Obj) -> bool:
    """``shouldIgnoreNodeUpdate``: the same conditions are True and nothing else changed but the
    resourceVersion and the conditions' other fields."""
    if _true_conditions(old) != _true_conditions(cur):
        return False

    def rest(node: Obj) -> Any:
        meta = {k: v for k, v in (node.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
        status = {k: v for k, v in (node.get("status") or {}).items() if k != "conditions"}
        return {**node, "metadata": meta, "status": status}

    return bool(rest(old) == rest(cur))


class FailedPodBackoff:
    """``flowcontrol.NewBackOff(1s, 15min)`` as the DaemonSet controller uses it, on ``now`` values."""

    def __init__(self, *, initial: float = 1.0, maximum: float = 15 * 60.0) -> None:
        self.initial, self.maximum = initial, maximum
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (backoff, last update)

    def in_backoff(self, key: str, now: float) -> bool:
        """``IsInBackOffSinceUpdate``."""
        entry = self._entries.get(key)
        return entry is not None and now - entry[1] < entry[0]

    def delay(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry[0] if entry is not None else 0.0

    def next(self, key: str, now: float) -> None:
        """``Next``: start at the initial delay (again after twice the maximum untouched), else double."""
        entry = self._entries.get(key)
        if entry is None or now - entry[1] > 2 * self.maximum:
            self._entries[key] = (self.initial, now)
        else:
            self._entries[key] = (min(entry[0] * 2, self.maximum), now)

    def forget_older_than(self, now: float) -> None:
        """``GC``: drop entries untouched for twice the maximum."""
        for key in [k for k, (_, last) in self._entries.items() if now - last > 2 * self.maximum]:
            del self._entries[key]
