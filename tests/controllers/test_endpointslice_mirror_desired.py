"""What the endpointslice-mirroring controller wants from one Endpoints object, for the cases the API's
validation keeps away from the controller (an IP ``netutils.ParseIPSloppy`` rejects or reads as IPv4):
k/k release-1.32 pkg/controller/endpointslicemirroring reconciler.go reconcile, utils.go getAddressType."""

from __future__ import annotations

from typing import Any

from kubeloop.controllers._endpointslice_mirror_desired import (
    address_type,
    desired_slices,
    has_selector,
    should_mirror,
    slice_annotations,
    slice_labels,
)


def endpoints(*subsets: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "ext", "namespace": "ns", **meta}, "subsets": list(subsets)}


def test_address_types_follow_parse_ip_sloppy() -> None:
    assert address_type("10.0.0.1") == "IPv4"
    assert address_type("010.000.000.001") == "IPv4"  # leading zeros: sloppy parsing accepts them
    assert address_type("::ffff:10.0.0.1") == "IPv4"  # IPv4-mapped: To4() is not nil
    assert address_type("fd00::1") == "IPv6"
    for invalid in ("", "10.0.0.256", "fe80::1%eth0", "example.com", "10.0.0"):
        assert address_type(invalid) is None, invalid


def test_invalid_addresses_are_counted_apart_from_truncated_ones() -> None:
    desired = desired_slices(endpoints({"addresses": [{"ip": "10.0.0.1"}, {"ip": "bogus"}, {"ip": "10.0.0.2"}],
                                        "notReadyAddresses": [{"ip": "10.0.0.3"}],
                                        "ports": [{"port": 80, "protocol": "TCP"}]}), max_per_subset=2)
    (only,) = desired.slices.values()
    # Ready first, by IP as text ("bogus" sorts after the digits): two valid ones fill the subset.
    assert [e["addresses"] for e in only.endpoints] == [["10.0.0.1"], ["10.0.0.2"]]
    assert only.ports == [{"name": "", "port": 80, "protocol": "TCP"}]
    assert (desired.invalid, desired.skipped) == (0, 2)  # the limit was reached before "bogus"

    desired = desired_slices(endpoints({"addresses": [{"ip": "bogus"}, {"ip": "10.0.0.1"}],
                                        "ports": [{"port": 80, "protocol": "TCP"}]}))
    assert (desired.invalid, desired.skipped) == (1, 1)
    assert [e["addresses"] for s in desired.slices.values() for e in s.endpoints] == [["10.0.0.1"]]


def test_the_limit_is_per_repacked_subset_across_address_types() -> None:
    desired = desired_slices(endpoints(
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "ports": [{"port": 80, "protocol": "TCP"}]},
        {"addresses": [{"ip": "10.0.0.2"}], "ports": [{"port": 81, "protocol": "TCP"}]}), max_per_subset=1)
    kept = sorted((s.address_type, s.ports[0]["port"], e["addresses"][0])
                  for s in desired.slices.values() for e in s.endpoints)
    assert kept == [("IPv4", 80, "10.0.0.1"), ("IPv4", 81, "10.0.0.2")]
    assert desired.skipped == 1


def test_subsets_with_the_same_addresses_merge_their_ports() -> None:
    desired = desired_slices(endpoints(
        {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "a", "port": 80, "protocol": "TCP"}]},
        {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "b", "port": 81, "protocol": "TCP"}]},
        {"addresses": [{"ip": "10.0.0.2"}]}))
    by_ports = {tuple(p["port"] for p in s.ports): [e["addresses"][0] for e in s.endpoints]
                for s in desired.slices.values()}
    assert by_ports == {(80, 81): ["10.0.0.1"], (): ["10.0.0.2"]}


def test_which_endpoints_are_mirrored_and_what_slices_carry() -> None:
    assert should_mirror(endpoints())
    assert not should_mirror(endpoints(labels={"endpointslice.kubernetes.io/skip-mirror": "true"}))
    assert should_mirror(endpoints(labels={"endpointslice.kubernetes.io/skip-mirror": "false"}))
    assert not should_mirror(endpoints(annotations={"control-plane.alpha.kubernetes.io/leader": ""}))
    assert not has_selector({"spec": {}}) and not has_selector({"spec": {"selector": {}}})
    assert has_selector({"spec": {"selector": {"app": "x"}, "type": "ExternalName"}})
    ep = endpoints(labels={"kubernetes.io/service-name": "other", "a": "b"},
                   annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "c": "d"})
    assert slice_labels(ep) == {"kubernetes.io/service-name": "ext", "a": "b",
                                "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}
    assert slice_annotations(ep) == {"c": "d"}
