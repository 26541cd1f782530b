"""The ``Warning`` texts upstream's storage strategies return for a write that is valid but unwise.

- :func:`persistent_volume_warnings` is ``GetWarningsForPersistentVolume`` (k/k
  ``pkg/api/persistentvolume/util.go``, release 1.32): the beta storage-class annotation, the
  ``Recycle`` reclaim policy, deprecated node labels in the required node affinity
  (``pkg/api/node/util.go`` ``GetWarningsForNodeSelectorTerm``), and the volume plugins that no
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

from kubeloop.api._pod_fields import go_text, mapping_of
from kubeloop.api._quantity import QuantityError, parse_quantity

__all__ = ["claim_spec_warnings", "persistent_volume_claim_warnings", "persistent_volume_warnings", "statefulset_warnings"]

_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"  # core.BetaStorageClassAnnotation
_DEPRECATED_ANNOTATION = 'deprecated since v1.8; use "storageClassName" attribute instead'
# pkg/api/node/util.go deprecatedNodeLabels.
_DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region": 'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
    "failure-domain.beta.kubernetes.io/zone": 'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
    "beta.kubernetes.io/instance-type": 'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
}
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
            expressions = mapping_of(term).get("matchExpressions")
            for j, expression in enumerate(expressions if isinstance(expressions, list) else []):
                key = go_text(mapping_of(expression).get("key"))
                if key in _DEPRECATED_NODE_LABELS:
                    warnings.append(f"spec.nodeAffinity.required.nodeSelectorTerms[{i}].matchExpressions[{j}].key: "
                                    f"{key} is {_DEPRECATED_NODE_LABELS[key]}")
    warnings.extend(f"spec.{key}: {text}" for key, text in _DEPRECATED_SOURCES if spec.get(key) is not None)
    return warnings


def _fractional(value: Any) -> str | None:
    """The canonical text of a quantity whose ``MilliValue()`` is not a whole number of thousands, else ``None``."""
    if not isinstance(value, str):
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
        text = _fractional(mapping_of(resources.get(key)).get("storage"))
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
