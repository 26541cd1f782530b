"""PersistentVolume and PersistentVolumeClaim strategies (k/k ``pkg/registry/core/persistentvolume`` and
``persistentvolumeclaim/strategy.go``, release 1.32).

Their own module so that the volume validation they run (:mod:`kubeloop.api._pv_validation`,
:mod:`kubeloop.api._pvc_validation`) is imported by the first write of either kind, not by the server's
start-up (:func:`~kubeloop.server._strategy.strategy_for` imports it late).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._pv_validation import validate_persistent_volume, validate_persistent_volume_update
from kubeloop.api._pvc_data_source import prepare_claim_data_sources
from kubeloop.api._pvc_validation import (
    validate_persistent_volume_claim,
    validate_persistent_volume_claim_status_update,
    validate_persistent_volume_claim_update,
)
from kubeloop.api._storage_warnings import persistent_volume_claim_warnings, persistent_volume_warnings
from kubeloop.server._strategy import GenericStrategy, _against_stored, _DecodesQuantities, _ZeroStatus

__all__ = ["PersistentVolumeClaimStrategy", "PersistentVolumeStrategy"]


class _DropsVolumeAttributesClass(GenericStrategy):
    """DropDisabledSpecFields (pkg/api/persistentvolume) and DropDisabledFields (pkg/api/persistentvolumeclaim):
    with the VolumeAttributesClass feature gate off (1.32's default), ``spec.volumeAttributesClassName``
    is dropped on create, and on update unless the stored object already has one."""

    @staticmethod
    def _drop(new: dict[str, Any], old: dict[str, Any] | None) -> None:
        spec = new.get("spec")
        old_spec = old.get("spec") if old is not None else None
        if (isinstance(spec, dict) and "volumeAttributesClassName" in spec
                and not (isinstance(old_spec, dict) and old_spec.get("volumeAttributesClassName") is not None)):
            del spec["volumeAttributesClassName"]

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        self._drop(obj, None)
        super().prepare_for_create(obj)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self._drop(new, old)
        super().prepare_for_update(new, old)


class PersistentVolumeStrategy(_DropsVolumeAttributesClass, _DecodesQuantities, _ZeroStatus):
    """PersistentVolumes: ValidatePersistentVolume on create, and ValidatePersistentVolumeUpdate on a
    main-resource update; ValidatePersistentVolumeStatusUpdate checks nothing of the status.
    GetWarningsForPersistentVolume on create and main-resource update."""

    warns = True

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_persistent_volume(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return [] if subresource == "status" else _against_stored(self.info, validate_persistent_volume_update, new, old)

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return persistent_volume_warnings(obj)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        return [] if subresource else persistent_volume_warnings(new)


class PersistentVolumeClaimStrategy(_DropsVolumeAttributesClass, _DecodesQuantities, _ZeroStatus):
    """PersistentVolumeClaims: the zero status, quantities in canonical form, the data source fields
    prepared (:mod:`kubeloop.api._pvc_data_source`), ValidatePersistentVolumeClaim on create,
    ValidatePersistentVolumeClaimUpdate on a main-resource update, and
    ValidatePersistentVolumeClaimStatusUpdate on ``/status``; GetWarningsForPersistentVolumeClaim on
    create and main-resource update."""

    warns = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)  # the status, then DropDisabledFields (volumeAttributesClassName) first
        prepare_claim_data_sources(obj.get("spec"), None, create=True)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        prepare_claim_data_sources(new.get("spec"), old.get("spec"), create=False)

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return persistent_volume_claim_warnings(obj)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        return [] if subresource else persistent_volume_claim_warnings(new)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_persistent_volume_claim(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_persistent_volume_claim_status_update(new) if subresource == "status" else []
        return _against_stored(self.info, validate_persistent_volume_claim_update, new, old)
