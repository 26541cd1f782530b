"""What an update of a pod through its main resource may change, as upstream's ``ValidatePodUpdate`` decides.

:func:`validate_pod_update` returns, in upstream's order, one :class:`FieldError` per problem with
upstream's path, type and text (k/k ``pkg/apis/core/validation/validation.go``, release 1.32:
``ValidatePodUpdate``, ``ValidateContainerUpdates``, ``validateOnlyAddedTolerations``,
``validateOnlyDeletedSchedulingGates``, ``validateNodeSelectorMutation``, ``validateNodeAffinityMutation``,
``validateNodeSelectorTermHasOnlyAdditions``, ``ValidatePodSpecificAnnotationUpdates``: neither the
mirror pod annotation nor an AppArmor one may be added, changed or removed). The spec is
immutable except for container and init container images, ``activeDeadlineSeconds`` (set when unset,
or lowered; never unset), added tolerations (an existing one may change only its
``tolerationSeconds``), removed scheduling gates, ``terminationGracePeriodSeconds`` from a negative
value to 1, and, while the stored pod still has scheduling gates, additions to ``nodeSelector`` and to
the terms of its required node affinity. Anything else is one ``spec: Forbidden`` error whose text
starts with upstream's exact sentence; upstream appends a ``cmp.Diff`` of the specs, this appends a
readable diff of its own (``- path: old`` / ``+ path: new`` lines, not Go's cmp format).

Specs are compared as upstream's ``apiequality.Semantic.DeepEqual`` compares the decoded structs: an
absent field, ``null``, ``""``, ``[]`` and ``{}`` are the same value, and so are ``false`` and ``0``
in the few fields that are not pointers (:data:`_VALUE_FIELDS`). Quantities compare by value, as
Semantic's ``resource.Quantity`` equality does (``a.Cmp(b) == 0``): the write path stores them in
canonical form, which already makes ``1000m`` and ``1`` one spelling, and ``1Gi`` and
``1073741824`` (one value in two formats) are equal here too.

The caller runs this only for the main resource (``ValidatePodStatusUpdate``, ``/binding`` and
``/eviction`` do not), with ``new`` as mutating admission leaves it. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import REQUIRED_DURING_SCHEDULING as _REQUIRED
from kubeloop.api._pod_fields import as_list as _list
from kubeloop.api._pod_fields import mapping_of as _mapping
from kubeloop.api._pod_fields import semantic_diff
from kubeloop.api._pod_placement_validation import validate_tolerations
from kubeloop.api._pod_security_annotations import APPARMOR_ANNOTATION_PREFIX, security_annotation_errors
from kubeloop.api._quantity import quantity_key

__all__ = [
    "UPDATABLE_POD_SPEC_FIELDS",
    "pod_spec_change_message",
    "semantic_form",
    "validate_pod_annotation_updates",
    "validate_pod_status_update",
    "validate_pod_update",
]

# updatablePodSpecFields, joined with "," as upstream's message does.
UPDATABLE_POD_SPEC_FIELDS = ",".join([
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
])
_MAX_INT32 = 2**31 - 1
# v1.MirrorPodAnnotationKey: compared as a prefix, as upstream does.
_MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
# Pod spec fields (at any depth) that are Go values, not pointers: false or 0 there is the zero value.
_VALUE_FIELDS = frozenset({"hostNetwork", "hostPID", "hostIPC", "stdin", "stdinOnce", "tty", "hostPort", "readOnly",
                           "initialDelaySeconds"})
# Pod spec fields holding a ResourceList, and those holding one Quantity (divisor is a value: "0" is absent).
_RESOURCE_LISTS = frozenset({"limits", "requests", "overhead"})
_QUANTITIES = frozenset({"sizeLimit", "divisor"})


def _semantic(value: Any, key: str = "") -> Any:
    """``value`` with every zero-valued field dropped, so two decodings of one struct compare equal."""
    if isinstance(value, dict):  # JSON objects are dicts: the concrete check is the fast one
        if key in _RESOURCE_LISTS:
            return {k: quantity_key(v) for k, v in value.items()}
        out = {}
        for k, v in value.items():
            v = quantity_key(v) if k in _QUANTITIES and v is not None else _semantic(v, k)
            if k == "divisor" and v == "0":
                continue
            if v is None or v == "" or v == [] or v == {}:
                continue
            if k in _VALUE_FIELDS and (v is False or v == 0):
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_semantic(item, key) for item in value]
    return value


def _same(a: Any, b: Any) -> bool:
    # Plain equality first: the usual update leaves the spec as the client read it.
    return a == b or bool(_semantic(a) == _semantic(b))


def _annotation_updates(new: Any, old: Any, new_spec: Any) -> list[FieldError]:
    """ValidatePodSpecificAnnotationUpdates: the AppArmor and mirror pod annotations may not be added,
    changed or removed; then the new annotations' own checks (which a main-resource update has already
    run once: upstream reports their errors twice there)."""
    new_annotations, old_annotations = _mapping(new), _mapping(old)
    errs: list[FieldError] = []
    for key, value in old_annotations.items():
        if key in new_annotations and new_annotations[key] == value:
            continue
        if key.startswith(APPARMOR_ANNOTATION_PREFIX):
            errs.append(FieldError.forbidden(f"metadata.annotations[{key}]", "may not remove or update AppArmor annotations"))
        if key.startswith(_MIRROR_POD_ANNOTATION):
            errs.append(FieldError.forbidden(f"metadata.annotations[{key}]", "may not remove or update mirror pod annotation"))
    for key in new_annotations:
        if key in old_annotations:
            continue
        if key.startswith(APPARMOR_ANNOTATION_PREFIX):
            errs.append(FieldError.forbidden(f"metadata.annotations[{key}]", "may not add AppArmor annotations"))
        if key.startswith(_MIRROR_POD_ANNOTATION):
            errs.append(FieldError.forbidden(f"metadata.annotations[{key}]", "may not add mirror pod annotation"))
    return [*errs, *security_annotation_errors(new_annotations, new_spec, "metadata.annotations")]


def _container_updates(new: list[Any], old: list[Any], path: str) -> tuple[list[FieldError], bool]:
    """ValidateContainerUpdates: same number of containers (else stop), each with a non-blank image."""
    if len(new) != len(old):
        return [FieldError.forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, container in enumerate(new):
        image = _mapping(container).get("image")
        image = image if isinstance(image, str) else ""
        if not image:
            errs.append(FieldError.required(f"{path}[{i}].image", ""))
        if image.strip() != image:
            errs.append(FieldError.invalid(f"{path}[{i}].image", image, "must not have leading or trailing whitespace"))
    return errs, False


def _toleration_key(toleration: Any, seconds: Any) -> Any:
    return _semantic({**_mapping(toleration), "tolerationSeconds": seconds})


def _only_added_tolerations(new: list[Any], old: list[Any]) -> list[FieldError]:
    """validateOnlyAddedTolerations: every stored toleration is still there (its seconds may change)."""
    for existing in ([] if new == old else old):
        if not any(_toleration_key(existing, _mapping(t).get("tolerationSeconds")) == _semantic(t) for t in new):
            return [FieldError.forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, "spec.tolerations")


def _name(gate: Any) -> str:
    name = _mapping(gate).get("name")
    return name if isinstance(name, str) else "" if name is None else json.dumps(name, sort_keys=True)


def _only_deleted_scheduling_gates(new: list[Any], old: list[Any]) -> list[FieldError]:
    """validateOnlyDeletedSchedulingGates; upstream reports in Go map order, this in index order."""
    added: dict[str, int] = {}
    for i, gate in enumerate(new):
        added[_name(gate)] = i
    for gate in old:
        added.pop(_name(gate), None)
    return [FieldError.forbidden(f"spec.schedulingGates[{i}].name", f"only deletion is allowed, but found new scheduling gate '{name}'")
            for name, i in sorted(added.items(), key=lambda item: item[1])]


def _node_selector_mutation(new: Any, old: Any) -> list[FieldError]:
    """validateNodeSelectorMutation: a gated pod's node selector may only gain entries."""
    new_selector = _mapping(new)
    if any(k not in new_selector or new_selector[k] != v for k, v in _mapping(old).items()):
        return [FieldError.invalid("spec.nodeSelector", dict(new_selector),
                                   "only additions to spec.nodeSelector are allowed (no mutations or deletions)")]
    return []


def _term_has_only_additions(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """validateNodeSelectorTermHasOnlyAdditions."""
    old_empty = not _list(old.get("matchExpressions")) and not _list(old.get("matchFields"))
    if old_empty and (_list(new.get("matchExpressions")) or _list(new.get("matchFields"))):
        return False
    for name in ("matchExpressions", "matchFields"):
        old_reqs, new_reqs = _list(old.get(name)), _list(new.get(name))
        if old_reqs and (len(new_reqs) < len(old_reqs) or not _same(new_reqs[:len(old_reqs)], old_reqs)):
            return False
    return True


def _node_affinity_mutation(new: Any, old: Any) -> list[FieldError]:
    """validateNodeAffinityMutation: a gated pod's required node selector terms may only gain requirements."""
    old_required = _mapping(old).get(_REQUIRED)
    if not isinstance(old_required, Mapping):
        return []
    path = f"spec.affinity.nodeAffinity.{_REQUIRED}.nodeSelectorTerms"
    old_terms = _list(old_required.get("nodeSelectorTerms"))
    new_terms = _list(_mapping(_mapping(new).get(_REQUIRED)).get("nodeSelectorTerms"))
    if old_terms and len(old_terms) != len(new_terms):
        return [FieldError.invalid(path, new_terms, "no additions/deletions to non-empty NodeSelectorTerms list are allowed")]
    return [FieldError.invalid(f"{path}[{i}]", new_terms[i], "only additions are allowed (no mutations or deletions)")
            for i in range(len(old_terms))
            if not _term_has_only_additions(_mapping(new_terms[i]), _mapping(old_terms[i]))]


def _munge_gated(munged: dict[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The gated-pod part of ValidatePodUpdate: check, then take the stored node selector and affinity."""
    errs: list[FieldError] = []
    if not _same(munged.get("nodeSelector"), old.get("nodeSelector")):
        errs.extend(_node_selector_mutation(munged.get("nodeSelector"), old.get("nodeSelector")))
        munged["nodeSelector"] = old.get("nodeSelector")
    old_affinity = old.get("affinity")
    old_node = _mapping(old_affinity).get("nodeAffinity")
    munged_affinity = munged.get("affinity")
    munged_node = _mapping(munged_affinity).get("nodeAffinity")
    if not _same(old_node, munged_node):
        errs.extend(_node_affinity_mutation(munged_node, old_node))
        if not isinstance(munged_affinity, dict):
            if old_node is not None:
                munged["affinity"] = {"nodeAffinity": old_node}
        elif (old_affinity is None and munged_affinity.get("podAffinity") is None
              and munged_affinity.get("podAntiAffinity") is None):
            munged["affinity"] = None
        else:
            munged["affinity"] = {**munged_affinity, "nodeAffinity": old_node}
    return errs


def pod_spec_change_message(old_spec: Any, munged_spec: Any) -> str:
    """Upstream's sentence, a newline, then one ``-``/``+`` line per changed field (``spec.`` paths)."""
    changes = semantic_diff(_semantic(old_spec), _semantic(munged_spec), "spec")
    return f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n" + changes


def validate_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePodUpdate's checks beyond those a create runs too (see the module docstring)."""
    new_spec, old_spec = _mapping(new.get("spec")), _mapping(old.get("spec"))
    errs = _annotation_updates(_mapping(new.get("metadata")).get("annotations"),
                               _mapping(old.get("metadata")).get("annotations"), new_spec)
    for name in ("containers", "initContainers"):
        container_errs, stop = _container_updates(_list(new_spec.get(name)), _list(old_spec.get(name)), f"spec.{name}")
        errs.extend(container_errs)
        if stop:
            return errs
    # activeDeadlineSeconds: set from nil, or lowered to a non-negative value.
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    path = "spec.activeDeadlineSeconds"
    if new_deadline is not None:
        if not isinstance(new_deadline, int) or isinstance(new_deadline, bool) or not 0 <= new_deadline <= _MAX_INT32:
            return [*errs, FieldError.invalid(path, new_deadline, f"must be between 0 and {_MAX_INT32}, inclusive")]
        if isinstance(old_deadline, int) and old_deadline < new_deadline:
            return [*errs, FieldError.invalid(path, new_deadline, "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errs.append(FieldError.invalid(path, None, "must not update from a positive integer to nil value"))
    errs.extend(_only_added_tolerations(_list(new_spec.get("tolerations")), _list(old_spec.get("tolerations"))))
    if new_gates := _list(new_spec.get("schedulingGates")):
        errs.extend(_only_deleted_scheduling_gates(new_gates, _list(old_spec.get("schedulingGates"))))
    if new_spec == old_spec:  # upstream's early return (a semantic equality is found below too)
        return errs
    munged = _munge(new_spec, old_spec)
    if _list(old_spec.get("schedulingGates")):
        errs.extend(_munge_gated(munged, old_spec))
    if not _same(munged, old_spec):
        errs.append(FieldError.forbidden("spec", pod_spec_change_message(old_spec, munged)))
    return errs


def validate_pod_annotation_updates(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePodSpecificAnnotationUpdates on two pods (``/status`` and ``/ephemeralcontainers`` run it)."""
    return _annotation_updates(_mapping(new.get("metadata")).get("annotations"),
                               _mapping(old.get("metadata")).get("annotations"), new.get("spec"))


validate_pod_status_update = validate_pod_annotation_updates  # ValidatePodStatusUpdate's part on metadata


def semantic_form(value: Any) -> Any:
    """``value`` as ``apiequality.Semantic.DeepEqual`` compares it (zero-valued fields dropped)."""
    return _semantic(value)


def _munge(new_spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``new_spec`` with the fields an update may change taken from ``old_spec``.

    Shallow: only the top level and the containers are copied, as nothing deeper is written."""
    munged = dict(new_spec)
    for name in ("containers", "initContainers"):
        if isinstance(containers := munged.get(name), list):
            old_containers = _list(old_spec.get(name))
            munged[name] = [
                {**container, "image": _mapping(old_containers[i]).get("image")}
                if isinstance(container, dict) and i < len(old_containers) else container
                for i, container in enumerate(containers)]
    for name in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        if name in old_spec:
            munged[name] = old_spec[name]
        else:
            munged.pop(name, None)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    return munged
