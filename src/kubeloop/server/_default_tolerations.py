"""DefaultTolerationSeconds: every pod tolerates a not-ready or unreachable node for 300 s.

Upstream's mutating admission plugin (``plugin/pkg/admission/defaulttolerationseconds``, enabled by
default in kube-apiserver): on CREATE and UPDATE of a pod (not of its subresources), a pod that has
no toleration for ``node.kubernetes.io/not-ready:NoExecute`` gets
``{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}``
appended, and likewise for ``node.kubernetes.io/unreachable``. A toleration counts when its key is
the taint's or empty (every key) and its effect is NoExecute or empty (every effect); its operator
and value are not looked at, as upstream does not. Running on UPDATE too is what keeps a PUT of a
manifest without the defaults from dropping them.

This is what decides how long pods stay on a node whose kubelet stopped: the taint-based eviction
(the simulated kubelet's part, :mod:`kubeloop.controllers`) deletes them once these run out.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.server._admission import AdmissionAttributes, MutatingPlugin, Operation

__all__ = ["DEFAULT_TOLERATION_SECONDS", "DefaultTolerationSeconds"]

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
# --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds (kube-apiserver).
DEFAULT_TOLERATION_SECONDS = 300


def _tolerates(tolerations: list[Any], key: str) -> bool:
    for toleration in tolerations:
        if not isinstance(toleration, dict):
            continue
        if toleration.get("key") in (None, "", key) and toleration.get("effect") in (None, "", "NoExecute"):
            return True
    return False


def _with_defaults(tolerations: list[Any], seconds: dict[str, int]) -> list[Any]:
    missing = [key for key in (NOT_READY, UNREACHABLE) if not _tolerates(tolerations, key)]
    if not missing:
        return tolerations
    return [*tolerations, *({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds[key]}
                            for key in missing)]


def _admitted(spec: dict[str, Any], seconds: dict[str, int]) -> list[Any] | None:
    """The tolerations the plugin gives a pod with ``spec``, or None when it changes nothing."""
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    admitted = _with_defaults(tolerations, seconds)
    return None if admitted is tolerations else admitted


class DefaultTolerationSeconds(MutatingPlugin):
    """Appends the 300 s not-ready and unreachable NoExecute tolerations a pod lacks (a mutating plugin:
    what it adds is validated with the rest of the pod)."""

    def __init__(self, *, not_ready_seconds: int = DEFAULT_TOLERATION_SECONDS,
                 unreachable_seconds: int = DEFAULT_TOLERATION_SECONDS) -> None:
        self.seconds = {NOT_READY: not_ready_seconds, UNREACHABLE: unreachable_seconds}

    def handles(self, operation: Operation, resource: ResourceInfo) -> bool:
        return operation in ("CREATE", "UPDATE") and resource.group == "" and resource.plural == "pods"

    def mutate(
        self, attributes: AdmissionAttributes, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        if attributes.subresource or obj is None or not self.handles(attributes.operation, attributes.resource):
            return None
        spec = obj.get("spec")
        if isinstance(spec, dict) and (admitted := _admitted(spec, self.seconds)) is not None:
            spec["tolerations"] = admitted
        return None
