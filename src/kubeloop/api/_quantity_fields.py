"""Where the built-in kinds kubeloop serves hold a ``resource.Quantity``, and their decode there.

kube-apiserver decodes a built-in object into its Go type, so every Quantity field goes through
``UnmarshalJSON`` (a bad one fails the decode) and is written back by ``MarshalJSON`` in canonical
form (:mod:`kubeloop.api._quantity`). :func:`quantity_fields` returns, for a kind, the function that
does the same to a JSON object in place, or ``None`` for a kind without Quantity fields (custom
resources have no typed decode, and nothing is walked for them or for ConfigMaps and the like).

The fields, from the k8s.io/api v1.32 types:

- a pod spec (Pods; the template of Deployments, ReplicaSets, StatefulSets): ``resources.limits`` and
  ``resources.requests`` of every container, init container and ephemeral container, the pod-level
  ``resources`` (alpha in 1.32), ``overhead``, ``emptyDir.sizeLimit`` (a pointer: ``null`` drops it),
  the ``resources`` of an ephemeral volume's claim template, and the ``divisor`` of every
  ``resourceFieldRef`` (env, downward API and projected volumes; a value, not a pointer, so Go
  writes it even when absent: ``"0"``);
- a pod status: ``allocatedResources`` and ``resources`` of every container status;
- a PersistentVolumeClaim (and a StatefulSet's ``volumeClaimTemplates``): ``spec.resources``,
  ``status.capacity``, ``status.allocatedResources``;
- a PersistentVolume: ``spec.capacity``; a Node: ``status.capacity``, ``status.allocatable``.

In a ResourceList a ``null`` is the zero Quantity (``"0"``), as ``UnmarshalJSON`` makes it. The
walk is strict (the first bad value raises :class:`~kubeloop.api._quantity.QuantityError`) or, for
an object already stored, lenient (a bad value stays as it is). Mutates in place; copies nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeloop.api._pod_fields import as_list
from kubeloop.api._quantity import QuantityError, canonical_text

__all__ = ["QUANTITY_KINDS", "QuantityFields", "quantity_fields"]

# A canonicaliser of one JSON value: canonical_text, or a lenient wrapper of it.
Canon = Callable[[Any], Any]
QuantityFields = Callable[[dict[str, Any], bool], None]


def _lenient(value: Any) -> Any:
    try:
        return canonical_text(value)
    except QuantityError:
        return value


def _resource_list(holder: dict[str, Any], key: str, canon: Canon) -> None:
    resources = holder.get(key)
    if type(resources) is dict:
        for name, value in resources.items():
            text = canon(value)
            if text is not value:
                resources[name] = text


def _requirements(holder: dict[str, Any], key: str, canon: Canon) -> None:
    requirements = holder.get(key)
    if type(requirements) is dict:
        _resource_list(requirements, "limits", canon)
        _resource_list(requirements, "requests", canon)


def _divisor(holder: dict[str, Any], canon: Canon) -> None:
    ref = holder.get("resourceFieldRef")
    if type(ref) is dict:
        ref["divisor"] = canon(ref.get("divisor"))


def _downward_items(holder: Any, canon: Canon) -> None:
    if type(holder) is dict:
        for item in as_list(holder.get("items")):
            if type(item) is dict:
                _divisor(item, canon)


def _container(container: dict[str, Any], canon: Canon) -> None:
    _requirements(container, "resources", canon)
    for env in as_list(container.get("env")):
        if type(env) is dict and type(source := env.get("valueFrom")) is dict:
            _divisor(source, canon)


def _volume(volume: dict[str, Any], canon: Canon) -> None:
    empty_dir = volume.get("emptyDir")
    if type(empty_dir) is dict and "sizeLimit" in empty_dir:
        if empty_dir["sizeLimit"] is None:
            del empty_dir["sizeLimit"]  # *Quantity, omitempty
        else:
            empty_dir["sizeLimit"] = canon(empty_dir["sizeLimit"])
    ephemeral = volume.get("ephemeral")
    if type(ephemeral) is dict:
        template = ephemeral.get("volumeClaimTemplate")
        if type(template) is dict and type(spec := template.get("spec")) is dict:
            _requirements(spec, "resources", canon)
    _downward_items(volume.get("downwardAPI"), canon)
    projected = volume.get("projected")
    if type(projected) is dict:
        for source in as_list(projected.get("sources")):
            if type(source) is dict:
                _downward_items(source.get("downwardAPI"), canon)


def _pod_spec(spec: Any, canon: Canon) -> None:
    if type(spec) is not dict:
        return
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in as_list(spec.get(key)):
            if type(container) is dict:
                _container(container, canon)
    _resource_list(spec, "overhead", canon)
    _requirements(spec, "resources", canon)
    for volume in as_list(spec.get("volumes")):
        if type(volume) is dict:
            _volume(volume, canon)


def _pod_status(status: Any, canon: Canon) -> None:
    if type(status) is not dict:
        return
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for container in as_list(status.get(key)):
            if type(container) is dict:
                _resource_list(container, "allocatedResources", canon)
                _requirements(container, "resources", canon)


def _claim(claim: dict[str, Any], canon: Canon) -> None:
    if type(spec := claim.get("spec")) is dict:
        _requirements(spec, "resources", canon)
    if type(status := claim.get("status")) is dict:
        _resource_list(status, "capacity", canon)
        _resource_list(status, "allocatedResources", canon)


def _canon(strict: bool) -> Canon:
    return canonical_text if strict else _lenient


def _pod(obj: dict[str, Any], strict: bool) -> None:
    canon = _canon(strict)
    _pod_spec(obj.get("spec"), canon)
    _pod_status(obj.get("status"), canon)


def _template_owner(obj: dict[str, Any], strict: bool) -> None:
    spec = obj.get("spec")
    if type(spec) is dict and type(template := spec.get("template")) is dict:
        _pod_spec(template.get("spec"), _canon(strict))


def _stateful_set(obj: dict[str, Any], strict: bool) -> None:
    _template_owner(obj, strict)
    spec = obj.get("spec")
    if type(spec) is dict:
        canon = _canon(strict)
        for claim in as_list(spec.get("volumeClaimTemplates")):
            if type(claim) is dict:
                _claim(claim, canon)


def _persistent_volume_claim(obj: dict[str, Any], strict: bool) -> None:
    _claim(obj, _canon(strict))


def _persistent_volume(obj: dict[str, Any], strict: bool) -> None:
    if type(spec := obj.get("spec")) is dict:
        _resource_list(spec, "capacity", _canon(strict))


def _node(obj: dict[str, Any], strict: bool) -> None:
    if type(status := obj.get("status")) is dict:
        canon = _canon(strict)
        _resource_list(status, "capacity", canon)
        _resource_list(status, "allocatable", canon)


_BY_KIND: dict[tuple[str, str], QuantityFields] = {
    ("", "Pod"): _pod,
    ("", "PersistentVolumeClaim"): _persistent_volume_claim,
    ("", "PersistentVolume"): _persistent_volume,
    ("", "Node"): _node,
    ("apps", "Deployment"): _template_owner,
    ("apps", "ReplicaSet"): _template_owner,
    ("apps", "StatefulSet"): _stateful_set,
}


# The kinds (of any group) quantity_fields may answer for: a cheap first test on a hot path.
QUANTITY_KINDS = frozenset(kind for _, kind in _BY_KIND)


def quantity_fields(group: str, kind: str) -> QuantityFields | None:
    """``fields(obj, strict)`` canonicalising the Quantity fields of a built-in ``kind``, or ``None``."""
    return _BY_KIND.get((group, kind))
