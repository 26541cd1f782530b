"""The Service registry: its strategy, and the allocation its storage does around a write.

Contract. :class:`ServiceStrategy` is the Service's :class:`~kubeloop.server._strategy.GenericStrategy`
with ``allocates`` set: the write path calls :meth:`ServiceStrategy.begin_create` (after the name is
final, before validation) and :meth:`ServiceStrategy.begin_update` (main resource only, after the
optimistic lock check, before ``prepare_for_update``), and finishes the :class:`Allocation` they return
once the store write is done or has failed, whatever happened. A write that fails leaves nothing
allocated; a dry run allocates nothing. Errors are upstream's (422 Invalid with its field paths and
texts, 500 when a range is full).

Sources (k/k release-1.32): ``pkg/registry/core/service/storage/storage.go`` (``beginCreate``,
``beginUpdate``, ``normalizeClusterIPs``, ``patchAllocatedValues``), ``storage/alloc.go``
(``allocateCreate``, ``initIPFamilyFields``, ``allocClusterIPs``, ``initNodePorts``,
``allocHealthCheckNodePort``, ``allocateUpdate``, ``updateNodePorts``, ``updateHealthCheckNodePort``),
``pkg/registry/core/service/strategy.go`` (``PrepareForCreate``, ``PrepareForUpdate``,
``dropTypeDependentFields``). The cluster is single-stack IPv4, as kubeloop's service CIDR is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import FieldError, InternalError, ResourceInfo, invalid
from kubeloop.api._service_validation import (
    go_strings,
    is_headless,
    needs_health_check,
    parse_ip,
    validate_cluster_ip_fields,
    validate_service,
    validate_service_update,
)
from kubeloop.api._validation import is_dns1123_subdomain, name_is_dns1035_label
from kubeloop.server._service_alloc import Allocation, AllocationError, ServiceAllocator
from kubeloop.server._strategy import GenericStrategy

__all__ = ["ServiceStrategy"]


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    return spec


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, Mapping) else ""


def _ports(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def _node_ports(spec: Mapping[str, Any]) -> list[int]:
    return [p["nodePort"] for p in _ports(spec) if isinstance(p.get("nodePort"), int) and p["nodePort"]]


def needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def needs_node_port(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _should_allocate_node_ports(spec: Mapping[str, Any]) -> bool:
    """shouldAllocateNodePorts: NodePort always; LoadBalancer unless allocateLoadBalancerNodePorts is false."""
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False


def normalize_cluster_ips(spec: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """normalizeClusterIPs: keep ``clusterIP`` and ``clusterIPs`` in step for clients that set only one."""
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if old is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    old_ip, old_ips = old.get("clusterIP") or "", old.get("clusterIPs") or []
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = ips = list(old_ips)
    if old_ip != ip:
        same = list(ips) == list(old_ips)
        if old_ip and not ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [ip]


def patch_allocated_values(spec: dict[str, Any], old: Mapping[str, Any]) -> None:
    """patchAllocatedValues: what the client left out of an update keeps the values allocated before."""
    if needs_cluster_ip(old) and needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old.get("clusterIP"):
            spec["clusterIP"] = old["clusterIP"]
        if not spec.get("clusterIPs") and old.get("clusterIPs"):
            spec["clusterIPs"] = list(old["clusterIPs"])
    if needs_node_port(old) and needs_node_port(spec):
        used = set(_node_ports(old)) & set(_node_ports(spec))
        by_name = {str(p.get("name") or ""): p.get("nodePort") for p in _ports(old)}
        for port in _ports(spec):
            if not port.get("nodePort"):
                value = by_name.get(str(port.get("name") or ""))
                if isinstance(value, int) and value and value not in used:
                    port["nodePort"] = value
    if needs_health_check(old) and needs_health_check(spec) and not spec.get("healthCheckNodePort") \
            and old.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old["healthCheckNodePort"]


def drop_type_dependent_fields(spec: dict[str, Any], old: Mapping[str, Any]) -> None:
    """dropTypeDependentFields: values a type change makes pointless, cleared when the client left them as
    they were (they were allocated or defaulted, not asked for)."""
    if needs_cluster_ip(old) and not needs_cluster_ip(spec):
        if (spec.get("clusterIPs") or []) == (old.get("clusterIPs") or []):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if spec.get("ipFamilies") == old.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_port(old) and not needs_node_port(spec) and _node_ports(spec) == _node_ports(old):
        for port in _ports(spec):
            port.pop("nodePort", None)
    if needs_health_check(old) and not needs_health_check(spec) \
            and spec.get("healthCheckNodePort") == old.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if old.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is not None \
                and spec.get("allocateLoadBalancerNodePorts") == old.get("allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts", None)
        if spec.get("loadBalancerClass") is not None and spec.get("loadBalancerClass") == old.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    accessible = ("LoadBalancer", "NodePort")
    was = old.get("type") in accessible or (old.get("type") == "ClusterIP" and bool(old.get("externalIPs")))
    now = spec.get("type") in accessible or (spec.get("type") == "ClusterIP" and bool(spec.get("externalIPs")))
    if was and not now and spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)


def init_ip_family_fields(obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """initIPFamilyFields on a single-stack IPv4 cluster: ``ipFamilyPolicy`` and ``ipFamilies`` filled in,
    or 422 for what this cluster cannot serve."""
    spec = _spec(obj)
    if spec.get("type") == "ExternalName":
        return
    if spec.get("ipFamilyPolicy") is None:
        if old is not None and old.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
        elif spec.get("clusterIP") == "None" and not spec.get("selector"):
            spec["ipFamilyPolicy"] = "RequireDualStack"  # headless and selectorless: dual by default
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    if errs := validate_cluster_ip_fields(obj):
        raise invalid("Service", _name(obj), errs)
    errs = []
    policy = spec["ipFamilyPolicy"]
    ips = list(spec.get("clusterIPs") or [])
    families = list(spec.get("ipFamilies") or [])
    if policy == "SingleStack":
        if old is not None:
            if ips == list(old.get("clusterIPs") or []) and len(ips) > 1:
                spec["clusterIPs"] = ips = ips[:1]
            if families == list(old.get("ipFamilies") or []) and len(families) > 1:
                spec["ipFamilies"] = families = families[:1]
        if len(ips) == 2:
            errs.append(FieldError.invalid("spec.ipFamilyPolicy", policy,
                                           "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
        if len(families) == 2:
            errs.append(FieldError.invalid("spec.ipFamilyPolicy", policy,
                                           "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
    for i, ip in enumerate(ips):
        if ip == "None":
            break
        parsed = parse_ip(ip)
        family = "IPv6" if parsed is not None and parsed.version == 6 else "IPv4"
        if i >= len(families):
            if family != "IPv4":
                errs.append(FieldError("invalid", f"spec.clusterIPs[{i}]",
                                       f"{go_strings(ips)}: {family} is not configured on this cluster"))
            else:
                families.append(family)
    if errs:
        raise invalid("Service", _name(obj), errs)
    if spec.get("clusterIP") == "None" and not spec.get("selector"):
        families = families or ["IPv4"]
        if len(families) < 2 and policy != "SingleStack":
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = families
        return
    if policy == "RequireDualStack":
        errs.append(FieldError.invalid("spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services"))
    errs.extend(FieldError.invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster")
                for i, family in enumerate(families) if family != "IPv4")
    if errs:
        raise invalid("Service", _name(obj), errs)
    spec["ipFamilies"] = families or ["IPv4"]


def _allocate_cluster_ips(allocator: ServiceAllocator, allocation: Allocation, obj: dict[str, Any]) -> None:
    """allocClusterIPs: one address per family, the requested one or a free one."""
    spec = _spec(obj)
    if spec.get("type") == "ExternalName" or is_headless(spec):
        return
    ips = list(spec.get("clusterIPs") or [])
    families = list(spec.get("ipFamilies") or [])
    while len(ips) < len(families):
        ips.append("")
    shown = go_strings(spec.get("clusterIPs"))
    for i, requested in enumerate(ips[:len(families)]):
        try:
            ips[i] = allocator.allocate_ip(allocation, requested)
        except AllocationError as err:
            if err.full:
                raise InternalError(f"Internal error occurred: failed to allocate a serviceIP: {err}") from None
            raise invalid("Service", _name(obj), [FieldError(
                "invalid", "spec.clusterIPs", f"{shown}: failed to allocate IP {requested}: {err}")]) from None
    spec["clusterIPs"] = ips
    if ips:
        spec["clusterIP"] = ips[0]


def _port_error(obj: dict[str, Any], i: int, value: int, err: AllocationError) -> Exception:
    if err.full:
        return InternalError(f"Internal error occurred: failed to allocate a nodePort: {err}")
    return invalid("Service", _name(obj), [FieldError.invalid(f"spec.ports[{i}].nodePort", value, str(err))])


def _init_node_ports(allocator: ServiceAllocator, allocation: Allocation, obj: dict[str, Any]) -> None:
    """initNodePorts: one node port per service port number, the requested one or a free one."""
    spec = _spec(obj)
    ports = _ports(spec)
    by_number: dict[Any, int] = {}
    for i, port in enumerate(ports):
        node_port = port.get("nodePort") or 0
        if not node_port and not _should_allocate_node_ports(spec):
            continue
        allocated = by_number.get(port.get("port"), 0)
        if not allocated:
            requested = next((p.get("nodePort") or 0 for p in ports
                              if p.get("port") == port.get("port") and p.get("nodePort")), 0)
            try:
                port["nodePort"] = by_number[port.get("port")] = allocator.allocate_port(allocation, requested)
            except AllocationError as err:
                raise _port_error(obj, i, requested, err) from None
        elif node_port != allocated:
            if not node_port:
                port["nodePort"] = allocated
            else:
                try:
                    allocator.allocate_port(allocation, node_port)
                except AllocationError as err:
                    raise _port_error(obj, i, node_port, err) from None


def _allocate_health_check(allocator: ServiceAllocator, allocation: Allocation, spec: dict[str, Any]) -> None:
    """allocHealthCheckNodePort."""
    requested = spec.get("healthCheckNodePort") or 0
    try:
        spec["healthCheckNodePort"] = allocator.allocate_port(allocation, requested)
    except AllocationError as err:
        what = f"requested HealthCheck NodePort {requested}" if requested else "a HealthCheck NodePort 0"
        raise InternalError(f"Internal error occurred: failed to allocate {what}: {err}") from None


def _update_node_ports(allocator: ServiceAllocator, allocation: Allocation, obj: dict[str, Any],
                       old: Mapping[str, Any]) -> None:
    """updateNodePorts: new node ports allocated, the ones the Service already held kept."""
    spec = _spec(obj)
    held = set(_node_ports(old))
    taken: set[int] = set()
    for i, port in enumerate(_ports(spec)):
        node_port = port.get("nodePort") or 0
        if not node_port and not _should_allocate_node_ports(spec):
            continue
        if node_port:
            if node_port not in held and node_port not in taken:
                try:
                    allocator.allocate_port(allocation, node_port)
                except AllocationError as err:
                    raise _port_error(obj, i, node_port, err) from None
                taken.add(node_port)
        else:
            try:
                port["nodePort"] = allocator.allocate_port(allocation, 0)
            except AllocationError as err:
                raise _port_error(obj, i, 0, err) from None


class ServiceStrategy(GenericStrategy):
    """Services: DNS-1035 names, status ``{loadBalancer: {}}`` on create, allocation, ValidateService."""

    name_validator = staticmethod(name_is_dns1035_label)
    empty_status = {"loadBalancer": {}}
    allocates = True

    def __init__(self, info: ResourceInfo, allocator: ServiceAllocator | None) -> None:
        super().__init__(info)
        self.allocator = allocator

    async def begin_create(self, obj: dict[str, Any], *, dry_run: bool) -> Allocation | None:
        """storage beginCreate: normalizeClusterIPs, then allocateCreate (families, cluster IPs, node ports)."""
        allocator = self.allocator
        if allocator is None:
            return None
        spec = _spec(obj)
        normalize_cluster_ips(spec, None)
        init_ip_family_fields(obj, None)
        await allocator.sync()
        allocation = allocator.start(dry_run=dry_run)
        try:
            _allocate_cluster_ips(allocator, allocation, obj)
            if needs_node_port(spec):
                _init_node_ports(allocator, allocation, obj)
            if needs_health_check(spec):
                _allocate_health_check(allocator, allocation, spec)
        except BaseException:
            allocation.finish()
            raise
        return allocation

    async def begin_update(self, new: dict[str, Any], old: dict[str, Any], *, dry_run: bool) -> Allocation | None:
        """storage beginUpdate: patchAllocatedValues, normalizeClusterIPs, then allocateUpdate."""
        allocator = self.allocator
        if allocator is None:
            return None
        spec, old_spec = _spec(new), old.get("spec") if isinstance(old.get("spec"), dict) else {}
        assert isinstance(old_spec, dict)
        patch_allocated_values(spec, old_spec)
        normalize_cluster_ips(spec, old_spec)
        init_ip_family_fields(new, old_spec)
        await allocator.sync()
        allocation = allocator.start(dry_run=dry_run)
        try:
            if old_spec.get("type") == "ExternalName" and spec.get("type") != "ExternalName":
                _allocate_cluster_ips(allocator, allocation, new)
            if needs_node_port(spec):
                _update_node_ports(allocator, allocation, new, old_spec)
            if needs_health_check(spec):
                if not needs_health_check(old_spec):
                    _allocate_health_check(allocator, allocation, spec)
                elif spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
                    raise invalid("Service", _name(new), [FieldError.invalid(
                        "spec.healthCheckNodePort", spec.get("healthCheckNodePort"),
                        "cannot change healthCheckNodePort on loadBalancer service with externalTraffic=Local during update")])
        except BaseException:
            allocation.finish()
            raise
        return allocation

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        old_spec = old.get("spec")
        drop_type_dependent_fields(_spec(new), old_spec if isinstance(old_spec, dict) else {})

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_service(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return _load_balancer_status_errors(new)
        return validate_service_update(new, old)


def _load_balancer_status_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateLoadBalancerStatus on ``status.loadBalancer``."""
    status = obj.get("status")
    balancer = status.get("loadBalancer") if isinstance(status, Mapping) else None
    ingress = balancer.get("ingress") if isinstance(balancer, Mapping) else None
    errs: list[FieldError] = []
    for i, item in enumerate(ingress if isinstance(ingress, list) else []):
        if not isinstance(item, Mapping):
            continue
        path = f"status.loadBalancer.ingress[{i}]"
        ip, hostname = item.get("ip"), item.get("hostname")
        if isinstance(ip, str) and ip and parse_ip(ip) is None:
            errs.append(FieldError.invalid(f"{path}.ip", ip, "must be a valid IP address"))
        if isinstance(hostname, str) and hostname:
            errs.extend(FieldError.invalid(f"{path}.hostname", hostname, m) for m in is_dns1123_subdomain(hostname))
            if parse_ip(hostname) is not None:
                errs.append(FieldError.invalid(f"{path}.hostname", hostname, "must be a DNS name, not an IP address"))
    return errs
