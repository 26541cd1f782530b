"""kubectl against ``kubeloop up``: a Service without a selector and a hand-written Endpoints give mirrored
EndpointSlices (k/k release-1.32 pkg/controller/endpointslicemirroring, on by default in
kube-controller-manager), listed by ``kubectl get endpointslices -l kubernetes.io/service-name=...``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow


def _until(check: Any, what: str, tries: int = 300) -> Any:
    for _ in range(tries):
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


def test_kubectl_lists_the_slices_mirrored_from_hand_written_endpoints(kubectl: Any, namespace: str,
                                                                         tmp_path: Path) -> None:
    manifest = tmp_path / "external.yaml"
    manifest.write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "external-db"},
         "spec": {"ports": [{"name": "pg", "port": 5432}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "external-db", "labels": {"tier": "db"}},
         "subsets": [{"addresses": [{"ip": "192.0.2.10"}, {"ip": "192.0.2.11"}],
                      "notReadyAddresses": [{"ip": "192.0.2.12"}],
                      "ports": [{"name": "pg", "port": 5432}]}]},
    ]))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    selector = "kubernetes.io/service-name=external-db"

    def listed() -> list[str] | None:
        lines = kubectl("get", "endpointslices", "-n", namespace, "-l", selector).stdout.splitlines()
        return lines if len(lines) == 2 else None

    lines = _until(listed, "one mirrored EndpointSlice")
    assert lines[0].split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    name, address_type, ports, shown = lines[1].split()[:4]
    assert name.startswith("external-db-") and (address_type, ports) == ("IPv4", "5432")
    assert sorted(shown.split(",")) == ["192.0.2.10", "192.0.2.11", "192.0.2.12"]

    (es,) = json.loads(kubectl("get", "endpointslices", "-n", namespace, "-l", selector, "-o", "json").stdout)["items"]
    assert es["metadata"]["labels"] == {"tier": "db", "kubernetes.io/service-name": "external-db",
                                        "endpointslice.kubernetes.io/managed-by":
                                            "endpointslicemirroring-controller.k8s.io"}
    assert "annotations" not in es["metadata"]  # kubectl's last-applied-configuration is not mirrored
    (owner,) = es["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Endpoints", "external-db", True)
    ready = {e["addresses"][0]: e["conditions"]["ready"] for e in es["endpoints"]}
    assert ready == {"192.0.2.10": True, "192.0.2.11": True, "192.0.2.12": False}

    kubectl("label", "endpoints", "external-db", "-n", namespace, "endpointslice.kubernetes.io/skip-mirror=true")
    _until(lambda: kubectl("get", "endpointslices", "-n", namespace, "-l", selector, "-o", "name").stdout.strip() == "",
           "the mirrored slice deleted once the Endpoints says skip-mirror")
