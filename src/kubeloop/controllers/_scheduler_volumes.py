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

:func:`claims_unusable` is the plugin's PreFilter over the informers' caches (a claim missing, being
deleted, or unbound with an ``Immediate`` class keeps the pod off every node), and :func:`pod_volumes`
sorts the pod's claims into bound volumes and delayed-binding claims for :func:`find_pod_volumes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.controllers._scheduler_fit import matches_node_selector_terms
from kubeloop.controllers._volume import (
    SELECTED_NODE,
    is_delayed_binding,
    volume_matches_claim,
    volume_pre_bound_to,
    volume_size_key,
)
from kubeloop.runtime import Cache

__all__ = [
    "AFFINITY_CONFLICT",
    "NO_PROVISIONER",
    "NO_VOLUMES",
    "Bindings",
    "PodVolumes",
    "claims_unusable",
    "find_pod_volumes",
    "pod_volumes",
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


def pod_volumes(pod: Mapping[str, Any], claims: Cache, classes: Cache, volumes: Cache) -> PodVolumes:
    """The pod's bound claims' volumes and its unbound delayed-binding claims (PreFilter passed)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    bound: list[dict[str, Any]] = []
    delayed: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        claim = claims.get_by_name(str(name), namespace) if name else None
        if claim is None:
            continue
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name:
            pv = volumes.get_by_name(str(volume_name))
            if pv is not None:
                bound.append(pv)
            continue
        class_name = (claim.get("spec") or {}).get("storageClassName")
        storage_class = classes.get_by_name(str(class_name), None) if class_name else None
        if is_delayed_binding(storage_class):
            delayed.append((claim, storage_class))
    return PodVolumes(tuple(bound), tuple(delayed))


def claims_unusable(pod: Mapping[str, Any], claims: Cache, classes: Cache) -> str | None:
    """VolumeBinding PreFilter: why the pod's claims keep it off every node, or None."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    unbound_immediate = False
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        source = volume.get("persistentVolumeClaim") or {}
        name = source.get("claimName")
        if not name:
            continue
        claim = claims.get_by_name(str(name), namespace)
        if claim is None:
            return f'persistentvolumeclaim "{name}" not found'
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        if (claim.get("spec") or {}).get("volumeName"):
            continue
        class_name = (claim.get("spec") or {}).get("storageClassName")
        storage_class = classes.get_by_name(str(class_name), None) if class_name else None
        if storage_class is None or storage_class.get("volumeBindingMode", "Immediate") == "Immediate":
            unbound_immediate = True
    return "pod has unbound immediate PersistentVolumeClaims" if unbound_immediate else None
