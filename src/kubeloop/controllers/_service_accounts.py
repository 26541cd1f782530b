"""The ServiceAccount controller: every active namespace has a ServiceAccount named ``default``.

Upstream: k/k ``pkg/controller/serviceaccount/serviceaccounts_controller.go`` (release 1.32),
kube-controller-manager's ``serviceaccount`` controller, ensuring the ServiceAccounts of
``DefaultServiceAccountsControllerOptions`` (just ``default``, with nothing but its name):

- a namespace added or updated, or a ServiceAccount deleted, queues its namespace (the key is the
  namespace name);
- the sync does nothing for a namespace that is gone or not ``Active`` (Terminating namespaces are
  being emptied); otherwise each ensured ServiceAccount missing from the cache is created. An
  AlreadyExists answer (the cache was behind) is success, and so is a refusal because the namespace
  began terminating meanwhile (a ``NamespaceTerminating`` cause); any other failure (a 404 for a
  namespace just deleted included, as upstream) is retried with backoff.

So ``default`` appears shortly after its namespace, and reappears when deleted: the ServiceAccount
admission plugin (:mod:`kubeloop.server`) waits for it before refusing a pod.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubeloop.api import AlreadyExists, ApiError
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.runtime import Controller, Event, Manager, Request, Result, SharedInformer, Watch

__all__ = ["DEFAULT_SERVICE_ACCOUNT", "SERVICEACCOUNTS", "ServiceAccountsController"]

SERVICEACCOUNTS = builtin("", "serviceaccounts")
NAMESPACES = builtin("", "namespaces")
DEFAULT_SERVICE_ACCOUNT = "default"
class _NamespaceEvents:
    """Namespace added or updated -> that namespace (upstream ``namespaceAdded``/``namespaceUpdated``)."""

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type == "delete":
            return ()
        return (Request("", str((event.object.get("metadata") or {}).get("name") or "")),)


class _DeletedServiceAccounts:
    """ServiceAccount deleted -> its namespace (upstream ``serviceAccountDeleted``)."""

    def requests(self, event: Event) -> Iterable[Request]:
        if event.type != "delete":
            return ()
        return (Request("", str((event.object.get("metadata") or {}).get("namespace") or "")),)


class ServiceAccountsController:
    """Creates the ``default`` ServiceAccount of every active namespace. Build it on a manager before it
    runs and add :attr:`controller`, as :func:`~kubeloop.controllers.add_builtin_controllers` does."""

    name = "serviceaccount"

    def __init__(self, manager: Manager, *, service_accounts: Iterable[str] = (DEFAULT_SERVICE_ACCOUNT,)) -> None:
        self.client = manager.client
        self.ensured = tuple(service_accounts)
        self.namespaces: SharedInformer = manager.informer(NAMESPACES)
        self.service_accounts: SharedInformer = manager.informer(SERVICEACCOUNTS)
        self.controller = Controller(
            self.name, self.reconcile,
            watches=[Watch(self.namespaces, _NamespaceEvents()), Watch(self.service_accounts, _DeletedServiceAccounts())],
            clock=manager.clock, metrics=manager.metrics,
        )  # fmt: skip

    async def reconcile(self, request: Request) -> Result | None:
        namespace = self.namespaces.cache.get_by_name(request.name)
        if namespace is None or (namespace.get("status") or {}).get("phase") != "Active":
            return None  # gone, or Terminating: nothing may be created there
        failures: list[ApiError] = []
        for name in self.ensured:
            if self.service_accounts.cache.get_by_name(name, request.name) is not None:
                continue
            body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": request.name}}
            try:
                await self.client.create(SERVICEACCOUNTS, body, namespace=request.name)
            except AlreadyExists:
                pass
            except ApiError as error:
                if not is_namespace_terminating_error(error):
                    failures.append(error)
        if failures:
            raise failures[0]
        return None
