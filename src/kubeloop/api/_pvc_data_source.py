"""A PersistentVolumeClaim's data source fields as upstream's claim strategy prepares them (release 1.32).

:func:`prepare_claim_data_sources` runs, in place on a claim spec, what ``PrepareForCreate`` and
``PrepareForUpdate`` of ``pkg/registry/core/persistentvolumeclaim/strategy.go`` run, in their order
(the helpers are in ``pkg/api/persistentvolumeclaim/util.go``):

1. ``DropDisabledFields``: with ``CrossNamespaceVolumeDataSource`` off (alpha, 1.32's default), a
   ``dataSourceRef`` naming a namespace is dropped unless the stored claim already has a
   ``dataSourceRef`` (``AnyVolumeDataSource`` is on, so a ``dataSourceRef`` is otherwise kept).
2. ``EnforceDataSourceBackwardsCompatibility``: unless the stored claim has a data source, a claim
   without ``dataSourceRef`` keeps ``dataSource`` only when it names a PersistentVolumeClaim (core
   group) or a ``snapshot.storage.k8s.io`` VolumeSnapshot; any other is dropped silently, as before
   1.22.
3. ``NormalizeDataSources``, on create only: the field that is missing is copied from the other
   (``apiGroup``, ``kind``, ``name``), except from a ``dataSourceRef`` that names a namespace.

Validation then sees the claim as it will be stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._pod_fields import go_text

__all__ = ["prepare_claim_data_sources"]


def _copy_reference(source: Mapping[str, Any]) -> dict[str, Any]:
    """The ``apiGroup``, ``kind`` and ``name`` of a reference, in the Go structs' field order. ``kind`` and
    ``name`` are Go strings without omitempty; ``apiGroup`` is copied when set, even to "", and is ``null``
    otherwise: ``APIGroup *string `json:"apiGroup"``` has no omitempty in either struct (core/v1
    ``TypedLocalObjectReference``, ``TypedObjectReference``), so the nil pointer NormalizeDataSources leaves
    encodes as ``null``."""
    return {"apiGroup": source.get("apiGroup"), "kind": go_text(source.get("kind")),
            "name": go_text(source.get("name"))}


def _is_claim_or_snapshot(source: Any) -> bool:
    if not isinstance(source, Mapping):
        return False
    group, kind = go_text(source.get("apiGroup")), go_text(source.get("kind"))
    return (kind == "PersistentVolumeClaim" and not group) or (kind == "VolumeSnapshot" and group == "snapshot.storage.k8s.io")


def prepare_claim_data_sources(spec: Any, old_spec: Any, *, create: bool) -> None:
    """Steps 1 to 3 of the module docstring on ``spec`` (``old_spec``: the stored claim's, ``None`` on create)."""
    if not isinstance(spec, dict):
        return
    old = old_spec if isinstance(old_spec, Mapping) else {}
    ref = spec.get("dataSourceRef")
    if isinstance(ref, Mapping) and go_text(ref.get("namespace")) and old.get("dataSourceRef") is None:
        del spec["dataSourceRef"]
    in_use = old.get("dataSource") is not None or old.get("dataSourceRef") is not None
    if not in_use and spec.get("dataSourceRef") is None and spec.get("dataSource") is not None \
            and not _is_claim_or_snapshot(spec.get("dataSource")):
        del spec["dataSource"]
    if not create:
        return
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if isinstance(source, Mapping) and ref is None:
        spec["dataSourceRef"] = _copy_reference(source)
    elif isinstance(ref, Mapping) and source is None and not go_text(ref.get("namespace")):
        spec["dataSource"] = _copy_reference(ref)
