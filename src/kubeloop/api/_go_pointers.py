"""The optional scalar fields of the served built-in kinds that are Go pointers, by struct (k8s.io/api 1.32).

A built-in body is decoded into its Go struct and encoded back (:mod:`kubeloop.api._go_decode`). An optional
scalar field is either a value (``bool``, ``int32``, ``string``, a named string type) with ``omitempty``, whose
zero value (``false``, ``0``, ``""``) the round trip drops (``encoding/json`` omits it, and apimachinery's
``runtime.DefaultUnstructuredConverter`` leaves it out of what the field manager types: ``converter.go``
``isZero``), or a pointer (``*int32 replicas``, ``*bool allowPrivilegeEscalation``), whose explicit zero is a
non-nil pointer and stays. The OpenAPI schema does not tell the two apart; this table does.

:data:`POINTER_SCALARS` has one row per struct, keyed by its OpenAPI definition name, naming the ``types.go``
struct's pointer scalars (JSON names). A struct in the table is covered: every optional scalar of it that is
not listed is a value with ``omitempty`` (fields without ``omitempty`` are the schema's ``required`` ones and
:data:`kubeloop.api._go_encode._NOT_OMITEMPTY`, whose zero is written). A struct not in the table keeps every
zero as sent: those left out had no source read for them (see the module's notes below).

Sources (read through the code index; the JSON tag and the Go type of each field were read, not inferred):

- core/v1: kubernetes ``staging/src/k8s.io/api/core/v1/types.go`` at 001a778f (1.29); fields added since were
  confirmed one by one from declarations in the index: ``VolumeMount.RecursiveReadOnly
  *RecursiveReadOnlyMode``, ``PodSecurityContext.SELinuxChangePolicy *PodSELinuxChangePolicy`` and
  ``SupplementalGroupsPolicy *SupplementalGroupsPolicy``, ``ServiceSpec.TrafficDistribution *string``,
  ``PodResourceClaim.ResourceClaimName`` / ``ResourceClaimTemplateName *string`` (both ``*string`` in 1.29's
  ``ClaimSource`` too).
- apps/v1: ``staging/src/k8s.io/api/apps/v1/types.go`` at 0122c43a (newer than 1.32; no field changed kind).
- batch/v1: ``batch/v1/types.go`` (1.31, with ``successPolicy``, ``managedBy``, ``backoffLimitPerIndex``).
- discovery/v1, policy/v1, rbac/v1, scheduling/v1 ``types.go``; storage/v1 ``StorageClass``; apimachinery
  ``pkg/apis/meta/v1/types.go`` ``ObjectMeta``, ``OwnerReference`` and ``Condition`` (``ObservedGeneration int64
  `json:"observedGeneration,omitempty"```; ``reason`` and ``message`` have no ``omitempty``: the schema's
  ``required``).
- coordination/v1 ``LeaseSpec``: every scalar a pointer (``*string holderIdentity``, ``*int32
  leaseDurationSeconds``/``leaseTransitions``, ``*CoordinatedLeaseStrategy strategy``, ``*string preferredHolder``;
  the internal ``pkg/apis/coordination/types.go`` and the v1beta1 ``types.go`` agree).
- core/v1 structs added in 1.30-1.32: ``AppArmorProfile.LocalhostProfile *string``, ``ImageVolumeSource``
  (``Reference string`` and ``PullPolicy PullPolicy``, both ``omitempty``), ``ResourceHealth.Health
  ResourceHealthStatus `json:"health,omitempty"```, ``VolumeMountStatus`` (``ReadOnly bool``, ``RecursiveReadOnly
  *RecursiveReadOnlyMode``), ``PortStatus.Error *string``, ``NodeFeatures.SupplementalGroupsPolicy *bool``,
  ``NodeRuntimeHandlerFeatures`` (two ``*bool``), ``ResourceClaim.Request string `json:"request,omitempty"```.
- apiextensions.k8s.io/v1 ``types.go`` and ``types_jsonschema.go``: ``CustomResourceDefinitionSpec.
  PreserveUnknownFields bool``, ``CustomResourceDefinitionVersion`` (``Deprecated bool``, ``DeprecationWarning
  *string``), ``CustomResourceColumnDefinition`` (``Format``, ``Description string``, ``Priority int32``), the
  names' ``Singular``/``ListKind string``, the condition's ``Reason``/``Message string``, ``ServiceReference``
  (``Path *string``, ``Port *int32``), ``WebhookClientConfig.URL *string`` (its ``CABundle []byte
  `json:"caBundle,omitempty"``` is a value: an empty one is dropped), ``CustomResourceSubresourceScale.
  LabelSelectorPath *string``, ``ExternalDocumentation``, ``ValidationRule`` (``Reason
  *FieldValueErrorReason``, ``OptionalOldSelf *bool``; ``Message``, ``MessageExpression``, ``FieldPath string``)
  and ``JSONSchemaProps``: its numeric bounds, ``$ref``, ``x-kubernetes-preserve-unknown-fields``,
  ``x-kubernetes-list-type`` and ``x-kubernetes-map-type`` are pointers, ``id``, ``$schema``, ``description``,
  ``type``, ``format``, ``title``, ``pattern``, ``exclusiveMaximum``/``exclusiveMinimum``, ``uniqueItems``,
  ``nullable``, ``x-kubernetes-embedded-resource`` and ``x-kubernetes-int-or-string`` values with ``omitempty``.
  (``JSONSchemaProps`` has no ``MarshalJSON`` of its own: only ``JSON`` and the ``...Or...`` wrappers have, in
  ``marshal.go``; the decode walk looks into ``items`` and ``additionalProperties`` too, but not into
  ``dependencies``.)

Left out (zeros kept as sent), for want of a read source: core/v1 ``NodeRuntimeHandler`` (whether ``Name`` has
``omitempty`` was not read) and meta/v1 ``ManagedFieldsEntry`` (the server writes those entries).
"""

from __future__ import annotations

__all__ = ["POINTER_SCALARS"]

_CORE = "io.k8s.api.core.v1."
_APPS = "io.k8s.api.apps.v1."
_BATCH = "io.k8s.api.batch.v1."
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_CRD = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."

_NONE: frozenset[str] = frozenset()


def _row(*fields: str) -> frozenset[str]:
    return frozenset(fields)


# By OpenAPI definition name: the struct's pointer scalars (an empty row: all its optional scalars are values).
POINTER_SCALARS: dict[str, frozenset[str]] = {
    # core/v1 types.go: volumes.
    _CORE + "PersistentVolumeClaimVolumeSource": _NONE,  # ReadOnly bool
    _CORE + "ReplicationControllerSpec": _row("replicas"),  # Replicas *int32; MinReadySeconds int32
    _CORE + "ReplicationControllerStatus": _NONE,
    _CORE + "ReplicationControllerCondition": _NONE,
    _CORE + "PersistentVolumeSpec": _row("volumeMode", "volumeAttributesClassName"),  # *PersistentVolumeMode, *string
    _CORE + "PersistentVolumeStatus": _NONE,  # Phase, Message, Reason
    _CORE + "PersistentVolumeClaimSpec": _row("storageClassName", "volumeMode", "volumeAttributesClassName"),
    _CORE + "TypedObjectReference": _row("apiGroup", "namespace"),  # APIGroup *string `json:"apiGroup"`
    _CORE + "TypedLocalObjectReference": _row("apiGroup"),  # APIGroup *string `json:"apiGroup"`
    _CORE + "ModifyVolumeStatus": _NONE,  # TargetVolumeAttributesClassName string
    _CORE + "PersistentVolumeClaimCondition": _NONE,
    _CORE + "PersistentVolumeClaimStatus": _row("currentVolumeAttributesClassName"),  # *string
    _CORE + "HostPathVolumeSource": _row("type"),  # Type *HostPathType
    _CORE + "EmptyDirVolumeSource": _NONE,  # Medium StorageMedium
    _CORE + "GlusterfsVolumeSource": _NONE,
    _CORE + "GlusterfsPersistentVolumeSource": _row("endpointsNamespace"),  # *string
    _CORE + "RBDVolumeSource": _NONE,
    _CORE + "RBDPersistentVolumeSource": _NONE,
    _CORE + "CinderVolumeSource": _NONE,
    _CORE + "CinderPersistentVolumeSource": _NONE,
    _CORE + "CephFSVolumeSource": _NONE,
    _CORE + "CephFSPersistentVolumeSource": _NONE,
    _CORE + "SecretReference": _NONE,
    _CORE + "FlockerVolumeSource": _NONE,
    _CORE + "GCEPersistentDiskVolumeSource": _NONE,  # Partition int32, ReadOnly bool
    _CORE + "QuobyteVolumeSource": _NONE,
    _CORE + "FlexPersistentVolumeSource": _NONE,
    _CORE + "FlexVolumeSource": _NONE,
    _CORE + "AWSElasticBlockStoreVolumeSource": _NONE,
    _CORE + "GitRepoVolumeSource": _NONE,
    _CORE + "SecretVolumeSource": _row("defaultMode", "optional"),  # *int32, *bool
    _CORE + "SecretProjection": _row("optional"),  # LocalObjectReference inline: Name string
    _CORE + "NFSVolumeSource": _NONE,
    _CORE + "ISCSIVolumeSource": _row("initiatorName"),  # *string
    _CORE + "ISCSIPersistentVolumeSource": _row("initiatorName"),
    _CORE + "FCVolumeSource": _row("lun"),  # *int32
    _CORE + "AzureFileVolumeSource": _NONE,
    _CORE + "AzureFilePersistentVolumeSource": _row("secretNamespace"),  # *string `json:"secretNamespace"`
    _CORE + "VsphereVirtualDiskVolumeSource": _NONE,
    _CORE + "PhotonPersistentDiskVolumeSource": _NONE,
    _CORE + "AzureDiskVolumeSource": _row("cachingMode", "fsType", "readOnly", "kind"),
    _CORE + "PortworxVolumeSource": _NONE,
    _CORE + "ScaleIOVolumeSource": _NONE,
    _CORE + "ScaleIOPersistentVolumeSource": _NONE,
    _CORE + "StorageOSVolumeSource": _NONE,
    _CORE + "StorageOSPersistentVolumeSource": _NONE,
    _CORE + "ConfigMapVolumeSource": _row("defaultMode", "optional"),
    _CORE + "ConfigMapProjection": _row("optional"),
    _CORE + "ServiceAccountTokenProjection": _row("expirationSeconds"),  # *int64
    _CORE + "ClusterTrustBundleProjection": _row("name", "signerName", "optional"),
    _CORE + "ProjectedVolumeSource": _row("defaultMode"),
    _CORE + "KeyToPath": _row("mode"),
    _CORE + "LocalVolumeSource": _row("fsType"),
    _CORE + "CSIPersistentVolumeSource": _NONE,  # ReadOnly bool, FSType string
    _CORE + "CSIVolumeSource": _row("readOnly", "fsType"),  # *bool, *string
    _CORE + "DownwardAPIVolumeSource": _row("defaultMode"),
    _CORE + "DownwardAPIVolumeFile": _row("mode"),
    # core/v1 types.go: containers.
    _CORE + "ContainerPort": _NONE,  # Name, HostPort, Protocol, HostIP
    _CORE + "VolumeMount": _row("mountPropagation", "recursiveReadOnly"),  # ReadOnly bool, SubPath string
    _CORE + "EnvVar": _NONE,  # Value string
    _CORE + "ObjectFieldSelector": _NONE,
    _CORE + "ResourceFieldSelector": _NONE,
    _CORE + "ConfigMapKeySelector": _row("optional"),
    _CORE + "SecretKeySelector": _row("optional"),
    _CORE + "EnvFromSource": _NONE,
    _CORE + "ConfigMapEnvSource": _row("optional"),
    _CORE + "SecretEnvSource": _row("optional"),
    _CORE + "HTTPGetAction": _NONE,
    _CORE + "TCPSocketAction": _NONE,
    _CORE + "GRPCAction": _row("service"),  # Service *string `json:"service"`
    _CORE + "Probe": _row("terminationGracePeriodSeconds"),  # the thresholds and periods are int32
    _CORE + "Container": _row("restartPolicy"),  # *ContainerRestartPolicy; Stdin, TTY bool; WorkingDir string
    _CORE + "EphemeralContainer": _row("restartPolicy"),  # EphemeralContainerCommon, TargetContainerName string
    _CORE + "SecurityContext": _row("privileged", "runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
                                    "allowPrivilegeEscalation", "procMount"),
    _CORE + "SELinuxOptions": _NONE,
    _CORE + "WindowsSecurityContextOptions": _row("gmsaCredentialSpecName", "gmsaCredentialSpec", "runAsUserName",
                                                  "hostProcess"),
    _CORE + "SeccompProfile": _row("localhostProfile"),
    _CORE + "ContainerStateWaiting": _NONE,
    _CORE + "ContainerStateTerminated": _NONE,  # Signal int32, Reason, Message, ContainerID string
    _CORE + "ContainerStatus": _row("started"),  # *bool
    _CORE + "VolumeMountStatus": _row("recursiveReadOnly"),  # ReadOnly bool; *RecursiveReadOnlyMode
    _CORE + "ResourceHealth": _NONE,  # Health ResourceHealthStatus `json:"health,omitempty"`
    _CORE + "AppArmorProfile": _row("localhostProfile"),  # *string
    _CORE + "ImageVolumeSource": _NONE,  # Reference string, PullPolicy PullPolicy (omitempty)
    _CORE + "ResourceClaim": _NONE,  # Request string `json:"request,omitempty"`
    # core/v1 types.go: pods.
    _CORE + "PodSpec": _row("terminationGracePeriodSeconds", "activeDeadlineSeconds", "automountServiceAccountToken",
                            "shareProcessNamespace", "priority", "runtimeClassName", "enableServiceLinks",
                            "preemptionPolicy", "setHostnameAsFQDN", "hostUsers"),
    _CORE + "PodSecurityContext": _row("runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "fsGroupChangePolicy",
                                       "seLinuxChangePolicy", "supplementalGroupsPolicy"),
    _CORE + "PodDNSConfigOption": _row("value"),  # Name string `json:"name,omitempty"`
    _CORE + "PodResourceClaim": _row("resourceClaimName", "resourceClaimTemplateName"),
    _CORE + "PodResourceClaimStatus": _row("resourceClaimName"),
    _CORE + "TopologySpreadConstraint": _row("minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy"),
    _CORE + "Toleration": _row("tolerationSeconds"),  # Key, Operator, Value, Effect
    _CORE + "Taint": _NONE,  # Value string
    _CORE + "PodCondition": _NONE,
    _CORE + "PodStatus": _NONE,  # Phase, Message, Reason, NominatedNodeName, HostIP, PodIP, QOSClass, Resize
    # core/v1 types.go: services, endpoints, nodes, namespaces, events, references, config.
    _CORE + "ServiceSpec": _row("ipFamilyPolicy", "allocateLoadBalancerNodePorts", "loadBalancerClass",
                                "internalTrafficPolicy", "trafficDistribution"),
    _CORE + "ServicePort": _row("appProtocol"),  # Name, Protocol, NodePort
    _CORE + "ClientIPConfig": _row("timeoutSeconds"),
    _CORE + "LoadBalancerIngress": _row("ipMode"),
    _CORE + "ServiceAccount": _row("automountServiceAccountToken"),
    _CORE + "EndpointAddress": _row("nodeName"),
    _CORE + "EndpointPort": _row("appProtocol"),  # Name string, Protocol Protocol
    _CORE + "NodeSpec": _NONE,  # PodCIDR, ProviderID, Unschedulable, DoNotUseExternalID
    _CORE + "NodeStatus": _NONE,
    _CORE + "NodeConfigStatus": _NONE,
    _CORE + "ConfigMapNodeConfigSource": _NONE,
    _CORE + "NodeCondition": _NONE,
    _CORE + "ContainerImage": _NONE,  # SizeBytes int64 (Names []string `json:"names"`: _go_encode._NOT_OMITEMPTY)
    _CORE + "PortStatus": _row("error"),  # Error *string; Port, Protocol required
    _CORE + "NodeFeatures": _row("supplementalGroupsPolicy"),  # *bool
    _CORE + "NodeRuntimeHandlerFeatures": _row("recursiveReadOnlyMounts", "userNamespaces"),  # *bool, *bool
    _CORE + "NamespaceStatus": _NONE,
    _CORE + "NamespaceCondition": _NONE,
    _CORE + "ObjectReference": _NONE,
    _CORE + "LocalObjectReference": _NONE,
    _CORE + "EventSource": _NONE,
    _CORE + "Event": _NONE,  # Reason, Message, Count, Type, Action
    _CORE + "EventSeries": _NONE,
    _CORE + "Secret": _row("immutable"),  # Type SecretType
    _CORE + "ConfigMap": _row("immutable"),
    # apps/v1 types.go.
    _APPS + "StatefulSetSpec": _row("replicas", "revisionHistoryLimit"),  # PodManagementPolicy, MinReadySeconds
    _APPS + "StatefulSetUpdateStrategy": _NONE,
    _APPS + "RollingUpdateStatefulSetStrategy": _row("partition"),
    _APPS + "StatefulSetPersistentVolumeClaimRetentionPolicy": _NONE,
    _APPS + "StatefulSetOrdinals": _NONE,  # Start int32 `json:"start"` (no omitempty)
    _APPS + "StatefulSetStatus": _row("collisionCount"),  # AvailableReplicas int32 `json:"availableReplicas"`
    _APPS + "StatefulSetCondition": _NONE,
    _APPS + "DeploymentSpec": _row("replicas", "revisionHistoryLimit", "progressDeadlineSeconds"),  # Paused bool
    _APPS + "DeploymentStrategy": _NONE,
    _APPS + "DeploymentStatus": _row("collisionCount"),
    _APPS + "DeploymentCondition": _NONE,
    _APPS + "DaemonSetSpec": _row("revisionHistoryLimit"),
    _APPS + "DaemonSetUpdateStrategy": _NONE,
    _APPS + "DaemonSetStatus": _row("collisionCount"),
    _APPS + "DaemonSetCondition": _NONE,
    _APPS + "ReplicaSetSpec": _row("replicas"),
    _APPS + "ReplicaSetStatus": _NONE,
    _APPS + "ReplicaSetCondition": _NONE,
    # batch/v1 types.go.
    _BATCH + "JobSpec": _row("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                             "backoffLimitPerIndex", "maxFailedIndexes", "manualSelector", "ttlSecondsAfterFinished",
                             "completionMode", "suspend", "podReplacementPolicy", "managedBy"),
    _BATCH + "JobStatus": _row("terminating", "failedIndexes", "ready"),  # Active, Succeeded, Failed, CompletedIndexes
    _BATCH + "JobCondition": _NONE,
    _BATCH + "SuccessPolicyRule": _row("succeededIndexes", "succeededCount"),
    _BATCH + "PodFailurePolicyOnExitCodesRequirement": _row("containerName"),  # *string `json:"containerName"`
    _BATCH + "CronJobSpec": _row("timeZone", "startingDeadlineSeconds", "suspend", "successfulJobsHistoryLimit",
                                 "failedJobsHistoryLimit"),  # ConcurrencyPolicy
    # discovery/v1 types.go.
    "io.k8s.api.discovery.v1.Endpoint": _row("hostname", "nodeName", "zone"),
    "io.k8s.api.discovery.v1.EndpointConditions": _row("ready", "serving", "terminating"),
    "io.k8s.api.discovery.v1.EndpointPort": _row("name", "protocol", "port", "appProtocol"),
    # networking/v1 types.go (1.32): ``*string ingressClassName``, ``*PathType pathType``, ``*v1.Protocol protocol``
    # and ``*int32 endPort`` (``port`` is an ``*intstr.IntOrString``), the parameters' ``*string`` apiGroup, scope
    # and namespace, ``IngressPortStatus.Error *string``; ServiceBackendPort's ``Name string``/``Number int32``,
    # HTTPIngressPath's ``Path``, IngressRule's ``Host``, IngressTLS's ``SecretName``, IngressClassSpec's
    # ``Controller`` and the load balancer's ``IP``/``Hostname`` are values with ``omitempty``.
    "io.k8s.api.networking.v1.IngressSpec": _row("ingressClassName"),
    "io.k8s.api.networking.v1.HTTPIngressPath": _row("pathType"),
    "io.k8s.api.networking.v1.IngressRule": _NONE,
    "io.k8s.api.networking.v1.IngressTLS": _NONE,
    "io.k8s.api.networking.v1.ServiceBackendPort": _NONE,
    "io.k8s.api.networking.v1.IngressLoadBalancerIngress": _NONE,
    "io.k8s.api.networking.v1.IngressPortStatus": _row("error"),
    "io.k8s.api.networking.v1.IngressClassSpec": _NONE,
    "io.k8s.api.networking.v1.IngressClassParametersReference": _row("apiGroup", "scope", "namespace"),
    "io.k8s.api.networking.v1.NetworkPolicyPort": _row("protocol", "endPort"),
    # policy/v1, rbac/v1, scheduling/v1, storage/v1 types.go.
    "io.k8s.api.policy.v1.PodDisruptionBudgetSpec": _row("unhealthyPodEvictionPolicy"),
    "io.k8s.api.policy.v1.PodDisruptionBudgetStatus": _NONE,  # ObservedGeneration int64
    "io.k8s.api.rbac.v1.Subject": _NONE,  # APIGroup, Namespace string
    "io.k8s.api.scheduling.v1.PriorityClass": _row("preemptionPolicy"),  # GlobalDefault bool, Description string
    "io.k8s.api.storage.v1.StorageClass": _row("reclaimPolicy", "allowVolumeExpansion", "volumeBindingMode"),
    # coordination/v1 types.go.
    "io.k8s.api.coordination.v1.LeaseSpec": _row("holderIdentity", "leaseDurationSeconds", "leaseTransitions",
                                                 "strategy", "preferredHolder"),
    # apiextensions.k8s.io/v1 types.go, types_jsonschema.go.
    _CRD + "CustomResourceDefinitionSpec": _NONE,  # PreserveUnknownFields bool `json:"preserveUnknownFields,omitempty"`
    _CRD + "CustomResourceDefinitionVersion": _row("deprecationWarning"),  # Deprecated bool; *string
    _CRD + "CustomResourceColumnDefinition": _NONE,  # Format, Description string; Priority int32
    _CRD + "CustomResourceDefinitionNames": _NONE,  # Singular, ListKind string
    _CRD + "CustomResourceDefinitionCondition": _NONE,  # Reason, Message string
    _CRD + "CustomResourceConversion": _NONE,
    _CRD + "WebhookClientConfig": _row("url"),  # URL *string; CABundle []byte `json:"caBundle,omitempty"`
    _CRD + "ServiceReference": _row("path", "port"),  # *string, *int32
    _CRD + "CustomResourceSubresourceScale": _row("labelSelectorPath"),  # *string
    _CRD + "ExternalDocumentation": _NONE,  # Description, URL string
    _CRD + "ValidationRule": _row("reason", "optionalOldSelf"),  # *FieldValueErrorReason, *bool
    _CRD + "JSONSchemaProps": _row("$ref", "maximum", "minimum", "maxLength", "minLength", "maxItems", "minItems",
                                   "multipleOf", "maxProperties", "minProperties",
                                   "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type",
                                   "x-kubernetes-map-type"),
    # apimachinery meta/v1 types.go.
    _META + "ObjectMeta": _row("deletionGracePeriodSeconds"),  # Name ... ResourceVersion string, Generation int64
    _META + "OwnerReference": _row("controller", "blockOwnerDeletion"),
    _META + "Condition": _NONE,  # ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}
