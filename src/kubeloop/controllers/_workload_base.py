"""What the workload controllers (ReplicaSet, Deployment, StatefulSet, DaemonSet, Job) share: wiring, Events, status writes.

:class:`WorkloadController` builds one :class:`~kubeloop.runtime.Controller` named :attr:`name`
on the shared informers (a subclass lists its sources in :meth:`WorkloadController.watches`), with
an :class:`._events.EventSink` for component ``<name>-controller`` (upstream's names:
``replicaset-controller``, ``deployment-controller``, ``statefulset-controller``, ``job-controller``), or
:attr:`WorkloadController.component` where upstream's differs (the ReplicationManager's ``replication-controller``). Options are
keyword-only and the same for all three (:class:`WorkloadOptions`): injected clock, metrics,
``workers`` (``max_concurrent_reconciles``, 5 as kube-controller-manager's ``--concurrent-*-syncs``)
and the field manager writes carry.

- :meth:`WorkloadController.run` runs the controller and its Event writer together; a manager runs
  them as two runnables instead (:mod:`._workload_registry`).
- :meth:`WorkloadController.event` records an Event about an object of the controller's kind
  (:attr:`api_version` :attr:`kind`), off the reconcile path.
- :meth:`WorkloadController.put_status` writes ``/status`` with the object's own resourceVersion
  (metadata travels too) and updates the caller's copy in place with what the server returned.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, TypedDict

from kubeloop.api import Clock, ResourceInfo, SystemClock, namespace_of
from kubeloop.client import Client
from kubeloop.controllers._events import EventSink, Severity
from kubeloop.controllers._workload_kinds import CONTROLLER_MANAGER
from kubeloop.runtime import Controller, InformerFactory, Metrics, Request, Result, Watch

__all__ = ["WorkloadController", "WorkloadOptions"]


class WorkloadOptions(TypedDict, total=False):
    clock: Clock | None
    metrics: Metrics | None
    workers: int
    field_manager: str


class WorkloadController(ABC):
    """Base of the workload controllers; run it with :meth:`run` or hand :attr:`controller` to a manager."""

    name: ClassVar[str]  # the runtime controller's name; Events come from ``<name>-controller``
    component: ClassVar[str | None] = None  # the Events' source component when it is not ``<name>-controller``
    kind: ClassVar[str]  # the kind reconciled (the subject of its Events)
    api_version: ClassVar[str] = "apps/v1"
    # Requeues before a failing key is dropped until its next event, its failures logged at debug level
    # until then (the runtime Controller's ``max_retries``); None: retried for ever, every failure an error.
    max_retries: ClassVar[int | None] = None
    resource: ClassVar[ResourceInfo]

    def __init__(
        self,
        client: Client,
        informers: InformerFactory,
        *,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        workers: int = 5,
        field_manager: str = CONTROLLER_MANAGER,
    ) -> None:
        self.client = client
        self.clock: Clock = clock or SystemClock()
        self.field_manager = field_manager
        self.events = EventSink(client, component=self.component or f"{self.name}-controller", clock=self.clock)
        self.controller = Controller(
            self.name, self, clock=self.clock, metrics=metrics, max_concurrent_reconciles=workers,
            watches=self.watches(informers), max_retries=self.max_retries,
        )  # fmt: skip

    @abstractmethod
    def watches(self, informers: InformerFactory) -> list[Watch]:
        """Take the informers this controller reads from ``informers``; the sources it reconciles on."""

    @abstractmethod
    async def reconcile(self, request: Request) -> Result | None: ...

    def extra_controllers(self) -> list[Controller]:
        """Other queues this controller works (the Job controller's orphan pods); none by default."""
        return []

    async def run(self) -> None:
        """The controller, its other queues and its Event writer (a manager runs them as runnables instead)."""
        await asyncio.gather(self.controller.run(), *(c.run() for c in self.extra_controllers()), self.events.run())

    def event(self, obj: Mapping[str, Any], event_type: Severity, reason: str, message: str) -> None:
        self.events.emit(obj, event_type, reason, message, api_version=self.api_version, kind=self.kind)

    async def put_status(self, obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """PUT ``/status`` of ``obj`` (this controller's kind); ``obj`` becomes what was written."""
        written = await self.client.update(self.resource, {**obj, "status": status}, namespace=namespace_of(obj),
                                           subresource="status", field_manager=self.field_manager)  # fmt: skip
        obj.clear()
        obj.update(written)
        return obj
