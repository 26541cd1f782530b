"""The endpointslice controller: each selecting Service's EndpointSlices, from the pods it selects.

Mirrors ``pkg/controller/endpointslice`` (k/k release-1.32: ``endpointslice_controller.go`` ``syncService``,
``staging/src/k8s.io/endpointslice/reconciler.go``, ``utils.go``), level-based on the Service's key:

- ExternalName Services and Services without a selector get no slices from this controller. A
  Service that is gone leaves its slices to the garbage collector (each slice has the Service as
  controlling owner), as upstream does.
- Desired endpoints: every selected pod with an IP that is not terminal, terminating ones included
  (``ShouldPodBeInEndpoints(pod, true)``): ``addresses`` (the pod's IP of the slice's address type),
  ``conditions`` (``serving`` = pod Ready, ``terminating`` = being deleted, ``ready`` = serving and not
  terminating, or always with ``publishNotReadyAddresses``), ``nodeName``, ``zone`` from the node's
  ``topology.kubernetes.io/zone`` label, ``targetRef`` to the pod, ``hostname`` when the pod's
  subdomain is the Service. Pods are grouped by the ports they resolve (named target ports from
  container ports), one group per distinct port list, at most 100 endpoints per slice.
- What this controller wrote is remembered (:class:`SliceTracker`, upstream's ``endpointSliceTracker``): while the slice cache
  has not yet seen a slice it created or updated (by ``generation``) or still shows one it deleted, the
  Service is not reconciled (the slice's own event brings it back), so a lagging cache never makes it
  create a slice twice.
- Slices are named ``<service>-<random>`` (generateName), labelled with the Service's labels plus
  ``kubernetes.io/service-name``, ``endpointslice.kubernetes.io/managed-by:
  endpointslice-controller.k8s.io`` (and ``service.kubernetes.io/headless`` without a cluster IP),
  and owned by the Service (``controller`` and ``blockOwnerDeletion`` true). Existing slices of the
  same port group are updated in place, surplus ones deleted, missing ones created; a Service with no
  endpoints keeps one empty placeholder slice. Nothing is written when nothing changed.

Simplification: upstream's reconciler packs endpoints into existing slices to minimise churn (and
its order within a slice follows that history); here each group's endpoints are sorted by address
and cut into slices of 100 in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import Forbidden, NotFound, copy_json
from kubeloop.controllers._endpoint_pods import (
    HEADLESS_LABEL,
    find_port,
    hostname_for,
    is_headless,
    is_pod_ready,
    pod_ip_for,
    selected_pods,
    selects,
    service_selector,
    should_be_in_endpoints,
)
from kubeloop.controllers._endpointslice_tracker import SliceTracker
from kubeloop.controllers._scheduler_resources import NODES, PODS, SERVICES, builtin
from kubeloop.runtime import Builder, EnqueueForOwner, EnqueueMapped, Manager, Request, Result

__all__ = ["CONTROLLER_NAME", "ENDPOINTSLICES", "MAX_ENDPOINTS_PER_SLICE", "EndpointSliceController"]

ENDPOINTSLICES = builtin("discovery.k8s.io", "endpointslices")
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MAX_ENDPOINTS_PER_SLICE = 100  # --max-endpoints-per-slice default
_RESERVED = (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL)
_ZONE_LABEL = "topology.kubernetes.io/zone"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def slice_labels(service: Mapping[str, Any]) -> dict[str, str]:
    """setEndpointSliceLabels: the Service's labels but the reserved ones, then the reserved ones set."""
    labels = {k: v for k, v in (_meta(service).get("labels") or {}).items() if k not in _RESERVED}
    if is_headless(service):
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = str(_meta(service).get("name") or "")
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels


def _address_types(service: Mapping[str, Any]) -> list[str]:
    """getAddressTypesForService."""
    spec = service.get("spec") or {}
    families = [f for f in spec.get("ipFamilies") or [] if f in ("IPv4", "IPv6")]
    if families:
        return list(dict.fromkeys(families))
    cluster_ip = str(spec.get("clusterIP") or "")
    return ["IPv6" if cluster_ip not in ("", "None") and ":" in cluster_ip else "IPv4"]


def _endpoint_ports(service: Mapping[str, Any], pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """getEndpointPorts: the service ports this pod resolves, named as the service port."""
    ports: list[dict[str, Any]] = []
    for service_port in (service.get("spec") or {}).get("ports") or []:
        if not isinstance(service_port, Mapping):
            continue
        number = find_port(pod, service_port)
        if number is None:
            continue
        port: dict[str, Any] = {"name": service_port.get("name") or "", "port": number,
                                "protocol": service_port.get("protocol") or "TCP"}
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


def _endpoint(service: Mapping[str, Any], pod: Mapping[str, Any], ip: str, zone: str | None) -> dict[str, Any]:
    """podToEndpoint."""
    meta = _meta(pod)
    serving = is_pod_ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoint: dict[str, Any] = {
        "addresses": [ip],
        "conditions": {"ready": publish or (serving and not terminating), "serving": serving,
                       "terminating": terminating},
    }
    hostname = hostname_for(service, pod)
    if hostname:
        endpoint["hostname"] = hostname
    endpoint["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace") or "", "name": meta.get("name") or "",
                             "uid": meta.get("uid") or ""}
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    if zone:
        endpoint["zone"] = zone
    return endpoint


def _ports_key(ports: Any) -> str:
    return repr([(p.get("name") or "", p.get("port"), p.get("protocol") or "TCP", p.get("appProtocol"))
                 for p in ports or [] if isinstance(p, Mapping)])


class EndpointSliceController:
    """Keeps every selecting Service's EndpointSlices in step with its pods. Build it on a manager."""

    name = "endpointslice"

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.services = manager.informer(SERVICES)
        self.pods = manager.informer(PODS)
        self.nodes = manager.informer(NODES)
        self.slices = manager.informer(ENDPOINTSLICES)
        self._tracker = SliceTracker()  # what this controller wrote that the slice cache has not seen
        self.controller = (Builder(manager).named(self.name).for_(SERVICES)
                           .watches(PODS, EnqueueMapped(self._services_of_pod))
                           .watches(ENDPOINTSLICES, EnqueueForOwner(SERVICES))
                           .build(self))

    def _services_of_pod(self, pod: Mapping[str, Any]) -> list[Request]:
        namespace = _meta(pod).get("namespace") or ""
        return [Request.for_object(service) for service in self.services.cache.list(namespace=namespace)
                if (selector := service_selector(service)) is not None and selects(selector, pod)]

    def _zone(self, node_name: Any) -> str | None:
        if not node_name:
            return None
        node = self.nodes.cache.get_by_name(str(node_name))
        labels = _meta(node).get("labels") if node is not None else None
        return str(labels[_ZONE_LABEL]) if isinstance(labels, Mapping) and labels.get(_ZONE_LABEL) else None

    def _desired(self, service: Mapping[str, Any], address_type: str) -> dict[str, tuple[list[Any], list[Any]]]:
        """Port group key -> (ports, endpoints sorted by address)."""
        groups: dict[str, tuple[list[Any], list[Any]]] = {}
        namespace = _meta(service).get("namespace") or ""
        for pod in selected_pods(service, self.pods.cache.list(namespace=namespace)):
            if not should_be_in_endpoints(pod, include_terminating=True):
                continue
            ip = pod_ip_for(service, pod)
            if ip is None or (":" in ip) != (address_type == "IPv6"):
                continue
            ports = _endpoint_ports(service, pod)
            endpoint = _endpoint(service, pod, ip, self._zone((pod.get("spec") or {}).get("nodeName")))
            groups.setdefault(_ports_key(ports), (ports, []))[1].append(endpoint)
        for _, endpoints in groups.values():
            endpoints.sort(key=lambda e: (e["addresses"][0], e["targetRef"]["name"]))
        return groups

    def _owned(self, service: Mapping[str, Any]) -> list[dict[str, Any]]:
        meta = _meta(service)
        return [s for s in self.slices.cache.list(namespace=meta.get("namespace") or "")
                if (_meta(s).get("labels") or {}).get(SERVICE_NAME_LABEL) == meta.get("name")
                and (_meta(s).get("labels") or {}).get(MANAGED_BY_LABEL) == CONTROLLER_NAME]

    def _wrote(self, service: Mapping[str, Any], obj: Mapping[str, Any] | None, name: str) -> None:
        meta = _meta(service)
        self._tracker.wrote((str(meta.get("namespace") or ""), str(meta.get("name") or "")), name, obj)

    async def reconcile(self, request: Request) -> Result | None:
        service = self.services.cache.get_by_name(request.name, request.namespace)
        if service is None:
            self._tracker.forget((request.namespace, request.name))
            return None
        if service_selector(service) is None \
                or self._tracker.stale((request.namespace, request.name), self.slices.cache.get_by_name):
            return None
        existing = self._owned(service)
        labels = slice_labels(service)
        for address_type in _address_types(service):
            await self._reconcile_type(service, address_type, labels,
                                       [s for s in existing if s.get("addressType") == address_type])
        for stale in existing:
            if stale.get("addressType") not in _address_types(service):
                await self._delete(service, stale)
        return None

    async def _reconcile_type(self, service: Mapping[str, Any], address_type: str, labels: dict[str, str],
                              existing: list[dict[str, Any]]) -> None:
        wanted: list[tuple[list[Any] | None, list[Any]]] = []
        for group_ports, endpoints in self._desired(service, address_type).values():
            for start in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE):
                wanted.append((group_ports, endpoints[start:start + MAX_ENDPOINTS_PER_SLICE]))
        if not wanted:
            wanted.append((None, []))  # the placeholder: no ports, no endpoints
        by_key: dict[str, list[dict[str, Any]]] = {}
        for item in sorted(existing, key=lambda s: str(_meta(s).get("name") or "")):
            by_key.setdefault(_ports_key(item.get("ports")), []).append(item)
        for ports, endpoints in wanted:
            candidates = by_key.get(_ports_key(ports))
            if candidates:
                await self._update(candidates.pop(0), service, labels, ports, endpoints)
            else:
                await self._create(service, address_type, labels, ports, endpoints)
        for leftovers in by_key.values():
            for item in leftovers:
                await self._delete(service, item)

    def _owner_reference(self, service: Mapping[str, Any]) -> dict[str, Any]:
        meta = _meta(service)
        return {"apiVersion": "v1", "kind": "Service", "name": meta.get("name"), "uid": meta.get("uid"),
                "controller": True, "blockOwnerDeletion": True}

    async def _create(self, service: Mapping[str, Any], address_type: str, labels: dict[str, str],
                      ports: list[Any] | None, endpoints: list[Any]) -> None:
        meta = _meta(service)
        name = str(meta.get("name") or "")
        body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"generateName": f"{name}-", "namespace": meta.get("namespace"), "labels": labels,
                             "ownerReferences": [self._owner_reference(service)]},
                "addressType": address_type, "endpoints": endpoints or None, "ports": ports or None}
        try:
            created = await self.client.create(ENDPOINTSLICES, body, namespace=str(meta.get("namespace") or ""))
        except Forbidden as err:
            if "because it is being terminated" not in str(err):
                raise
            return
        self._wrote(service, created, str(_meta(created).get("name") or ""))

    async def _update(self, item: dict[str, Any], service: Mapping[str, Any], labels: dict[str, str],
                      ports: list[Any] | None, endpoints: list[Any]) -> None:
        current_labels = _meta(item).get("labels") or {}
        owners = _meta(item).get("ownerReferences") or []
        if (item.get("endpoints") or []) == endpoints and (item.get("ports") or []) == (ports or []) \
                and current_labels == labels and self._owner_reference(service) in owners:
            return
        updated = copy_json(item)
        updated["metadata"]["labels"] = labels
        if self._owner_reference(service) not in owners:
            updated["metadata"]["ownerReferences"] = [self._owner_reference(service)]
        updated["endpoints"] = endpoints or None
        updated["ports"] = ports or None
        stored = await self.client.update(ENDPOINTSLICES, updated, namespace=str(_meta(item).get("namespace") or ""))
        self._wrote(service, stored, str(_meta(stored).get("name") or ""))

    async def _delete(self, service: Mapping[str, Any], item: Mapping[str, Any]) -> None:
        name = str(_meta(item).get("name"))
        try:
            await self.client.delete(ENDPOINTSLICES, name, namespace=str(_meta(item).get("namespace") or ""))
        except NotFound:
            pass
        self._wrote(service, None, name)
