"""Endpoints and EndpointSlice validation, as upstream's (ObjectMeta is the write path's).

Contract: each function returns the field errors upstream reports for the object, in its order and
with its messages; an empty list means valid. Addresses are parsed as 1.32 parses them
(:mod:`kubeloop.api._ip_sloppy`): IPv4 octets with leading zeros are valid, read as decimal (1.32 gives
no warning for Endpoints; the warnings of ``endpointsWarnings`` came in a later release).

Sources (k/k release-1.32): ``pkg/apis/core/validation/validation.go`` (``ValidateEndpoints``,
``validateEndpointSubsets``, ``validateEndpointAddress``, ``validateEndpointPort``) and
``pkg/apis/discovery/validation/validation.go`` (``ValidateEndpointSlice``, ``validateEndpoints``,
``validatePorts``, ``validateAddressType``, ``ValidateEndpointSliceUpdate``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._ip_sloppy import parse_ip_sloppy
from kubeloop.api._pod_fields import go_text, int_of
from kubeloop.api._service_validation import IP_MESSAGE, special_ip_errors
from kubeloop.api._validation import is_dns1123_label, is_dns1123_subdomain, is_qualified_name

__all__ = ["validate_endpoints", "validate_endpointslice", "validate_endpointslice_update"]

_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
_MAX_ENDPOINTS = 1000  # discovery validation maxEndpoints
_MAX_ADDRESSES = 100
_MAX_PORTS = 20000


def _objects(value: Any) -> list[Mapping[str, Any]]:
    return [v if isinstance(v, Mapping) else {} for v in value] if isinstance(value, list) else []


def _address_errors(address: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateEndpointAddress."""
    ip = go_text(address.get("ip"))
    parsed = parse_ip_sloppy(ip)  # IsValidIP and ValidateNonSpecialIP parse with ParseIPSloppy in 1.32
    errs: list[FieldError] = []
    if parsed is None:
        errs.append(FieldError.invalid(f"{path}.ip", ip, IP_MESSAGE))
    hostname = go_text(address.get("hostname"))
    if hostname:
        errs.extend(FieldError.invalid(f"{path}.hostname", hostname, m) for m in is_dns1123_label(hostname))
    node = address.get("nodeName")
    if isinstance(node, str):
        errs.extend(FieldError.invalid(f"{path}.nodeName", node, m) for m in is_dns1123_subdomain(node))
    if parsed is not None:
        errs.extend(special_ip_errors(parsed, ip, f"{path}.ip"))
    return errs


def _port_errors(port: Mapping[str, Any], require_name: bool, path: str) -> list[FieldError]:
    """validateEndpointPort."""
    errs: list[FieldError] = []
    name = go_text(port.get("name"))
    if require_name and not name:
        errs.append(FieldError.required(f"{path}.name"))
    elif name:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
    number = int_of(port.get("port")) or 0
    if not 1 <= number <= 65535:
        errs.append(FieldError.invalid(f"{path}.port", number, _PORT_RANGE))
    errs.extend(_protocol_errors(port.get("protocol"), f"{path}.protocol"))
    app = port.get("appProtocol")
    if isinstance(app, str):
        errs.extend(FieldError.invalid(f"{path}.appProtocol", app, m) for m in is_qualified_name(app))
    return errs


def _protocol_errors(protocol: Any, path: str) -> list[FieldError]:
    text = go_text(protocol)
    if not text:
        return [FieldError.required(path)]
    return [] if text in _PROTOCOLS else [FieldError.not_supported(path, text, _PROTOCOLS)]


def validate_endpoints(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateEndpoints' subsets."""
    errs: list[FieldError] = []
    for i, subset in enumerate(_objects(obj.get("subsets"))):
        path = f"subsets[{i}]"
        ready, not_ready = _objects(subset.get("addresses")), _objects(subset.get("notReadyAddresses"))
        if not ready and not not_ready:
            errs.append(FieldError.required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, address in enumerate(ready):
            errs.extend(_address_errors(address, f"{path}.addresses[{j}]"))
        for j, address in enumerate(not_ready):
            errs.extend(_address_errors(address, f"{path}.notReadyAddresses[{j}]"))
        ports = _objects(subset.get("ports"))
        for j, port in enumerate(ports):
            errs.extend(_port_errors(port, len(ports) > 1, f"{path}.ports[{j}]"))
    return errs


def _is_ipv4(parsed: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """``ip.To4() != nil``: an IPv4 address, or an IPv4-mapped IPv6 one (``::ffff:a.b.c.d``)."""
    return isinstance(parsed, ipaddress.IPv4Address) or parsed.ipv4_mapped is not None


def _slice_address_errors(address: str, address_type: str, path: str) -> list[FieldError]:
    """IsValidIPv4Address / IsValidIPv6Address (ParseIPSloppy): an IPv4-mapped IPv6 address counts as IPv4."""
    parsed = parse_ip_sloppy(address)
    if address_type == "IPv4" and (parsed is None or not _is_ipv4(parsed)):
        return [FieldError.invalid(path, address, "must be a valid IPv4 address")]
    if address_type == "IPv6" and (parsed is None or _is_ipv4(parsed)):
        return [FieldError.invalid(path, address, "must be a valid IPv6 address")]
    if address_type == "FQDN":
        return [FieldError.invalid(path, address, m) for m in is_dns1123_subdomain(address)]
    return []


def validate_endpointslice(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidateEndpointSlice without ObjectMeta: addressType, endpoints, ports."""
    errs: list[FieldError] = []
    address_type = go_text(obj.get("addressType"))
    if not address_type:
        errs.append(FieldError.required("addressType"))
    elif address_type not in _ADDRESS_TYPES:
        errs.append(FieldError.not_supported("addressType", address_type, _ADDRESS_TYPES))
    endpoints = _objects(obj.get("endpoints"))
    if len(endpoints) > _MAX_ENDPOINTS:
        errs.append(FieldError("too_many", "endpoints", f"must have at most {_MAX_ENDPOINTS} items"))
    for i, endpoint in enumerate(endpoints):
        path = f"endpoints[{i}]"
        addresses = endpoint.get("addresses")
        addresses = addresses if isinstance(addresses, list) else []
        if not addresses:
            errs.append(FieldError.required(f"{path}.addresses", "must contain at least 1 address"))
        elif len(addresses) > _MAX_ADDRESSES:
            errs.append(FieldError("too_many", f"{path}.addresses", f"must have at most {_MAX_ADDRESSES} items"))
        for j, address in enumerate(addresses):
            errs.extend(_slice_address_errors(go_text(address), address_type, f"{path}.addresses[{j}]"))
        node = endpoint.get("nodeName")
        if isinstance(node, str):
            errs.extend(FieldError.invalid(f"{path}.nodeName", node, m) for m in is_dns1123_subdomain(node))
        hostname = endpoint.get("hostname")
        if isinstance(hostname, str):
            errs.extend(FieldError.invalid(f"{path}.hostname", hostname, m) for m in is_dns1123_label(hostname))
    ports = _objects(obj.get("ports"))
    if len(ports) > _MAX_PORTS:
        errs.append(FieldError("too_many", "ports", f"must have at most {_MAX_PORTS} items"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        path = f"ports[{i}]"
        name = go_text(port.get("name"))
        if name:
            errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
        if name in names:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        names.add(name)
        errs.extend(_protocol_errors(port.get("protocol"), f"{path}.protocol"))
        number = port.get("port")
        if number is not None and not 0 <= (int_of(number) or 0) <= 65535:
            errs.append(FieldError.invalid(f"{path}.port", number, _PORT_RANGE))
        app = port.get("appProtocol")
        if isinstance(app, str):
            errs.extend(FieldError.invalid(f"{path}.appProtocol", app, m) for m in is_qualified_name(app))
    return errs


def validate_endpointslice_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateEndpointSliceUpdate: the slice again, and ``addressType`` immutable."""
    errs = validate_endpointslice(new)
    if new.get("addressType") != old.get("addressType"):
        errs.insert(0, FieldError.invalid("addressType", new.get("addressType"), "field is immutable"))
    return errs
