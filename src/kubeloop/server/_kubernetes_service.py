"""The ``kubernetes`` Service in ``default``, and its Endpoints and EndpointSlice: how pods find the API.

Contract: :func:`ensure_kubernetes_service` creates, through the ordinary write path (defaults,
allocation, validation), what kube-apiserver's bootstrap controller keeps: Service ``kubernetes``
(labels ``component: apiserver``, ``provider: kubernetes``; port ``https`` 443 to the server's port;
cluster IP the first address of the service CIDR, ``10.96.0.1``), and, when the server's address can
be an endpoint, Endpoints ``kubernetes`` (label ``endpointslice.kubernetes.io/skip-mirror: "true"``)
and EndpointSlice ``kubernetes`` (label ``kubernetes.io/service-name: kubernetes``) naming that address.
Each is created only if it cannot be read, so a restart costs reads. A loopback address (the default
``127.0.0.1``) is no valid endpoint (``ValidateEndpoints`` refuses it): upstream's reconciler then fails
its write every time and there are no Endpoints; here none is attempted.

Sources (k/k release-1.32): ``pkg/controlplane/controller/kubernetesservice/controller.go``
(``CreateOrUpdateMasterServiceIfNeeded``), ``pkg/controlplane/reconcilers/endpointsadapter.go``
(the Endpoints' skip-mirror label, the slice built from them), ``pkg/controlplane/instance.go``
(the service IP is the range's first address).
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubeloop.api import ApiError, ResourceInfo
from kubeloop.api._service_validation import non_special_ip_errors, parse_ip
from kubeloop.server._rest import WriteRequest, create_object
from kubeloop.server._state import ServerState, object_key

__all__ = ["KUBERNETES_SERVICE_IP", "ensure_kubernetes_service"]

KUBERNETES_SERVICE_IP = "10.96.0.1"
_AGENT = "kube-apiserver/v1.32.0"


def _host_port(server_address: str) -> tuple[str, int]:
    host, _, port = server_address.rpartition(":")
    host = host.strip("[]")
    try:
        return host, int(port)
    except ValueError:
        return host, 6443


async def _ensure(state: ServerState, info: ResourceInfo | None, obj: dict[str, Any]) -> None:
    if info is None:
        return
    name = obj["metadata"]["name"]
    if await state.store.get(object_key(info, "default", name)) is not None:
        return
    with contextlib.suppress(ApiError):  # AlreadyExists (someone made it first), or default is gone
        await create_object(state, WriteRequest(info, "default", user_agent=_AGENT), obj)


async def ensure_kubernetes_service(state: ServerState, server_address: str) -> None:
    host, port = _host_port(server_address)
    kinds = state.kinds
    await _ensure(state, kinds.get("", "v1", "services"), {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP, "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    })
    if parse_ip(host) is None or non_special_ip_errors(host, "ip"):
        return
    family = "IPv6" if ":" in host else "IPv4"
    await _ensure(state, kinds.get("", "v1", "endpoints"), {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    })
    await _ensure(state, kinds.get("discovery.k8s.io", "v1", "endpointslices"), {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": family,
        "endpoints": [{"addresses": [host], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    })
