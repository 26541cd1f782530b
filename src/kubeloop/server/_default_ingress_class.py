"""The DefaultIngressClass admission plugin: an Ingress created without a class gets the default IngressClass.

Upstream's ``plugin/pkg/admission/network/defaultingressclass/admission.go`` (enabled by default in
kube-apiserver 1.32, after DefaultTolerationSeconds in ``AllOrderedPlugins``), a mutating plugin:

- it acts on CREATE of ``ingresses.networking.k8s.io`` only (never a subresource, never an update);
- an Ingress that names ``spec.ingressClassName``, or carries the deprecated ``kubernetes.io/ingress.class``
  annotation, is left alone;
- otherwise the default class is the IngressClass annotated ``ingressclass.kubernetes.io/is-default-class:
  "true"`` (exactly that text); when several are, the newest by ``creationTimestamp`` wins, ties going to the
  lower name (``getDefaultClass``, kubernetes#110974, 1.25: no longer an error); with none, nothing changes.
  Its name is written into ``spec.ingressClassName`` before validation.

The classes are read through a :class:`~kubeloop.server._prefix_changes.PrefixObjects` cache of the store's
IngressClasses (current at every request, where upstream's informer lags); a create of anything else costs
nothing (``handles``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, NamedTuple

import orjson

from kubeloop.api import ResourceInfo
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin, Operation
from kubeloop.server._prefix_changes import PrefixObjects
from kubeloop.store import KeyValue, Store

__all__ = ["DEFAULT_CLASS_ANNOTATION", "DefaultIngressClass"]

GROUP = "networking.k8s.io"
PREFIX = f"/registry/{GROUP}/ingressclasses/"
# networking/v1beta1 AnnotationIngressClass (also kubeloop.api._ingress_validation's, not imported: the server's
# start-up loads no validation module).
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
# networking/v1 AnnotationIsDefaultIngressClass.
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"


class _Class(NamedTuple):
    name: str
    is_default: bool
    created: str  # RFC 3339 in UTC with whole seconds, as metadata.creationTimestamp is stored: sorts as text


def _class_of(name: str, kv: KeyValue) -> _Class:
    try:
        meta = orjson.loads(kv.value).get("metadata") or {}
    except (orjson.JSONDecodeError, AttributeError):
        meta = {}
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    is_default = isinstance(annotations, Mapping) and annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"
    created = meta.get("creationTimestamp") if isinstance(meta, Mapping) else None
    return _Class(name, is_default, created if isinstance(created, str) else "")


def _default_of(classes: Mapping[str, _Class]) -> str | None:
    """getDefaultClass: the newest default class, the lower name on equal timestamps."""
    defaults = [c for c in classes.values() if c.is_default]
    if not defaults:
        return None
    newest = max(c.created for c in defaults)
    return min(c.name for c in defaults if c.created == newest)


def _is_ingresses(resource: ResourceInfo) -> bool:
    return resource.group == GROUP and resource.plural == "ingresses"


class DefaultIngressClass(MutatingPlugin):
    """Writes the default IngressClass into a new Ingress that names no class (see the module contract)."""

    def __init__(self, store: Store) -> None:
        self.classes = PrefixObjects(store, PREFIX, _class_of)

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        return operation == "CREATE" and _is_ingresses(resource)

    def mutate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if (attributes.operation != "CREATE" or attributes.subresource or obj is None
                or not _is_ingresses(attributes.resource)):
            return None
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("ingressClassName") is not None:
            return None
        meta = obj.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(annotations, dict) and INGRESS_CLASS_ANNOTATION in annotations:
            return None
        classes = self.classes.current()
        if classes is None:
            return self._load_and_default(spec)
        _set_default(spec, classes)
        return None

    async def _load_and_default(self, spec: dict[str, Any]) -> None:
        _set_default(spec, await self.classes.load())


def _set_default(spec: dict[str, Any], classes: Mapping[str, _Class]) -> None:
    name = _default_of(classes)
    if name is not None:
        spec["ingressClassName"] = name
