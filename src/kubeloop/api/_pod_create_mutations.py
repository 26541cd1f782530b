"""What upstream's pod strategy writes into a new pod after dropping disabled fields, before validation.

k/k ``pkg/registry/core/pod/strategy.go`` (release-1.32) ``PrepareForCreate`` ends with three mutations,
here in the same order (the strategy calls them after :mod:`kubeloop.api._pod_drop_disabled`):

- :func:`apply_scheduling_gated_condition` (``applySchedulingGatedCondition``): a pod created with
  ``spec.schedulingGates`` gets the condition ``PodScheduled`` False, reason ``SchedulingGated``,
  message ``Scheduling is blocked due to non-empty scheduling gates`` (``lastTransitionTime`` now);
- :func:`merge_pod_affinity_label_keys` (``mutatePodAffinity``, MatchLabelKeysInPodAffinity: beta and on
  by default since 1.31): for each pod (anti-)affinity term, required and preferred, with a set
  ``labelSelector``, ``key In (value)`` is appended to its ``matchExpressions`` for each
  ``matchLabelKeys`` key the pod's labels carry, then ``key NotIn (value)`` for each
  ``mismatchLabelKeys`` one; the stored pod shows the merged selector and the scheduler reads it as
  is. ``topologySpreadConstraints``' ``matchLabelKeys`` are not merged by 1.32 (that is 1.34's
  MatchLabelKeysInPodTopologySpreadSelectorMerge): the scheduler applies those itself;
- :func:`apply_apparmor_version_skew` (``applyAppArmorVersionSkew``, KEP-24's version skew strategy),
  for a pod whose ``spec.os.name`` is not ``windows``: for each container (init, regular, ephemeral)
  without the deprecated ``container.apparmor.security.beta.kubernetes.io/<name>`` annotation, the
  annotation is written from the container's ``securityContext.appArmorProfile``, else the pod's
  (``unconfined``, ``runtime/default``, ``localhost/<profile>``); for a container with the annotation
  and no profile of its own, the profile the annotation names is copied into the container's
  ``securityContext`` when it is valid and differs from the pod's. (1.34 stopped copying fields into
  annotations, kubernetes/kubernetes#131989; 1.32 still does.) Such an annotation is warned of here,
  before the sync, not in ``WarningsOnCreate`` (``metadata.annotations[<key>]: deprecated since v1.30;
  use the "appArmorProfile" field instead``), unless it names a valid profile equal to the pod's; the
  texts are returned for the write path to record, validation passing or not.

Pure JSON-dict mutations in place; a part that is not the expected JSON shape is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubeloop.api._pod_fields import (
    PREFERRED_DURING_SCHEDULING,
    REQUIRED_DURING_SCHEDULING,
    dict_or_none,
    dicts_in,
    well_shaped,
)
from kubeloop.api._pod_security_annotations import APPARMOR_ANNOTATION_PREFIX
from kubeloop.api._pod_security_validation import apparmor_profile_errors

__all__ = ["apply_apparmor_version_skew", "apply_scheduling_gated_condition", "merge_pod_affinity_label_keys"]

SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
_LOCALHOST_PREFIX = "localhost/"


def apply_scheduling_gated_condition(pod: dict[str, Any], now: str) -> None:
    """applySchedulingGatedCondition: ``now`` is the formatted time of the create."""
    spec = dict_or_none(pod.get("spec")) or {}
    gates = spec.get("schedulingGates")
    status = dict_or_none(pod.get("status"))
    if not isinstance(gates, list) or not gates or status is None:
        return
    conditions = status.get("conditions")
    if isinstance(conditions, list) and any(isinstance(c, dict) and c.get("type") == "PodScheduled" for c in conditions):
        return
    condition = {"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": now,
                 "reason": "SchedulingGated", "message": SCHEDULING_GATED_MESSAGE}
    status["conditions"] = [*conditions, condition] if isinstance(conditions, list) else [condition]


def _affinity_terms(spec: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every pod (anti-)affinity term, in mutatePodAffinity's order (preferred before required)."""
    affinity = dict_or_none(spec.get("affinity")) or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = dict_or_none(affinity.get(kind)) or {}
        for weighted in dicts_in(terms.get(PREFERRED_DURING_SCHEDULING)):
            if (term := dict_or_none(weighted.get("podAffinityTerm"))) is not None:
                yield term
        yield from dicts_in(terms.get(REQUIRED_DURING_SCHEDULING))


def merge_pod_affinity_label_keys(pod: dict[str, Any]) -> None:
    """mutatePodAffinity / applyMatchLabelKeysAndMismatchLabelKeys (a nil selector matches nothing: kept nil)."""
    spec = dict_or_none(pod.get("spec"))
    meta = dict_or_none(pod.get("metadata")) or {}
    labels = dict_or_none(meta.get("labels")) or {}
    if spec is None:
        return
    for term in _affinity_terms(spec):
        selector = term.get("labelSelector")
        match_keys, mismatch_keys = term.get("matchLabelKeys"), term.get("mismatchLabelKeys")
        keys = [(k, "In") for k in match_keys or () if isinstance(k, str) and k in labels] if isinstance(match_keys, list) else []
        if isinstance(mismatch_keys, list):
            keys += [(k, "NotIn") for k in mismatch_keys if isinstance(k, str) and k in labels]
        if not keys or not isinstance(selector, dict) or not well_shaped(selector):
            continue
        expressions = list(selector.get("matchExpressions") or ())
        expressions += [{"key": key, "operator": operator, "values": [labels[key]]} for key, operator in keys]
        selector["matchExpressions"] = expressions


def _annotation_for(profile: Mapping[str, Any]) -> str:
    """appArmorAnnotationForField: "" when the profile names nothing the annotation can say."""
    kind = profile.get("type")
    if kind == "Unconfined":
        return "unconfined"
    if kind == "RuntimeDefault":
        return "runtime/default"
    if kind == "Localhost" and isinstance(local := profile.get("localhostProfile"), str):
        return _LOCALHOST_PREFIX + local
    return ""


_APPARMOR_DEPRECATED = 'deprecated since v1.30; use the "appArmorProfile" field instead'


def _profile_for(annotation: Any) -> dict[str, Any] | None:
    """apparmorFieldForAnnotation, then ValidateAppArmorProfileField: None for a value it cannot use."""
    if annotation == "unconfined":
        profile: dict[str, Any] = {"type": "Unconfined"}
    elif annotation == "runtime/default":
        profile = {"type": "RuntimeDefault"}
    elif isinstance(annotation, str) and annotation.startswith(_LOCALHOST_PREFIX) and annotation != _LOCALHOST_PREFIX:
        profile = {"type": "Localhost", "localhostProfile": annotation[len(_LOCALHOST_PREFIX):]}
    else:
        return None
    return None if apparmor_profile_errors(profile, "") else profile


def _same_profile(a: Mapping[str, Any] | None, b: Any) -> bool:
    """apiequality.Semantic.DeepEqual on two AppArmorProfiles (nil only equals nil)."""
    if a is None or not isinstance(b, Mapping):
        return a is None and b is None
    return (a.get("type"), a.get("localhostProfile")) == (b.get("type"), b.get("localhostProfile"))


def apply_apparmor_version_skew(pod: dict[str, Any]) -> list[str]:
    """applyAppArmorVersionSkew as of 1.32 (both directions; see the module docstring); returns the
    ``Warning`` texts it records for annotations without a field of their own."""
    warnings: list[str] = []
    spec = dict_or_none(pod.get("spec"))
    meta = dict_or_none(pod.get("metadata"))
    if spec is None or meta is None or (dict_or_none(spec.get("os")) or {}).get("name") == "windows":
        return warnings
    if meta.get("annotations") is not None and dict_or_none(meta.get("annotations")) is None:
        return warnings  # not a map: validation reports it
    pod_profile = (dict_or_none(spec.get("securityContext")) or {}).get("appArmorProfile")
    pod_profile = pod_profile if isinstance(pod_profile, dict) else None
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in dicts_in(spec.get(key)):
            name = container.get("name")
            if not isinstance(name, str):
                continue
            annotation_key = APPARMOR_ANNOTATION_PREFIX + name
            annotations = dict_or_none(meta.get("annotations"))
            context = dict_or_none(container.get("securityContext"))
            if context is None and container.get("securityContext") is not None:
                continue
            profile = context.get("appArmorProfile") if context is not None else None
            profile = profile if isinstance(profile, dict) else None
            if annotations is None or annotation_key not in annotations:
                source = profile if profile is not None else pod_profile
                value = _annotation_for(source) if source is not None else ""
                if value:
                    if annotations is None:
                        annotations = meta["annotations"] = {}
                    annotations[annotation_key] = value
            elif profile is None:
                derived = _profile_for(annotations[annotation_key])
                # Warned of unless the annotation only repeats the pod's profile.
                if derived is None or not _same_profile(derived, pod_profile):
                    warnings.append(f"metadata.annotations[{annotation_key}]: {_APPARMOR_DEPRECATED}")
                if derived is not None and not _same_profile(derived, pod_profile):
                    if context is None:
                        context = container["securityContext"] = {}
                    context["appArmorProfile"] = derived
    return warnings
