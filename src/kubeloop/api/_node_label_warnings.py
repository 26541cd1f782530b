"""The node labels upstream has deprecated, and the ``Warning`` texts for selectors that use them.

k/k ``pkg/api/node/util.go`` (release 1.32): ``deprecatedNodeLabels`` with ``GetNodeLabelDeprecatedMessage``
(:data:`DEPRECATED_NODE_LABELS`), and ``GetWarningsForNodeSelectorTerm``
(:func:`node_selector_term_warnings`), which the pod, pod template and PersistentVolume warnings share.
Release 1.32's term check reads only the keys of ``matchExpressions``; the label-value check of a
preferred term came with 1.33 (kubernetes#128212). Pure functions; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._pod_fields import go_text, objects_of

__all__ = ["DEPRECATED_NODE_LABELS", "node_selector_term_warnings"]

# deprecatedNodeLabels: label key -> what the warning says of it.
DEPRECATED_NODE_LABELS: Mapping[str, str] = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region": 'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
    "failure-domain.beta.kubernetes.io/zone": 'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
    "beta.kubernetes.io/instance-type": 'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
    "app.kubernetes.io/created-by": "deprecated since v1.9",
    "scheduler.alpha.kubernetes.io/preferAvoidPods": "deprecated since v1.22; use Taints and Tolerations instead",
    "node-role.kubernetes.io/master": 'use "node-role.kubernetes.io/control-plane" instead',
}


def node_selector_term_warnings(term: Mapping[str, Any], path: str) -> list[str]:
    """GetWarningsForNodeSelectorTerm: ``<path>.matchExpressions[i].key: <key> is <message>`` per deprecated key."""
    warnings = []
    for i, expression in objects_of(term.get("matchExpressions")):
        key = go_text(expression.get("key"))
        message = DEPRECATED_NODE_LABELS.get(key)
        if message is not None:
            warnings.append(f"{path}.matchExpressions[{i}].key: {key} is {message}")
    return warnings
