"""Validation of a PersistentVolumeClaim, as upstream's persistentvolumeclaim strategy runs it.

:func:`validate_persistent_volume_claim` is ``ValidatePersistentVolumeClaimSpec`` (k/k
``pkg/apis/core/validation/validation.go``, release 1.32; the strategy is
``pkg/registry/core/persistentvolumeclaim/strategy.go``), one :class:`FieldError` per problem with
upstream's path, type and text, in upstream's order: at least one access mode, the selector, each
access mode known and ``ReadWriteOncePod`` alone, a ``storage`` request above zero (at upstream's path
``spec.resources[storage]``), the storage class name, the volume mode, ``dataSource`` and
``dataSourceRef`` (a name and a kind; ``PersistentVolumeClaim`` is the only kind of the core group; a
group is a subdomain, a namespace a namespace name; the two agree unless the reference names a
namespace), and, once the stored claim has one, the volume attributes class name.

:func:`validate_persistent_volume_claim_update` is the strategy's ``ValidateUpdate``: those checks,
then ``ValidatePersistentVolumeClaimUpdate``, which runs them a second time (every cause appears twice
in the Status, as upstream's do) before its own rules. The spec is immutable except that
``volumeName`` may be set once, ``storageClassName`` may be set from nothing (or from the beta
storage-class annotation, which is itself immutable), and a bound claim's ``storage`` request may
change: it may grow, and shrink only while it stays above ``status.capacity`` (the recovery from a
failed expansion, RecoverVolumeExpansionFailure, beta and on in 1.32). ``volumeMode`` is immutable
(at upstream's path ``volumeMode``), and a change of ``volumeAttributesClassName`` is refused, as with
the VolumeAttributesClass feature gate off (1.32's default). As ``ValidationOptionsForPersistentVolumeClaim``
allows, a selector or data source group the stored claim already had wrong stays accepted.

:func:`validate_persistent_volume_claim_status_update` is ``ValidatePersistentVolumeClaimStatusUpdate``'s
checks of the status: capacities and allocated resources not negative, allocated resource names and
resize statuses known.

Where upstream appends a ``cmp.Diff``, this appends ``- path: old`` / ``+ path: new`` lines; where it
prints a ``*field.Path`` with ``%#v``, this prints the path. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, label_selector_errors, mapping_of, semantic_diff
from kubeloop.api._pv_validation import (
    access_mode_errors,
    class_name_errors,
    semantic,
    volume_mode_errors,
)
from kubeloop.api._quantity import Quantity, QuantityError, parse_quantity, quantity_key
from kubeloop.api._validation import is_dns1123_subdomain, is_qualified_name, name_is_dns1123_label

__all__ = [
    "validate_persistent_volume_claim",
    "validate_persistent_volume_claim_status_update",
    "validate_persistent_volume_claim_update",
]

_IMMUTABLE = "field is immutable"  # apimachinery FieldImmutableErrorMsg
_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"  # core.BetaStorageClassAnnotation
# Claim spec fields that are pointers upstream: "" there is a value, not absence.
_POINTERS = frozenset({("", "storageClassName"), ("", "volumeAttributesClassName"), ("dataSource", "apiGroup"),
                       ("dataSourceRef", "apiGroup"), ("dataSourceRef", "namespace")})
# sets.List(resizeStatusSet).
_RESIZE_STATUSES = ["ControllerResizeFailed", "ControllerResizeInProgress", "NodeResizeFailed",
                    "NodeResizeInProgress", "NodeResizePending"]


@functools.lru_cache(maxsize=1024)  # the same few spellings fill most claims
def _parsed(text: str) -> Quantity | None:
    try:
        return parse_quantity(text.strip())
    except QuantityError:
        return None


def _quantity(value: Any) -> Quantity | None:
    return _parsed(value) if isinstance(value, str) else None


def _storage(holder: Any) -> Quantity:
    """``ResourceList["storage"]``: the zero quantity when absent."""
    return _quantity(mapping_of(holder).get("storage")) or parse_quantity("0")


def _data_source_errors(source: Mapping[str, Any], path: str, allow_invalid_group: bool) -> list[FieldError]:
    """validateDataSource (and the part validateDataSourceRef shares)."""
    errs = [FieldError.required(f"{path}.{key}") for key in ("name", "kind") if not go_text(source.get(key))]
    group, kind = go_text(source.get("apiGroup")), go_text(source.get("kind"))
    if not group and kind != "PersistentVolumeClaim":
        errs.append(FieldError.invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
    if group and not allow_invalid_group:
        errs.extend(FieldError.invalid(f"{path}.apiGroup", group, m) for m in is_dns1123_subdomain(group))
    return errs


def _spec_errors(pvc: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    spec = mapping_of(pvc.get("spec"))
    old_spec = mapping_of(mapping_of(old).get("spec")) if old is not None else {}
    modes = spec.get("accessModes")
    errs = [] if isinstance(modes, list) and modes else [FieldError.required("spec.accessModes", "at least 1 access mode is required")]
    if spec.get("selector") is not None:
        # ValidationOptionsForPersistentVolumeClaim: any error in the stored selector allows bad values.
        allow = bool(old_spec.get("selector") is not None and label_selector_errors(
            old_spec.get("selector"), "spec.selector", allow_invalid_values=False))
        errs.extend(label_selector_errors(spec.get("selector"), "spec.selector", allow_invalid_values=allow))
    errs.extend(access_mode_errors(modes, "spec.accessModes"))
    requests = mapping_of(mapping_of(spec.get("resources")).get("requests"))
    path = "spec.resources[storage]"
    if "storage" not in requests:
        errs.append(FieldError.required(path))
    elif (storage := _quantity(requests["storage"])) is not None and storage.sign() <= 0:
        errs.append(FieldError.invalid(path, storage.text, "must be greater than zero"))
    class_name = spec.get("storageClassName")
    if isinstance(class_name, str) and class_name:
        errs.extend(class_name_errors(class_name, "spec.storageClassName"))
    errs.extend(volume_mode_errors(spec.get("volumeMode"), "spec.volumeMode"))
    allow_group = any(mapping_of(old_spec.get(key)).get("apiGroup") is not None for key in ("dataSource", "dataSourceRef"))
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if isinstance(source, Mapping):
        errs.extend(_data_source_errors(source, "spec.dataSource", allow_group))
    if isinstance(ref, Mapping):
        errs.extend(_data_source_errors(ref, "spec.dataSourceRef", allow_group))
        namespace = go_text(ref.get("namespace"))
        if namespace:
            errs.extend(FieldError.invalid("spec.dataSourceRef.namespace", namespace, m)
                        for m in name_is_dns1123_label(namespace, False))
    if isinstance(ref, Mapping) and go_text(ref.get("namespace")):
        if isinstance(source, Mapping):
            errs.append(FieldError.invalid("spec", "spec.dataSource", "may not be specified when dataSourceRef.namespace is specified"))
    elif isinstance(source, Mapping) and isinstance(ref, Mapping) and any(
            source.get(key) != ref.get(key) for key in ("apiGroup", "kind", "name")):
        errs.append(FieldError.invalid("spec", "spec.dataSource", "must match dataSourceRef"))
    attributes = spec.get("volumeAttributesClassName")
    # With the feature gate off (1.32), only a stored class name turns this check on.
    if isinstance(attributes, str) and attributes and old_spec.get("volumeAttributesClassName") is not None:
        errs.extend(class_name_errors(attributes, "spec.volumeAttributesClassName"))
    return errs


def validate_persistent_volume_claim(pvc: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """The strategy's ``Validate`` (and the first half of ``ValidateUpdate``, with the stored claim as ``old``)."""
    return _spec_errors(pvc, old)


def _comparable(spec: Mapping[str, Any]) -> Any:
    """A claim spec as Semantic.DeepEqual sees it: zero values absent, quantities by value."""
    resources = mapping_of(spec.get("resources"))
    out = dict(spec)
    if resources:
        out["resources"] = {key: {name: quantity_key(value) for name, value in mapping_of(resources.get(key)).items()}
                            for key in ("limits", "requests") if key in resources}
    return semantic(out, _POINTERS)


def validate_persistent_volume_claim_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The strategy's ``ValidateUpdate`` of the main resource (see the module docstring)."""
    errs = [*_spec_errors(new, old), *_spec_errors(new, old)]
    new_spec, old_spec = mapping_of(new.get("spec")), mapping_of(old.get("spec"))
    new_clone, old_clone = dict(new_spec), dict(old_spec)
    if not go_text(old_spec.get("volumeName")):  # volumeName may be set once (by the binder)
        old_clone["volumeName"] = new_spec.get("volumeName")
    new_annotations = mapping_of(mapping_of(new.get("metadata")).get("annotations"))
    old_annotations = mapping_of(mapping_of(old.get("metadata")).get("annotations"))
    new_class, old_class = new_spec.get("storageClassName"), old_spec.get("storageClassName")
    key = _STORAGE_CLASS_ANNOTATION
    if (key in old_annotations and old_class is None and new_class is not None and new_class == old_annotations[key]
            and (key not in new_annotations or new_annotations[key] == old_annotations[key])):
        new_clone.pop("storageClassName", None)  # validateStorageClassUpgradeFromAnnotation
    else:
        new_value, old_value = go_text(new_annotations.get(key)), go_text(old_annotations.get(key))
        if new_value != old_value:  # ValidateImmutableAnnotation
            errs.append(FieldError.invalid(f"metadata.annotations.{key}", new_value, _IMMUTABLE))
        if new_class is not None and old_class is None and (key not in old_annotations or new_class == old_annotations[key]):
            new_clone.pop("storageClassName", None)  # validateStorageClassUpgradeFromNil
    new_requests = mapping_of(new_spec.get("resources")).get("requests")
    if mapping_of(new.get("status")).get("phase") == "Bound" and isinstance(new_requests, Mapping):
        old_requests = mapping_of(mapping_of(old_spec.get("resources")).get("requests"))
        new_clone["resources"] = {**mapping_of(new_spec.get("resources")),
                                  "requests": {**new_requests, "storage": old_requests.get("storage", "0")}}
    new_clone["volumeAttributesClassName"] = old_clone.get("volumeAttributesClassName")
    if old_clone != new_clone and _comparable(old_clone) != _comparable(new_clone):
        # The diff shows quantities as written (the comparison is by value).
        diff = semantic_diff(semantic(old_clone, _POINTERS), semantic(new_clone, _POINTERS), "spec")
        errs.append(FieldError.forbidden("spec", "spec is immutable after creation except resources.requests and "
                                         "volumeAttributesClassName for bound claims\n" + diff))
    new_request, old_request = (mapping_of(mapping_of(spec.get("resources")).get("requests")) for spec in (new_spec, old_spec))
    new_size = _storage(new_request)
    if (new_request.get("storage") != old_request.get("storage") and new_size.compare(_storage(old_request)) < 0
            and new_size.compare(_storage(mapping_of(old.get("status")).get("capacity"))) <= 0):
        errs.append(FieldError.forbidden("spec.resources.requests.storage", "field can not be less than status.capacity"))
    new_mode, old_mode = new_spec.get("volumeMode"), old_spec.get("volumeMode")
    if new_mode != old_mode:  # ValidateImmutableField: a nil pointer prints as "null"
        errs.append(FieldError.invalid("volumeMode", "null" if new_mode is None else new_mode, _IMMUTABLE))
    new_attributes, old_attributes = new_spec.get("volumeAttributesClassName"), old_spec.get("volumeAttributesClassName")
    if new_attributes != old_attributes:
        p = "spec.volumeAttributesClassName"
        errs.append(FieldError.forbidden(p, "update is forbidden when the VolumeAttributesClass feature gate is disabled"))
        if old_attributes is not None and new_attributes is None:
            errs.append(FieldError.forbidden(p, "update from non-nil value to nil is forbidden"))
        elif old_attributes is not None and new_attributes == "":
            errs.append(FieldError.forbidden(p, "update from non-nil value to an empty string is forbidden"))
    return errs


def _basic_resource_errors(value: Any, path: str) -> list[FieldError]:
    """validateBasicResource: ``Value()`` (rounded away from zero) not negative."""
    quantity = _quantity(value)
    if quantity is not None and quantity.sign() < 0:
        return [FieldError.invalid(path, math.floor(quantity.value), "must be a valid resource quantity")]
    return []


def _resource_key_errors(name: str, path: str) -> list[FieldError]:
    """validatePersistentVolumeClaimResourceKey: a qualified name; of the native names, only ``storage``."""
    if messages := is_qualified_name(name):
        return [FieldError.invalid(path, name, m) for m in messages]
    native = "/" not in name or "kubernetes.io/" in name  # helper.IsNativeResource
    return [FieldError.not_supported(path, name, ["storage"])] if native and name != "storage" else []


def validate_persistent_volume_claim_status_update(new: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePersistentVolumeClaimStatusUpdate beyond metadata (RecoverVolumeExpansionFailure on)."""
    spec, status = mapping_of(new.get("spec")), mapping_of(new.get("status"))
    modes = spec.get("accessModes")
    errs = [] if isinstance(modes, list) and modes else [FieldError.required("Spec.accessModes")]
    capacity = mapping_of(status.get("capacity"))
    for name in sorted(capacity):  # Go maps: upstream's order varies, this one is sorted
        errs.extend(_basic_resource_errors(capacity[name], f"status.capacity[{name}]"))
    path = "status.allocatedResourceStatus"
    statuses = mapping_of(status.get("allocatedResourceStatuses"))
    for name in sorted(statuses):
        errs.extend(_resource_key_errors(name, path))
        if statuses[name] not in _RESIZE_STATUSES:
            errs.append(FieldError.not_supported(path, name, _RESIZE_STATUSES))
    allocated = mapping_of(status.get("allocatedResources"))
    for name in sorted(allocated):
        if key_errs := _resource_key_errors(name, "status.allocatedResources"):
            errs.extend(key_errs)
            continue
        p = f"status.allocatedResources[{name}]"
        if basic := _basic_resource_errors(allocated[name], p):
            errs.extend(basic)
        elif (quantity := _quantity(allocated[name])) is not None and quantity.sign() < 0:
            errs.append(FieldError.invalid(p, quantity.text, "must be greater than or equal to 0"))
    return errs
