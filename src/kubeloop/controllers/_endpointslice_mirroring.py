"""The endpointslice-mirroring controller: EndpointSlices mirroring the Endpoints of Services without a selector.

Mirrors kube-controller-manager's ``endpointslice-mirroring`` (k/k release-1.32
``pkg/controller/endpointslicemirroring``: ``endpointslicemirroring_controller.go`` ``syncEndpoints``,
``reconciler.go``, ``reconciler_helpers.go``, ``utils.go``, ``events.go``), level-based on the
Endpoints' key, so that consumers reading only EndpointSlices see hand-written endpoints:

- An Endpoints is mirrored while it exists, :func:`should_mirror` holds (no ``skip-mirror: "true"``
  label, no leader-election annotation), and a Service of its name exists without a selector.
  Otherwise every slice mirrored for it (labels ``kubernetes.io/service-name: <name>`` and
  ``endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io``) is deleted.
- Desired slices are :func:`desired_slices`: one per address type and set of ports, at most 1000
  addresses per (repacked) subset. Invalid IPs are skipped with a Warning Event
  ``InvalidIPAddress`` on the Endpoints, addresses past the maximum with ``TooManyAddressesToMirror``
  (component ``endpoint-slice-mirroring-controller``). Addresses are parsed with ``ParseIPSloppy``, as
  the API's validation parses them (leading zeros read as decimal), so an Endpoints the API accepted
  has no invalid IP: the event is for objects stored under older rules.
- Per group the first existing slice is kept and updated (a fresh object, unconditional update) unless
  its endpoints (as a set), labels and annotations already match; further ones are deleted, and a slice
  to create takes the name of one to delete of the same address type instead (``recycleSlices``).
  New slices are named ``<endpoints>-<random>`` (generateName), labelled :func:`slice_labels`,
  annotated :func:`slice_annotations`, and controlled by the Endpoints (``ownerReferences`` to
  ``v1`` ``Endpoints``, ``controller`` and ``blockOwnerDeletion`` true). No slice is created for an
  Endpoints being deleted; a create refused with the ``NamespaceTerminating`` cause ends the sync
  without an error (not retried). Nothing is written when nothing changed.
- What this controller wrote is remembered (:class:`SliceTracker`): while the slice cache has not seen
  it, the Endpoints is not reconciled (the slice's own event brings it back), so a lagging cache never
  makes it create a slice twice.
- Events that wake it (upstream's handlers): an Endpoints added, updated or deleted that is (or was)
  mirrorable; a Service without a selector added or deleted, or one whose selector appeared or went;
  any event on a slice managed by this controller (its old and new service-name label).

Simplified: upstream re-queues a stale key with backoff and filters its own slice events by
generation; here the slice event is the re-queue and every such event is a (cheap) reconcile.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api import Forbidden, NotFound
from kubeloop.controllers._endpoints import ENDPOINTS
from kubeloop.controllers._endpointslice import ENDPOINTSLICES
from kubeloop.controllers._endpointslice_mirror_desired import (
    CONTROLLER_NAME,
    MANAGED_BY_LABEL,
    MAX_ENDPOINTS_PER_SUBSET,
    SERVICE_NAME_LABEL,
    DesiredSlice,
    desired_slices,
    group_key,
    has_selector,
    should_mirror,
    slice_annotations,
    slice_labels,
)
from kubeloop.controllers._endpointslice_tracker import SliceTracker
from kubeloop.controllers._events import EventSink
from kubeloop.controllers._scheduler_resources import SERVICES
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.runtime import Builder, EnqueueForObject, EnqueueMapped, Event, Manager, Request, Result

__all__ = ["EVENT_COMPONENT", "EndpointSliceMirroringController"]

EVENT_COMPONENT = "endpoint-slice-mirroring-controller"
_GENERATE_NAME_MAX = 253  # ValidateEndpointSliceName(prefix, true): a DNS subdomain once suffixed


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = _meta(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _mirrorable_event(event: Event) -> bool:
    """onEndpointsAdd/Update/Delete: an Endpoints that is, or on update was, mirrorable."""
    return any(should_mirror(obj) for obj in event.objects())


def _selector_event(event: Event) -> bool:
    """onServiceAdd/Delete: a Service without a selector; onServiceUpdate: the selector appeared or went."""
    if event.type == "update" and event.old_object is not None:
        return has_selector(event.old_object) != has_selector(event.object)
    return not has_selector(event.object)


def _endpoints_of_slice(endpoint_slice: Mapping[str, Any]) -> list[Request]:
    """endpointsControllerKey, for slices this controller manages."""
    labels = _labels(endpoint_slice)
    name = labels.get(SERVICE_NAME_LABEL)
    if labels.get(MANAGED_BY_LABEL) != CONTROLLER_NAME or not name:
        return []
    return [Request(str(_meta(endpoint_slice).get("namespace") or ""), str(name))]


def _prefix(name: str) -> str:
    """getEndpointSlicePrefix: ``<name>-`` unless that would not be a valid generateName."""
    return f"{name}-" if len(name) + 2 <= _GENERATE_NAME_MAX else name


def _endpoint_set(endpoints: Any) -> list[str]:
    return sorted(json.dumps(e, sort_keys=True) for e in endpoints or [] if isinstance(e, Mapping))


class EndpointSliceMirroringController:
    """Mirrors selector-less Services' Endpoints into EndpointSlices. Build it on a manager."""

    name = "endpointslice-mirroring"

    def __init__(self, manager: Manager, *, max_endpoints_per_subset: int = MAX_ENDPOINTS_PER_SUBSET) -> None:
        self.client = manager.client
        self.max_endpoints_per_subset = max_endpoints_per_subset
        self.endpoints = manager.informer(ENDPOINTS)
        self.services = manager.informer(SERVICES)
        self.slices = manager.informer(ENDPOINTSLICES)
        self._tracker = SliceTracker()
        self.events = EventSink(self.client, component=EVENT_COMPONENT, clock=manager.clock)
        manager.add(self.events, needs_leader_election=False)
        self.controller = (Builder(manager).named(self.name).for_(ENDPOINTS, _mirrorable_event)
                           .watches(SERVICES, EnqueueForObject(), _selector_event)
                           .watches(ENDPOINTSLICES, EnqueueMapped(_endpoints_of_slice))
                           .build(self))

    def _mirrored(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """endpointSlicesMirroredForService, in name order (the first of a group is the one kept)."""
        found = [s for s in self.slices.cache.list(namespace=namespace)
                 if _labels(s).get(SERVICE_NAME_LABEL) == name and _labels(s).get(MANAGED_BY_LABEL) == CONTROLLER_NAME]
        return sorted(found, key=lambda s: str(_meta(s).get("name") or ""))

    async def reconcile(self, request: Request) -> Result | None:
        namespace, name = request.namespace, request.name
        key = (namespace, name)
        endpoints = self.endpoints.cache.get_by_name(name, namespace)
        service = self.services.cache.get_by_name(name, namespace)
        if endpoints is None or not should_mirror(endpoints) or service is None or has_selector(service):
            self._tracker.forget(key)
            for item in self._mirrored(namespace, name):
                await self._delete(key, item)
            self._tracker.forget(key)
            return None
        if self._tracker.stale(key, self.slices.cache.get_by_name):
            return None
        await self._reconcile(endpoints, self._mirrored(namespace, name))
        return None

    def _record_skips(self, endpoints: Mapping[str, Any], invalid: int, skipped: int) -> None:
        if invalid:
            self.events.emit(endpoints, "Warning", "InvalidIPAddress",
                             f"Skipped {invalid} invalid IP addresses when mirroring to EndpointSlices",
                             api_version="v1", kind="Endpoints")
        if skipped > invalid:
            self.events.emit(endpoints, "Warning", "TooManyAddressesToMirror",
                             f"A max of {self.max_endpoints_per_subset} addresses can be mirrored to EndpointSlices "
                             f"per Endpoints subset. {skipped} addresses were skipped",
                             api_version="v1", kind="Endpoints")

    async def _reconcile(self, endpoints: Mapping[str, Any], existing: list[dict[str, Any]]) -> None:
        desired = desired_slices(endpoints, max_per_subset=self.max_endpoints_per_subset)
        self._record_skips(endpoints, desired.invalid, desired.skipped)
        labels, annotations = slice_labels(endpoints), slice_annotations(endpoints)
        by_key: dict[str, list[dict[str, Any]]] = {}
        for item in existing:
            by_key.setdefault(group_key(str(item.get("addressType") or ""), item.get("ports")), []).append(item)
        to_create: list[dict[str, Any]] = []
        to_update: list[dict[str, Any]] = []
        to_delete: list[dict[str, Any]] = [s for k, slices in by_key.items() if k not in desired.slices for s in slices]
        for group, want in desired.slices.items():
            current = by_key.get(group, [])
            to_delete.extend(current[1:])
            if current and _endpoint_set(current[0].get("endpoints")) == _endpoint_set(want.endpoints) \
                    and dict(_labels(current[0])) == labels and (_meta(current[0]).get("annotations") or {}) == annotations:
                continue
            body = self._slice(endpoints, want, labels, annotations)
            if current:
                body["metadata"]["name"] = _meta(current[0]).get("name")
                to_update.append(body)
            else:
                to_create.append(body)
        self._recycle(to_create, to_update, to_delete)
        await self._finalize(endpoints, to_create, to_update, to_delete)

    @staticmethod
    def _recycle(to_create: list[dict[str, Any]], to_update: list[dict[str, Any]], to_delete: list[dict[str, Any]]) -> None:
        """recycleSlices: a slice to create takes the name of one to delete of its address type instead."""
        for body in list(to_create):
            spare = next((s for s in to_delete if s.get("addressType") == body["addressType"]), None)
            if spare is None:
                continue
            to_create.remove(body)
            to_delete.remove(spare)
            body["metadata"].pop("generateName", None)
            body["metadata"]["name"] = _meta(spare).get("name")
            to_update.append(body)

    def _slice(self, endpoints: Mapping[str, Any], want: DesiredSlice, labels: dict[str, str],
               annotations: dict[str, str]) -> dict[str, Any]:
        """newEndpointSlice: a fresh object (no resourceVersion: an update of it is unconditional)."""
        meta = _meta(endpoints)
        name = str(meta.get("name") or "")
        metadata: dict[str, Any] = {"generateName": _prefix(name), "namespace": meta.get("namespace"),
                                    "labels": dict(labels),
                                    "ownerReferences": [{"apiVersion": "v1", "kind": "Endpoints", "name": name,
                                                         "uid": meta.get("uid"), "controller": True,
                                                         "blockOwnerDeletion": True}]}
        if annotations:
            metadata["annotations"] = dict(annotations)
        return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": metadata,
                "addressType": want.address_type, "endpoints": want.endpoints, "ports": want.ports or None}

    async def _finalize(self, endpoints: Mapping[str, Any], to_create: list[dict[str, Any]],
                        to_update: list[dict[str, Any]], to_delete: list[dict[str, Any]]) -> None:
        meta = _meta(endpoints)
        namespace, key = str(meta.get("namespace") or ""), (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if not meta.get("deletionTimestamp"):  # no new slices for an Endpoints being deleted
            for body in to_create:
                try:
                    created = await self.client.create(ENDPOINTSLICES, body, namespace=namespace)
                except Forbidden as err:
                    if is_namespace_terminating_error(err):
                        return  # NamespaceTerminatingCause: creates keep failing, drop the key
                    raise
                self._tracker.wrote(key, str(_meta(created).get("name") or ""), created)
        for body in to_update:
            body["metadata"].pop("generateName", None)
            updated = await self.client.update(ENDPOINTSLICES, body, namespace=namespace)
            self._tracker.wrote(key, str(_meta(updated).get("name") or ""), updated)
        for item in to_delete:
            await self._delete(key, item)

    async def _delete(self, key: tuple[str, str], item: Mapping[str, Any]) -> None:
        name = str(_meta(item).get("name") or "")
        try:
            await self.client.delete(ENDPOINTSLICES, name, namespace=str(_meta(item).get("namespace") or ""))
        except NotFound:
            pass
        self._tracker.wrote(key, name, None)
