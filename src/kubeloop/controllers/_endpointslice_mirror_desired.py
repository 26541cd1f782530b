"""What the endpointslice-mirroring controller wants: EndpointSlices from one Endpoints object.

Contract (pure functions on JSON dicts, no I/O), as upstream's (k/k release-1.32
``pkg/controller/endpointslicemirroring``: ``utils.go``, ``reconciler.go`` ``reconcile``,
``reconciler_helpers.go`` ``desiredCalc``; ``pkg/api/v1/endpoints/util.go`` ``RepackSubsets``):

- :func:`should_mirror`: an Endpoints is mirrored unless labelled
  ``endpointslice.kubernetes.io/skip-mirror: "true"`` or annotated with a leader-election record
  (``control-plane.alpha.kubernetes.io/leader``); :func:`has_selector` tells the Services whose
  Endpoints the endpoints controller owns (a selector with at least one entry: an empty one is
  stored as none).
- :func:`desired_slices`: the subsets are first repacked (``RepackSubsets``: one subset per set of
  addresses serving the same ports, an address listed twice kept once, ready if listed ready
  anywhere). Then, per subset, at most ``max_per_subset`` addresses (1000,
  ``--mirroring-max-endpoints-per-subset``) are mirrored, ready ones first, in the repacked order
  (by IP, then target uid); an address whose IP does not parse is skipped and counted as invalid.
  Each mirrored address becomes an endpoint (``addresses`` [ip], ``conditions.ready``, ``hostname``,
  ``nodeName``, ``targetRef`` copied) in the group of its address type (IPv4, or IPv6 for an IP
  that is not IPv4 nor IPv4-mapped; never FQDN) and of the subset's ports (``name`` always set,
  ``protocol``, ``appProtocol``). ``skipped`` counts the invalid and the truncated addresses.
- :func:`slice_labels` / :func:`slice_annotations`: the Endpoints' labels with
  ``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by:
  endpointslicemirroring-controller.k8s.io`` set; its annotations but
  ``endpoints.kubernetes.io/last-change-trigger-time`` and
  ``kubectl.kubernetes.io/last-applied-configuration``.

Simplified: upstream orders a slice's endpoints as a set pops them and its ports by hash; here both
are sorted (endpoints by address, ports by name, number, protocol).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeloop.api import parse_ip_sloppy
from kubeloop.controllers._endpoints import repack_subsets

__all__ = [
    "CONTROLLER_NAME",
    "DROPPED_ANNOTATIONS",
    "LEADER_ANNOTATION",
    "MANAGED_BY_LABEL",
    "MAX_ENDPOINTS_PER_SUBSET",
    "SERVICE_NAME_LABEL",
    "SKIP_MIRROR_LABEL",
    "Desired",
    "DesiredSlice",
    "address_type",
    "desired_slices",
    "group_key",
    "has_selector",
    "should_mirror",
    "slice_annotations",
    "slice_labels",
]

CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"  # resourcelock.LeaderElectionRecordAnnotationKey
DROPPED_ANNOTATIONS = ("endpoints.kubernetes.io/last-change-trigger-time",
                       "kubectl.kubernetes.io/last-applied-configuration")
MAX_ENDPOINTS_PER_SUBSET = 1000


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def should_mirror(endpoints: Mapping[str, Any]) -> bool:
    """``shouldMirror``: not labelled skip-mirror ``"true"``, no leader-election annotation."""
    meta = _meta(endpoints)
    labels, annotations = _strings(meta.get("labels")), _strings(meta.get("annotations"))
    return labels.get(SKIP_MIRROR_LABEL) != "true" and LEADER_ANNOTATION not in annotations


def has_selector(service: Mapping[str, Any]) -> bool:
    """``svc.Spec.Selector != nil`` once stored (an empty map is stored as none)."""
    spec = service.get("spec")
    selector = spec.get("selector") if isinstance(spec, Mapping) else None
    return isinstance(selector, Mapping) and bool(selector)


def address_type(ip: Any) -> str | None:
    """``getAddressType``: ``IPv4`` when ``netutils.ParseIPSloppy`` gives a 4-byte form (IPv4-mapped
    IPv6 and leading zeros included), ``IPv6`` for another IP, ``None`` when it does not parse."""
    parsed = parse_ip_sloppy(ip)
    if parsed is None:
        return None
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is None:
        return "IPv6"
    return "IPv4"


def _port(port: Mapping[str, Any]) -> dict[str, Any]:
    """An Endpoints port as an EndpointSlice port (``epPortsToEpsPorts``: the name always set)."""
    out: dict[str, Any] = {"name": str(port.get("name") or ""), "port": port.get("port"),
                           "protocol": str(port.get("protocol") or "TCP")}
    if port.get("appProtocol") is not None:
        out["appProtocol"] = port["appProtocol"]
    return out


def _sorted_ports(ports: Any) -> list[dict[str, Any]]:
    converted = [_port(p) for p in ports or [] if isinstance(p, Mapping)]
    return sorted(converted, key=lambda p: (p["name"], int(p.get("port") or 0), p["protocol"],
                                            str(p.get("appProtocol") or "")))


def group_key(address_type_: str, ports: Any) -> str:
    """``newAddrTypePortMapKey``: the address type and the set of ports (a slice's or a subset's)."""
    return f"{address_type_}-{json.dumps(_sorted_ports(ports), sort_keys=True)}"


def _endpoint(address: Mapping[str, Any], ready: bool) -> dict[str, Any]:
    """``addressToEndpoint``."""
    endpoint: dict[str, Any] = {"addresses": [address.get("ip")], "conditions": {"ready": ready}}
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    if isinstance(address.get("nodeName"), str):
        endpoint["nodeName"] = address["nodeName"]
    if isinstance(address.get("targetRef"), Mapping):
        endpoint["targetRef"] = dict(address["targetRef"])
    return endpoint


@dataclass(frozen=True, slots=True)
class DesiredSlice:
    address_type: str
    ports: list[dict[str, Any]]
    endpoints: list[dict[str, Any]]


@dataclass(slots=True)
class Desired:
    slices: dict[str, DesiredSlice] = field(default_factory=dict)  # by group_key, none empty
    invalid: int = 0  # addresses skipped because their IP does not parse
    skipped: int = 0  # addresses not mirrored: the invalid ones and those past the per-subset maximum


def _address_key(address: Mapping[str, Any]) -> tuple[str, str]:
    ref = address.get("targetRef")
    return str(address.get("ip") or ""), str(ref.get("uid") or "") if isinstance(ref, Mapping) else ""


def _repacked(endpoints: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``RepackSubsets``: an (address, port) pair listed more than once is ready if ready anywhere."""
    entries: dict[tuple[tuple[str, str], str], tuple[dict[str, Any], bool, dict[str, Any] | None]] = {}
    for subset in endpoints.get("subsets") or []:
        if not isinstance(subset, Mapping):
            continue
        ports: list[dict[str, Any] | None] = [_port(p) for p in subset.get("ports") or [] if isinstance(p, Mapping)]
        for listing, ready in (("addresses", True), ("notReadyAddresses", False)):
            for raw in subset.get(listing) or []:
                if not isinstance(raw, Mapping):
                    continue
                address = {k: v for k, v in raw.items() if v is not None}
                for port in ports or [None]:
                    key = (_address_key(address), "" if port is None else json.dumps(port, sort_keys=True))
                    seen = entries.get(key)
                    if seen is None:
                        entries[key] = (address, ready, port)
                    elif ready and not seen[1]:
                        entries[key] = (seen[0], True, port)
    return repack_subsets(list(entries.values()))


def desired_slices(endpoints: Mapping[str, Any], *, max_per_subset: int = MAX_ENDPOINTS_PER_SUBSET) -> Desired:
    """The slices mirroring ``endpoints``, by group key, with the addresses left out counted."""
    desired = Desired()
    groups: dict[str, tuple[str, list[dict[str, Any]], dict[str, dict[str, Any]]]] = {}
    for subset in _repacked(endpoints):
        ports = _sorted_ports(subset.get("ports"))
        listed = [(a, True) for a in subset.get("addresses") or []] + \
                 [(a, False) for a in subset.get("notReadyAddresses") or []]
        added = 0
        for address, ready in listed:
            if added >= max_per_subset:
                break
            family = address_type(address.get("ip"))
            if family is None:
                desired.invalid += 1
                continue
            added += 1
            key = group_key(family, ports)
            endpoint = _endpoint(address, ready)
            groups.setdefault(key, (family, ports, {}))[2][json.dumps(endpoint, sort_keys=True)] = endpoint
        desired.skipped += len(listed) - added
    for key in sorted(groups):
        family, ports, members = groups[key]
        ordered = sorted(members.values(), key=lambda e: (str(e["addresses"][0]), json.dumps(e, sort_keys=True)))
        desired.slices[key] = DesiredSlice(family, ports, ordered)
    return desired


def slice_labels(endpoints: Mapping[str, Any]) -> dict[str, str]:
    """The Endpoints' labels, with the service-name and managed-by labels set (``newEndpointSlice``)."""
    labels = _strings(_meta(endpoints).get("labels"))
    labels[SERVICE_NAME_LABEL] = str(_meta(endpoints).get("name") or "")
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels


def slice_annotations(endpoints: Mapping[str, Any]) -> dict[str, str]:
    """The Endpoints' annotations but the trigger time and kubectl's last-applied configuration."""
    return {k: v for k, v in _strings(_meta(endpoints).get("annotations")).items() if k not in DROPPED_ANNOTATIONS}
