"""The endpoints controller: each selecting Service's Endpoints object, from the pods it selects.

Mirrors ``pkg/controller/endpoint/endpoints_controller.go`` (k/k release-1.32, ``syncService``), level-based
on the Service's key:

- A Service that is gone takes its Endpoints with it (a 404 on that delete is success).
- A Service of type ExternalName, or without a selector, gets nothing from this controller: its
  Endpoints, if any, are someone else's (``kubernetes`` in ``default`` is the API server's).
- Every selected pod that should be in endpoints (:func:`should_be_in_endpoints`; terminating pods only
  with ``publishNotReadyAddresses``) gives an address: its IP of the Service's family, ``nodeName``,
  ``targetRef`` to the pod, ``hostname`` when its subdomain is the Service. For each service port the
  pod resolves (named target ports from container ports; a pod that cannot resolve a port is left out
  of that port), the address goes to ``addresses`` when the pod is Ready (or the Service publishes
  not-ready addresses), else to ``notReadyAddresses``. A Service without ports (headless) lists
  addresses without ports.
- Subsets are repacked as ``endpoints.RepackSubsets`` does (addresses grouped by the set of ports they
  serve, ready and not-ready kept apart) and sorted (addresses by IP then pod uid, ports and subsets in
  a fixed order; upstream orders the latter two by a hash, so the order within a list may differ).
- Labels are the Service's, plus ``service.kubernetes.io/headless: ""`` for a Service with no cluster IP.
- The Endpoints object is written only when its subsets or labels change; a create refused because the
  namespace is terminating is dropped (the namespace's deletion will remove everything).

Not done: the ``endpoints.kubernetes.io/last-change-trigger-time`` annotation and truncation past
1000 addresses (``over-capacity``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api import AlreadyExists, Forbidden, NotFound, copy_json
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
from kubeloop.controllers._scheduler_resources import PODS, SERVICES, builtin
from kubeloop.controllers._status_causes import is_namespace_terminating_error
from kubeloop.runtime import Builder, EnqueueForObject, EnqueueMapped, Manager, Request, Result

__all__ = ["ENDPOINTS", "SERVICES", "EndpointsController", "repack_subsets"]

ENDPOINTS = builtin("", "endpoints")


def _address(service: Mapping[str, Any], pod: Mapping[str, Any], ip: str) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    address: dict[str, Any] = {"ip": ip}
    hostname = hostname_for(service, pod)
    if hostname:
        address["hostname"] = hostname
    address["nodeName"] = (pod.get("spec") or {}).get("nodeName") or ""
    address["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace") or "", "name": meta.get("name") or "",
                            "uid": meta.get("uid") or ""}
    return address


def _port_key(port: Mapping[str, Any]) -> str:
    return json.dumps(port, sort_keys=True)


def repack_subsets(entries: list[tuple[dict[str, Any], bool, dict[str, Any] | None]]) -> list[dict[str, Any]]:
    """RepackSubsets over (address, ready, port or None) triples: one subset per distinct set of addresses,
    holding every port that set serves; sorted."""
    addresses: dict[tuple[str, str], dict[str, Any]] = {}
    by_port: dict[str, dict[tuple[str, str], bool]] = {}
    ports: dict[str, dict[str, Any] | None] = {}
    for address, ready, port in entries:
        key = (address["ip"], address.get("targetRef", {}).get("uid", ""))
        addresses.setdefault(key, address)
        port_key = "" if port is None else _port_key(port)
        ports[port_key] = port
        by_port.setdefault(port_key, {})[key] = ready
    groups: dict[str, tuple[dict[tuple[str, str], bool], list[dict[str, Any]]]] = {}
    for port_key, members in by_port.items():
        group_key = json.dumps(sorted((list(k), v) for k, v in members.items()))
        _, group_ports = groups.setdefault(group_key, (members, []))
        port = ports[port_key]
        if port is not None:
            group_ports.append(port)
    subsets: list[dict[str, Any]] = []
    for members, group_ports in groups.values():
        subset: dict[str, Any] = {}
        ready_addresses = [addresses[k] for k, r in sorted(members.items()) if r]
        not_ready = [addresses[k] for k, r in sorted(members.items()) if not r]
        if ready_addresses:
            subset["addresses"] = ready_addresses
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        if group_ports:
            subset["ports"] = sorted(group_ports, key=lambda p: (str(p.get("name") or ""), p.get("port") or 0,
                                                                  str(p.get("protocol") or "")))
        subsets.append(subset)
    return sorted(subsets, key=lambda s: json.dumps(s, sort_keys=True))


def desired_subsets(service: Mapping[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    entries: list[tuple[dict[str, Any], bool, dict[str, Any] | None]] = []
    for pod in selected_pods(service, pods):
        if not should_be_in_endpoints(pod, include_terminating=publish):
            continue
        ip = pod_ip_for(service, pod)
        if ip is None:
            continue
        address = _address(service, pod, ip)
        ready = publish or is_pod_ready(pod)
        service_ports = [p for p in spec.get("ports") or [] if isinstance(p, Mapping)]
        if not service_ports:
            if spec.get("clusterIP") == "None":
                entries.append((address, ready, None))
            continue
        for service_port in service_ports:
            number = find_port(pod, service_port)
            if number is None:
                continue
            port: dict[str, Any] = {}
            if service_port.get("name"):
                port["name"] = service_port["name"]
            port["port"] = number
            port["protocol"] = service_port.get("protocol") or "TCP"
            if service_port.get("appProtocol"):
                port["appProtocol"] = service_port["appProtocol"]
            entries.append((address, ready, port))
    return repack_subsets(entries)


def desired_labels(service: Mapping[str, Any]) -> dict[str, str]:
    labels = dict((service.get("metadata") or {}).get("labels") or {})
    if is_headless(service):
        labels[HEADLESS_LABEL] = ""
    else:
        labels.pop(HEADLESS_LABEL, None)
    return labels


def _set_labels(meta: dict[str, Any], labels: dict[str, str]) -> None:
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)


class EndpointsController:
    """Keeps every selecting Service's Endpoints in step with its pods. Build it on a manager."""

    name = "endpoint"

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.services = manager.informer(SERVICES)
        self.pods = manager.informer(PODS)
        self.endpoints = manager.informer(ENDPOINTS)
        self.controller = (Builder(manager).named(self.name).for_(SERVICES)
                           .watches(PODS, EnqueueMapped(self._services_of_pod))
                           .watches(ENDPOINTS, EnqueueForObject())
                           .build(self))

    def _services_of_pod(self, pod: Mapping[str, Any]) -> list[Request]:
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        found: list[Request] = []
        for service in self.services.cache.list(namespace=namespace):
            selector = service_selector(service)
            if selector is not None and selects(selector, pod):
                found.append(Request.for_object(service))
        return found

    async def reconcile(self, request: Request) -> Result | None:
        namespace, name = request.namespace, request.name
        service = self.services.cache.get_by_name(name, namespace)
        current = self.endpoints.cache.get_by_name(name, namespace)
        if service is None:
            if current is not None:
                try:
                    await self.client.delete(ENDPOINTS, name, namespace=namespace)
                except NotFound:
                    pass
            return None
        if service_selector(service) is None:
            return None
        subsets = desired_subsets(service, self.pods.cache.list(namespace=namespace))
        labels = desired_labels(service)
        if current is not None:
            current_labels = (current.get("metadata") or {}).get("labels") or {}
            if (current.get("subsets") or []) == subsets and current_labels == labels:
                return None
            updated = copy_json(current)
            _set_labels(updated["metadata"], labels)
            if subsets:
                updated["subsets"] = subsets
            else:
                updated.pop("subsets", None)
            await self.client.update(ENDPOINTS, updated, namespace=namespace)
            return None
        endpoints: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints",
                                     "metadata": {"name": name, "namespace": namespace}}
        _set_labels(endpoints["metadata"], labels)
        if subsets:
            endpoints["subsets"] = subsets
        try:
            await self.client.create(ENDPOINTS, endpoints, namespace=namespace)
        except AlreadyExists:
            return None  # the cache is behind: the Endpoints' own event brings the Service back
        except Forbidden as err:
            if is_namespace_terminating_error(err):
                return None  # NamespaceTerminatingCause: creates keep failing, drop the key
            raise
        return None
