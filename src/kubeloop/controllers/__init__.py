"""kubeloop.controllers: the built-in controllers, reaching the API only through ``kubeloop.client``.

:class:`GarbageCollector` (ownerReferences, Background/Foreground/Orphan propagation),
:class:`NamespaceController` (namespace deletion), :class:`ClusterRoleAggregationController` (ClusterRole
``aggregationRule``), :class:`ResourceQuotaController` (ResourceQuota status), :class:`ServiceAccountsController` (each namespace's
``default`` ServiceAccount), :class:`RootCACertPublisher` (each namespace's ``kube-root-ca.crt``), and the registry the controller manager uses to
start them: :data:`BUILTIN_CONTROLLERS` and :func:`add_builtin_controllers`.
"""

from kubeloop.controllers._admission_policy_status import ValidatingAdmissionPolicyStatusController
from kubeloop.controllers._clusterrole_aggregation import ClusterRoleAggregationController
from kubeloop.controllers._cronjob import CronJobController
from kubeloop.controllers._daemonset import DaemonSetController
from kubeloop.controllers._deployment import DeploymentController
from kubeloop.controllers._endpoints import EndpointsController
from kubeloop.controllers._endpointslice import EndpointSliceController
from kubeloop.controllers._endpointslice_mirroring import EndpointSliceMirroringController
from kubeloop.controllers._gc import GarbageCollector
from kubeloop.controllers._job import JobController
from kubeloop.controllers._kubelet import KubeletSimulator
from kubeloop.controllers._namespace import NamespaceController
from kubeloop.controllers._node_lifecycle import NodeLifecycleController
from kubeloop.controllers._nodes import NodeSimulator, SimulationOptions
from kubeloop.controllers._nodes_registry import SimulatedCluster, add_simulated_cluster
from kubeloop.controllers._pdb import DisruptionController
from kubeloop.controllers._pod_gc import PodGarbageCollector
from kubeloop.controllers._registry import (
    BUILTIN_CONTROLLERS,
    ControllerFactory,
    add_builtin_controllers,
    has_synced,
    register_builtin,
)
from kubeloop.controllers._replicaset import ReplicaSetController
from kubeloop.controllers._replication_manager import ReplicationManager
from kubeloop.controllers._resource_quota import ResourceQuotaController
from kubeloop.controllers._root_ca_publisher import RootCACertPublisher
from kubeloop.controllers._scheduler import Scheduler
from kubeloop.controllers._service_accounts import ServiceAccountsController
from kubeloop.controllers._service_registry import register_service_controllers
from kubeloop.controllers._statefulset import StatefulSetController
from kubeloop.controllers._taint_eviction_controller import TaintEvictionController
from kubeloop.controllers._ttl_after_finished import TTLAfterFinishedController
from kubeloop.controllers._volume import PersistentVolumeController
from kubeloop.controllers._volume_protection import VolumeProtectionController
from kubeloop.controllers._workload_registry import register_workload_controllers

__all__ = [
    "BUILTIN_CONTROLLERS",
    "ClusterRoleAggregationController",
    "ControllerFactory",
    "CronJobController",
    "DaemonSetController",
    "DeploymentController",
    "DisruptionController",
    "EndpointSliceController",
    "EndpointSliceMirroringController",
    "EndpointsController",
    "GarbageCollector",
    "JobController",
    "KubeletSimulator",
    "NamespaceController",
    "NodeLifecycleController",
    "NodeSimulator",
    "PersistentVolumeController",
    "PodGarbageCollector",
    "ReplicaSetController",
    "ReplicationManager",
    "ResourceQuotaController",
    "RootCACertPublisher",
    "Scheduler",
    "ServiceAccountsController",
    "SimulatedCluster",
    "SimulationOptions",
    "StatefulSetController",
    "TTLAfterFinishedController",
    "TaintEvictionController",
    "ValidatingAdmissionPolicyStatusController",
    "VolumeProtectionController",
    "add_builtin_controllers",
    "add_simulated_cluster",
    "has_synced",
    "register_builtin",
    "register_service_controllers",
    "register_workload_controllers",
]
