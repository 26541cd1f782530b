"""Defaulting of built-in kinds: the fields upstream's ``SetDefaults_*`` functions fill on write.

Only fields clients and controllers read back are defaulted (replicas, strategies, pod template
fields, service ports, secret type ...), with upstream's values (k/k ``pkg/apis/core/v1/defaults.go``,
``pkg/apis/apps/v1/defaults.go``, ``pkg/apis/batch/v1/defaults.go``, ``pkg/apis/policy``, ``pkg/apis/storage/v1/defaults.go``,
``pkg/apis/scheduling/v1/defaults.go``, ``pkg/apis/networking/v1/defaults.go``). A field
the client set is never overwritten. Runs on create and on main-resource update, like upstream's
decoder does for every request body.

:func:`drop_go_nulls` turns a body's ``null`` values into what the typed decode leaves, and
:func:`go_write_encodings` gives the write path what Go's JSON encoding of the decoded struct always
writes (a field without ``omitempty``, or a value struct, which ``omitempty`` never drops): an Event's
``eventTime: null`` or ``reportingInstance: ""``, a Role's ``rules: null``, a Node's ``spec: {}``, a
pod template's ``metadata: {creationTimestamp: null}`` (all from :mod:`kubeloop.api._go_encode`).
Upstream's field manager owns no such value along the object's struct fields on create (it compares the
object with the kind's empty object), so a create strips them around the managedFields bookkeeping and
fills them in again before the object is compared and stored; an update compares with the live object,
which holds them too. It also gives the kind's encoding for the empty lists and maps the write path
settles (:mod:`kubeloop.api._go_empty`): ``env: []`` is no manager's and not stored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubeloop.api import ResourceInfo
from kubeloop.api._admission_policy_defaults import default_policy, default_policy_binding
from kubeloop.api._go_empty import holds_collections
from kubeloop.api._go_encode import GoEncoding, drop_nulls, go_encoding
from kubeloop.api._hpa_defaults import default_hpa
from kubeloop.api._limit_range_validation import default_limit_range
from kubeloop.api._schemas import definition_name_for
from kubeloop.api._webhook_configuration import default_webhook_configuration

__all__ = ["apply_defaults", "create_keeps_decoded_body", "drop_go_nulls", "go_write_encodings"]

Obj = dict[str, Any]


def _dict(parent: Obj, key: str) -> Obj:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _default(parent: Obj, key: str, value: Any) -> None:
    if parent.get(key) is None:
        parent[key] = value


def _default_text(parent: Obj, key: str, value: str) -> None:
    # A Go string field: "" is its zero value, so SetDefaults_* (``if x == ""``) fills it as if absent.
    if parent.get(key) is None or parent.get(key) == "":
        parent[key] = value


def _container(container: Any) -> None:
    if not isinstance(container, dict):
        return
    _default_text(container, "terminationMessagePath", "/dev/termination-log")
    _default_text(container, "terminationMessagePolicy", "File")
    image = container.get("image")
    if container.get("imagePullPolicy") in (None, "") and isinstance(image, str):
        tail = image.rsplit("/", 1)[-1]
        tag = tail.split("@", 1)[0].partition(":")[2]
        container["imagePullPolicy"] = "IfNotPresent" if ("@" in tail or (tag and tag != "latest")) else "Always"
    if container.get("resources") is None:
        container["resources"] = {}
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            _default_text(port, "protocol", "TCP")
    if "env" in container:
        _env_field_ref_versions(container["env"])


def _pod_spec(spec: Any) -> None:
    """The defaults of a pod's spec and of a workload's pod template alike."""
    if not isinstance(spec, dict):
        return
    _default_text(spec, "restartPolicy", "Always")
    _default(spec, "terminationGracePeriodSeconds", 30)
    _default_text(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "securityContext", {})
    _default_text(spec, "schedulerName", "default-scheduler")
    for key in ("containers", "initContainers", "ephemeralContainers"):  # SetDefaults_EphemeralContainer too
        for container in spec.get(key) or []:
            _container(container)
    _field_ref_versions(spec)
    _service_account_alias(spec)


def _service_account_alias(spec: Obj) -> None:
    """``serviceAccount`` is the deprecated alias of ``serviceAccountName`` (k/k pkg/apis/core/v1/conversion.go,
    ``Convert_v1_PodSpec_To_core_PodSpec``: the alias counts only when the name is empty;
    ``Convert_core_PodSpec_To_v1_PodSpec``: every PodSpec is served with the alias equal to the name)."""
    name = spec.get("serviceAccountName")
    if not name:
        name = spec.get("serviceAccount")
        if not name:
            spec.pop("serviceAccount", None)
            return
        spec["serviceAccountName"] = name
    spec["serviceAccount"] = name


def _field_ref_versions(spec: Obj) -> None:
    """SetDefaults_ObjectFieldSelector (``apiVersion: v1``) wherever the generated defaulters of a pod
    spec reach one: a container's ``env[].valueFrom.fieldRef`` (init, regular and ephemeral
    containers; :func:`_container` does them as it walks them), a downwardAPI volume's
    ``items[].fieldRef``, and a projected volume's downwardAPI source's. Templates get it too (the
    defaulters of Deployments, ReplicaSets and StatefulSets walk their ``spec.template.spec``)."""
    if "volumes" in spec:
        for volume in _dicts(spec["volumes"]):
            _volume(volume)
            _downward_api_versions(volume.get("downwardAPI"))
            if isinstance(projected := volume.get("projected"), dict):
                for source in _dicts(projected.get("sources")):
                    _downward_api_versions(source.get("downwardAPI"))
                    if isinstance(token := source.get("serviceAccountToken"), dict):
                        _default(token, "expirationSeconds", 3600)  # SetDefaults_ServiceAccountTokenProjection: an hour


# The volume sources whose DefaultMode defaults to 0644 (SetDefaults_SecretVolumeSource,
# _ConfigMapVolumeSource, _DownwardAPIVolumeSource, _ProjectedVolumeSource; k8s.io/api core/v1
# *VolumeSourceDefaultMode).
_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")


def _volume(volume: Obj) -> None:
    """SetDefaults_Volume (k/k pkg/apis/core/v1/defaults.go): a volume with no source is an
    ``emptyDir``; then the defaults of its source, which a pod's volume shares with a
    PersistentVolume's where both have it (:data:`_SOURCE_DEFAULTS`)."""
    if volume.keys() <= {"name"}:  # AllPtrFieldsNil(&obj.VolumeSource)
        volume["emptyDir"] = {}
        return
    for key in _MODE_SOURCES:
        if isinstance(source := volume.get(key), dict):
            _default(source, "defaultMode", 0o644)
    for key, texts, pointers in _SOURCE_DEFAULTS:
        if key in volume:
            source = volume[key]
            _fill(source, texts, text=True)
            _fill(source, pointers, text=False)


def _env_field_ref_versions(env: Any) -> None:
    if type(env) is list:
        for item in env:
            if type(item) is dict and type(value_from := item.get("valueFrom")) is dict:
                _field_ref_version(value_from)


def _dicts(value: Any) -> list[Obj]:
    """The objects of a JSON list (anything else reads as empty: the decoder refuses it)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _downward_api_versions(source: Any) -> None:
    if isinstance(source, dict):
        for item in _dicts(source.get("items")):
            _field_ref_version(item)


def _field_ref_version(holder: Obj) -> None:
    if isinstance(ref := holder.get("fieldRef"), dict):
        _default_text(ref, "apiVersion", "v1")


def _pod_template(spec: Obj) -> None:
    template = spec.get("template")
    if isinstance(template, dict):
        _pod_spec(_dict(template, "spec"))


def _requests_from_limits(container: Any) -> None:
    """SetDefaults_Pod: a resource with a limit and no request is requested at its limit (pods only,
    not pod templates: a template's pods are defaulted when they are created)."""
    resources = container.get("resources") if isinstance(container, dict) else None
    limits = resources.get("limits") if isinstance(resources, dict) else None
    if not isinstance(limits, dict) or not limits:
        return
    assert isinstance(resources, dict)
    requests = resources.get("requests")
    if requests is None:
        requests = resources["requests"] = {}
    elif not isinstance(requests, dict):
        return  # not a ResourceList: the decoder's error, not defaulting's
    for name, value in limits.items():
        if name not in requests:
            requests[name] = value


def _host_network_ports(spec: Obj) -> None:
    """SetDefaults_Pod (pods only since DefaultHostNetworkHostPortsInPodTemplates is off): on the
    host's network a port's unset host port is its container port."""
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            for port in (container.get("ports") or []) if isinstance(container, dict) else []:
                if isinstance(port, dict) and not port.get("hostPort") and port.get("containerPort"):
                    port["hostPort"] = port["containerPort"]


def _pod(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or []:
                _requests_from_limits(container)
        _pod_spec(spec)
        if spec.get("hostNetwork") is True:
            _host_network_ports(spec)
        _default(spec, "enableServiceLinks", True)
        # spec.priority and spec.preemptionPolicy are not defaults: the Priority admission plugin sets
        # them from the pod's PriorityClass (server/_priority_admission.py), and refuses a pod that set
        # them otherwise, so defaulting them here would refuse every pod of a class.


def _deployment(obj: Obj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "replicas", 1)
    strategy = _dict(spec, "strategy")
    _default_text(strategy, "type", "RollingUpdate")  # SetDefaults_Deployment: an empty type too
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _default(rolling, "maxUnavailable", "25%")
        _default(rolling, "maxSurge", "25%")
    _default(spec, "revisionHistoryLimit", 10)
    _default(spec, "progressDeadlineSeconds", 600)
    _pod_template(spec)


def _replicaset(obj: Obj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "replicas", 1)
    _pod_template(spec)


def _replication_controller(obj: Obj) -> None:
    """SetDefaults_ReplicationController (k/k ``pkg/apis/core/v1/defaults.go``): with template labels, an
    empty selector and empty object labels both take them; replicas 1; then the template's defaults."""
    spec = _dict(obj, "spec")
    template = spec.get("template")
    labels = _get_labels(template)
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _dict(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    _default(spec, "replicas", 1)
    _pod_template(spec)


def _get_labels(template: Any) -> Obj | None:
    """A template's ``metadata.labels`` when set (a nil map stays nil: ``if labels != nil``)."""
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else None


def _podtemplate(obj: Obj) -> None:
    """SetObjectDefaults_PodTemplate: the defaults of its ``template``'s pod spec (no kind-level defaulter)."""
    _pod_template(obj)


def _statefulset(obj: Obj) -> None:
    """SetDefaults_StatefulSet, then the claim templates' own defaults (the generated defaulter runs
    SetDefaults_PersistentVolumeClaim and its spec's on each: ``status.phase`` Pending, ``volumeMode``
    Filesystem, as ``kubectl get sts -o yaml`` shows on a real cluster, k/k issues #65706, #80473)."""
    spec = _dict(obj, "spec")
    _default_text(spec, "podManagementPolicy", "OrderedReady")
    update = _dict(spec, "updateStrategy")
    if update.get("type") in (None, ""):
        update["type"] = "RollingUpdate"
        _dict(update, "rollingUpdate")  # only an unset type brings an empty rollingUpdate to default
    if update["type"] == "RollingUpdate" and isinstance(update.get("rollingUpdate"), dict):
        _default(update["rollingUpdate"], "partition", 0)
    # StatefulSetAutoDeletePVC (beta, on in 1.32): each unset half of the policy is Retain.
    policy = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    _default_text(policy, "whenDeleted", "Retain")
    _default_text(policy, "whenScaled", "Retain")
    _default(spec, "replicas", 1)
    _default(spec, "revisionHistoryLimit", 10)
    _pod_template(spec)
    for template in spec.get("volumeClaimTemplates") or []:
        if isinstance(template, dict):
            _pvc(template)


_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _daemonset(obj: Obj) -> None:
    """SetDefaults_DaemonSet (k/k ``pkg/apis/apps/v1/defaults.go``): an empty update strategy type is
    RollingUpdate, whose ``rollingUpdate`` gets ``maxUnavailable`` 1 and ``maxSurge`` 0 when unset;
    ``revisionHistoryLimit`` 10; then the pod template's own defaults.

    And what the apps/v1 conversion writes as the body is decoded: ``spec.templateGeneration`` (0 when
    the body does not carry it) as the ``deprecated.daemonset.template.generation`` annotation, which the
    field manager therefore sees, as upstream's does (the creator of a set owns it); the strategy then
    sets its value (``_DaemonSet`` in :mod:`._strategy`)."""
    meta = _dict(obj, "metadata")
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict) or _TEMPLATE_GENERATION not in annotations:
        meta["annotations"] = {**(annotations if isinstance(annotations, dict) else {}), _TEMPLATE_GENERATION: "0"}
    spec = _dict(obj, "spec")
    update = _dict(spec, "updateStrategy")
    _default_text(update, "type", "RollingUpdate")
    if update["type"] == "RollingUpdate":
        rolling = _dict(update, "rollingUpdate")
        _default(rolling, "maxUnavailable", 1)
        _default(rolling, "maxSurge", 0)
    _default(spec, "revisionHistoryLimit", 10)
    _pod_template(spec)


def _job(obj: Obj) -> None:
    """SetDefaults_Job (k/k ``pkg/apis/batch/v1/defaults.go``, 1.32): completions and parallelism 1 when
    both are unset (parallelism alone otherwise), backoffLimit 6 (MaxInt32 with backoffLimitPerIndex),
    the template's labels as the Job's when it has none, completionMode NonIndexed, suspend false,
    podReplacementPolicy TerminatingOrFailed (Failed with a podFailurePolicy; JobPodReplacementPolicy
    is beta and on in 1.32), manualSelector false; then the pod template's own defaults."""
    spec = _dict(obj, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _default(spec, "parallelism", 1)
    _default(spec, "backoffLimit", 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6)
    template = spec.get("template")
    template_meta = template.get("metadata") if isinstance(template, dict) else None
    labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
    meta = _dict(obj, "metadata")
    if isinstance(labels, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    failure_policy = spec.get("podFailurePolicy")
    _pod_failure_policy(failure_policy)
    _default(spec, "podReplacementPolicy", "Failed" if failure_policy is not None else "TerminatingOrFailed")
    _default(spec, "manualSelector", False)
    _pod_template(spec)


def _pod_failure_policy(policy: Any) -> None:
    """SetDefaults_PodFailurePolicyOnPodConditionsPattern: a pattern's status True."""
    if isinstance(policy, dict):
        for rule in policy.get("rules") or []:
            for pattern in (rule.get("onPodConditions") or []) if isinstance(rule, dict) else []:
                if isinstance(pattern, dict):
                    _default_text(pattern, "status", "True")


def _cronjob(obj: Obj) -> None:
    """SetDefaults_CronJob (k/k ``pkg/apis/batch/v1/defaults.go``, 1.32): concurrencyPolicy Allow, suspend
    false, successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1. The job template gets only its
    types' own defaulters (its pod template's, a failure policy pattern's status): SetDefaults_Job is
    the Job object's, so a template keeps no completions, parallelism or backoffLimit of its own."""
    spec = _dict(obj, "spec")
    _default_text(spec, "concurrencyPolicy", "Allow")
    _default(spec, "suspend", False)
    _default(spec, "successfulJobsHistoryLimit", 3)
    _default(spec, "failedJobsHistoryLimit", 1)
    template = spec.get("jobTemplate")
    job_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(job_spec, dict):
        _pod_failure_policy(job_spec.get("podFailurePolicy"))
        _pod_template(job_spec)


def _service(obj: Obj) -> None:
    """SetDefaults_Service (k/k release-1.32 ``pkg/apis/core/v1/defaults.go``)."""
    spec = _dict(obj, "spec")
    _default_text(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        # SetDefaults_SessionAffinityConfig: DefaultClientIPServiceAffinitySeconds (3 hours).
        config = _dict(spec, "sessionAffinityConfig")
        _default(_dict(config, "clientIP"), "timeoutSeconds", 10800)
    _default_text(spec, "type", "ClusterIP")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            _default_text(port, "protocol", "TCP")
            if port.get("targetPort") in (None, 0, "") and port.get("port") is not None:
                port["targetPort"] = port["port"]
    kind = spec["type"]
    if (kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and spec.get("externalIPs"))) \
            and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"  # ExternallyAccessible
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        _default(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True)


def _endpoints(obj: Obj) -> None:
    """SetDefaults_EndpointPort: a port's protocol is TCP."""
    for subset in obj.get("subsets") or []:
        for port in (subset.get("ports") or []) if isinstance(subset, dict) else []:
            if isinstance(port, dict):
                _default_text(port, "protocol", "TCP")


def _endpointslice(obj: Obj) -> None:
    """discovery/v1 SetDefaults_EndpointPort: name "" and protocol TCP."""
    for port in obj.get("ports") or []:
        if isinstance(port, dict):
            _default(port, "name", "")
            _default(port, "protocol", "TCP")


def _secret(obj: Obj) -> None:
    _default(obj, "type", "Opaque")


def _pvc(obj: Obj) -> None:
    """SetDefaults_PersistentVolumeClaim (``status.phase`` Pending) and SetDefaults_PersistentVolumeClaimSpec."""
    spec = _dict(obj, "spec")
    _default(spec, "volumeMode", "Filesystem")
    _default_text(_dict(obj, "status"), "phase", "Pending")


def _fill(source: Any, defaults: tuple[tuple[str, Any], ...], *, text: bool) -> None:
    """One volume source's defaults: Go strings (``""`` is unset) when ``text``, else pointers."""
    if isinstance(source, dict):
        for key, value in defaults:
            (_default_text if text else _default)(source, key, value)


# pkg/apis/core/v1/defaults.go, the volume sources a PersistentVolume may hold: (field, defaults of
# Go string fields, defaults of pointer fields).
_SOURCE_DEFAULTS: tuple[tuple[str, tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]], ...] = (
    ("iscsi", (("iscsiInterface", "default"),), ()),  # SetDefaults_ISCSIPersistentVolumeSource
    ("rbd", (("pool", "rbd"), ("user", "admin"), ("keyring", "/etc/ceph/keyring")), ()),  # SetDefaults_RBDPersistentVolumeSource
    ("scaleIO", (("storageMode", "ThinProvisioned"), ("fsType", "xfs")), ()),  # SetDefaults_ScaleIOPersistentVolumeSource
    # SetDefaults_AzureDiskVolumeSource: pointers, so "" and false are values.
    ("azureDisk", (), (("cachingMode", "ReadWrite"), ("kind", "Shared"), ("fsType", "ext4"), ("readOnly", False))),
    ("hostPath", (), (("type", ""),)),  # SetDefaults_HostPathVolumeSource: HostPathUnset
)


def _pv(obj: Obj) -> None:
    """SetDefaults_PersistentVolume (reclaim policy Retain, ``volumeMode`` Filesystem, ``status.phase``
    Pending) and the defaults of its volume source."""
    spec = _dict(obj, "spec")
    _default_text(_dict(obj, "status"), "phase", "Pending")
    _default_text(spec, "persistentVolumeReclaimPolicy", "Retain")
    _default(spec, "volumeMode", "Filesystem")
    for key, texts, pointers in _SOURCE_DEFAULTS:
        source = spec.get(key)
        _fill(source, texts, text=True)
        _fill(source, pointers, text=False)


def _storageclass(obj: Obj) -> None:
    _default(obj, "reclaimPolicy", "Delete")
    _default(obj, "volumeBindingMode", "Immediate")


def _priorityclass(obj: Obj) -> None:
    # pkg/apis/scheduling/v1/defaults.go SetDefaults_PriorityClass.
    _default(obj, "preemptionPolicy", "PreemptLowerPriority")
    # ``value`` is an int32 without omitempty: a body without it is stored, and read back, as 0.
    _default(obj, "value", 0)


def _network_policy(obj: Obj) -> None:
    # pkg/apis/networking/v1/defaults.go SetDefaults_NetworkPolicyPort (a port's protocol is TCP) and
    # SetDefaults_NetworkPolicy (no policyTypes: Ingress, and Egress when there are egress rules).
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for direction in ("ingress", "egress"):
        rules = spec.get(direction)
        for rule in rules if isinstance(rules, list) else ():
            ports = rule.get("ports") if isinstance(rule, dict) else None
            for port in ports if isinstance(ports, list) else ():
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        egress = spec.get("egress")
        spec["policyTypes"] = ["Ingress", "Egress"] if isinstance(egress, list) and egress else ["Ingress"]


def _ingress_class(obj: Obj) -> None:
    # pkg/apis/networking/v1/defaults.go SetDefaults_IngressClass: parameters without a scope are Cluster's.
    spec = obj.get("spec")
    params = spec.get("parameters") if isinstance(spec, dict) else None
    if isinstance(params, dict) and params.get("scope") is None:
        params["scope"] = "Cluster"


def _validating_webhooks(obj: Obj) -> None:
    default_webhook_configuration(obj, mutating=False)


def _mutating_webhooks(obj: Obj) -> None:
    default_webhook_configuration(obj, mutating=True)


def _namespace(obj: Obj) -> None:
    # pkg/apis/core/v1/defaults.go SetDefaults_Namespace: a decode-time default, so the writer owns the
    # label in managedFields (the strategy's Canonicalize sets it again, for a generateName create).
    meta = _dict(obj, "metadata")
    name = meta.get("name")
    if isinstance(name, str) and name:
        _dict(meta, "labels")["kubernetes.io/metadata.name"] = name


_DEFAULTERS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("", "Pod"): _pod,
    ("", "Service"): _service,
    ("", "Endpoints"): _endpoints,
    ("discovery.k8s.io", "EndpointSlice"): _endpointslice,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "PersistentVolume"): _pv,
    ("", "ReplicationController"): _replication_controller,
    ("", "PodTemplate"): _podtemplate,
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replicaset,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("autoscaling", "HorizontalPodAutoscaler"): default_hpa,  # pkg/apis/autoscaling/v2/defaults.go
    ("storage.k8s.io", "StorageClass"): _storageclass,
    ("scheduling.k8s.io", "PriorityClass"): _priorityclass,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("networking.k8s.io", "IngressClass"): _ingress_class,
    # pkg/apis/admissionregistration/v1/defaults.go.
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _validating_webhooks,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _mutating_webhooks,
    # pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem.
    ("", "LimitRange"): default_limit_range,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): default_policy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): default_policy_binding,
}


# Kinds with a defaulter, whatever their group: most writes (ConfigMaps, custom resources ...) stop at
# this set, before building the (group, kind) key.
_DEFAULTED_KINDS = frozenset(kind for _, kind in _DEFAULTERS)


def apply_defaults(info: ResourceInfo, obj: Obj) -> None:
    if info.custom or info.kind not in _DEFAULTED_KINDS:
        return
    defaulter = _DEFAULTERS.get((info.group, info.kind))
    if defaulter is not None:
        defaulter(obj)


def create_keeps_decoded_body(info: ResourceInfo) -> bool:
    """Whether a create of ``info``'s built-in kind reaches the field manager with its fields as decoded:
    no defaulter, and no zero field its Go encoding writes (the write path only moves empty lists and maps
    out of the way there). Then a managedFields entry built while decoding is the one the hook would build."""
    return not info.custom and (info.group, info.kind) not in _DEFAULTERS and go_write_encodings(info)[0] is None


def _remember(info: ResourceInfo) -> _Hit:
    if len(_by_info) > 1_000:
        _by_info.clear()
    defname = None if info.custom else definition_name_for(info.group, info.version, info.kind)
    enc = None if defname is None else go_encoding(defname)
    busy = enc if enc is not None and (enc.fills or enc.strips) else None
    empties = enc if enc is not None and holds_collections(enc) else None
    hit = _by_info[id(info)] = (info, enc, (busy, empties))
    return hit


# Per ResourceInfo (by identity): the kind's Go encoding (:mod:`kubeloop.api._go_encode`), then the same
# again only if it writes some zero field (most writes, of ConfigMaps and Secrets, then skip the fill walks),
# and only if it has a list or map below its metadata (for the empty-collection walk).
_Hit = tuple[ResourceInfo, GoEncoding | None, tuple[GoEncoding | None, GoEncoding | None]]
_by_info: dict[int, _Hit] = {}


def drop_go_nulls(info: ResourceInfo, obj: Obj) -> None:
    """A built-in body's JSON ``null`` values as the typed decode leaves them (the field's Go zero value,
    which the encoding then writes or omits)."""
    hit = _by_info.get(id(info))
    if hit is None or hit[0] is not info:
        hit = _remember(info)
    if hit[1] is not None:
        drop_nulls(obj, hit[1])


def go_write_encodings(info: ResourceInfo) -> tuple[GoEncoding | None, GoEncoding | None]:
    """The kind's Go encoding twice: for :func:`~kubeloop.api._go_encode.strip_zero_fields` around the field
    manager and :func:`~kubeloop.api._go_encode.fill_zero_fields` after it, ``None`` for custom resources
    and for kinds with no field Go writes at its zero value; and for the empty-collection walk
    (:func:`~kubeloop.api._go_empty.take_empty_collections`), ``None`` for kinds with no list or map."""
    hit = _by_info.get(id(info))
    if hit is None or hit[0] is not info:
        hit = _remember(info)
    return hit[2]
