"""The root CA publisher: every namespace has the ConfigMap ``kube-root-ca.crt`` holding the cluster's CA.

Upstream: k/k ``pkg/controller/certificates/rootcacertpublisher/publisher.go`` (release 1.32),
kube-controller-manager's ``root-ca-certificate-publisher`` controller. The CA is what the controller
manager itself trusts the API server with (``--root-ca-file``, else its client configuration's CA
data: ``startRootCACertPublisher``); ``kubeloop up`` gives it the CA its kubeconfig carries.

- A namespace added, or updated while ``Active``, queues it; so does a ``kube-root-ca.crt`` ConfigMap
  updated or deleted (its namespace is the key). Other ConfigMaps are ignored.
- The sync reads the ConfigMap from the cache. Missing: it is created with ``data: {ca.crt: <CA>}``
  and the annotation ``kubernetes.io/description`` (upstream's text); a 404 (namespace gone) or a
  refusal with a ``NamespaceTerminating`` cause is not retried, so a terminating namespace is
  skipped. Present: when its data is not exactly ``{ca.crt: <CA>}`` or the description annotation is
  empty, it is updated back (other annotations and labels are kept); a conflict is retried.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import ApiError, NotFound
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.controllers._service_accounts import NAMESPACES
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.runtime import Controller, Event, Manager, Request, Result, SharedInformer, Watch

__all__ = ["CONFIGMAPS", "DESCRIPTION", "DESCRIPTION_ANNOTATION", "ROOT_CA_CONFIGMAP", "RootCACertPublisher"]

CONFIGMAPS = builtin("", "configmaps")
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as "
    "the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)


class _NamespaceEvents:
    """Added -> the namespace; updated -> the namespace while Active (``namespaceAdded``/``namespaceUpdated``)."""

    def requests(self, event: Event) -> Iterable[Request]:
        obj = event.object
        if event.type == "delete":
            return ()
        if event.type == "update" and (obj.get("status") or {}).get("phase") != "Active":
            return ()
        return (Request("", str((obj.get("metadata") or {}).get("name") or "")),)


class _RootCAConfigMapEvents:
    """``kube-root-ca.crt`` updated or deleted -> its namespace (``configMapUpdated``/``configMapDeleted``)."""

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type not in ("update", "delete"):
            return ()
        meta = event.object.get("metadata") or {}
        if meta.get("name") != ROOT_CA_CONFIGMAP or not meta.get("namespace"):
            return ()
        return (Request("", str(meta["namespace"])),)


class RootCACertPublisher:
    """Publishes ``root_ca`` (PEM) as ``kube-root-ca.crt`` in every namespace. Build it on a manager
    before it runs and add :attr:`controller`; :attr:`root_ca` may be set until the manager starts."""

    name = "root-ca-cert-publisher"

    def __init__(self, manager: Manager, *, root_ca: str = "") -> None:
        self.client = manager.client
        self.root_ca = root_ca
        self.namespaces: SharedInformer = manager.informer(NAMESPACES)
        self.configmaps: SharedInformer = manager.informer(CONFIGMAPS)
        self.controller = Controller(
            self.name, self.reconcile,
            watches=[Watch(self.namespaces, _NamespaceEvents()), Watch(self.configmaps, _RootCAConfigMapEvents())],
            clock=manager.clock, metrics=manager.metrics,
        )  # fmt: skip

    def has_synced(self) -> bool:
        return self.controller.synced.is_set()

    def _data(self) -> dict[str, str]:
        return {"ca.crt": self.root_ca}

    async def reconcile(self, request: Request) -> Result | None:
        namespace = request.name
        configmap = self.configmaps.cache.get_by_name(ROOT_CA_CONFIGMAP, namespace)
        if configmap is None:
            body = {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": namespace,
                             "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                "data": self._data(),
            }  # fmt: skip
            try:
                await self.client.create(CONFIGMAPS, body, namespace=namespace)
            except NotFound:
                return None
            except ApiError as error:
                if is_namespace_terminating_error(error):
                    return None
                raise
            return None
        meta: Mapping[str, Any] = configmap.get("metadata") or {}
        annotations = dict(meta.get("annotations") or {})
        if configmap.get("data") == self._data() and annotations.get(DESCRIPTION_ANNOTATION):
            return None
        annotations[DESCRIPTION_ANNOTATION] = DESCRIPTION
        # The cached object carries its resourceVersion: a concurrent write is a 409, retried.
        updated = {**configmap, "metadata": {**meta, "annotations": annotations}, "data": self._data()}
        await self.client.update(CONFIGMAPS, updated)
        return None
