"""Table cells of the ``networking.k8s.io/v1`` kinds, as k/k ``pkg/printers/internalversion/printers.go`` (1.32)
prints them: ``printIngress``, ``printIngressClass``, ``printNetworkPolicy``.

The server renders with ``GenerateOptions{Wide: true}`` (apiserver ``tableconvertor``), so an Ingress's
ADDRESS is never clipped to 16 bytes here (that clipping is for kubectl's own printing without wide).
Each function takes the object and the current time (seconds) and returns the row's cells.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ingress_cells", "ingress_class_cells", "network_policy_cells"]

Obj = dict[str, Any]
_MAX_HOSTS = 3


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _hosts(rules: list[Any]) -> str:
    """formatHosts: up to three rule hosts, then ``+ N more...`` (N counts the rules past the third)."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == _MAX_HOSTS:
            more = True
        host = _dict(rule).get("host")
        if not more and isinstance(host, str) and host:
            hosts.append(host)
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - _MAX_HOSTS} more..." if more else text


def _address(status: Obj) -> str:
    """ingressLoadBalancerStatusStringer: each point's IP, else its hostname, sorted and unique."""
    found: set[str] = set()
    for point in _list(_dict(status.get("loadBalancer")).get("ingress")):
        point = _dict(point)
        value = point.get("ip") or point.get("hostname")
        if isinstance(value, str) and value:
            found.add(value)
    return ",".join(sorted(found))


def ingress_cells(name: Callable[[Obj], str], age: Callable[[Obj, float], str]) -> Callable[[Obj, float], list[Any]]:
    """printIngress: Name, Class (``<none>`` unset), Hosts, Address, Ports (``80, 443`` with TLS), Age."""
    def cells(ing: Obj, now: float) -> list[Any]:
        spec = _dict(ing.get("spec"))
        class_name = spec.get("ingressClassName")
        return [name(ing), class_name if isinstance(class_name, str) else "<none>", _hosts(_list(spec.get("rules"))),
                _address(_dict(ing.get("status"))), "80, 443" if _list(spec.get("tls")) else "80", age(ing, now)]
    return cells


def ingress_class_cells(name: Callable[[Obj], str],
                        age: Callable[[Obj, float], str]) -> Callable[[Obj, float], list[Any]]:
    """printIngressClass: Name, Controller, Parameters (``Kind[.apiGroup]/name``, ``<none>`` unset), Age."""
    def cells(ic: Obj, now: float) -> list[Any]:
        spec = _dict(ic.get("spec"))
        params = spec.get("parameters")
        shown = "<none>"
        if isinstance(params, dict):
            shown = str(params.get("kind") or "")
            if isinstance(params.get("apiGroup"), str):
                shown += "." + params["apiGroup"]
            shown += "/" + str(params.get("name") or "")
        return [name(ic), str(spec.get("controller") or ""), shown, age(ic, now)]
    return cells


def network_policy_cells(name: Callable[[Obj], str], age: Callable[[Obj, float], str],
                         selector: Callable[[Any], str]) -> Callable[[Obj, float], list[Any]]:
    """printNetworkPolicy: Name, Pod-Selector (``metav1.FormatLabelSelector``: ``<none>`` when empty), Age."""
    def cells(np: Obj, now: float) -> list[Any]:
        return [name(np), selector(_dict(np.get("spec")).get("podSelector") or {}), age(np, now)]
    return cells
