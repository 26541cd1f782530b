"""Small pure functions over Kubernetes objects as JSON dicts.

Readers never fail on a missing or ``null`` field: they answer the Go zero value (``""``, an empty
mapping or list, None). They return the object's own containers where noted (read-only by
convention, so no copy on hot paths). Writers (:func:`with_finalizer`, :func:`without_finalizer`)
never mutate their input: they return a new object whose ``metadata`` and ``finalizers`` are new,
sharing every other part with the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "annotations_of",
    "controller_of",
    "has_finalizer",
    "is_being_deleted",
    "labels_of",
    "metadata_of",
    "name_of",
    "namespace_of",
    "namespaced_name",
    "object_ref",
    "owner_reference",
    "owner_references",
    "uid_of",
    "with_finalizer",
    "without_finalizer",
]

_EMPTY: Mapping[str, Any] = {}


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj["metadata"]``, or an empty mapping (the object's own dict: do not mutate it)."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else _EMPTY


def _meta_str(obj: Mapping[str, Any], key: str) -> str:
    value = metadata_of(obj).get(key)
    return value if isinstance(value, str) else ""


def name_of(obj: Mapping[str, Any]) -> str:
    return _meta_str(obj, "name")


def namespace_of(obj: Mapping[str, Any]) -> str:
    """The namespace, ``""`` for cluster-scoped objects."""
    return _meta_str(obj, "namespace")


def uid_of(obj: Mapping[str, Any]) -> str:
    return _meta_str(obj, "uid")


def namespaced_name(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` when cluster-scoped (client-go ``MetaNamespaceKeyFunc``)."""
    namespace = namespace_of(obj)
    return f"{namespace}/{name_of(obj)}" if namespace else name_of(obj)


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = metadata_of(obj).get("labels")
    return labels if isinstance(labels, Mapping) else _EMPTY


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    annotations = metadata_of(obj).get("annotations")
    return annotations if isinstance(annotations, Mapping) else _EMPTY


def owner_references(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The object's ownerReferences (a new list of the object's own reference dicts)."""
    refs = metadata_of(obj).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` (``metav1.GetControllerOf``), else None."""
    for ref in owner_references(obj):
        if ref.get("controller") is True:
            return ref
    return None


def is_being_deleted(obj: Mapping[str, Any]) -> bool:
    """True once ``deletionTimestamp`` is set: the object waits for finalizers or grace to end."""
    return bool(metadata_of(obj).get("deletionTimestamp"))


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    items = metadata_of(obj).get("finalizers")
    return [f for f in items if isinstance(f, str)] if isinstance(items, list) else []


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in _finalizers(obj)


def _with_finalizers(obj: Mapping[str, Any], finalizers: list[str]) -> dict[str, Any]:
    meta = dict(metadata_of(obj))
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)
    return {**obj, "metadata": meta}


def with_finalizer(obj: Mapping[str, Any], finalizer: str) -> dict[str, Any]:
    """A new object with ``finalizer`` appended (unchanged list if it is already there)."""
    current = _finalizers(obj)
    return _with_finalizers(obj, current if finalizer in current else [*current, finalizer])


def without_finalizer(obj: Mapping[str, Any], finalizer: str) -> dict[str, Any]:
    """A new object without ``finalizer`` (every occurrence); ``finalizers`` dropped when empty."""
    return _with_finalizers(obj, [f for f in _finalizers(obj) if f != finalizer])


def object_ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A core/v1 ``ObjectReference`` to ``obj`` (as Events' ``involvedObject`` carries)."""
    ref: dict[str, Any] = {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", "")}
    if namespace_of(obj):
        ref["namespace"] = namespace_of(obj)
    ref["name"] = name_of(obj)
    ref["uid"] = uid_of(obj)
    resource_version = _meta_str(obj, "resourceVersion")
    if resource_version:
        ref["resourceVersion"] = resource_version
    return ref


def owner_reference(
    owner: Mapping[str, Any], *, controller: bool = False, block_owner_deletion: bool = False
) -> dict[str, Any]:
    """An ownerReference naming ``owner`` (``metav1.NewControllerRef`` when both flags are set)."""
    ref: dict[str, Any] = {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": name_of(owner),
        "uid": uid_of(owner),
    }
    if controller:
        ref["controller"] = True
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref
