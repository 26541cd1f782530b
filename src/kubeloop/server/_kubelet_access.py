"""How the API server finds a pod's container and reaches its node's kubelet, for the kubelet-facing
subresources (``pods/log``, ``exec``, ``attach``, ``portforward``) and ``nodes/proxy``.

Upstream 1.32's steps (``pkg/registry/core/pod/strategy.go`` ``LogLocation``/``streamLocation``/
``PortForwardLocation``, ``pkg/kubelet/client`` ``NodeConnectionInfoGetter.GetConnectionInfo``):

1. :func:`read_pod`: the pod, or 404 ``pods "p" not found``.
2. :func:`validate_container` (``validateContainer``): no container named and exactly one in
   ``spec.containers``: that one; none there: 400 ``a container name must be specified for pod p``;
   several: 400 ``a container name must be specified for pod p, choose one of: [i c1 c2 e]`` (every
   container as ``podutil.VisitContainers`` visits them: init, regular, ephemeral, printed as Go prints a
   ``[]string``). A named container that is in none of the three lists: 400 ``container x is not valid for
   pod p``. The default-container annotation (``kubectl.kubernetes.io/default-container``) is kubectl's
   business (``polymorphichelpers.logsForObjectWithClient``): the server never reads it.
3. :func:`kubelet_of`: the pod's node (404 ``nodes "n" not found``), its address and kubelet port
   (``status.daemonEndpoints.kubeletEndpoint.Port``, else 10250). The address is the first of InternalIP,
   Hostname, ExternalIP (kubeadm's ``--kubelet-preferred-address-types``); a node with none is upstream's
   500 ``no preferred addresses found; known addresses: [...]``.

kubeloop's kubelets are simulated: a node annotated ``kubeloop.dev/simulated: "true"`` has one (the
annotation :mod:`kubeloop.controllers` manages nodes by; the server cannot import it), unless its fault
annotation is ``kubeloop.dev/fault: kubelet-stopped``. With no kubelet there, the server answers what
upstream's answers when the dial fails: a 500 without a reason whose message is the dial error
(``connect: connection refused``), worded as each caller's transport words it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from kubeloop.api import UNKNOWN_REASON, ApiError, BadRequest, InternalError, MethodNotAllowed, ResourceInfo
from kubeloop.server._rest import get_object
from kubeloop.server._state import ServerState

__all__ = [
    "FAULT_ANNOTATION",
    "KUBELET_STOPPED",
    "SIMULATED_ANNOTATION",
    "Kubelet",
    "container_names",
    "kubelet_of",
    "method_not_allowed",
    "read_pod",
    "resource",
    "validate_container",
]

SIMULATED_ANNOTATION = "kubeloop.dev/simulated"  # kubeloop.controllers._nodes: the node has a kubelet
FAULT_ANNOTATION = "kubeloop.dev/fault"
KUBELET_STOPPED = "kubelet-stopped"
_ADDRESS_TYPES = ("InternalIP", "Hostname", "ExternalIP")
_DEFAULT_KUBELET_PORT = 10250


def method_not_allowed() -> MethodNotAllowed:
    """go-restful's 405 for a method the subresource has no route for (as :mod:`._handlers` answers it)."""
    return MethodNotAllowed("the server does not allow this method on the requested resource",
                            details={"causes": [{"reason": "UnexpectedServerResponse",
                                                 "message": "405: Method Not Allowed"}]})


def resource(state: ServerState, group: str, plural: str) -> ResourceInfo:
    info = state.kinds.get(group, "v1", plural)
    if info is None:
        raise InternalError(f"the {plural} resource is not served")
    return info


async def read_pod(state: ServerState, namespace: str, name: str) -> dict[str, Any]:
    kv = await get_object(state, resource(state, "", "pods"), namespace, name)
    pod: dict[str, Any] = orjson.loads(kv.value)
    return pod


def container_names(spec: dict[str, Any]) -> list[str]:
    """Every container name in ``podutil.VisitContainers`` order: init, regular, ephemeral."""
    return [str(c.get("name") or "") for key in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(key) or () if isinstance(c, dict)]


def validate_container(pod: dict[str, Any], container: str) -> str:
    """The container a request is for (see the module docstring, step 2)."""
    spec = pod.get("spec") or {}
    name = (pod.get("metadata") or {}).get("name", "")
    if not container:
        containers = spec.get("containers") or []
        if len(containers) == 1:
            return str(containers[0].get("name") or "")
        if not containers:
            raise BadRequest(f"a container name must be specified for pod {name}")
        choices = " ".join(container_names(spec))
        raise BadRequest(f"a container name must be specified for pod {name}, choose one of: [{choices}]")
    if container not in container_names(spec):
        raise BadRequest(f"container {container} is not valid for pod {name}")
    return container


@dataclasses.dataclass(frozen=True, slots=True)
class Kubelet:
    """A node's kubelet as the API server dials it: ``host:port``, and whether anything answers there."""

    node: dict[str, Any]
    host: str
    port: int
    answers: bool

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"https://{self.address}{path}"

    def dial_error(self, message: str) -> ApiError:
        """A 500 with no reason (``ErrorToAPIStatus`` of a transport error): ``message`` with ``{dial}``
        replaced by the dial error."""
        dial = f"dial tcp {self.address}: connect: connection refused"
        return InternalError(message.format(dial=dial), reason=UNKNOWN_REASON)


def _preferred_address(node: dict[str, Any]) -> str:
    addresses = [a for a in (node.get("status") or {}).get("addresses") or () if isinstance(a, dict)]
    for kind in _ADDRESS_TYPES:
        for address in addresses:
            if address.get("type") == kind and address.get("address"):
                return str(address["address"])
    # Go's %v of []NodeAddress: [{InternalIP 10.0.0.1} {Hostname n1}]
    known = " ".join("{" + f'{a.get("type", "")} {a.get("address", "")}' + "}" for a in addresses)
    raise InternalError(f"no preferred addresses found; known addresses: [{known}]", reason=UNKNOWN_REASON)


async def kubelet_of(state: ServerState, node_name: str) -> Kubelet:
    """The kubelet of node ``node_name`` (see the module docstring, step 3)."""
    kv = await get_object(state, resource(state, "", "nodes"), "", node_name)
    node: dict[str, Any] = orjson.loads(kv.value)
    host = _preferred_address(node)
    endpoint = ((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    port = endpoint.get("Port")
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    answers = annotations.get(SIMULATED_ANNOTATION) == "true" and annotations.get(FAULT_ANNOTATION) != KUBELET_STOPPED
    return Kubelet(node, host, port if isinstance(port, int) and port > 0 else _DEFAULT_KUBELET_PORT, answers)
