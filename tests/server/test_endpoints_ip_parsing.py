"""Endpoints and EndpointSlice addresses are parsed as Kubernetes 1.32 parses them: ``netutils.ParseIPSloppy``.

Upstream (release 1.32): ``pkg/apis/core/validation/validation.go`` ``validateEndpointAddress`` (apimachinery
``validation.IsValidIP`` and core ``ValidateNonSpecialIP``, both with ``ParseIPSloppy``) and
``pkg/apis/discovery/validation`` (``IsValidIPv4Address`` / ``IsValidIPv6Address``, ``ParseIPSloppy`` too):
IPv4 octets with leading zeros are accepted and read as decimal (CVE-2021-29923, kubernetes#104368), an
IPv6 zone is not. The Endpoints strategy of 1.32 returns no warnings (``endpointsWarnings`` came later).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from kubeloop.server import App

from ._uvicorn import Kubectl, serve, write_kubeconfig
from .test_service_validation import ENDPOINTS, SLICES, causes

IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def endpoints(name: str, *ips: str, not_ready: tuple[str, ...] = ()) -> dict[str, object]:
    subset: dict[str, object] = {"ports": [{"port": 80}]}
    if ips:
        subset["addresses"] = [{"ip": ip} for ip in ips]
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name}, "subsets": [subset]}


async def test_leading_zeros_are_a_valid_endpoints_address_kept_as_written_without_a_warning(
        client: httpx.AsyncClient) -> None:
    r = await client.post(ENDPOINTS, json=endpoints("zeros", "010.0.0.1", "10.000.0.2", not_ready=("0010.1.1.1",)))
    assert r.status_code == 201, r.text
    assert "warning" not in r.headers
    subset = r.json()["subsets"][0]
    assert [a["ip"] for a in subset["addresses"]] == ["010.0.0.1", "10.000.0.2"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["0010.1.1.1"]


async def test_leading_zeros_are_read_as_decimal_by_the_special_address_checks(client: httpx.AsyncClient) -> None:
    # 0127.0.0.1 is 127.0.0.1 (decimal), not 87.0.0.1 (octal): a loopback address, refused.
    assert await causes(client, ENDPOINTS, endpoints("loop", "0127.0.0.1", "000.0.0.0", "169.254.01.1")) == [
        ("FieldValueInvalid", "subsets[0].addresses[0].ip",
         'Invalid value: "0127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)'),
        ("FieldValueInvalid", "subsets[0].addresses[1].ip", 'Invalid value: "000.0.0.0": may not be unspecified (0.0.0.0, ::)'),
        ("FieldValueInvalid", "subsets[0].addresses[2].ip",
         'Invalid value: "169.254.01.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)'),
    ]


async def test_what_sloppy_parsing_still_refuses(client: httpx.AsyncClient) -> None:
    bad = ("10.0.0.256", "2001:db8::1%eth0", "10.0.0", "10.0.0.1.2", "0x0a.0.0.1")
    assert await causes(client, ENDPOINTS, endpoints("bad", *bad)) == [
        ("FieldValueInvalid", f"subsets[0].addresses[{i}].ip", f'Invalid value: "{ip}": {IP_MESSAGE}')
        for i, ip in enumerate(bad)
    ]


async def test_slices_take_leading_zeros_by_address_type(client: httpx.AsyncClient) -> None:
    body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "zeros"},
            "addressType": "IPv4", "endpoints": [{"addresses": ["010.0.0.1"]}, {"addresses": ["::ffff:010.0.0.2"]}]}
    made = await client.post(SLICES, json=body)
    assert made.status_code == 201, made.text
    assert [e["addresses"] for e in made.json()["endpoints"]] == [["010.0.0.1"], ["::ffff:010.0.0.2"]]
    v6 = {**body, "metadata": {"name": "six"}, "addressType": "IPv6",
          "endpoints": [{"addresses": ["010.0.0.1"]}, {"addresses": ["2001:db8::1%eth0"]}]}
    assert await causes(client, SLICES, v6) == [
        ("FieldValueInvalid", "endpoints[0].addresses[0]", 'Invalid value: "010.0.0.1": must be a valid IPv6 address'),
        ("FieldValueInvalid", "endpoints[1].addresses[0]",
         'Invalid value: "2001:db8::1%eth0": must be a valid IPv6 address'),
    ]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
async def test_kubectl_applies_endpoints_with_leading_zeros_and_gets_no_warning(
        app: App, client: httpx.AsyncClient, tmp_path: Path) -> None:
    manifest = tmp_path / "ep.json"
    manifest.write_text(json.dumps(endpoints("legacy", "010.0.0.1")))
    async with serve(app) as url:
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, url)
        _, out, err = await Kubectl(kubeconfig).run("apply", "-f", str(manifest))
    assert out.strip() == "endpoints/legacy created" and "Warning" not in err, err
    stored = (await client.get(f"{ENDPOINTS}/legacy")).json()
    assert stored["subsets"][0]["addresses"] == [{"ip": "010.0.0.1"}]
