"""Service validation: upstream's ``ValidateService`` and ``ValidateServiceUpdate`` on JSON dicts.

Contract: :func:`validate_service` returns every spec error of a Service as it will be stored (after the
allocator filled ``clusterIP(s)``, ``ipFamilies``, ``ipFamilyPolicy`` and node ports), in upstream's
order and with its messages; :func:`validate_service_update` adds the update rules (primary cluster IP
and IP family may not change once set) first. :func:`validate_cluster_ip_fields` is the loose check the
allocator runs before it allocates (``ValidateServiceClusterIPsRelatedFields``). ObjectMeta is checked by
the write path, not here.

Source: k/k release-1.32 ``pkg/apis/core/validation/validation.go`` (``ValidateService``,
``validateServicePort``, ``ValidateServiceClusterIPsRelatedFields``, ``validateUpgradeDowngradeClusterIPs``,
``validateUpgradeDowngradeIPFamilies``, ``validateServiceExternalTrafficPolicy``,
``validateServiceInternalTrafficFieldsValue``, ``validateClientIPAffinityConfig``, ``ValidateNonSpecialIP``).
Values that Go prints with ``%#v`` (slices, structs) are rendered that way.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, int_of
from kubeloop.api._pod_probe_validation import port_num_or_name_errors
from kubeloop.api._validation import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    validate_labels,
)

__all__ = [
    "IP_MESSAGE",
    "go_strings",
    "non_special_ip_errors",
    "parse_ip",
    "special_ip_errors",
    "validate_cluster_ip_fields",
    "validate_service",
    "validate_service_update",
]

IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"  # validation.IsValidIP
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_AFFINITIES = ["ClientIP", "None"]
_FAMILIES = ["IPv4", "IPv6"]
_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
_EXTERNAL_POLICIES = ["Cluster", "Local"]
_INTERNAL_POLICIES = ["Cluster", "Local"]
_MAX_AFFINITY_SECONDS = 86400  # core.MaxClientIPServiceAffinitySeconds


def go_strings(values: Any, type_name: str = "string") -> str:
    """Go's ``%#v`` of a string slice (``[]string{"a"}``; ``[]string(nil)`` when empty)."""
    if not isinstance(values, list) or not values:
        return f"[]{type_name}(nil)"
    quoted = ", ".join('"' + go_text(v).replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return f"[]{type_name}{{{quoted}}}"


def _raw(kind: str, path: str, raw: str, detail: str = "") -> FieldError:
    """An error whose value is printed as given (Go's ``%#v``)."""
    return FieldError(kind, path, f"{raw}: {detail}" if detail else raw)


def parse_ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def non_special_ip_errors(text: str, path: str) -> list[FieldError]:
    """ValidateNonSpecialIP: no unspecified, loopback, link-local or link-local multicast address."""
    ip = parse_ip(text)
    if ip is None:
        return [FieldError.invalid(path, text, "must be a valid IP address")]
    return special_ip_errors(ip, text, path)


def special_ip_errors(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, text: str, path: str) -> list[FieldError]:
    """ValidateNonSpecialIP's checks of the address ``text`` was parsed to."""
    if ip.is_unspecified:
        return [FieldError.invalid(path, text, "may not be unspecified (0.0.0.0, ::)")]
    if ip.is_loopback:
        return [FieldError.invalid(path, text, "may not be in the loopback range (127.0.0.0/8, ::1/128)")]
    if ip.is_link_local:
        return [FieldError.invalid(path, text, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")]
    if ip in ipaddress.ip_network("224.0.0.0/24") or ip in ipaddress.ip_network("ff02::/16"):
        return [FieldError.invalid(path, text, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")]
    return []


def _spec(svc: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = svc.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _ports(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    ports = spec.get("ports")
    return [p if isinstance(p, Mapping) else {} for p in ports] if isinstance(ports, list) else []


def _strings(value: Any) -> list[str]:
    return [go_text(v) for v in value] if isinstance(value, list) else []


def is_headless(spec: Mapping[str, Any]) -> bool:
    ips = _strings(spec.get("clusterIPs"))
    return bool(ips) and ips[0] == "None"


def _go_service_port(port: Mapping[str, Any]) -> str:
    """``%#v`` of the ``core.ServicePort`` key the duplicate-port check builds (protocol and port only)."""
    return (f'core.ServicePort{{Name:"", Protocol:"{go_text(port.get("protocol"))}", AppProtocol:(*string)(nil), '
            f'Port:{int_of(port.get("port")) or 0}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, '
            "NodePort:0}")


def _port_errors(port: Mapping[str, Any], require_name: bool, names: set[str], path: str) -> list[FieldError]:
    """validateServicePort."""
    errs: list[FieldError] = []
    name = go_text(port.get("name"))
    if require_name and not name:
        errs.append(FieldError.required(f"{path}.name"))
    elif name:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
        if name in names:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        else:
            names.add(name)
    number = int_of(port.get("port")) or 0
    if not 1 <= number <= 65535:
        errs.append(FieldError.invalid(f"{path}.port", number, _PORT_RANGE))
    protocol = go_text(port.get("protocol"))
    if not protocol:
        errs.append(FieldError.required(f"{path}.protocol"))
    elif protocol not in _PROTOCOLS:
        errs.append(FieldError.not_supported(f"{path}.protocol", protocol, _PROTOCOLS))
    errs.extend(port_num_or_name_errors(port.get("targetPort"), f"{path}.targetPort"))
    app = port.get("appProtocol")
    if isinstance(app, str):
        errs.extend(FieldError.invalid(f"{path}.appProtocol", app, m) for m in is_qualified_name(app))
    return errs


def validate_cluster_ip_fields(svc: Mapping[str, Any]) -> list[FieldError]:
    """ValidateServiceClusterIPsRelatedFields."""
    spec = _spec(svc)
    if spec.get("type") == "ExternalName":
        return []
    errs: list[FieldError] = []
    cluster_ip = go_text(spec.get("clusterIP"))
    ips = _strings(spec.get("clusterIPs"))
    shown = go_strings(spec.get("clusterIPs"))
    if cluster_ip:
        if not ips:
            errs.append(FieldError.required("spec.clusterIPs"))
        elif ips[0] != cluster_ip:
            errs.append(_raw("invalid", "spec.clusterIPs", shown, "first value must match `clusterIP`"))
    elif ips:
        errs.append(_raw("invalid", "spec.clusterIPs", shown, "must be empty when `clusterIP` is not specified"))
    seen: set[str] = set()
    for i, family in enumerate(_strings(spec.get("ipFamilies"))):
        if family not in _FAMILIES:
            errs.append(FieldError.not_supported(f"spec.ipFamilies[{i}]", family, _FAMILIES))
        if family in seen:
            errs.append(FieldError.duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _POLICIES:
        errs.append(FieldError.not_supported("spec.ipFamilyPolicy", policy, _POLICIES))
    bad_ips = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad_ips = True
                errs.append(_raw("invalid", "spec.clusterIPs", shown, "'None' must be the first and only value"))
            continue
        if parse_ip(ip) is None:
            bad_ips = True
            errs.append(FieldError.invalid(f"spec.clusterIPs[{i}]", ip, IP_MESSAGE))
    if len(ips) > 2:
        errs.append(_raw("invalid", "spec.clusterIPs", shown, "may only hold up to 2 values"))
    if bad_ips:
        return errs
    if len(ips) > 1:
        versions = {ip_.version for ip_ in (parse_ip(ip) for ip in ips) if ip_ is not None}
        if len(versions) != len(ips):
            errs.append(_raw("invalid", "spec.clusterIPs", shown, "may specify no more than one IP for each IP family"))
    families = _strings(spec.get("ipFamilies"))
    if not is_headless(spec) and ips and families:
        for i, ip in enumerate(ips[:len(families)]):
            parsed = parse_ip(ip)
            v6 = parsed is not None and parsed.version == 6
            if families[i] == "IPv4" and v6:
                errs.append(FieldError.invalid(f"spec.clusterIPs[{i}]", ip,
                                               f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if families[i] == "IPv6" and not v6:
                errs.append(FieldError.invalid(f"spec.clusterIPs[{i}]", ip,
                                               f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


def _type_errors(spec: Mapping[str, Any], kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if kind in ("LoadBalancer", "NodePort") and is_headless(spec):
        errs.append(FieldError.invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {kind} services"))
    elif kind == "ExternalName":
        if _strings(spec.get("clusterIPs")):
            errs.append(FieldError.forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if _strings(spec.get("ipFamilies")):
            errs.append(FieldError.forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(FieldError.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = go_text(spec.get("externalName")).removesuffix(".")
        if cname:
            errs.extend(FieldError.invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname))
        else:
            errs.append(FieldError.required("spec.externalName"))
    return errs


def _affinity_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    affinity = go_text(spec.get("sessionAffinity"))
    if not affinity:
        errs.append(FieldError.required("spec.sessionAffinity"))
    elif affinity not in _AFFINITIES:
        errs.append(FieldError.not_supported("spec.sessionAffinity", affinity, _AFFINITIES))
    config = spec.get("sessionAffinityConfig")
    if affinity == "ClientIP":
        path, when = "spec.sessionAffinityConfig", "when session affinity type is ClientIP"
        client = config.get("clientIP") if isinstance(config, Mapping) else None
        timeout = client.get("timeoutSeconds") if isinstance(client, Mapping) else None
        if not isinstance(config, Mapping):
            errs.append(FieldError.required(path, when))
        elif not isinstance(client, Mapping):
            errs.append(FieldError.required(f"{path}.clientIP", when))
        elif timeout is None:
            errs.append(FieldError.required(f"{path}.clientIP.timeoutSeconds", when))
        elif not 0 < (int_of(timeout) or 0) <= _MAX_AFFINITY_SECONDS:
            errs.append(FieldError.invalid(f"{path}.clientIP.timeoutSeconds", timeout,
                                           f"must be greater than 0 and less than {_MAX_AFFINITY_SECONDS}"))
    elif affinity == "None" and config is not None:
        errs.append(FieldError.forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    return errs


def externally_accessible(spec: Mapping[str, Any]) -> bool:
    """service.ExternallyAccessible."""
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))


def needs_health_check(spec: Mapping[str, Any]) -> bool:
    """service.NeedsHealthCheck: a LoadBalancer with externalTrafficPolicy Local."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _traffic_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    external = go_text(spec.get("externalTrafficPolicy"))
    if externally_accessible(spec):
        if not external:
            errs.append(FieldError.required("spec.externalTrafficPolicy"))
        elif external not in _EXTERNAL_POLICIES:
            errs.append(FieldError.not_supported("spec.externalTrafficPolicy", external, _EXTERNAL_POLICIES))
    elif external:
        errs.append(FieldError.invalid("spec.externalTrafficPolicy", external,
                                       "may only be set for externally-accessible services"))
    health = int_of(spec.get("healthCheckNodePort")) or 0
    if not needs_health_check(spec) and health:
        errs.append(FieldError.invalid("spec.healthCheckNodePort", health,
                                       "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
    internal = spec.get("internalTrafficPolicy")
    if internal is None:
        if spec.get("type") in ("ClusterIP", "NodePort", "LoadBalancer"):
            errs.append(FieldError.required("spec.internalTrafficPolicy"))
    elif internal not in _INTERNAL_POLICIES:
        errs.append(FieldError.not_supported("spec.internalTrafficPolicy", internal, _INTERNAL_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution != "PreferClose":
        errs.append(FieldError.not_supported("spec.trafficDistribution", distribution, ["PreferClose"]))
    return errs


def validate_service(svc: Mapping[str, Any]) -> list[FieldError]:
    """ValidateService (without ObjectMeta)."""
    spec = _spec(svc)
    kind = go_text(spec.get("type"))
    ports = _ports(spec)
    errs: list[FieldError] = []
    if not ports and not is_headless(spec) and kind != "ExternalName":
        errs.append(FieldError.required("spec.ports"))
    errs.extend(_type_errors(spec, kind))
    names: set[str] = set()
    for i, port in enumerate(ports):
        errs.extend(_port_errors(port, len(ports) > 1, names, f"spec.ports[{i}]"))
    selector = spec.get("selector")
    if isinstance(selector, Mapping):
        errs.extend(validate_labels(selector, "spec.selector"))
    errs.extend(_affinity_errors(spec))
    errs.extend(validate_cluster_ip_fields(svc))
    for i, ip in enumerate(_strings(spec.get("externalIPs"))):
        path = f"spec.externalIPs[{i}]"
        errs.extend([FieldError.invalid(path, ip, IP_MESSAGE)] if parse_ip(ip) is None else non_special_ip_errors(ip, path))
    if not kind:
        errs.append(FieldError.required("spec.type"))
    elif kind not in _TYPES:
        errs.append(FieldError.not_supported("spec.type", kind, _TYPES))
    if kind == "ClusterIP":
        errs.extend(FieldError.forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'")
                    for i, port in enumerate(ports) if int_of(port.get("nodePort")))
    node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        node_port = int_of(port.get("nodePort")) or 0
        if node_port:
            key = (go_text(port.get("protocol")), node_port)
            if key in node_ports:
                errs.append(FieldError.duplicate(f"spec.ports[{i}].nodePort", node_port))
            node_ports.add(key)
    service_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (go_text(port.get("protocol")), int_of(port.get("port")) or 0)
        if key in service_ports:
            errs.append(_raw("duplicate", f"spec.ports[{i}]", _go_service_port(port)))
        service_ports.add(key)
    allocate = spec.get("allocateLoadBalancerNodePorts")
    if kind == "LoadBalancer" and allocate is None:
        errs.append(FieldError.required("spec.allocateLoadBalancerNodePorts"))
    elif kind != "LoadBalancer" and allocate is not None:
        errs.append(FieldError.forbidden("spec.allocateLoadBalancerNodePorts", "may only be used when `type` is 'LoadBalancer'"))
    errs.extend(_traffic_errors(spec))
    return errs


def _upgrade_downgrade(new: list[str], old: list[str], path: str, shown: str, policy: Any, what: str) -> list[FieldError]:
    """validateUpgradeDowngradeClusterIPs / validateUpgradeDowngradeIPFamilies: the primary may not change,
    the secondary is released only with ``ipFamilyPolicy`` SingleStack."""
    errs: list[FieldError] = []
    if len(old) == len(new):
        errs.extend(_raw("invalid", f"{path}[{i}]", shown, "may not change once set")
                    for i, value in enumerate(old) if value != new[i])
    elif len(old) > len(new):
        if not new:
            errs.append(_raw("invalid", f"{path}[0]", shown, f"primary {what} can not be unset"))
        elif new[0] != old[0]:
            errs.append(_raw("invalid", f"{path}[0]", shown, "may not change once set"))
        if len(new) == 1 and policy != "SingleStack":
            errs.append(_raw("invalid", f"{path}[0]", shown,
                             f"`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary {what}"))
    elif old and new[0] != old[0]:
        errs.append(_raw("invalid", f"{path}[0]", shown, "may not change once set"))
    return errs


def validate_service_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateServiceUpdate (without ObjectMeta): the cluster IPs and IP families rules, then ValidateService."""
    spec, old_spec = _spec(new), _spec(old)
    errs: list[FieldError] = []
    if spec.get("type") != "ExternalName" and old_spec.get("type") != "ExternalName":
        if not (is_headless(spec) and is_headless(old_spec)):
            errs.extend(_upgrade_downgrade(_strings(spec.get("clusterIPs")), _strings(old_spec.get("clusterIPs")),
                                           "spec.clusterIPs", go_strings(spec.get("clusterIPs")),
                                           spec.get("ipFamilyPolicy"), "clusterIP"))
        errs.extend(_upgrade_downgrade(_strings(spec.get("ipFamilies")), _strings(old_spec.get("ipFamilies")),
                                       "spec.ipFamilies", go_strings(spec.get("ipFamilies"), "core.IPFamily"),
                                       spec.get("ipFamilyPolicy"), "ipFamily"))
    old_class = old_spec.get("loadBalancerClass")
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") == "LoadBalancer" \
            and spec.get("loadBalancerClass") != old_class:
        errs.append(FieldError.invalid("spec.loadBalancerClass", spec.get("loadBalancerClass"), "may not change once set"))
    return [*errs, *validate_service(new)]
