"""Validation of a PersistentVolume's ``spec.nodeAffinity``, as upstream's ``validateVolumeNodeAffinity`` does it.

:func:`validate_persistent_volume_node_affinity` returns one :class:`FieldError` per problem with
upstream's path, type and text (k/k ``pkg/apis/core/validation/validation.go``:
``ValidatePersistentVolumeSpec`` → ``validateVolumeNodeAffinity`` → ``ValidateNodeSelector``, the same
node selector rules a pod's required node affinity follows; and the local volume's "Local volume
requires node affinity"). On update, pass the stored PersistentVolume as ``old``: like
``ValidationOptionsForPersistentVolume``, label values the stored ``required`` terms already had wrong
are then tolerated. Not modelled: the rest of ``ValidatePersistentVolumeSpec`` (capacity, access modes,
one volume source), and ``validatePvNodeAffinity``'s immutability on update. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_scheduling_validation import (
    has_invalid_label_value_in_node_selector,
    validate_node_selector,
)

__all__ = ["validate_persistent_volume_node_affinity"]

_PATH = "spec.nodeAffinity"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def validate_persistent_volume_node_affinity(pv: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """validateVolumeNodeAffinity on ``spec.nodeAffinity``, then the local volume's requirement of it."""
    spec = _mapping(pv.get("spec"))
    affinity = spec.get("nodeAffinity")
    errs: list[FieldError] = []
    if isinstance(affinity, Mapping):
        required = affinity.get("required")
        if isinstance(required, Mapping):
            old_required = _mapping(_mapping(_mapping(old.get("spec") if old else None).get("nodeAffinity")).get("required"))
            errs.extend(validate_node_selector(required, f"{_PATH}.required",
                                               allow_invalid_values=has_invalid_label_value_in_node_selector(old_required)))
        else:
            errs.append(FieldError.required(f"{_PATH}.required", "must specify required node constraints"))
    elif spec.get("local") is not None:
        errs.append(FieldError.required(_PATH, "Local volume requires node affinity"))
    return errs
