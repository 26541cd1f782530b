"""The ``/scale`` subresource: an ``autoscaling/v1`` Scale view of a kind's replicas.

GET builds the Scale from the parent (``spec.replicas``, ``status.replicas``, and ``status.selector``
as a label-selector string: built-ins format ``spec.selector``, a ReplicationController's label map
as ``labels.SelectorFromSet`` does, custom kinds read the CRD's ``labelSelectorPath``), as k/k
``pkg/registry/apps/deployment/storage`` scaleFromDeployment and ``pkg/registry/core/replicationcontroller/
storage`` scaleFromRC do.
PUT/PATCH change only the parent's ``spec.replicas``; a ``metadata.resourceVersion`` in the Scale is
a precondition on the parent (409 when stale); the write goes through the parent's normal update
path (so ``generation`` moves and watchers see MODIFIED on the parent).
"""

from __future__ import annotations

from typing import Any

import orjson

from kubeloop.api import (
    BadRequest,
    FieldError,
    ResourceInfo,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    builtin_schema,
    invalid,
    label_selector_from_dict,
)
from kubeloop.api._go_json import go_json_kind
from kubeloop.server._http import decode_json
from kubeloop.server._rest import Current, WriteRequest, get_object, update_object
from kubeloop.server._state import ServerState

__all__ = ["scale_get", "scale_of", "scale_update", "set_path"]


def _get_path(obj: Any, dotted: str) -> Any:
    for part in dotted.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def set_path(obj: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.strip(".").split(".")
    for part in parts[:-1]:
        nxt = obj.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            obj[part] = nxt
        obj = nxt
    obj[parts[-1]] = value


def scale_of(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    paths = info.scale
    assert paths is not None
    meta = obj.get("metadata") or {}
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta}
    status: dict[str, Any] = {"replicas": _get_path(obj, paths.status_replicas) or 0}
    if info.custom:
        selector = _get_path(obj, paths.label_selector) if paths.label_selector else None
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    else:
        spec_selector = _get_path(obj, ".spec.selector")
        if paths.selector_is_map and isinstance(spec_selector, dict):
            # A ReplicationController's label map (scaleFromRC: labels.SelectorFromSet(spec.selector)).
            spec_selector = {"matchLabels": spec_selector}
        text = str(label_selector_from_dict(spec_selector)) if isinstance(spec_selector, dict) else ""
        if text:
            status["selector"] = text
    replicas = _get_path(obj, paths.spec_replicas)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


async def scale_get(state: ServerState, info: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
    kv = await get_object(state, info, namespace, name)
    return scale_of(info, orjson.loads(kv.value))


def _patched_scale(scale: dict[str, Any], patch_type: str, raw: bytes) -> Any:
    if patch_type == "application/json-patch+json":
        return apply_json_patch(scale, decode_json(raw))
    if patch_type == "application/merge-patch+json":
        return apply_merge_patch(scale, decode_json(raw))
    if patch_type == "application/strategic-merge-patch+json":
        return apply_strategic_merge_patch(scale, decode_json(raw), builtin_schema("autoscaling", "v1", "Scale"))
    raise BadRequest(f"patch type {patch_type} is not supported on the scale subresource")


async def scale_update(state: ServerState, req: WriteRequest, body: Any, patch_type: str | None,
                       raw: bytes = b"") -> dict[str, Any]:
    info = req.info
    paths = info.scale
    assert paths is not None

    async def transform(read_current: Current) -> dict[str, Any]:
        current = read_current()
        scale = scale_of(info, current)
        new_scale = _patched_scale(scale, patch_type, raw) if patch_type else body
        if not isinstance(new_scale, dict):
            raise BadRequest("the body of the request must be a Scale object")
        if new_scale.get("kind") not in (None, "Scale") or new_scale.get("apiVersion") not in (None, "autoscaling/v1"):
            raise BadRequest(
                f"the API version in the data ({new_scale.get('apiVersion')}) does not match the expected API "
                "version (autoscaling/v1)")
        spec = new_scale.get("spec") if isinstance(new_scale.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        replicas = spec.get("replicas")
        if replicas is None:  # absent, or a null the Go decode leaves at int32's zero (ScaleSpec.replicas)
            replicas = 0
        scale_meta = new_scale.get("metadata") if isinstance(new_scale.get("metadata"), dict) else {}
        assert isinstance(scale_meta, dict)
        name = str(scale_meta.get("name") or req.name)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise BadRequest(f"json: cannot unmarshal {go_json_kind(replicas, with_number=True)} into Go struct field "
                             "ScaleSpec.spec.replicas of type int32")
        if replicas < 0:
            raise invalid("Scale", name, [FieldError.invalid("spec.replicas", replicas,
                                                            "must be greater than or equal to 0")], "autoscaling")
        set_path(current, paths.spec_replicas, replicas)
        meta = current.setdefault("metadata", {})
        rv = scale_meta.get("resourceVersion")
        if rv:
            meta["resourceVersion"] = rv
        return current

    _, out, _ = await update_object(state, req, transform, conditional=False)
    return scale_of(info, orjson.loads(out))
