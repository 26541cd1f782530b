"""The ValidatingAdmissionPolicy status controller: ``status.observedGeneration`` and ``status.typeChecking``.

Upstream: k/k ``pkg/controller/validatingadmissionpolicystatus/controller.go`` (release-1.32),
kube-controller-manager's ``validatingadmissionpolicy-status-controller``:

- a policy whose ``metadata.generation`` is above its ``status.observedGeneration`` is type-checked and
  its status applied (server-side apply of the ``/status`` subresource, field manager
  ``validatingadmissionpolicy-status-controller``, forced): ``observedGeneration`` the generation seen,
  ``typeChecking.expressionWarnings`` the checker's warnings (``typeChecking: {}`` when there are none);
- a policy already observed at its generation is left alone, so the controller writes once per spec change.

Upstream's type checker compiles each expression against the OpenAPI schemas of the kinds the policy
matches and reports type errors as warnings. kubeloop's CEL engine has no type checker (see
:mod:`kubeloop.api._cel_admission`): every policy gets no warnings, which is what upstream reports for a
well-typed policy. Expressions that do not compile at all were refused when the policy was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import NotFound
from kubeloop.controllers._scheduler_resources import builtin
from kubeloop.runtime import Controller, EnqueueForObject, Manager, Request, Result, Watch

__all__ = ["POLICIES", "ValidatingAdmissionPolicyStatusController"]

POLICIES = builtin("admissionregistration.k8s.io", "validatingadmissionpolicies")
FIELD_MANAGER = "validatingadmissionpolicy-status-controller"


def _observed(policy: Mapping[str, Any]) -> bool:
    generation = (policy.get("metadata") or {}).get("generation") or 0
    observed = (policy.get("status") or {}).get("observedGeneration") or 0
    return isinstance(generation, int) and isinstance(observed, int) and generation <= observed


class ValidatingAdmissionPolicyStatusController:
    """Build it on a manager before it runs and add :attr:`controller` (``manager.add_controller``), as
    :func:`~kubeloop.controllers.add_builtin_controllers` does."""

    name = FIELD_MANAGER

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.policies = manager.informer(POLICIES)
        self.controller = Controller(self.name, self.reconcile, watches=[Watch(self.policies, EnqueueForObject())],
                                     clock=manager.clock, metrics=manager.metrics)  # fmt: skip

    async def reconcile(self, request: Request) -> Result | None:
        policy = self.policies.cache.get_by_name(request.name, "")
        if policy is None or _observed(policy):
            return None
        generation = (policy.get("metadata") or {}).get("generation")
        status = {"apiVersion": POLICIES.api_version, "kind": POLICIES.kind, "metadata": {"name": request.name},
                  "status": {"observedGeneration": generation, "typeChecking": {}}}
        try:
            await self.client.apply(POLICIES, status, field_manager=FIELD_MANAGER, force=True, subresource="status")
        except NotFound:
            pass
        return None
