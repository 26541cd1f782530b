"""The scheduler's VolumeBinding plugin for one node: bound volumes' node affinity, delayed claims' volumes.

Mirrors ``pkg/scheduler/framework/plugins/volumebinding`` (``FindPodVolumes``) for the pod's claims
that PreFilter let through:

- A **bound** claim's volume must accept the node: its ``spec.nodeAffinity.required`` node selector
  terms must match the node's labels (not its name: see :func:`volume_fits_node`), else
  ``node(s) had volume node affinity conflict``.
- An **unbound** claim whose StorageClass binds ``WaitForFirstConsumer`` (delayed binding) needs, on
  that node, either a volume in phase ``Available`` that matches it (class, access modes, volume
  mode, size, selector, as the volume controller matches, plus the volume's node affinity; the
  smallest wins, and two claims of one pod never share one; a volume still ``Pending`` is not
  offered, as ``FindMatchingVolume`` does not), a volume whose ``claimRef`` already names it (by name,
  or with its uid after an earlier attempt's pre-bind), in any phase (which alone is considered, and
  must accept the node), or a class with a provisioner (not
  ``kubernetes.io/no-provisioner``). A claim already annotated ``volume.kubernetes.io/selected-node``
  can only be provisioned on that node. Otherwise ``node(s) didn't find available persistent
  volumes to bind``.

:func:`find_pod_volumes` answers for one node with the reason it fails, or with the
:class:`Bindings` the scheduler writes in PreBind once it picked that node: each matched volume
pre-bound to its claim (``claimRef``), each other claim annotated with the selected node, which is
what makes the volume controller provision it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.controllers._scheduler_fit import matches_node_selector_terms
from kubeloop.controllers._volume import (
    SELECTED_NODE,
    volume_matches_claim,
    volume_pre_bound_to,
    volume_size_key,
)

__all__ = [
    "AFFINITY_CONFLICT",
    "NO_PROVISIONER",
    "NO_VOLUMES",
    "Bindings",
    "PodVolumes",
    "find_pod_volumes",
    "volume_fits_node",
]

AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
NO_VOLUMES = "node(s) didn't find available persistent volumes to bind"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """The pod's claims as the VolumeBinding plugin sorts them."""

    bound: tuple[dict[str, Any], ...] = ()  # the volumes of bound claims
    delayed: tuple[tuple[dict[str, Any], dict[str, Any] | None], ...] = ()  # (unbound claim, its class)


@dataclass(frozen=True, slots=True)
class Bindings:
    """What PreBind writes for a node: (volume, claim) pre-bindings and claims to provision there."""

    static: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = ()
    provision: tuple[dict[str, Any], ...] = ()


def volume_fits_node(pv: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """``CheckNodeAffinity``: a volume without required node affinity fits every node.

    Upstream (component-helpers ``storage/volume``) matches the terms against a Node built from the
    node's labels alone, so its name is empty and ``matchFields`` requirements are skipped: a
    volume's ``matchFields`` on ``metadata.name`` does not restrict it (kubernetes#81725, still so in
    1.30: rancher/local-path-provisioner#451); a term that does not parse still matches nothing."""
    required = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
    terms = required.get("nodeSelectorTerms") or []
    labels_only = {"metadata": {"labels": (node.get("metadata") or {}).get("labels") or {}}}
    return not terms or matches_node_selector_terms(terms, labels_only)


def find_pod_volumes(volumes: PodVolumes, node: Mapping[str, Any],
                     available: Iterable[dict[str, Any]]) -> tuple[str | None, Bindings]:  # fmt: skip
    """Why ``node`` cannot hold the pod's volumes (None if it can), and what binding them there takes."""
    for pv in volumes.bound:
        if not volume_fits_node(pv, node):
            return AFFINITY_CONFLICT, Bindings()
    if not volumes.delayed:
        return None, Bindings()
    node_name = str((node.get("metadata") or {}).get("name") or "")
    volumes_by_size = sorted(available, key=volume_size_key)
    candidates = [pv for pv in volumes_by_size if volume_fits_node(pv, node)]
    taken: set[str] = set()
    static: list[tuple[dict[str, Any], dict[str, Any]]] = []
    provision: list[dict[str, Any]] = []
    for claim, storage_class in volumes.delayed:
        class_name = str((claim.get("spec") or {}).get("storageClassName") or "")
        selected = ((claim.get("metadata") or {}).get("annotations") or {}).get(SELECTED_NODE)
        # FindMatchingVolume: a volume pre-bound to the claim wins (any phase), or nothing when it does
        # not accept the node; otherwise the smallest Available volume that matches.
        pre_bound = next((pv for pv in volumes_by_size if volume_pre_bound_to(pv, claim)), None)
        if selected:
            match = None
        elif pre_bound is not None:
            match = pre_bound if volume_fits_node(pre_bound, node) else None
        else:
            match = next((pv for pv in candidates if pv["metadata"]["name"] not in taken
                          and volume_matches_claim(pv, claim, class_name)), None)
        if match is not None:
            taken.add(str(match["metadata"]["name"]))
            static.append((match, claim))
            continue
        provisioner = str((storage_class or {}).get("provisioner") or "")
        if not provisioner or provisioner == NO_PROVISIONER or (selected and selected != node_name):
            return NO_VOLUMES, Bindings()
        provision.append(claim)
    return None, Bindings(tuple(static), tuple(provision))

