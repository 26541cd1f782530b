"""The connect subresources a simulated kubelet cannot serve: ``pods/exec``, ``pods/attach``,
``pods/portforward``, and the proxies ``pods/proxy``, ``services/proxy``, ``nodes/proxy``.

Upstream 1.32 proxies each to a process (``pkg/registry/core/pod/rest/subresources.go``, ``service/proxy.go``,
``node/rest/proxy.go``): the kubelet's streaming server, or whatever listens on the pod's IP. kubeloop's
containers run no process, so nothing can answer. Every check upstream makes before it dials is kept, with
upstream's answer; the last step, where upstream would reach the process, is a clear Status saying why
there is nothing to reach (never a 404, which would read as an API kubeloop does not serve). Before any of
it, upstream's connect handler refuses a dry run and admits the request with operation ``CONNECT``
(:mod:`._connect_admission`):

- ``exec``, ``attach`` (GET, the WebSocket upgrade kubectl 1.32 tries first, and POST, its SPDY
  fallback): the pod (404), the container (``validateContainer``, 400), a node (400 ``pod P does not have
  a host assigned``), the node (404), its kubelet (none: upstream's 500 ``error dialing backend: dial tcp
  ...``); then 400 BadRequest: the simulated kubelet runs no process. ``kubectl exec`` prints it as
  ``Error from server (BadRequest): ...``.
- ``portforward`` (GET, POST): the same without the container step.
- ``pods/proxy`` (every method; ``NAME``, ``NAME:PORT`` or ``SCHEME:NAME:PORT``, then any path): a name
  that does not split is 400 ``invalid pod request "x"``; the pod (404); a pod whose IP is not a global
  unicast address is 400 ``address not allowed`` (``ResourceLocation``); then 503 ServiceUnavailable
  ``error trying to reach service: ...``, what upstream answers when nothing listens.
- ``services/proxy``: the service (404), then the 503. ``nodes/proxy``: the node (404), a kubelet that
  does not answer (503 with the dial error), then the 503: the simulated kubelet serves no HTTP endpoints.
"""

from __future__ import annotations

import ipaddress

from kubeloop.api import ApiError, BadRequest, ResourceInfo, ServiceUnavailable
from kubeloop.server._connect_admission import admit_connect
from kubeloop.server._http import Request, Send
from kubeloop.server._kubelet_access import (
    kubelet_of,
    method_not_allowed,
    read_pod,
    resource,
    validate_container,
)
from kubeloop.server._rest import get_object
from kubeloop.server._state import ServerState

__all__ = ["CONNECT_SUBRESOURCES", "serve_connect"]

# What each (resource, subresource) serves: its methods; every other method is go-restful's 405.
_STREAM_METHODS = ("GET", "POST")
_PROXY_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
CONNECT_SUBRESOURCES: dict[tuple[str, str], tuple[str, ...]] = {
    ("pods", "exec"): _STREAM_METHODS,
    ("pods", "attach"): _STREAM_METHODS,
    ("pods", "portforward"): _STREAM_METHODS,
    ("pods", "proxy"): _PROXY_METHODS,
    ("services", "proxy"): _PROXY_METHODS,
    ("nodes", "proxy"): _PROXY_METHODS,
}
_NO_PROCESS = "simulated containers run no process"
_VALID_SCHEMES = ("", "http", "https")


def _split_scheme_name_port(id_: str, kind: str) -> tuple[str, str, str]:
    """apimachinery ``SplitSchemeNamePort``: ``name``, ``name:port`` or ``scheme:name:port``; anything else
    is 400 ``invalid <kind> request "id"`` (each registry's ``ResourceLocation``)."""
    parts = id_.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        raise BadRequest(f'invalid {kind} request "{id_}"')
    if not name or scheme not in _VALID_SCHEMES:
        raise BadRequest(f'invalid {kind} request "{id_}"')
    return scheme, name, port


def _global_unicast(ip: str) -> bool:
    """Go's ``net.IP.IsGlobalUnicast``: not unspecified, loopback, multicast, link-local or broadcast."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    if address.version == 4 and str(address) == "255.255.255.255":
        return False
    return not (address.is_unspecified or address.is_loopback or address.is_multicast or address.is_link_local)


async def _stream(state: ServerState, namespace: str, name: str, sub: str, container: str) -> BadRequest:
    pod = await read_pod(state, namespace, name)
    if sub != "portforward":
        container = validate_container(pod, container)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        raise BadRequest(f"pod {name} does not have a host assigned")
    kubelet = await kubelet_of(state, node_name)
    if not kubelet.answers:
        raise kubelet.dial_error("error dialing backend: {dial}")
    if sub == "portforward":
        return BadRequest(f'kubeloop\'s simulated kubelet cannot forward ports of pod "{name}": {_NO_PROCESS}')
    doing = "exec in" if sub == "exec" else "attach to"
    return BadRequest(f'kubeloop\'s simulated kubelet cannot {doing} container "{container}" of pod "{name}": '
                      f"{_NO_PROCESS}")


async def _pod_proxy(state: ServerState, namespace: str, id_: str) -> ServiceUnavailable:
    _, name, port = _split_scheme_name_port(id_, "pod")
    pod = await read_pod(state, namespace, name)
    ips = (pod.get("status") or {}).get("podIPs") or []
    ip = str(ips[0].get("ip") or "") if ips and isinstance(ips[0], dict) else ""
    if not _global_unicast(ip):
        raise BadRequest("address not allowed")
    if not port:
        port = next((str(p.get("containerPort")) for c in (pod.get("spec") or {}).get("containers") or ()
                     for p in c.get("ports") or () if p.get("containerPort")), "")
    target = f"{ip}:{port}" if port else ip
    return ServiceUnavailable(f'error trying to reach service: nothing listens on {target} (pod "{name}"): '
                              f"kubeloop's {_NO_PROCESS}")


async def _service_proxy(state: ServerState, namespace: str, id_: str) -> ServiceUnavailable:
    _, name, _ = _split_scheme_name_port(id_, "service")
    await get_object(state, resource(state, "", "services"), namespace, name)
    return ServiceUnavailable(f'error trying to reach service: nothing listens behind service "{name}": '
                              f"kubeloop's {_NO_PROCESS}")


async def _node_proxy(state: ServerState, id_: str) -> ServiceUnavailable:
    _, name, _ = _split_scheme_name_port(id_, "node")
    kubelet = await kubelet_of(state, name)
    if not kubelet.answers:
        return ServiceUnavailable(f"error trying to reach service: dial tcp {kubelet.address}: connect: "
                                  "connection refused")
    return ServiceUnavailable(f'error trying to reach service: kubeloop\'s simulated kubelet on node "{name}" '
                              "serves no HTTP endpoints")


async def serve_connect(state: ServerState, info: ResourceInfo, request: Request, namespace: str, name: str,
                        sub: str, send: Send) -> None:
    """Answer a connect subresource request (see the module docstring); it always ends in an ApiError."""
    methods = CONNECT_SUBRESOURCES.get((info.plural, sub))
    if methods is None or request.method not in methods:
        raise method_not_allowed()
    await admit_connect(state, info, request, namespace, name, sub)  # upstream's ConnectResource, first
    error: ApiError
    if sub in ("exec", "attach", "portforward"):
        error = await _stream(state, namespace, name, sub, request.param("container") or "")
    elif info.plural == "pods":
        error = await _pod_proxy(state, namespace, name)
    elif info.plural == "services":
        error = await _service_proxy(state, namespace, name)
    else:
        error = await _node_proxy(state, name)
    raise error

