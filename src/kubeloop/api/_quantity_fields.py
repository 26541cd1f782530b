"""Where the built-in kinds kubeloop serves hold a ``resource.Quantity``, and their decode there.

kube-apiserver decodes a built-in object into its Go type, so every Quantity field goes through
``UnmarshalJSON`` (a bad one fails the decode) and is written back by ``MarshalJSON`` in canonical
form (:mod:`kubeloop.api._quantity`). :func:`quantity_fields` returns, for a kind, the function that
does the same to a JSON object in place, or ``None`` for a kind without Quantity fields (custom
resources have no typed decode, and nothing is walked for them or for ConfigMaps and the like).

The fields, from the k8s.io/api v1.32 types:

- a pod spec (Pods; the template of PodTemplates, ReplicationControllers, Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, a CronJob's job template): ``resources.limits`` and
  ``resources.requests`` of every container, init container and ephemeral container, the pod-level
  ``resources`` (alpha in 1.32), ``overhead``, ``emptyDir.sizeLimit`` (a pointer: ``null`` drops it),
  the ``resources`` of an ephemeral volume's claim template, and the ``divisor`` of every
  ``resourceFieldRef`` (env, downward API and projected volumes; a value, not a pointer, so Go
  writes it even when absent: ``"0"``);
- a pod status: ``allocatedResources`` and ``resources`` of every container status;
- a PersistentVolumeClaim (and a StatefulSet's ``volumeClaimTemplates``): ``spec.resources``,
  ``status.capacity``, ``status.allocatedResources``;
- a PersistentVolume: ``spec.capacity``; a Node: ``status.capacity``, ``status.allocatable``;
- a LimitRange: ``max``, ``min``, ``default``, ``defaultRequest``, ``maxLimitRequestRatio`` of each
  ``spec.limits`` item; a ResourceQuota: ``spec.hard``, ``status.hard``, ``status.used``;
- an autoscaling/v2 HorizontalPodAutoscaler: ``value`` and ``averageValue`` of each metric's ``target``
  and each status metric's ``current``.

In a ResourceList a ``null`` is the zero Quantity (``"0"``), as ``UnmarshalJSON`` makes it, and
defaulting (core v1 ``SetDefaults_ResourceList``, run on every ResourceList above) rounds each value
up to a whole milli (``100u`` is ``1m``). The
walk is strict (the first bad value raises :class:`~kubeloop.api._quantity.QuantityError`) or, for
an object already stored, lenient (a bad value stays as it is). Mutates in place; copies nothing.

:func:`quantities_by_value` walks a copy instead, every Quantity replaced by the key of its value: the
form in which two objects compare as ``apiequality.Semantic.DeepEqual`` compares them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kubeloop.api._pod_fields import as_list
from kubeloop.api._quantity import QuantityError, canonical_text, quantity_key, resource_list_text
from kubeloop.api._strategic import deep_copy_json

__all__ = ["QUANTITY_KINDS", "QuantityFields", "quantities_by_value", "quantity_fields"]

# A canonicaliser of one JSON value: canonical_text or resource_list_text, or a lenient wrapper.
Canon = Callable[[Any], Any]
QuantityFields = Callable[[dict[str, Any], bool], None]


class _Canons(NamedTuple):
    """What the walk does to a lone Quantity (``sizeLimit``, ``divisor``) and to one in a ResourceList,
    which defaulting also rounds up to a whole milli (core v1 ``SetDefaults_ResourceList``)."""

    one: Canon
    listed: Canon


def _lenient(canon: Canon) -> Canon:
    def lenient(value: Any) -> Any:
        try:
            return canon(value)
        except QuantityError:
            return value

    return lenient


_STRICT = _Canons(canonical_text, resource_list_text)
_LENIENT = _Canons(_lenient(canonical_text), _lenient(resource_list_text))


def _resource_list(holder: dict[str, Any], key: str, canon: _Canons) -> None:
    resources = holder.get(key)
    if type(resources) is dict:
        listed = canon.listed
        for name, value in resources.items():
            text = listed(value)
            if text is not value:
                resources[name] = text


def _requirements(holder: dict[str, Any], key: str, canon: _Canons) -> None:
    requirements = holder.get(key)
    if type(requirements) is dict:
        _resource_list(requirements, "limits", canon)
        _resource_list(requirements, "requests", canon)


def _divisor(holder: dict[str, Any], canon: _Canons) -> None:
    ref = holder.get("resourceFieldRef")
    if type(ref) is dict:
        ref["divisor"] = canon.one(ref.get("divisor"))


def _downward_items(holder: Any, canon: _Canons) -> None:
    if type(holder) is dict:
        for item in as_list(holder.get("items")):
            if type(item) is dict:
                _divisor(item, canon)


def _container(container: dict[str, Any], canon: _Canons) -> None:
    _requirements(container, "resources", canon)
    for env in as_list(container.get("env")):
        if type(env) is dict and type(source := env.get("valueFrom")) is dict:
            _divisor(source, canon)


def _volume(volume: dict[str, Any], canon: _Canons) -> None:
    empty_dir = volume.get("emptyDir")
    if type(empty_dir) is dict and "sizeLimit" in empty_dir:
        if empty_dir["sizeLimit"] is None:
            del empty_dir["sizeLimit"]  # *Quantity, omitempty
        else:
            empty_dir["sizeLimit"] = canon.one(empty_dir["sizeLimit"])
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


def _pod_spec(spec: Any, canon: _Canons) -> None:
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


def _pod_status(status: Any, canon: _Canons) -> None:
    if type(status) is not dict:
        return
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for container in as_list(status.get(key)):
            if type(container) is dict:
                _resource_list(container, "allocatedResources", canon)
                _requirements(container, "resources", canon)


def _claim(claim: dict[str, Any], canon: _Canons) -> None:
    if type(spec := claim.get("spec")) is dict:
        _requirements(spec, "resources", canon)
    if type(status := claim.get("status")) is dict:
        _resource_list(status, "capacity", canon)
        _resource_list(status, "allocatedResources", canon)


def _canon(mode: bool | _Canons) -> _Canons:
    if mode is True:
        return _STRICT
    return _LENIENT if mode is False else mode


def _pod(obj: dict[str, Any], mode: bool | _Canons) -> None:
    canon = _canon(mode)
    _pod_spec(obj.get("spec"), canon)
    _pod_status(obj.get("status"), canon)


def _template_owner(obj: dict[str, Any], mode: bool | _Canons) -> None:
    spec = obj.get("spec")
    if type(spec) is dict and type(template := spec.get("template")) is dict:
        _pod_spec(template.get("spec"), _canon(mode))


def _pod_template(obj: dict[str, Any], mode: bool | _Canons) -> None:
    """A core/v1 PodTemplate: its pod spec is at ``template.spec``."""
    if type(template := obj.get("template")) is dict:
        _pod_spec(template.get("spec"), _canon(mode))


def _cronjob(obj: dict[str, Any], mode: bool | _Canons) -> None:
    spec = obj.get("spec")
    if type(spec) is dict and type(template := spec.get("jobTemplate")) is dict:
        _template_owner(template, mode)


_METRIC_MEMBERS = ("object", "pods", "resource", "containerResource", "external")


def _metric_values(metrics: Any, holder_key: str, canon: _Canons) -> None:
    """The ``value`` and ``averageValue`` (``*Quantity``, omitempty: ``null`` drops it) of each metric's
    ``target`` (spec) or ``current`` (status), whatever its source."""
    for metric in as_list(metrics):
        if type(metric) is not dict:
            continue
        for member in _METRIC_MEMBERS:
            source = metric.get(member)
            if type(source) is dict and type(values := source.get(holder_key)) is dict:
                for key in ("value", "averageValue"):
                    if key in values:
                        if values[key] is None:
                            del values[key]
                        else:
                            values[key] = canon.one(values[key])


def _horizontal_pod_autoscaler(obj: dict[str, Any], mode: bool | _Canons) -> None:
    """autoscaling/v2 MetricTarget and MetricValueStatus quantities."""
    canon = _canon(mode)
    if type(spec := obj.get("spec")) is dict:
        _metric_values(spec.get("metrics"), "target", canon)
    if type(status := obj.get("status")) is dict:
        _metric_values(status.get("currentMetrics"), "current", canon)


def _stateful_set(obj: dict[str, Any], mode: bool | _Canons) -> None:
    _template_owner(obj, mode)
    spec = obj.get("spec")
    if type(spec) is dict:
        canon = _canon(mode)
        for claim in as_list(spec.get("volumeClaimTemplates")):
            if type(claim) is dict:
                _claim(claim, canon)


def _persistent_volume_claim(obj: dict[str, Any], mode: bool | _Canons) -> None:
    _claim(obj, _canon(mode))


def _persistent_volume(obj: dict[str, Any], mode: bool | _Canons) -> None:
    if type(spec := obj.get("spec")) is dict:
        _resource_list(spec, "capacity", _canon(mode))


def _node(obj: dict[str, Any], mode: bool | _Canons) -> None:
    if type(status := obj.get("status")) is dict:
        canon = _canon(mode)
        _resource_list(status, "capacity", canon)
        _resource_list(status, "allocatable", canon)


def _limit_range(obj: dict[str, Any], mode: bool | _Canons) -> None:
    spec = obj.get("spec")
    if type(spec) is dict:
        canon = _canon(mode)
        for item in as_list(spec.get("limits")):
            if type(item) is dict:
                for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                    _resource_list(item, key, canon)


def _resource_quota(obj: dict[str, Any], mode: bool | _Canons) -> None:
    canon = _canon(mode)
    if type(spec := obj.get("spec")) is dict:
        _resource_list(spec, "hard", canon)
    if type(status := obj.get("status")) is dict:
        _resource_list(status, "hard", canon)
        _resource_list(status, "used", canon)


_Walker = Callable[[dict[str, Any], bool | _Canons], None]
_BY_KIND: dict[tuple[str, str], _Walker] = {
    ("", "Pod"): _pod,
    ("", "PersistentVolumeClaim"): _persistent_volume_claim,
    ("", "PersistentVolume"): _persistent_volume,
    ("", "Node"): _node,
    ("", "LimitRange"): _limit_range,
    ("", "ResourceQuota"): _resource_quota,
    ("", "ReplicationController"): _template_owner,
    ("", "PodTemplate"): _pod_template,
    ("apps", "Deployment"): _template_owner,
    ("apps", "ReplicaSet"): _template_owner,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _template_owner,
    ("batch", "Job"): _template_owner,
    ("batch", "CronJob"): _cronjob,
    ("autoscaling", "HorizontalPodAutoscaler"): _horizontal_pod_autoscaler,
}


# The kinds (of any group) quantity_fields may answer for: a cheap first test on a hot path.
QUANTITY_KINDS = frozenset(kind for _, kind in _BY_KIND)


def quantity_fields(group: str, kind: str) -> QuantityFields | None:
    """``fields(obj, strict)`` canonicalising the Quantity fields of a built-in ``kind``, or ``None``."""
    return _BY_KIND.get((group, kind))


# Every Quantity as its quantity_key: equal exactly when upstream's Cmp says the values are.
_BY_VALUE = _Canons(quantity_key, quantity_key)


def quantities_by_value(group: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` with each Quantity field of a built-in ``kind`` replaced by its value's key
    (:func:`~kubeloop.api._quantity.quantity_key`): two objects whose copies are equal are equal to
    ``apiequality.Semantic.DeepEqual``, which compares Quantities by value (``1Gi`` and ``1073741824``,
    ``1k`` and ``1e3``, ``1`` and ``+1`` are the same). A kind without Quantity fields: ``obj`` itself."""
    walker = _BY_KIND.get((group, kind))
    if walker is None:
        return obj
    copy: dict[str, Any] = deep_copy_json(obj)
    walker(copy, _BY_VALUE)
    return copy
