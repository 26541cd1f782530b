"""Field tables for the protobuf kinds kubeloop decodes, and the kinds they are reachable from.

Field numbers come from upstream's go-to-protobuf ``generated.proto`` files (k8s.io/api
``core/v1``, ``apps/v1``, ``batch/v1``, ``autoscaling/v1``, ``authorization/v1``, ``authentication/v1``, ``rbac/v1``, ``policy/v1``, ``scheduling/v1``, ``networking/v1``; apimachinery
``pkg/apis/meta/v1``, ``pkg/runtime``, ``pkg/util/intstr``, ``pkg/api/resource``); the JSON names
and presence rules come from the Go types' JSON tags. Numbers are never reused upstream, so a
table written for one release decodes bodies from every release; fields added later are unknown
here and skipped.

A message is ``{field number: (JSON name, kind)}``. Kind mini-language::

    [*|{] base [?|!]

    *      repeated (packed or not)          {      map<string, base> (entries: key=1, value=2)
    s      string     y  bytes (base64)      b      bool
    i      int32      l  int64               q      resource.Quantity (its string)
    is     intstr.IntOrString                t      meta/v1 Time (RFC 3339, seconds)
    f      meta/v1 FieldsV1 (embedded JSON)  xv     authorization ExtraValue (a string list)
    m:Name nested message                    inline:Name  embedded Go struct (fields merged)

    (none) omitempty value field: dropped when zero (a value struct is always written, as Go does)
    ?      pointer field: written when sent, even if zero
    !      no omitempty: always written (zero value, or null for an absent list)
"""

from __future__ import annotations

from kubeloop.api._protobuf_schema_core import CORE_V1

__all__ = ["KINDS", "MESSAGES"]

_META_V1: dict[str, dict[int, tuple[str, str]]] = {
    "ObjectMeta": {
        1: ("name", "s"),
        2: ("generateName", "s"),
        3: ("namespace", "s"),
        4: ("selfLink", "s"),
        5: ("uid", "s"),
        6: ("resourceVersion", "s"),
        7: ("generation", "l"),
        8: ("creationTimestamp", "t"),
        9: ("deletionTimestamp", "t?"),
        10: ("deletionGracePeriodSeconds", "l?"),
        11: ("labels", "{s"),
        12: ("annotations", "{s"),
        13: ("ownerReferences", "*m:OwnerReference"),
        14: ("finalizers", "*s"),
        17: ("managedFields", "*m:ManagedFieldsEntry"),
    },
    "OwnerReference": {
        5: ("apiVersion", "s!"),
        1: ("kind", "s!"),
        3: ("name", "s!"),
        4: ("uid", "s!"),
        6: ("controller", "b?"),
        7: ("blockOwnerDeletion", "b?"),
    },
    "ManagedFieldsEntry": {
        1: ("manager", "s"),
        2: ("operation", "s"),
        3: ("apiVersion", "s"),
        4: ("time", "t?"),
        6: ("fieldsType", "s"),
        7: ("fieldsV1", "f?"),
        8: ("subresource", "s"),
    },
    "LabelSelector": {1: ("matchLabels", "{s"), 2: ("matchExpressions", "*m:LabelSelectorRequirement")},
    "LabelSelectorRequirement": {1: ("key", "s!"), 2: ("operator", "s!"), 3: ("values", "*s")},
    "FieldSelectorRequirement": {1: ("key", "s!"), 2: ("operator", "s!"), 3: ("values", "*s")},
    "Condition": {
        1: ("type", "s!"),
        2: ("status", "s!"),
        3: ("observedGeneration", "l"),
        4: ("lastTransitionTime", "t!"),
        5: ("reason", "s!"),
        6: ("message", "s!"),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "l?"),
        2: ("preconditions", "m?:Preconditions"),
        3: ("orphanDependents", "b?"),
        4: ("propagationPolicy", "s?"),
        5: ("dryRun", "*s"),
        6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "b?"),
    },
    "Preconditions": {1: ("uid", "s?"), 2: ("resourceVersion", "s?")},
}

# k8s.io/api policy/v1 (kubectl create pdb, kubectl drain's evictions); v1beta1's Eviction is the same.
_POLICY_V1: dict[str, dict[int, tuple[str, str]]] = {
    "Eviction": {1: ("metadata", "m:ObjectMeta"), 2: ("deleteOptions", "m?:DeleteOptions")},
    "PodDisruptionBudget": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("spec", "m:PodDisruptionBudgetSpec"),
        3: ("status", "m:PodDisruptionBudgetStatus"),
    },
    "PodDisruptionBudgetSpec": {
        1: ("minAvailable", "is?"),
        2: ("selector", "m?:LabelSelector"),
        3: ("maxUnavailable", "is?"),
        4: ("unhealthyPodEvictionPolicy", "s?"),
    },
    "PodDisruptionBudgetStatus": {
        1: ("observedGeneration", "l"),
        2: ("disruptedPods", "{t"),
        3: ("disruptionsAllowed", "i!"),
        4: ("currentHealthy", "i!"),
        5: ("desiredHealthy", "i!"),
        6: ("expectedPods", "i!"),
        7: ("conditions", "*m:Condition"),
    },
}

_APPS_V1: dict[str, dict[int, tuple[str, str]]] = {
    "Deployment": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("spec", "m:DeploymentSpec"),
        3: ("status", "m:DeploymentStatus"),
    },
    "DeploymentSpec": {
        1: ("replicas", "i?"),
        2: ("selector", "m?:LabelSelector"),
        3: ("template", "m:PodTemplateSpec"),
        4: ("strategy", "m:DeploymentStrategy"),
        5: ("minReadySeconds", "i"),
        6: ("revisionHistoryLimit", "i?"),
        7: ("paused", "b"),
        9: ("progressDeadlineSeconds", "i?"),
        10: ("podReplacementPolicy", "s?"),
    },
    "DeploymentStrategy": {1: ("type", "s"), 2: ("rollingUpdate", "m?:RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "is?"), 2: ("maxSurge", "is?")},
    "DeploymentStatus": {
        1: ("observedGeneration", "l"),
        2: ("replicas", "i"),
        3: ("updatedReplicas", "i"),
        7: ("readyReplicas", "i"),
        4: ("availableReplicas", "i"),
        5: ("unavailableReplicas", "i"),
        9: ("terminatingReplicas", "i?"),
        6: ("conditions", "*m:DeploymentCondition"),
        8: ("collisionCount", "i?"),
    },
    "DeploymentCondition": {
        1: ("type", "s!"),
        2: ("status", "s!"),
        6: ("lastUpdateTime", "t"),
        7: ("lastTransitionTime", "t"),
        4: ("reason", "s"),
        5: ("message", "s"),
    },
    # DaemonSet (a Go client's typed create; number 5 of the spec, templateGeneration, left apps/v1).
    "DaemonSet": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:DaemonSetSpec"), 3: ("status", "m:DaemonSetStatus")},
    "DaemonSetSpec": {
        1: ("selector", "m?:LabelSelector"),
        2: ("template", "m:PodTemplateSpec"),
        3: ("updateStrategy", "m:DaemonSetUpdateStrategy"),
        4: ("minReadySeconds", "i"),
        6: ("revisionHistoryLimit", "i?"),
    },
    "DaemonSetUpdateStrategy": {1: ("type", "s"), 2: ("rollingUpdate", "m?:RollingUpdateDaemonSet")},
    "RollingUpdateDaemonSet": {1: ("maxUnavailable", "is?"), 2: ("maxSurge", "is?")},
    "DaemonSetStatus": {
        1: ("currentNumberScheduled", "i!"),
        2: ("numberMisscheduled", "i!"),
        3: ("desiredNumberScheduled", "i!"),
        4: ("numberReady", "i!"),
        5: ("observedGeneration", "l"),
        6: ("updatedNumberScheduled", "i"),
        7: ("numberAvailable", "i"),
        8: ("numberUnavailable", "i"),
        9: ("collisionCount", "i?"),
        10: ("conditions", "*m:DaemonSetCondition"),
    },
    "DaemonSetCondition": {
        1: ("type", "s!"),
        2: ("status", "s!"),
        3: ("lastTransitionTime", "t"),
        4: ("reason", "s"),
        5: ("message", "s"),
    },
}

_SAR_SPEC_COMMON: dict[int, tuple[str, str]] = {
    1: ("resourceAttributes", "m?:ResourceAttributes"),
    2: ("nonResourceAttributes", "m?:NonResourceAttributes"),
}

_AUTHORIZATION_V1: dict[str, dict[int, tuple[str, str]]] = {
    "SelfSubjectAccessReview": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("spec", "m:SelfSubjectAccessReviewSpec"),
        3: ("status", "m:SubjectAccessReviewStatus"),
    },
    "SelfSubjectAccessReviewSpec": _SAR_SPEC_COMMON,
    "SubjectAccessReview": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("spec", "m:SubjectAccessReviewSpec"),
        3: ("status", "m:SubjectAccessReviewStatus"),
    },
    "SubjectAccessReviewSpec": {
        **_SAR_SPEC_COMMON,
        3: ("user", "s"),
        4: ("groups", "*s"),
        5: ("extra", "{xv"),
        6: ("uid", "s"),
    },
    "ResourceAttributes": {
        1: ("namespace", "s"),
        2: ("verb", "s"),
        3: ("group", "s"),
        4: ("version", "s"),
        5: ("resource", "s"),
        6: ("subresource", "s"),
        7: ("name", "s"),
        8: ("fieldSelector", "m?:FieldSelectorAttributes"),
        9: ("labelSelector", "m?:LabelSelectorAttributes"),
    },
    "FieldSelectorAttributes": {1: ("rawSelector", "s"), 2: ("requirements", "*m:FieldSelectorRequirement")},
    "LabelSelectorAttributes": {1: ("rawSelector", "s"), 2: ("requirements", "*m:LabelSelectorRequirement")},
    "NonResourceAttributes": {1: ("path", "s"), 2: ("verb", "s")},
    "SubjectAccessReviewStatus": {
        1: ("allowed", "b!"),
        4: ("denied", "b"),
        2: ("reason", "s"),
        3: ("evaluationError", "s"),
    },
    "SelfSubjectRulesReview": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("spec", "m:SelfSubjectRulesReviewSpec"),
        3: ("status", "m:SubjectRulesReviewStatus"),
    },
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "s")},
    "SubjectRulesReviewStatus": {
        1: ("resourceRules", "*m:ResourceRule!"),
        2: ("nonResourceRules", "*m:NonResourceRule!"),
        3: ("incomplete", "b!"),
        4: ("evaluationError", "s"),
    },
    "ResourceRule": {
        1: ("verbs", "*s!"),
        2: ("apiGroups", "*s"),
        3: ("resources", "*s"),
        4: ("resourceNames", "*s"),
    },
    "NonResourceRule": {1: ("verbs", "*s!"), 2: ("nonResourceURLs", "*s")},
}

_AUTHENTICATION_V1: dict[str, dict[int, tuple[str, str]]] = {
    "SelfSubjectReview": {1: ("metadata", "m:ObjectMeta"), 2: ("status", "m:SelfSubjectReviewStatus")},
    "SelfSubjectReviewStatus": {1: ("userInfo", "m:UserInfo")},
    "UserInfo": {1: ("username", "s"), 2: ("uid", "s"), 3: ("groups", "*s"), 4: ("extra", "{xv")},
    # k8s.io/api authentication/v1 generated.proto.
    "TokenReview": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:TokenReviewSpec"), 3: ("status", "m:TokenReviewStatus")},
    "TokenReviewSpec": {1: ("token", "s"), 2: ("audiences", "*s")},
    "TokenReviewStatus": {1: ("authenticated", "b"), 2: ("user", "m:UserInfo"), 4: ("audiences", "*s"), 3: ("error", "s")},
    # serviceaccounts/token (kubectl create token sends it as protobuf).
    "TokenRequest": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:TokenRequestSpec"), 3: ("status", "m:TokenRequestStatus")},
    "TokenRequestSpec": {1: ("audiences", "*s"), 4: ("expirationSeconds", "l?"), 3: ("boundObjectRef", "m?:BoundObjectReference")},
    "BoundObjectReference": {1: ("kind", "s"), 2: ("apiVersion", "s"), 3: ("name", "s"), 4: ("uid", "s")},
    "TokenRequestStatus": {1: ("token", "s"), 2: ("expirationTimestamp", "t")},
}

_RBAC_V1: dict[str, dict[int, tuple[str, str]]] = {
    "Role": {1: ("metadata", "m:ObjectMeta"), 2: ("rules", "*m:PolicyRule!")},
    "ClusterRole": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("rules", "*m:PolicyRule!"),
        3: ("aggregationRule", "m?:AggregationRule"),
    },
    "AggregationRule": {1: ("clusterRoleSelectors", "*m:LabelSelector")},
    "PolicyRule": {
        1: ("verbs", "*s!"),
        2: ("apiGroups", "*s"),
        3: ("resources", "*s"),
        4: ("resourceNames", "*s"),
        5: ("nonResourceURLs", "*s"),
    },
    "RoleBinding": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("subjects", "*m:Subject"),
        3: ("roleRef", "m:RoleRef"),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("subjects", "*m:Subject"),
        3: ("roleRef", "m:RoleRef"),
    },
    "Subject": {1: ("kind", "s!"), 2: ("apiGroup", "s"), 3: ("name", "s!"), 4: ("namespace", "s")},
    "RoleRef": {1: ("apiGroup", "s!"), 2: ("kind", "s!"), 3: ("name", "s!")},
}

_SCHEDULING_V1: dict[str, dict[int, tuple[str, str]]] = {
    # k8s.io/api scheduling/v1: ``value`` has no omitempty (int32), ``preemptionPolicy`` is a pointer.
    "PriorityClass": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("value", "i!"),
        3: ("globalDefault", "b"),
        4: ("description", "s"),
        5: ("preemptionPolicy", "s?"),
    },
}

# k8s.io/api networking/v1 (kubectl create ingress; client-go writers of the three kinds), 1.32 generated.proto.
_NETWORKING_V1: dict[str, dict[int, tuple[str, str]]] = {
    "Ingress": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:IngressSpec"), 3: ("status", "m:IngressStatus")},
    "IngressSpec": {
        4: ("ingressClassName", "s?"),
        1: ("defaultBackend", "m?:IngressBackend"),
        2: ("tls", "*m:IngressTLS"),
        3: ("rules", "*m:IngressRule"),
    },
    "IngressBackend": {4: ("service", "m?:IngressServiceBackend"), 3: ("resource", "m?:TypedLocalObjectReference")},
    "IngressServiceBackend": {1: ("name", "s!"), 2: ("port", "m:ServiceBackendPort")},
    "ServiceBackendPort": {1: ("name", "s"), 2: ("number", "i")},
    "IngressTLS": {1: ("hosts", "*s"), 2: ("secretName", "s")},
    "IngressRule": {1: ("host", "s"), 2: ("", "inline:IngressRuleValue")},
    "IngressRuleValue": {1: ("http", "m?:HTTPIngressRuleValue")},
    "HTTPIngressRuleValue": {1: ("paths", "*m:HTTPIngressPath!")},
    "HTTPIngressPath": {1: ("path", "s"), 3: ("pathType", "s?"), 2: ("backend", "m:IngressBackend")},
    "IngressStatus": {1: ("loadBalancer", "m:IngressLoadBalancerStatus")},
    "IngressLoadBalancerStatus": {1: ("ingress", "*m:IngressLoadBalancerIngress")},
    "IngressLoadBalancerIngress": {1: ("ip", "s"), 2: ("hostname", "s"), 4: ("ports", "*m:IngressPortStatus")},
    "IngressPortStatus": {1: ("port", "i!"), 2: ("protocol", "s!"), 3: ("error", "s?")},
    "IngressClass": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:IngressClassSpec")},
    "IngressClassSpec": {1: ("controller", "s"), 2: ("parameters", "m?:IngressClassParametersReference")},
    "IngressClassParametersReference": {
        1: ("apiGroup", "s?"), 2: ("kind", "s!"), 3: ("name", "s!"), 4: ("scope", "s?"), 5: ("namespace", "s?"),
    },
    "NetworkPolicy": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:NetworkPolicySpec")},
    "NetworkPolicySpec": {
        1: ("podSelector", "m:LabelSelector"),
        2: ("ingress", "*m:NetworkPolicyIngressRule"),
        3: ("egress", "*m:NetworkPolicyEgressRule"),
        4: ("policyTypes", "*s"),
    },
    "NetworkPolicyIngressRule": {1: ("ports", "*m:NetworkPolicyPort"), 2: ("from", "*m:NetworkPolicyPeer")},
    "NetworkPolicyEgressRule": {1: ("ports", "*m:NetworkPolicyPort"), 2: ("to", "*m:NetworkPolicyPeer")},
    "NetworkPolicyPort": {1: ("protocol", "s?"), 2: ("port", "is?"), 3: ("endPort", "i?")},
    "NetworkPolicyPeer": {
        1: ("podSelector", "m?:LabelSelector"), 2: ("namespaceSelector", "m?:LabelSelector"), 3: ("ipBlock", "m?:IPBlock"),
    },
    "IPBlock": {1: ("cidr", "s!"), 2: ("except", "*s")},
}

# k8s.io/api batch/v1 (kubectl create job): field numbers from the Go types' protobuf tags (1.32).
_BATCH_V1: dict[str, dict[int, tuple[str, str]]] = {
    "Job": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:JobSpec"), 3: ("status", "m:JobStatus")},
    "JobSpec": {
        1: ("parallelism", "i?"),
        2: ("completions", "i?"),
        3: ("activeDeadlineSeconds", "l?"),
        11: ("podFailurePolicy", "m?:PodFailurePolicy"),
        16: ("successPolicy", "m?:SuccessPolicy"),
        7: ("backoffLimit", "i?"),
        12: ("backoffLimitPerIndex", "i?"),
        13: ("maxFailedIndexes", "i?"),
        4: ("selector", "m?:LabelSelector"),
        5: ("manualSelector", "b?"),
        6: ("template", "m:PodTemplateSpec"),
        8: ("ttlSecondsAfterFinished", "i?"),
        9: ("completionMode", "s?"),
        10: ("suspend", "b?"),
        14: ("podReplacementPolicy", "s?"),
        15: ("managedBy", "s?"),
    },
    "PodFailurePolicy": {1: ("rules", "*m:PodFailurePolicyRule!")},
    "PodFailurePolicyRule": {
        1: ("action", "s!"),
        2: ("onExitCodes", "m?:PodFailurePolicyOnExitCodesRequirement"),
        3: ("onPodConditions", "*m:PodFailurePolicyOnPodConditionsPattern!"),
    },
    "PodFailurePolicyOnExitCodesRequirement": {1: ("containerName", "s?"), 2: ("operator", "s!"), 3: ("values", "*i!")},
    "PodFailurePolicyOnPodConditionsPattern": {1: ("type", "s!"), 2: ("status", "s!")},
    "SuccessPolicy": {1: ("rules", "*m:SuccessPolicyRule!")},
    "SuccessPolicyRule": {1: ("succeededIndexes", "s?"), 2: ("succeededCount", "i?")},
    "JobStatus": {
        1: ("conditions", "*m:JobCondition"),
        2: ("startTime", "t?"),
        3: ("completionTime", "t?"),
        4: ("active", "i"),
        5: ("succeeded", "i"),
        6: ("failed", "i"),
        11: ("terminating", "i?"),
        7: ("completedIndexes", "s"),
        10: ("failedIndexes", "s?"),
        8: ("uncountedTerminatedPods", "m?:UncountedTerminatedPods"),
        9: ("ready", "i?"),
    },
    "CronJob": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:CronJobSpec"), 3: ("status", "m:CronJobStatus")},
    "CronJobSpec": {
        1: ("schedule", "s!"),
        8: ("timeZone", "s?"),
        2: ("startingDeadlineSeconds", "l?"),
        3: ("concurrencyPolicy", "s"),
        4: ("suspend", "b?"),
        5: ("jobTemplate", "m:JobTemplateSpec"),
        6: ("successfulJobsHistoryLimit", "i?"),
        7: ("failedJobsHistoryLimit", "i?"),
    },
    "JobTemplateSpec": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:JobSpec")},
    "CronJobStatus": {
        1: ("active", "*m:ObjectReference"),
        4: ("lastScheduleTime", "t?"),
        5: ("lastSuccessfulTime", "t?"),
    },
    "UncountedTerminatedPods": {1: ("succeeded", "*s"), 2: ("failed", "*s")},
    "JobCondition": {
        1: ("type", "s!"),
        2: ("status", "s!"),
        3: ("lastProbeTime", "t"),
        4: ("lastTransitionTime", "t"),
        5: ("reason", "s"),
        6: ("message", "s"),
    },
}

# k8s.io/api autoscaling/v1 (``kubectl autoscale`` sends its HorizontalPodAutoscaler as protobuf); the message
# names carry V1 so that another version's messages may join the flat namespace.
_AUTOSCALING_V1: dict[str, dict[int, tuple[str, str]]] = {
    "HorizontalPodAutoscalerV1": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:HorizontalPodAutoscalerSpecV1"),
                                  3: ("status", "m:HorizontalPodAutoscalerStatusV1")},
    "HorizontalPodAutoscalerSpecV1": {
        1: ("scaleTargetRef", "m:CrossVersionObjectReferenceV1"),
        2: ("minReplicas", "i?"),
        3: ("maxReplicas", "i!"),
        4: ("targetCPUUtilizationPercentage", "i?"),
    },
    "CrossVersionObjectReferenceV1": {1: ("kind", "s!"), 2: ("name", "s!"), 3: ("apiVersion", "s")},
    "HorizontalPodAutoscalerStatusV1": {
        1: ("observedGeneration", "l?"),
        2: ("lastScaleTime", "t?"),
        3: ("currentReplicas", "i!"),
        4: ("desiredReplicas", "i!"),
        5: ("currentCPUUtilizationPercentage", "i?"),
    },
}

MESSAGES: dict[str, dict[int, tuple[str, str]]] = {
    **_META_V1,
    **CORE_V1,
    **_APPS_V1,
    **_BATCH_V1,
    **_AUTHORIZATION_V1,
    **_AUTHENTICATION_V1,
    **_RBAC_V1,
    **_POLICY_V1,
    **_SCHEDULING_V1,
    **_AUTOSCALING_V1,
    **_NETWORKING_V1,
}

# (apiVersion, kind) of the envelope's TypeMeta -> root message. Kinds of different groups never
# share a message name here, so one flat message namespace is enough.
KINDS: dict[tuple[str, str], str] = {
    **{("v1", kind): kind for kind in ("Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service", "Binding",
                                              "LimitRange", "ResourceQuota", "ReplicationController",
                                              "PodTemplate", "Pod")},
    ("apps/v1", "Deployment"): "Deployment",
    ("apps/v1", "DaemonSet"): "DaemonSet",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "HorizontalPodAutoscalerV1",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    **{("networking.k8s.io/v1", kind): kind for kind in ("Ingress", "IngressClass", "NetworkPolicy")},
    ("policy/v1", "Eviction"): "Eviction",
    ("policy/v1beta1", "Eviction"): "Eviction",
    **{
        ("authorization.k8s.io/v1", kind): kind
        for kind in ("SelfSubjectAccessReview", "SubjectAccessReview", "SelfSubjectRulesReview")
    },
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "SubjectAccessReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview",
    ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
    ("authentication.k8s.io/v1", "TokenReview"): "TokenReview",
    **{
        ("rbac.authorization.k8s.io/v1", kind): kind
        for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    },
}
