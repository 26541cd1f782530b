"""Validation of NetworkPolicies (``networking.k8s.io/v1``), as the 1.32 registry validates them.

:func:`validate_network_policy` returns one :class:`FieldError` per problem with upstream's path, type and
text (k/k ``pkg/apis/networking/validation/validation.go`` ``ValidateNetworkPolicy`` /
``ValidateNetworkPolicyUpdate``, with ``ValidationOptionsForNetworking``):

- ``spec.podSelector`` and every peer's selectors are label selectors; on update, an invalid label value
  is allowed when the stored policy's pod selector already had one;
- a port's ``protocol`` is TCP, UDP or SCTP; a numeric ``port`` is 1-65535, a named one a port name; an
  ``endPort`` needs a numeric ``port``, not below it, and is itself 1-65535;
- a peer names at least one of ``podSelector``, ``namespaceSelector``, ``ipBlock``, and an ``ipBlock``
  stands alone; its ``cidr`` is required and a CIDR (parsed as ``ParseCIDRSloppy``: leading zeros allowed),
  each ``except`` a CIDR strictly inside it (the first unparsable one ends the checks of that block);
- at most two ``policyTypes``, each ``Ingress`` or ``Egress``.

ObjectMeta is checked by the generic write path. Pure functions.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError, GoSyntax
from kubeloop.api._ip_sloppy import parse_ip_sloppy
from kubeloop.api._pod_fields import go_text, label_selector_errors
from kubeloop.api._pod_probe_validation import port_name_errors

__all__ = ["parse_cidr_sloppy", "validate_network_policy"]

_PROTOCOLS = ["TCP", "UDP", "SCTP"]
_POLICY_TYPES = ["Ingress", "Egress"]
_PORT_RANGE = "must be between 1 and 65535, inclusive"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def parse_cidr_sloppy(text: str) -> Network | None:
    """``netutils.ParseCIDRSloppy``: an address (IPv4 octets may have leading zeros) and a decimal prefix
    length within the family's bits; host bits may be set (the network is masked). ``None`` when invalid."""
    address, slash, length = text.partition("/")
    if not slash or not length.isascii() or not length.isdigit() or len(length) > 3:
        return None
    ip = parse_ip_sloppy(address)
    if ip is None or int(length) > ip.max_prefixlen:
        return None
    return ipaddress.ip_network(f"{ip}/{int(length)}", strict=False)


def _port_errors(port: Mapping[str, Any], path: str) -> list[FieldError]:
    """ValidateNetworkPolicyPort."""
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        errs.append(FieldError.not_supported(f"{path}.protocol", go_text(protocol), _PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            errs.append(FieldError.invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(number, int) and not isinstance(number, bool):
        if not 1 <= number <= 65535:
            errs.append(FieldError.invalid(f"{path}.port", number, _PORT_RANGE))
        if isinstance(end, int) and not isinstance(end, bool):
            if end < number:
                # 1.32 shows the port's value, not endPort's (fixed upstream later).
                errs.append(FieldError.invalid(f"{path}.endPort", number, "must be greater than or equal to `port`"))
            if not 1 <= end <= 65535:
                errs.append(FieldError.invalid(f"{path}.endPort", end, _PORT_RANGE))
    else:
        name = go_text(number)
        if end is not None:
            errs.append(FieldError.invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        errs.extend(FieldError.invalid(f"{path}.port", name, m) for m in port_name_errors(name))
    return errs


def _ip_block_errors(block: Mapping[str, Any], path: str) -> list[FieldError]:
    """ValidateIPBlock (1.32: ``apivalidation.ValidateCIDR``, "not a valid CIDR")."""
    cidr = go_text(block.get("cidr"))
    if not cidr:
        return [FieldError.required(f"{path}.cidr")]
    network = parse_cidr_sloppy(cidr)
    if network is None:
        return [FieldError.invalid(f"{path}.cidr", cidr, "not a valid CIDR")]
    errs: list[FieldError] = []
    for i, text in enumerate(_list(block.get("except"))):
        text = go_text(text)
        inner = parse_cidr_sloppy(text)
        if inner is None:
            errs.append(FieldError.invalid(f"{path}.except[{i}]", text, "not a valid CIDR"))
            return errs
        contained = inner.version == network.version and inner.network_address in network
        if not contained or network.prefixlen >= inner.prefixlen:
            errs.append(FieldError.invalid(f"{path}.except[{i}]", text, "must be a strict subset of `cidr`"))
    return errs


def _peer_errors(peer: Mapping[str, Any], path: str, allow_invalid_values: bool) -> list[FieldError]:
    """ValidateNetworkPolicyPeer."""
    errs: list[FieldError] = []
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            count += 1
            errs.extend(label_selector_errors(peer[key], f"{path}.{key}", allow_invalid_values=allow_invalid_values))
    block = peer.get("ipBlock")
    if block is not None:
        count += 1
        errs.extend(_ip_block_errors(_map(block), f"{path}.ipBlock"))
    if count == 0:
        errs.append(FieldError.required(path, "must specify a peer"))
    elif count > 1 and block is not None:
        errs.append(FieldError.forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _rules_errors(rules: list[Any], path: str, peers_key: str, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for r, rule in enumerate(rules):
        rule = _map(rule)
        for i, port in enumerate(_list(rule.get("ports"))):
            errs.extend(_port_errors(_map(port), f"{path}[{r}].ports[{i}]"))
        for i, peer in enumerate(_list(rule.get(peers_key))):
            errs.extend(_peer_errors(_map(peer), f"{path}[{r}].{peers_key}[{i}]", allow_invalid_values))
    return errs


def _policy_types_errors(types: list[Any]) -> list[FieldError]:
    if len(types) > len(_POLICY_TYPES):
        shown = "[]networking.PolicyType{" + ", ".join(f'"{go_text(t)}"' for t in types) + "}"
        return [FieldError.invalid("spec.policyTypes", GoSyntax(shown), "may not specify more than two policyTypes")]
    return [FieldError.not_supported(f"spec.policyTypes[{i}]", go_text(t), _POLICY_TYPES)
            for i, t in enumerate(types) if t not in _POLICY_TYPES]


def _selector_has_invalid_values(policy: Mapping[str, Any] | None) -> bool:
    """ValidationOptionsForNetworking: the stored policy's pod selector fails strict validation."""
    if policy is None:
        return False
    selector = _map(policy.get("spec")).get("podSelector")
    return bool(label_selector_errors(selector, "spec.podSelector", allow_invalid_values=False))


def validate_network_policy(policy: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """ValidateNetworkPolicySpec (``old``: the stored policy, on update), without the ObjectMeta part."""
    allow = _selector_has_invalid_values(old)
    spec = _map(policy.get("spec"))
    errs = label_selector_errors(_map(spec.get("podSelector")), "spec.podSelector", allow_invalid_values=allow)
    errs.extend(_rules_errors(_list(spec.get("ingress")), "spec.ingress", "from", allow))
    errs.extend(_rules_errors(_list(spec.get("egress")), "spec.egress", "to", allow))
    errs.extend(_policy_types_errors(_list(spec.get("policyTypes"))))
    return errs
