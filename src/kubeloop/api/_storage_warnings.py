"""The ``Warning`` texts upstream's storage strategies return for a write that is valid but unwise.

- :func:`persistent_volume_warnings` is ``GetWarningsForPersistentVolume`` (k/k
  ``pkg/api/persistentvolume/util.go``, release 1.32): the beta storage-class annotation, the
  ``Recycle`` reclaim policy, deprecated node labels in the required node affinity
  (:func:`kubeloop.api._node_label_warnings.node_selector_term_warnings`), and the volume plugins that no
  longer work (cephfs, photonPersistentDisk, scaleIO, storageOS, glusterfs, rbd).
- :func:`persistent_volume_claim_warnings` is ``GetWarningsForPersistentVolumeClaim``
  (``pkg/api/persistentvolumeclaim/util.go``): the beta storage-class annotation, then
  :func:`claim_spec_warnings`, a ``storage`` request or limit that is not a whole number of bytes.
- :func:`statefulset_warnings` is the claim-template part of the statefulset strategy's
  ``WarningsOnCreate`` and ``WarningsOnUpdate``: :func:`claim_spec_warnings` of each
  ``volumeClaimTemplates[i]``, at ``spec.volumeClaimTemplates[i]`` on create and (upstream's own
  spelling) ``spec.volumeClaimTemplates[i].Spec`` on update.

Each strategy returns these after validation has passed, on create and on every main-resource
update (of the new object), never on ``/status``. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kubeloop.api._node_label_warnings import node_selector_term_warnings
from kubeloop.api._pod_fields import mapping_of
from kubeloop.api._quantity import QuantityError, parse_quantity

__all__ = [
    "claim_spec_warnings",
    "fractional_byte_text",
    "persistent_volume_claim_warnings",
    "persistent_volume_warnings",
    "statefulset_warnings",
]

_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"  # core.BetaStorageClassAnnotation
_DEPRECATED_ANNOTATION = 'deprecated since v1.8; use "storageClassName" attribute instead'
# The volume plugins upstream warns of, in its order.
_DEPRECATED_SOURCES = (
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
)


def _annotation_warnings(obj: Mapping[str, Any]) -> list[str]:
    annotations = mapping_of(mapping_of(obj.get("metadata")).get("annotations"))
    if _STORAGE_CLASS_ANNOTATION in annotations:
        return [f"metadata.annotations[{_STORAGE_CLASS_ANNOTATION}]: {_DEPRECATED_ANNOTATION}"]
    return []


_BINARY_SUFFIXES = frozenset({"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"})
_DECIMAL_SUFFIXES = frozenset("kMGTPE")


def persistent_volume_warnings(pv: Mapping[str, Any]) -> list[str]:
    """``GetWarningsForPersistentVolume`` (see the module docstring)."""
    spec = mapping_of(pv.get("spec"))
    warnings = _annotation_warnings(pv)
    if spec.get("persistentVolumeReclaimPolicy") == "Recycle":
        warnings.append("spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. "
                        "Instead, the recommended approach is to use dynamic provisioning.")
    required = mapping_of(spec.get("nodeAffinity")).get("required")
    if isinstance(required, Mapping):
        terms = required.get("nodeSelectorTerms")
        for i, term in enumerate(terms if isinstance(terms, list) else []):
            warnings.extend(node_selector_term_warnings(mapping_of(term), f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]"))
    warnings.extend(f"spec.{key}: {text}" for key, text in _DEPRECATED_SOURCES if spec.get(key) is not None)
    return warnings


def fractional_byte_text(value: Any) -> str | None:
    """The canonical text of a quantity whose ``MilliValue()`` is not a whole number of thousands, else ``None``.

    The spellings manifests use for bytes (``128Mi``, ``1G``, ``1000``) are told whole without parsing.
    """
    if not isinstance(value, str):
        return None
    digits = value[:-2] if value[-2:] in _BINARY_SUFFIXES else value[:-1] if value[-1:] in _DECIMAL_SUFFIXES else value
    if digits.isascii() and digits.isdigit():
        return None
    try:
        quantity = parse_quantity(value.strip())
    except QuantityError:
        return None
    if quantity.exponent >= 0:
        return None
    milli = math.ceil(quantity.value * 1000)  # ScaledValue(Milli) rounds up
    return quantity.text if milli % 1000 else None


def claim_spec_warnings(spec: Any, path: str) -> list[str]:
    """``GetWarningsForPersistentVolumeClaimSpec``: a fractional ``storage`` request, then limit."""
    resources = mapping_of(mapping_of(spec).get("resources"))
    warnings = []
    for key in ("requests", "limits"):
        text = fractional_byte_text(mapping_of(resources.get(key)).get("storage"))
        if text is not None:
            warnings.append(f'{path}.resources.{key}[storage]: fractional byte value "{text}" is invalid, must be an integer')
    return warnings


def persistent_volume_claim_warnings(pvc: Mapping[str, Any]) -> list[str]:
    """``GetWarningsForPersistentVolumeClaim`` (see the module docstring)."""
    return [*_annotation_warnings(pvc), *claim_spec_warnings(pvc.get("spec"), "spec")]


def statefulset_warnings(sts: Mapping[str, Any], *, update: bool) -> list[str]:
    """The claim templates' warnings of a StatefulSet create (or, with ``update``, update)."""
    templates = mapping_of(sts.get("spec")).get("volumeClaimTemplates")
    suffix = ".Spec" if update else ""
    return [text for i, template in enumerate(templates if isinstance(templates, list) else [])
            for text in claim_spec_warnings(mapping_of(template).get("spec"), f"spec.volumeClaimTemplates[{i}]{suffix}")]
