"""StatefulSet identity, storage and revisions, as pure functions over JSON dicts.

Upstream: k/k ``pkg/controller/statefulset/stateful_set_utils.go``.

- Pod ``<set>-<ordinal>`` (ordinals from ``spec.ordinals.start``), hostname = pod name, subdomain =
  ``serviceName``, labels ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index``
  and ``controller-revision-hash``; one volume per claim template pointing at PVC
  ``<template>-<set>-<ordinal>`` (labels: the template's plus the set's ``matchLabels``).
- Revisions are ControllerRevisions ``<set>-<hash>`` whose ``data`` is the strategic patch
  ``{"spec": {"template": {..., "$patch": "replace"}}}``, ``revision`` an increasing number.
- :func:`claim_owner_refs` is ``updateClaimOwnerRefForSetAndPod``: which ownerReferences a PVC
  should carry for ``persistentVolumeClaimRetentionPolicy`` (whenDeleted=Delete: owned by the set;
  whenScaled=Delete: owned by the pod once the pod is condemned, i.e. out of the ordinal range).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api import copy_json, name_of, namespace_of, owner_reference, uid_of
from kubeloop.controllers._workload_hash import compute_hash
from kubeloop.controllers._workload_kinds import int_field

__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "REVISION_LABEL",
    "claim_name",
    "claim_owner_refs",
    "new_claims",
    "new_pod",
    "ordinal_of",
    "revision_data",
    "revision_name",
    "template_of_revision",
]

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"

Obj = Mapping[str, Any]


def ordinal_of(sts: Obj, pod: Obj) -> int | None:
    match = re.fullmatch(rf"{re.escape(name_of(sts))}-(\d+)", name_of(pod))
    return int(match.group(1)) if match else None


def start_ordinal(sts: Obj) -> int:
    return int_field(((sts.get("spec") or {}).get("ordinals") or {}), "start")


def claim_name(template: Obj, sts: Obj, ordinal: int) -> str:
    return f"{(template.get('metadata') or {}).get('name')}-{name_of(sts)}-{ordinal}"


def revision_data(template: Obj) -> dict[str, Any]:
    return {"spec": {"template": {**copy_json(dict(template)), "$patch": "replace"}}}


def template_of_revision(revision: Obj) -> dict[str, Any]:
    template = dict(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def revision_name(sts: Obj, template: Obj, collision_count: int | None) -> str:
    return f"{name_of(sts)}-{compute_hash(revision_data(template), collision_count)}"


def new_pod(sts: Obj, template: Obj, ordinal: int, revision: str) -> dict[str, Any]:
    spec = sts.get("spec") or {}
    name = f"{name_of(sts)}-{ordinal}"
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
              REVISION_LABEL: revision}  # fmt: skip
    meta: dict[str, Any] = {"name": name, "namespace": namespace_of(sts), "labels": labels,
                            "ownerReferences": [owner_reference(sts, controller=True, block_owner_deletion=True)]}
    for key in ("annotations", "finalizers"):
        if tmeta.get(key):
            meta[key] = copy_json(tmeta[key])
    pod_spec = copy_json(template.get("spec") or {})
    pod_spec["hostname"] = name
    if spec.get("serviceName"):
        pod_spec["subdomain"] = spec["serviceName"]
    claims = spec.get("volumeClaimTemplates") or []
    if claims:
        names = {(c.get("metadata") or {}).get("name") for c in claims}
        volumes = [v for v in pod_spec.get("volumes") or [] if v.get("name") not in names]
        for claim in claims:
            volumes.append({"name": (claim.get("metadata") or {}).get("name"),
                            "persistentVolumeClaim": {"claimName": claim_name(claim, sts, ordinal)}})  # fmt: skip
        pod_spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


def new_claims(sts: Obj, ordinal: int) -> list[dict[str, Any]]:
    match_labels = ((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    claims = []
    for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
        tmeta = template.get("metadata") or {}
        meta: dict[str, Any] = {"name": claim_name(template, sts, ordinal), "namespace": namespace_of(sts),
                                "labels": {**(tmeta.get("labels") or {}), **match_labels}}  # fmt: skip
        if tmeta.get("annotations"):
            meta["annotations"] = copy_json(tmeta["annotations"])
        claims.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
                       "spec": copy_json(template.get("spec") or {})})  # fmt: skip
    return claims


def _ref(owner: Obj) -> dict[str, Any]:
    return owner_reference(owner, controller=True)


def claim_owner_refs(sts: Obj, pod: Obj, claim: Obj, *, condemned: bool) -> list[dict[str, Any]] | None:
    """The ownerReferences ``claim`` should have, or ``None`` if it must be left alone.

    A claim controlled by someone else, or naming our set or pod with a stale UID, is not touched
    (``isClaimOwnerUpToDate`` safety rules).
    """
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    when_deleted = policy.get("whenDeleted", "Retain")
    when_scaled = policy.get("whenScaled", "Retain")
    refs = [dict(r) for r in (claim.get("metadata") or {}).get("ownerReferences") or ()]
    ours = {uid_of(sts), uid_of(pod)}
    for ref in refs:
        same_name = (ref.get("kind"), ref.get("name")) in {("StatefulSet", name_of(sts)), ("Pod", name_of(pod))}
        if same_name and ref.get("uid") not in ours:
            return None
        if ref.get("controller") is True and ref.get("uid") not in ours:
            return None
    want_set = when_deleted == "Delete" and not (when_scaled == "Delete" and condemned)
    want_pod = when_scaled == "Delete" and condemned
    kept = [r for r in refs if r.get("uid") not in ours]
    if want_set:
        kept.append(next((r for r in refs if r.get("uid") == uid_of(sts)), _ref(sts)))
    if want_pod:
        kept.append(next((r for r in refs if r.get("uid") == uid_of(pod)), _ref(pod)))
    return kept
