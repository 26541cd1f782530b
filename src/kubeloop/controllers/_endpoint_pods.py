"""What the endpoints and endpointslice controllers share: which pods back a Service, and how.

Contract (pure functions on JSON dicts, no I/O):

- :func:`selected_pods`: the pods of the Service's namespace its selector matches (a Service without
  a selector, or of type ExternalName, selects none: such Services get no endpoints from controllers).
- :func:`should_be_in_endpoints`: ``ShouldPodBeInEndpoints``: not terminal (Succeeded/Failed), with a
  pod IP, and not being deleted unless terminating pods are included.
- :func:`pod_ip_for`: the pod's IP of the Service's first IP family (``podIPs``, else ``podIP``).
- :func:`find_port`: ``podutil.FindPort``: a number target port as is; a named one resolved from the
  pod's container ports (name and protocol), restartable init containers (sidecars) included.
- :func:`hostname_for`: the pod's ``hostname`` when its ``subdomain`` is the Service's name.

Sources (k/k release-1.32): ``pkg/controller/util/endpoint/controller_utils.go``,
``staging/src/k8s.io/endpointslice/util/controller_utils.go`` (``ShouldPodBeInEndpoints``),
``pkg/api/v1/pod/util.go`` (``FindPort``), ``pkg/controller/endpoint/endpoints_controller.go``
(``podToEndpointAddressForService``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.controllers._workload_pods import is_pod_ready

__all__ = [
    "HEADLESS_LABEL",
    "find_port",
    "hostname_for",
    "is_headless",
    "is_pod_ready",
    "pod_ip_for",
    "selected_pods",
    "selects",
    "service_selector",
    "should_be_in_endpoints",
]

HEADLESS_LABEL = "service.kubernetes.io/headless"  # v1.IsHeadlessService


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def service_selector(service: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The selector pods are chosen by, or ``None`` when this controller gives the Service no endpoints."""
    spec = _spec(service)
    if spec.get("type") == "ExternalName":
        return None
    selector = spec.get("selector")
    return selector if isinstance(selector, Mapping) and selector else None


def selects(selector: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    labels = _meta(pod).get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    return all(labels.get(key) == value for key, value in selector.items())


def selected_pods(service: Mapping[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    selector = service_selector(service)
    if selector is None:
        return []
    return [pod for pod in pods if selects(selector, pod)]


def should_be_in_endpoints(pod: Mapping[str, Any], *, include_terminating: bool) -> bool:
    status = pod.get("status") if isinstance(pod.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not _meta(pod).get("deletionTimestamp")


def _family(service: Mapping[str, Any]) -> str:
    spec = _spec(service)
    families = spec.get("ipFamilies")
    if isinstance(families, list) and families:
        return str(families[0])
    cluster_ip = str(spec.get("clusterIP") or "")
    return "IPv6" if cluster_ip not in ("", "None") and ":" in cluster_ip else "IPv4"


def pod_ip_for(service: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    status = pod.get("status") if isinstance(pod.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    ips = [str(p.get("ip") or "") for p in status.get("podIPs") or [] if isinstance(p, Mapping)]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    want_v6 = _family(service) == "IPv6"
    return next((ip for ip in ips if ip and (":" in ip) == want_v6), None)


def find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    target = service_port.get("targetPort")
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if not isinstance(target, str):
        return None
    protocol = service_port.get("protocol") or "TCP"
    spec = _spec(pod)
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    containers += [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"]
    for container in containers:
        for port in container.get("ports") or []:
            if isinstance(port, Mapping) and port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                number = port.get("containerPort")
                return number if isinstance(number, int) else None
    return None


def hostname_for(service: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    """ShouldSetHostname."""
    spec = _spec(pod)
    hostname = spec.get("hostname")
    if hostname and spec.get("subdomain") == _meta(service).get("name") \
            and _meta(service).get("namespace") == _meta(pod).get("namespace"):
        return str(hostname)
    return None


def is_headless(service: Mapping[str, Any]) -> bool:
    """``!helper.IsServiceIPSet``: no cluster IP, or ``None``."""
    return str(_spec(service).get("clusterIP") or "") in ("", "None")
