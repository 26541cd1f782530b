"""Validation of a PersistentVolume, as upstream's persistentvolume strategy runs it on create and update.

:func:`validate_persistent_volume` is ``ValidatePersistentVolumeSpec`` followed by ``pkg/volume/validation``'s
``checkMountOption`` (k/k ``pkg/apis/core/validation/validation.go``, release 1.32; the strategy is
``pkg/registry/core/persistentvolume/strategy.go``), one :class:`FieldError` per problem with upstream's
path, type and text, in upstream's order: access modes (at least one, each known, ``ReadWriteOncePod``
alone), capacity (set, ``storage`` and nothing else, a value above zero), the reclaim policy, the node
affinity (``validateVolumeNodeAffinity``: ``required`` must be set, then the node selector rules), the
volume source (exactly one, checked by :mod:`kubeloop.api._pv_source_validation`; a ``local`` volume
needs node affinity), no ``Recycle`` for a hostPath of ``/``, the storage class name (a subdomain),
the volume mode, and, once the stored volume has one, the volume attributes class name.

:func:`validate_persistent_volume_update` is the strategy's ``ValidateUpdate``: the checks above, then
``ValidatePersistentVolumeUpdate``, which runs them a second time (so every cause appears twice in the
Status, as upstream's do; the message names each once) before its own rules: the volume source is
immutable (``spec.persistentvolumesource``; a CSI ``controllerExpandSecretRef`` may be added), so is
``volumeMode`` (at upstream's path ``volumeMode``), and so is ``nodeAffinity`` once set (at
``nodeAffinity``), except that a requirement's key may move from a beta node label to its GA name; a
change of ``volumeAttributesClassName`` is refused, as with the VolumeAttributesClass feature gate off
(1.32's default). As ``ValidationOptionsForPersistentVolume`` allows, label values the stored
``required`` terms already had wrong are tolerated on update.

:func:`validate_persistent_volume_node_affinity` is the node affinity part alone (with the local
volume's requirement), for callers that check only that.

Values compare as ``apiequality.Semantic.DeepEqual`` compares the decoded structs: an absent field,
``null`` and a Go zero value are one value, except in the fields that are pointers upstream. Where
upstream appends a ``cmp.Diff`` (whose spacing is randomised on purpose), this appends ``- path: old``
/ ``+ path: new`` lines; where upstream prints a struct or map with ``%#v`` (the node affinity, a capacity
other than an absent or empty one), this prints its JSON. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, semantic_diff
from kubeloop.api._pod_scheduling_validation import (
    has_invalid_label_value_in_node_selector,
    validate_node_selector,
)
from kubeloop.api._pv_source_validation import (
    PERSISTENT_VOLUME_SOURCES,
    mount_option_errors,
    volume_source_errors,
)
from kubeloop.api._quantity import QuantityError, parse_quantity
from kubeloop.api._validation import name_is_dns1123_subdomain

__all__ = [
    "access_mode_errors",
    "class_name_errors",
    "semantic",
    "validate_persistent_volume",
    "validate_persistent_volume_node_affinity",
    "validate_persistent_volume_update",
    "volume_mode_errors",
]

_PATH = "spec.nodeAffinity"
# sets.List(supportedAccessModes), sets.List(supportedReclaimPolicy), sets.List(supportedVolumeModes).
ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
_RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
VOLUME_MODES = ["Block", "Filesystem"]
_IMMUTABLE = "field is immutable"  # apimachinery FieldImmutableErrorMsg
# betaToGALabel: the node label keys a PersistentVolume's node affinity may move to their GA names.
_BETA_TO_GA_LABEL = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
}
# Volume source fields that are pointers upstream: "", false or 0 there is a value, not absence.
_SOURCE_POINTERS = frozenset({
    ("iscsi", "initiatorName"), ("glusterfs", "endpointsNamespace"), ("azureFile", "secretNamespace"),
    ("local", "fsType"), ("azureDisk", "cachingMode"), ("azureDisk", "fsType"), ("azureDisk", "readOnly"),
    ("azureDisk", "kind"), ("fc", "lun"),
})


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def semantic(value: Any, pointers: frozenset[tuple[str, str]] = frozenset(), parent: str = "") -> Any:
    """``value`` with every absent-equivalent field dropped, so two decodings of one struct compare equal.

    ``null`` is always absent; ``""``, ``false``, ``0``, ``[]`` and ``{}`` are absent unless
    ``(parent key, key)`` is in ``pointers``.
    """
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            item = semantic(item, pointers, key)
            if item is None:
                continue
            if (parent, key) not in pointers and (item in ("", [], {}) or item is False or (type(item) is int and item == 0)):
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [semantic(item, pointers, parent) for item in value]
    return value


def access_mode_errors(modes: Any, path: str) -> list[FieldError]:
    """Each access mode known, and ``ReadWriteOncePod`` never with another (shared with claims)."""
    errs: list[FieldError] = []
    once_pod = other = False
    for mode in modes if isinstance(modes, list) else []:
        if mode not in ACCESS_MODES:
            errs.append(FieldError.not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errs.append(FieldError.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def class_name_errors(name: str, path: str) -> list[FieldError]:
    """ValidateClassName: a storage (or volume attributes) class name is a DNS-1123 subdomain."""
    return [FieldError.invalid(path, name, m) for m in name_is_dns1123_subdomain(name, False)]


def volume_mode_errors(mode: Any, path: str) -> list[FieldError]:
    return [FieldError.not_supported(path, mode, VOLUME_MODES)] if mode is not None and mode not in VOLUME_MODES else []


def _capacity_errors(capacity: Any) -> list[FieldError]:
    path = "spec.capacity"
    resources = capacity if isinstance(capacity, Mapping) else {}
    errs = [] if resources else [FieldError.required(path)]
    if "storage" not in resources or len(resources) > 1:
        # Upstream prints the ResourceList with %#v: exact for an absent or empty list.
        shown = ("core.ResourceList(nil)" if capacity is None else
                 "core.ResourceList{" + ", ".join(f'"{k}":{json.dumps(v)}' for k, v in sorted(resources.items())) + "}")
        errs.append(FieldError("not_supported", path, f'{shown}: supported values: "storage"'))
    for name in sorted(resources):  # a Go map: upstream's order varies, this one is sorted
        value = resources[name]
        try:
            quantity = parse_quantity(value.strip()) if isinstance(value, str) else None
        except QuantityError:
            quantity = None
        if quantity is None:
            continue
        p = f"{path}[{name}]"
        if quantity.sign() < 0:  # validateBasicResource: Value(), rounded away from zero
            errs.append(FieldError.invalid(p, math.floor(quantity.value), "must be a valid resource quantity"))
        if quantity.sign() <= 0:  # ValidatePositiveQuantityValue
            errs.append(FieldError.invalid(p, quantity.text, "must be greater than zero"))
    return errs


def _affinity_errors(spec: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """validateVolumeNodeAffinity (a ``null`` node affinity is none)."""
    affinity = spec.get("nodeAffinity")
    if not isinstance(affinity, Mapping):
        return []
    required = affinity.get("required")
    if not isinstance(required, Mapping):
        return [FieldError.required(f"{_PATH}.required", "must specify required node constraints")]
    old_required = _mapping(_mapping(_mapping(_mapping(old).get("spec")).get("nodeAffinity")).get("required"))
    return validate_node_selector(required, f"{_PATH}.required",
                                  allow_invalid_values=has_invalid_label_value_in_node_selector(old_required))


def validate_persistent_volume_node_affinity(pv: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """validateVolumeNodeAffinity on ``spec.nodeAffinity``, then the local volume's requirement of it."""
    spec = _mapping(pv.get("spec"))
    errs = _affinity_errors(spec, old)
    if not isinstance(spec.get("nodeAffinity"), Mapping) and isinstance(spec.get("local"), Mapping):
        errs.append(FieldError.required(_PATH, "Local volume requires node affinity"))
    return errs


def _spec_errors(pv: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """ValidatePersistentVolumeSpec (not inline), in upstream's order."""
    spec = _mapping(pv.get("spec"))
    modes = spec.get("accessModes")
    errs = [] if isinstance(modes, list) and modes else [FieldError.required("spec.accessModes")]
    errs.extend(access_mode_errors(modes, "spec.accessModes"))
    errs.extend(_capacity_errors(spec.get("capacity")))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if isinstance(policy, str) and policy and policy not in _RECLAIM_POLICIES:
        errs.append(FieldError.not_supported("spec.persistentVolumeReclaimPolicy", policy, _RECLAIM_POLICIES))
    errs.extend(_affinity_errors(spec, old))
    name = _mapping(pv.get("metadata")).get("name")
    source_errs, _ = volume_source_errors(spec, name if isinstance(name, str) else "")
    errs.extend(source_errs)
    host_path = spec.get("hostPath")
    if (isinstance(host_path, Mapping) and isinstance(host_path.get("path"), str) and _clean(host_path["path"]) == "/"
            and policy == "Recycle"):
        errs.append(FieldError.forbidden("spec.persistentVolumeReclaimPolicy", "may not be 'recycle' for a hostPath mount of '/'"))
    class_name = spec.get("storageClassName")
    if isinstance(class_name, str) and class_name:
        errs.extend(class_name_errors(class_name, "spec.storageClassName"))
    errs.extend(volume_mode_errors(spec.get("volumeMode"), "spec.volumeMode"))
    # ValidationOptionsForPersistentVolume: with the feature gate off (1.32), only a stored class name
    # turns these checks on.
    attributes = spec.get("volumeAttributesClassName")
    if isinstance(attributes, str) and old is not None and _mapping(old.get("spec")).get("volumeAttributesClassName") is not None:
        p = "spec.volumeAttributesClassName"
        errs.extend(class_name_errors(attributes, p) if attributes else [FieldError.required(p, "an empty string is disallowed")])
        if not isinstance(spec.get("csi"), Mapping):
            errs.append(FieldError.required("spec.csi", "has to be specified when using volumeAttributesClassName"))
    return errs


def _clean(path: str) -> str:
    """Go's ``path.Clean``, as far as telling whether a path is ``/``."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    if path.startswith("/"):
        return "/" + "/".join(parts)
    return "/".join(parts) or "."


def validate_persistent_volume(pv: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """The strategy's ``Validate`` (and the first half of ``ValidateUpdate``, with the stored volume as ``old``)."""
    return [*_spec_errors(pv, old), *mount_option_errors(pv)]


def _requirements_to_ga(affinity: Any, old_affinity: Any) -> Any:
    """``affinity`` with each requirement key that moved from a beta label to its GA name put back."""
    if not isinstance(affinity, Mapping) or not isinstance(old_affinity, Mapping):
        return affinity
    terms = _mapping(affinity.get("required")).get("nodeSelectorTerms")
    old_terms = _mapping(old_affinity.get("required")).get("nodeSelectorTerms")
    if not isinstance(terms, list) or not isinstance(old_terms, list) or len(terms) != len(old_terms):
        return affinity
    out_terms = []
    for term, old_term in zip(terms, old_terms, strict=True):
        if not isinstance(term, Mapping) or not isinstance(old_term, Mapping):
            out_terms.append(term)
            continue
        out_term = dict(term)
        for key in ("matchExpressions", "matchFields"):
            reqs, old_reqs = term.get(key), old_term.get(key)
            if isinstance(reqs, list) and isinstance(old_reqs, list) and len(reqs) == len(old_reqs):
                out_term[key] = [
                    {**req, "key": old_req["key"]}
                    if isinstance(req, Mapping) and isinstance(old_req, Mapping)
                    and _BETA_TO_GA_LABEL.get(go_text(old_req.get("key"))) == req.get("key") else req
                    for req, old_req in zip(reqs, old_reqs, strict=True)]
        out_terms.append(out_term)
    return {**affinity, "required": {**_mapping(affinity.get("required")), "nodeSelectorTerms": out_terms}}


def _source(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {key: spec[key] for key in PERSISTENT_VOLUME_SOURCES if key in spec}


def validate_persistent_volume_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The strategy's ``ValidateUpdate`` of the main resource (see the module docstring)."""
    errs = validate_persistent_volume(new, old=old)
    errs.extend(_spec_errors(new, old))  # ValidatePersistentVolumeUpdate runs ValidatePersistentVolume again
    new_spec, old_spec = _mapping(new.get("spec")), _mapping(old.get("spec"))
    new_source, old_source = _source(new_spec), _source(old_spec)
    new_csi, old_csi = new_source.get("csi"), old_source.get("csi")
    if (isinstance(old_csi, Mapping) and old_csi.get("controllerExpandSecretRef") is None
            and isinstance(new_csi, Mapping) and new_csi.get("controllerExpandSecretRef") is not None):
        new_source["csi"] = {k: v for k, v in new_csi.items() if k != "controllerExpandSecretRef"}
    old_semantic, new_semantic = semantic(old_source, _SOURCE_POINTERS), semantic(new_source, _SOURCE_POINTERS)
    if old_semantic != new_semantic:
        errs.append(FieldError.forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after "
                                         "creation\n" + semantic_diff(old_semantic, new_semantic, "spec")))
    new_mode, old_mode = new_spec.get("volumeMode"), old_spec.get("volumeMode")
    if new_mode != old_mode:  # ValidateImmutableField: a nil pointer prints as "null"
        errs.append(FieldError.invalid("volumeMode", "null" if new_mode is None else new_mode, _IMMUTABLE))
    old_affinity = old_spec.get("nodeAffinity")
    if isinstance(old_affinity, Mapping):  # validatePvNodeAffinity, only once set
        new_affinity = new_spec.get("nodeAffinity")
        if semantic(_requirements_to_ga(new_affinity, old_affinity)) != semantic(old_affinity):
            shown = '"null"' if new_affinity is None else json.dumps(new_affinity, sort_keys=True, separators=(",", ":"))
            errs.append(FieldError("invalid", "nodeAffinity",
                                   f"{shown}: {_IMMUTABLE}, except for updating from beta label to GA"))
    if new_spec.get("volumeAttributesClassName") != old_spec.get("volumeAttributesClassName"):
        errs.append(FieldError.forbidden("spec.volumeAttributesClassName",
                                         "update is forbidden when the VolumeAttributesClass feature gate is disabled"))
        if old_spec.get("volumeAttributesClassName") is not None and new_spec.get("volumeAttributesClassName") is None:
            errs.append(FieldError.forbidden("spec.volumeAttributesClassName", "update from non-nil value to nil is forbidden"))
    return errs
