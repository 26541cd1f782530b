"""Validation of a pod spec's scheduling constraints, as upstream's ``ValidatePodSpec`` does it.

:func:`validate_pod_scheduling` checks, in ``ValidatePodSpec``'s order, ``nodeSelector``, the pod's
security context, ``affinity``, ``schedulingGates``, ``topologySpreadConstraints``, the Windows
hostProcess and ``hostUsers`` rules, ``tolerations`` and ``os`` of one pod spec (the security rules
are :mod:`kubeloop.api._pod_security_validation`'s, the OS ones :mod:`kubeloop.api._pod_os_validation`'s),
and returns one :class:`FieldError`
per problem with upstream's path, type and text (k/k ``pkg/apis/core/validation/validation.go``:
``ValidateLabels`` for the node selector, ``validateAffinity`` / ``validateNodeAffinity`` /
``ValidateNodeSelector`` / ``ValidateNodeSelectorTerm`` / ``ValidateNodeSelectorRequirement`` /
``ValidateNodeFieldSelectorRequirement`` / ``ValidatePreferredSchedulingTerms`` /
``validatePodAffinity(Term)`` / ``validatePodAntiAffinity`` / ``validateWeightedPodAffinityTerms``,
and, from :mod:`kubeloop.api._pod_placement_validation`, ``validateSchedulingGates``,
``validateTopologySpreadConstraints`` and ``ValidateTolerations``);
:mod:`kubeloop.api._pod_spec_validation` runs them after the volume and container checks.
:func:`validate_pod_template_scheduling` runs the same checks on ``spec.template.spec`` of a workload (``ValidatePodTemplateSpec`` calls
``ValidatePodSpec``), for Deployments, ReplicaSets and StatefulSets.

On update, pass the stored spec as ``old_spec``: like ``GetValidationOptionsFromPodSpecAndMeta``
(k/k ``pkg/api/pod/util.go``), label values that the stored object already had wrong in its pod
(anti-)affinity selectors, its required node affinity or its topology spread selectors are then
tolerated, so an object stored before a stricter release stays writable. Every other rule applies
on update as on create.

What upstream does not check, neither does this: the integer in a ``Gt``/``Lt`` requirement (the
scheduler's parse of it fails, and the term matches no node), an empty node selector term (it
matches no node). Input that is not the expected JSON shape is skipped (the decoder's job), never a
crash. Pure functions; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import PREFERRED_DURING_SCHEDULING as _PREFERRED
from kubeloop.api._pod_fields import REQUIRED_DURING_SCHEDULING as _REQUIRED
from kubeloop.api._pod_fields import as_list as _list
from kubeloop.api._pod_fields import go_text as _text
from kubeloop.api._pod_fields import label_name_errors as _label_name
from kubeloop.api._pod_fields import label_selector_errors as _label_selector
from kubeloop.api._pod_fields import mapping_of as _mapping
from kubeloop.api._pod_fields import objects_of as _items
from kubeloop.api._pod_fields import values_of as _values
from kubeloop.api._pod_fields import well_shaped
from kubeloop.api._pod_os_validation import host_process_errors, os_errors
from kubeloop.api._pod_placement_validation import (
    scheduling_gate_errors,
    toleration_errors,
    topology_spread_errors,
    validate_tolerations,
)
from kubeloop.api._pod_security_validation import (
    host_users_errors,
    pod_security_context_errors,
    security_options_from,
)
from kubeloop.api._validation import (
    is_dns1123_label,
    is_valid_label_value,
    name_is_dns1123_subdomain,
    validate_labels,
)

__all__ = [
    "has_invalid_label_value_in_node_selector",
    "validate_node_selector",
    "validate_pod_scheduling",
    "validate_pod_template_scheduling",
    "validate_tolerations",
]

# metav1.ObjectNameField: the one node field a matchFields requirement may name (nodeFieldSelectorValidators).
_NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True)
class _Options:
    """The ``PodValidationOptions`` that relax these checks on update (all off on create)."""

    invalid_label_value_in_selector: bool = False
    invalid_label_value_in_required_node_affinity: bool = False
    invalid_topology_spread_label_selector: bool = False


# -- node affinity ---------------------------------------------------------------------------------


def _node_selector_requirement(req: Mapping[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    """ValidateNodeSelectorRequirement (a ``matchExpressions`` item)."""
    errs: list[FieldError] = []
    operator, values = req.get("operator"), _values(req)
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(FieldError.required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(FieldError.forbidden(
                f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(FieldError.required(
                f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(FieldError.invalid(f"{path}.operator", _text(operator), "not a valid selector operator"))
    errs.extend(_label_name(_text(req.get("key")), f"{path}.key"))
    if not allow_invalid_values:
        for j, value in enumerate(values):
            errs.extend(FieldError.invalid(f"{path}.values[{j}]", value, m) for m in is_valid_label_value(_text(value)))
    return errs


def _node_field_selector_requirement(req: Mapping[str, Any], path: str) -> list[FieldError]:
    """ValidateNodeFieldSelectorRequirement (a ``matchFields`` item)."""
    errs: list[FieldError] = []
    operator, values = req.get("operator"), _values(req)
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(FieldError.required(
                f"{path}.values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(FieldError.invalid(f"{path}.operator", _text(operator), "not a valid selector operator"))
    key = _text(req.get("key"))
    if key != _NODE_NAME_FIELD:
        errs.append(FieldError.invalid(f"{path}.key", key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            # ValidateNodeName is NameIsDNSSubdomain.
            errs.extend(FieldError.invalid(f"{path}.values[{i}]", value, m)
                        for m in name_is_dns1123_subdomain(_text(value), False))
    return errs


def _node_selector_term(term: Mapping[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    """ValidateNodeSelectorTerm: an empty term is valid (it matches no node)."""
    errs: list[FieldError] = []
    for j, req in _items(term.get("matchExpressions")):
        errs.extend(_node_selector_requirement(req, f"{path}.matchExpressions[{j}]",
                                               allow_invalid_values=allow_invalid_values))
    for j, req in _items(term.get("matchFields")):
        errs.extend(_node_field_selector_requirement(req, f"{path}.matchFields[{j}]"))
    return errs


def _node_selector(selector: Mapping[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    """ValidateNodeSelector: at least one term."""
    terms_path = f"{path}.nodeSelectorTerms"
    terms = selector.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return [FieldError.required(terms_path, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in _items(terms):
        errs.extend(_node_selector_term(term, f"{terms_path}[{i}]", allow_invalid_values=allow_invalid_values))
    return errs


def _weight(term: Mapping[str, Any], path: str) -> list[FieldError]:
    weight = term.get("weight", 0)
    if isinstance(weight, int) and not isinstance(weight, bool) and 1 <= weight <= 100:
        return []
    return [FieldError.invalid(f"{path}.weight", weight, "must be in the range 1-100")]


def _node_affinity(affinity: Mapping[str, Any], path: str, opts: _Options) -> list[FieldError]:
    """validateNodeAffinity; preferred terms always tolerate bad label values (they may still score)."""
    errs: list[FieldError] = []
    required = affinity.get(_REQUIRED)
    if isinstance(required, Mapping):
        errs.extend(_node_selector(required, f"{path}.{_REQUIRED}",
                                   allow_invalid_values=opts.invalid_label_value_in_required_node_affinity))
    for i, term in _items(affinity.get(_PREFERRED)):
        errs.extend(_weight(term, f"{path}.{_PREFERRED}[{i}]"))
        errs.extend(_node_selector_term(_mapping(term.get("preference")), f"{path}.{_PREFERRED}[{i}].preference",
                                        allow_invalid_values=True))
    return errs


# -- pod (anti-)affinity -----------------------------------------------------------------------------


def _label_keys(keys: list[Any], selector: Any, path: str) -> list[FieldError]:
    """validateLabelKeys (``matchLabelKeys`` / ``mismatchLabelKeys`` of a pod affinity term)."""
    if not keys:
        return []
    if selector is None:
        return [FieldError.forbidden(path, "must not be specified when labelSelector is not set")]
    return [e for i, key in enumerate(keys) for e in _label_name(_text(key), f"{path}[{i}]")]


def _pod_affinity_term(term: Mapping[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    """validatePodAffinityTerm."""
    errs = _affinity_term_selectors(term, path, allow_invalid_values=allow_invalid_values)
    for name in _list(term.get("namespaces")):
        # ValidateNamespaceName, reported at upstream's path ".namespace" (singular).
        errs.extend(FieldError.invalid(f"{path}.namespace", name, m) for m in is_dns1123_label(_text(name)))
    # validateMatchLabelKeysAndMismatchLabelKeys.
    match_keys, mismatch_keys = _list(term.get("matchLabelKeys")), _list(term.get("mismatchLabelKeys"))
    selector = term.get("labelSelector")
    errs.extend(_label_keys(match_keys, selector, f"{path}.matchLabelKeys"))
    errs.extend(_label_keys(mismatch_keys, selector, f"{path}.mismatchLabelKeys"))
    errs.extend(_match_label_keys_in_selector(term, path))
    errs.extend(FieldError.invalid(f"{path}.matchLabelKeys[{i}]", key, "exists in both matchLabelKeys and mismatchLabelKeys")
                for i, key in enumerate(match_keys) if key in mismatch_keys)
    topology_key = _text(term.get("topologyKey"))
    if not topology_key:
        errs.append(FieldError.required(f"{path}.topologyKey", "can not be empty"))
    errs.extend(_label_name(topology_key, f"{path}.topologyKey"))
    return errs


def _match_label_keys_in_selector(term: Mapping[str, Any], path: str) -> list[FieldError]:
    """Step 2 of validateMatchLabelKeysAndMismatchLabelKeys: a matchLabelKeys key the selector names twice.

    A new pod is validated after its PrepareForCreate merged ``key In (value)`` / ``key NotIn (value)``
    into a set ``labelSelector`` for the keys its labels carry (``mutatePodAffinity``,
    :mod:`kubeloop.api._pod_create_mutations`), so a matchLabelKeys key that the given selector
    already named is there twice and refused; a pod template is not merged, so in one the key may
    appear once. The error's path is the term's with the key's index (``...[0][1]``), as upstream's
    ``fldPath.Index(i)`` on the term path gives it.
    """
    selector = term.get("labelSelector")
    match_keys = _list(term.get("matchLabelKeys"))
    if not isinstance(selector, Mapping) or not well_shaped(selector):
        return []
    index = {key: i for i, key in enumerate(match_keys) if isinstance(key, str)}
    seen = set(_mapping(selector.get("matchLabels")))
    errs: list[FieldError] = []
    for expression in _list(selector.get("matchExpressions")):
        key = expression.get("key")
        if isinstance(key, str) and key in index and key in seen:
            errs.append(FieldError.invalid(f"{path}[{index[key]}]", key, "exists in both matchLabelKeys and labelSelector"))
        seen.add(key)
    return errs


def _affinity_term_selectors(term: Mapping[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    """ValidatePodAffinityTermSelector: ``labelSelector`` and ``namespaceSelector``."""
    return [*_label_selector(term.get("labelSelector"), f"{path}.labelSelector", allow_invalid_values=allow_invalid_values),
            *_label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector",
                             allow_invalid_values=allow_invalid_values)]


def _pod_affinity(affinity: Mapping[str, Any], path: str, opts: _Options) -> list[FieldError]:
    """validatePodAffinity and validatePodAntiAffinity (the same rules)."""
    allow = opts.invalid_label_value_in_selector
    errs: list[FieldError] = []
    for i, term in _items(affinity.get(_REQUIRED)):
        errs.extend(_pod_affinity_term(term, f"{path}.{_REQUIRED}[{i}]", allow_invalid_values=allow))
    for j, weighted in _items(affinity.get(_PREFERRED)):
        errs.extend(_weight(weighted, f"{path}.{_PREFERRED}[{j}]"))
        errs.extend(_pod_affinity_term(_mapping(weighted.get("podAffinityTerm")),
                                       f"{path}.{_PREFERRED}[{j}].podAffinityTerm", allow_invalid_values=allow))
    return errs


def _affinity(affinity: Mapping[str, Any], path: str, opts: _Options) -> list[FieldError]:
    """validateAffinity."""
    errs: list[FieldError] = []
    if isinstance(node := affinity.get("nodeAffinity"), Mapping):
        errs.extend(_node_affinity(node, f"{path}.nodeAffinity", opts))
    if isinstance(pod := affinity.get("podAffinity"), Mapping):
        errs.extend(_pod_affinity(pod, f"{path}.podAffinity", opts))
    if isinstance(anti := affinity.get("podAntiAffinity"), Mapping):
        errs.extend(_pod_affinity(anti, f"{path}.podAntiAffinity", opts))
    return errs


# -- entry points --------------------------------------------------------------------------------------


def _options_from(old_spec: Any) -> _Options:
    """GetValidationOptionsFromPodSpecAndMeta's three selector relaxations, from the stored spec."""
    if not isinstance(old_spec, Mapping):
        return _Options()
    affinity = _mapping(old_spec.get("affinity"))
    selector_errors = [
        e
        for kind in ("podAffinity", "podAntiAffinity")
        for _, term in [*_items(_mapping(affinity.get(kind)).get(_REQUIRED)),
                        *((i, _mapping(w.get("podAffinityTerm"))) for i, w in _items(_mapping(affinity.get(kind)).get(_PREFERRED)))]
        for e in _affinity_term_selectors(term, "", allow_invalid_values=False)
    ]
    required = _mapping(_mapping(affinity.get("nodeAffinity")).get(_REQUIRED))
    bad_required_value = has_invalid_label_value_in_node_selector(required)
    constraints = old_spec.get("topologySpreadConstraints")
    bad_spread_selector = any(
        _label_selector(c.get("labelSelector"), "", allow_invalid_values=False)
        for _, c in _items(constraints)
    )
    return _Options(bool(selector_errors), bad_required_value, bad_spread_selector)


def validate_pod_scheduling(spec: Any, *, old_spec: Any = None, field: str = "spec",
                            with_security: bool = True) -> list[FieldError]:
    """The checks of ``ValidatePodSpec`` after ``dnsPolicy`` on the pod spec at ``field``, in upstream's order.

    ``old_spec`` is the stored spec on update (``None`` on create); see the module docstring.
    A pod's spec is read as its strategy prepared it (a new pod's affinity selectors merged with its
    matchLabelKeys), a template's as sent.
    ``with_security=False`` leaves out the security rules (a StatefulSet's template, whose pod spec
    upstream does not validate).
    """
    if not isinstance(spec, Mapping):
        return []
    opts = _options_from(old_spec)
    errs: list[FieldError] = []
    if isinstance(node_selector := spec.get("nodeSelector"), Mapping):
        errs.extend(validate_labels(node_selector, f"{field}.nodeSelector"))
    if with_security:
        errs.extend(pod_security_context_errors(spec, field, security_options_from(old_spec)))
    if isinstance(affinity := spec.get("affinity"), Mapping):
        errs.extend(_affinity(affinity, f"{field}.affinity", opts))
    errs.extend(scheduling_gate_errors(spec.get("schedulingGates"), f"{field}.schedulingGates"))
    if isinstance(constraints := spec.get("topologySpreadConstraints"), list):
        errs.extend(topology_spread_errors(constraints, f"{field}.topologySpreadConstraints",
                                           check_selectors=not opts.invalid_topology_spread_label_selector))
    if with_security:
        errs.extend(host_process_errors(spec, field))
        errs.extend(host_users_errors(spec, field))
    if isinstance(tolerations := spec.get("tolerations"), list) and tolerations:
        errs.extend(toleration_errors(tolerations, f"{field}.tolerations"))
    if with_security:
        errs.extend(os_errors(spec, field))
    return errs


def _template_spec(obj: Any) -> Any:
    return _mapping(_mapping(_mapping(obj).get("spec")).get("template")).get("spec")


def validate_pod_template_scheduling(obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None,
                                     with_security: bool = True) -> list[FieldError]:
    """:func:`validate_pod_scheduling` on a workload's ``spec.template.spec`` (``ValidatePodTemplateSpec``);
    ``old`` is the stored workload on update (``GetValidationOptionsFromPodTemplate``)."""
    return validate_pod_scheduling(_template_spec(obj), old_spec=_template_spec(old) if old is not None else None,
                                   field="spec.template.spec", with_security=with_security)


def validate_node_selector(selector: Any, field: str, *, allow_invalid_values: bool = False) -> list[FieldError]:
    """``ValidateNodeSelector`` on the node selector at ``field`` (a PersistentVolume's
    ``spec.nodeAffinity.required``, say); anything but a JSON object is skipped."""
    return _node_selector(selector, field, allow_invalid_values=allow_invalid_values) if isinstance(selector, Mapping) else []


def has_invalid_label_value_in_node_selector(selector: Any) -> bool:
    """``helper.HasInvalidLabelValueInNodeSelectorTerms``: a ``matchExpressions`` value that is not a label value."""
    return any(is_valid_label_value(_text(value))
               for _, term in _items(_mapping(selector).get("nodeSelectorTerms"))
               for _, req in _items(term.get("matchExpressions"))
               for value in _values(req))
