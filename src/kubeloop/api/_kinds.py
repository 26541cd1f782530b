"""The kinds registry: what each resource is called, where it lives, and its per-kind API rules.

A :class:`ResourceInfo` is the single description of a resource that discovery, routing, the
registry strategies, the client and the tools share: group/version/kind, plural and short names,
scope, subresources, and the few strategy switches upstream sets per kind (whether ``generation``
is tracked, whether an update without ``resourceVersion`` is allowed, whether PUT may create,
whether DELETE answers with the deleted object, extra field selectors).

:data:`BUILTIN_RESOURCES` lists the built-in kinds kubeloop serves, each once at its preferred version
(:data:`OTHER_VERSIONS` the few also served at another, converted); :class:`KindRegistry` adds
custom resources from CRDs at run time. :data:`REVIEW_RESOURCES` are the create-only reviews, which
discovery lists but no route stores. Facts: apimachinery reference sections 2, 4 and 5, and the
strategy files under k/k ``pkg/registry/...``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = ["BUILTIN_RESOURCES", "OTHER_VERSIONS", "REVIEW_RESOURCES", "KindRegistry", "ResourceInfo", "ScalePaths",
           "split_api_version"]


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> (``""``, ``v1``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """Where a kind keeps the numbers the ``/scale`` subresource shows (dotted JSON paths)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = ".status.selector"
    # A built-in whose ``spec.selector`` is a plain label map (core/v1 ReplicationController), not a
    # LabelSelector: its Scale shows ``labels.SelectorFromSet`` of it.
    selector_is_map: bool = False


ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    scale: ScalePaths | None = None
    tracks_generation: bool = False
    # Deployment counts annotation changes as spec changes (k/k deployment strategy).
    generation_includes_annotations: bool = False
    allow_unconditional_update: bool = True
    allow_create_on_update: bool = False
    return_deleted_object: bool = False
    # The kind's DefaultGarbageCollectionPolicy is OrphanDependents: a delete that names no policy (and
    # finds no GC finalizer) orphans the dependents (core/v1 ReplicationControllers, for compatibility).
    orphans_by_default: bool = False
    # Field selectors beyond metadata.name / metadata.namespace (dotted paths into the object).
    field_selectors: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # Custom resources answer 415 to strategic merge patch and validate against a schema.
    custom: bool = False
    extra_subresources: tuple[str, ...] = ()
    storage_version: str | None = field(default=None, compare=False)
    # A CRD's ``spec.names.listKind`` (the kind of its lists); empty: ``<Kind>List``.
    custom_list_kind: str = ""
    # ``group/version`` (the version alone for the core group), derived once: every write and answer reads it.
    api_version: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "api_version", f"{self.group}/{self.version}" if self.group else self.version)

    @property
    def list_kind(self) -> str:
        """The kind of a list of this resource: ``<Kind>List``, or a CRD's ``names.listKind``
        (apiextensions-apiserver's ``crdHandler`` serves lists under the accepted ``listKind``)."""
        return self.custom_list_kind or f"{self.kind}List"

    @property
    def group_resource(self) -> str:
        """``deployments.apps`` (``pods`` for the core group): the name used in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def subresources(self) -> tuple[str, ...]:
        subs: list[str] = []
        if self.status_subresource:
            subs.append("status")
        if self.scale is not None:
            subs.append("scale")
        subs.extend(self.extra_subresources)
        return tuple(subs)

    def base_path(self, namespace: str | None = None) -> str:
        """The collection URL, e.g. ``/apis/apps/v1/namespaces/ns/deployments``."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"


def _r(group: str, version: str, kind: str, plural: str, namespaced: bool, **kw: object) -> ResourceInfo:
    return ResourceInfo(group, version, kind, plural, kind.lower(), namespaced, **kw)  # type: ignore[arg-type]


_REPLICAS = ScalePaths()

BUILTIN_RESOURCES: tuple[ResourceInfo, ...] = (
    # Namespace storage has no DeleteCollection (upstream discovery: namespaces verbs lack deletecollection).
    _r("", "v1", "Namespace", "namespaces", False, short_names=("ns",), status_subresource=True,
       field_selectors=("status.phase",), extra_subresources=("finalize",),
       verbs=tuple(v for v in ALL_VERBS if v != "deletecollection")),
    _r("", "v1", "Pod", "pods", True, short_names=("po",), categories=("all",), status_subresource=True,
       return_deleted_object=True,
       extra_subresources=("eviction", "binding", "ephemeralcontainers", "log", "exec", "attach", "portforward",
                          "proxy"),
       field_selectors=("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName")),
    _r("", "v1", "ConfigMap", "configmaps", True, short_names=("cm",)),
    _r("", "v1", "Secret", "secrets", True, field_selectors=("type",)),
    _r("", "v1", "ServiceAccount", "serviceaccounts", True, short_names=("sa",), return_deleted_object=True,
       extra_subresources=("token",)),
    _r("", "v1", "Service", "services", True, short_names=("svc",), categories=("all",), status_subresource=True,
       extra_subresources=("proxy",)),
    _r("", "v1", "Endpoints", "endpoints", True, short_names=("ep",)),
    _r("", "v1", "Node", "nodes", False, short_names=("no",), status_subresource=True,
       field_selectors=("spec.unschedulable",), extra_subresources=("proxy",)),
    _r("", "v1", "Event", "events", True, short_names=("ev",), allow_create_on_update=True,
       field_selectors=("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")),
    _r("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, short_names=("pvc",),
       status_subresource=True),
    _r("", "v1", "PersistentVolume", "persistentvolumes", False, short_names=("pv",), status_subresource=True),
    # pkg/registry/core/limitrange and resourcequota (short names from their storage's ShortNames).
    _r("", "v1", "LimitRange", "limitranges", True, short_names=("limits",)),
    _r("", "v1", "ResourceQuota", "resourcequotas", True, short_names=("quota",), status_subresource=True),
    # pkg/registry/core/podtemplate: no short name or category; generation 1, moved by template changes.
    _r("", "v1", "PodTemplate", "podtemplates", True, tracks_generation=True),
    # pkg/registry/core/replicationcontroller: short name "rc", category "all", /status and /scale,
    # field selector status.replicas, DefaultGarbageCollectionPolicy OrphanDependents for core/v1.
    _r("", "v1", "ReplicationController", "replicationcontrollers", True, short_names=("rc",), categories=("all",),
       status_subresource=True, scale=ScalePaths(selector_is_map=True), tracks_generation=True,
       field_selectors=("status.replicas",), orphans_by_default=True),
    _r("apps", "v1", "Deployment", "deployments", True, short_names=("deploy",), categories=("all",),
       status_subresource=True, scale=_REPLICAS, tracks_generation=True, generation_includes_annotations=True),
    _r("apps", "v1", "ReplicaSet", "replicasets", True, short_names=("rs",), categories=("all",),
       status_subresource=True, scale=_REPLICAS, tracks_generation=True),
    _r("apps", "v1", "StatefulSet", "statefulsets", True, short_names=("sts",), categories=("all",),
       status_subresource=True, scale=_REPLICAS, tracks_generation=True),
    # pkg/registry/apps/daemonset/storage: short name "ds", category "all", generation bumped on spec changes.
    _r("apps", "v1", "DaemonSet", "daemonsets", True, short_names=("ds",), categories=("all",),
       status_subresource=True, tracks_generation=True),
    _r("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    # pkg/registry/batch/job: no short name, category "all", generation bumped on spec changes.
    _r("batch", "v1", "Job", "jobs", True, categories=("all",), status_subresource=True, tracks_generation=True),
    # pkg/registry/batch/cronjob/storage: short name "cj", category "all"; generation bumped on spec changes.
    _r("batch", "v1", "CronJob", "cronjobs", True, short_names=("cj",), categories=("all",), status_subresource=True,
       tracks_generation=True),
    # pkg/registry/autoscaling/horizontalpodautoscaler/storage: short name "hpa", category "all", no generation
    # kept by the strategy. v2 is the preferred and storage version (v1: OTHER_VERSIONS).
    _r("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, short_names=("hpa",),
       categories=("all",), status_subresource=True),
    _r("coordination.k8s.io", "v1", "Lease", "leases", True, allow_unconditional_update=False,
       allow_create_on_update=True),
    _r("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, short_names=("pdb",),
       status_subresource=True, tracks_generation=True),
    _r("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, short_names=("sc",),
       return_deleted_object=True),
    # pkg/registry/scheduling/priorityclass: generation 1 on create, kept on update (its own strategy).
    _r("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, short_names=("pc",)),
    # pkg/registry/admissionregistration/{validating,mutating}webhookconfiguration: category api-extensions,
    # generation 1 on create and bumped when ``webhooks`` change (their own strategy).
    _r("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
       False, categories=("api-extensions",)),
    _r("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
       False, categories=("api-extensions",)),
    _r("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
       short_names=("crd", "crds"), status_subresource=True, tracks_generation=True,
       allow_unconditional_update=False),
    # pkg/registry/admissionregistration/validatingadmissionpolicy{,binding}: category api-extensions; the
    # policy's generation moves with its spec and its status is a subresource (the status controller's).
    _r("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False,
       categories=("api-extensions",), status_subresource=True, tracks_generation=True),
    _r("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
       False, categories=("api-extensions",), tracks_generation=True),
    _r("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),
    # pkg/registry/networking/{ingress,ingressclass,networkpolicy}: short names "ing" and "netpol" (none for
    # IngressClass), no category; generation 1 on create and bumped on spec changes; only Ingress has /status
    # (NetworkPolicy's status went with the NetworkPolicyStatus gate in 1.28).
    _r("networking.k8s.io", "v1", "Ingress", "ingresses", True, short_names=("ing",), status_subresource=True,
       tracks_generation=True),
    _r("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False, tracks_generation=True),
    _r("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, short_names=("netpol",),
       tracks_generation=True),
    _r("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    _r("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
)

# Built-in kinds also served at a version other than their preferred one, through a conversion of the stored
# object: served and discovered, but not another kind to list, watch, count or collect (BUILTIN_RESOURCES
# names each kind once). autoscaling/v1 HorizontalPodAutoscalers: kubeloop.server._hpa_v1, which keeps what v1
# cannot say in ``autoscaling.alpha.kubernetes.io`` annotations (k/k pkg/apis/autoscaling/v1/conversion.go).
OTHER_VERSIONS: tuple[ResourceInfo, ...] = (
    _r("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, short_names=("hpa",),
       categories=("all",), status_subresource=True),
)

# The reviews: create-only kinds that no storage holds (upstream's ``pkg/registry/authentication`` and
# ``pkg/registry/authorization`` REST storages answer a create and keep nothing). The security chain answers
# them (:mod:`kubeloop.server._authz_reviews`); discovery and the OpenAPI documents list them, routing does not.
REVIEW_RESOURCES: tuple[ResourceInfo, ...] = (
    _r("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False, verbs=("create",)),
    _r("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, verbs=("create",)),
    _r("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", True, verbs=("create",)),
    _r("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False, verbs=("create",)),
    _r("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False, verbs=("create",)),
    _r("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False, verbs=("create",)),
)


class KindRegistry:
    """Resources by (group, version, plural) and by (group, kind); CRDs add and remove theirs at run time."""

    def __init__(self, resources: Iterable[ResourceInfo] = (*BUILTIN_RESOURCES, *OTHER_VERSIONS),
                 reviews: Iterable[ResourceInfo] = REVIEW_RESOURCES) -> None:
        self._by_path: dict[tuple[str, str, str], ResourceInfo] = {}
        for info in resources:
            self.add(info)
        # Listed by group_versions and in_group_version (discovery, OpenAPI), never found by get (routing).
        self._reviews = tuple(reviews)

    def add(self, info: ResourceInfo) -> None:
        self._by_path[(info.group, info.version, info.plural)] = info

    def remove(self, group: str, version: str, plural: str) -> None:
        self._by_path.pop((group, version, plural), None)

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, group: str, kind: str, version: str | None = None) -> ResourceInfo | None:
        for info in self._by_path.values():
            if info.group == group and info.kind == kind and (version is None or info.version == version):
                return info
        return None

    def by_api_version(self, api_version: str, kind: str) -> ResourceInfo | None:
        group, version = split_api_version(api_version)
        return self.by_kind(group, kind, version)

    def group_versions(self) -> list[tuple[str, str]]:
        """Every served group and version (the reviews' too), in registration order."""
        seen: dict[tuple[str, str], None] = {}
        for info in (*self._by_path.values(), *self._reviews):
            seen.setdefault((info.group, info.version), None)
        return list(seen)

    def in_group_version(self, group: str, version: str) -> list[ResourceInfo]:
        """The resources discovery lists under ``group/version`` (the reviews too)."""
        return [i for i in (*self._by_path.values(), *self._reviews) if i.group == group and i.version == version]

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(list(self._by_path.values()))
