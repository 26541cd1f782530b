"""The ReplicationManager: the ReplicaSet controller run on core/v1 ReplicationControllers.

Upstream (k/k ``pkg/controller/replication/replication_controller.go`` and ``conversion.go``) builds the
ReplicaSet controller (``replicaset.NewBaseController``) on adapters that convert each
ReplicationController to a ReplicaSet and back, with the kind ``v1 ReplicationController``, the queue
``replicationmanager`` and Events from component ``replication-controller``. Here the same controller
(:class:`._replicaset.ReplicaSetController`) is reused with the three things that differ:

- the resource read, claimed for, and whose ``/status`` is written (``replicationcontrollers``), and the
  kind a pod's controller reference must name (``ReplicationController``, ``apiVersion: v1``);
- the selector: an RC's ``spec.selector`` is a label map, which the conversion turns into a LabelSelector
  with those ``matchLabels`` (``Convert_v1_ReplicationControllerSpec_To_apps_ReplicaSetSpec``);
- the Events' source component and subject kind.

Everything else is the ReplicaSet controller's: slow-start creates with ``generateName: <rc>-`` and a
controller reference with ``blockOwnerDeletion``, adoption and release, expectations, the deletion
ranking, ``SuccessfulCreate``/``SuccessfulDelete`` Events, and the status (``replicas``,
``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas``, ``observedGeneration`` and the
``ReplicaFailure`` condition; an RC's status has the same fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api import LabelSelector, label_selector_from_dict
from kubeloop.controllers._replicaset import ReplicaSetController
from kubeloop.controllers._workload_kinds import REPLICATIONCONTROLLERS

__all__ = ["ReplicationManager"]


class ReplicationManager(ReplicaSetController):
    """Reconciles ReplicationControllers (kube-controller-manager's ``replicationcontroller``)."""

    name = "replicationcontroller"
    component = "replication-controller"
    kind = "ReplicationController"
    api_version = "v1"
    resource = REPLICATIONCONTROLLERS

    @staticmethod
    def selector_of(owner: Mapping[str, Any]) -> LabelSelector:
        """An RC's label map as the LabelSelector its ReplicaSet conversion has (``matchLabels``); an empty
        map selects nothing here, as validation never lets one be stored."""
        selector = (owner.get("spec") or {}).get("selector")
        if not isinstance(selector, dict) or not selector:
            return label_selector_from_dict(None)
        return label_selector_from_dict({"matchLabels": selector})
