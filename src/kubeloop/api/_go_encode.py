"""A built-in object as upstream stores it: decoded into its Go struct, stored, then encoded back.

kube-apiserver decodes every built-in body into the kind's Go type (``sigs.k8s.io/json``, a fork of
``encoding/json``), stores it as protobuf (``--storage-media-type``'s default) and encodes the struct it
reads back, so what a client reads differs from what it sent in ways this module reproduces, from the
kind's OpenAPI schema and a few tables:

- :func:`drop_nulls`: a JSON ``null`` leaves a field at its Go zero value (``decodeState.literalStore``:
  null sets a map, slice, pointer or interface to nil and leaves anything else as it was). A field
  Go always writes then shows that zero value (see below); any other field is gone. A ``null`` map
  value or list item becomes the element's zero value (``{"a": null}`` labels read ``{"a": ""}``, a
  ResourceList's ``{"cpu": null}`` reads ``{"cpu": "0"}``); a ``[]byte`` element's nil is read back from
  the protobuf storage as an empty slice, ``""`` (a Secret's ``data``, a ConfigMap's ``binaryData``).
- :func:`fill_zero_fields`: ``encoding/json`` writes every field without ``omitempty`` (at its zero
  value: ``""``, ``0``, ``false``, or ``null`` for a nil slice, map or pointer) and every struct-typed
  value field even with ``omitempty``, which never drops a struct: ``{}`` with the struct's own
  always-written fields, ``null`` for a zero ``metav1.Time``/``MicroTime`` (apimachinery
  ``meta/v1/time.go`` ``Time.MarshalJSON``), ``"0"`` for a zero ``resource.Quantity`` and ``0`` for a
  zero ``IntOrString`` (:data:`_VALUE_SCALARS`). So a Deployment's pod template reads
  ``metadata: {creationTimestamp: null}`` (1.32; kubernetes/kubernetes#130989 dropped it in 1.33), a
  ``resourceFieldRef`` its ``divisor: "0"``.
- :mod:`kubeloop.api._go_empty` (from the ``walks`` built here): an empty list or map decodes to an empty slice or map, which the field manager's typing leaves out
  when ``omitempty`` (and sees when not), validation sees as sent, and the protobuf storage keeps no
  element of: it reads back nil, not written with ``omitempty`` (a container's ``env: []``, a
  template's ``annotations: {}``), ``null`` without (a Role's ``rules``, an EndpointSlice's
  ``endpoints``).
- :func:`strip_zero_fields` takes out, along the object's struct fields from the root (not inside
  list items or map values), the values that equal what the kind's empty object encodes there:
  upstream's field manager compares a create with that empty object (``handlers/create.go``:
  ``Creater.New``), so no manager owns them; inside list items (the empty object has none) the
  writer owns them, as a kubelet owns its pod conditions' ``lastProbeTime``. A create fills, strips,
  runs the field manager, then fills again; an update fills, runs the field manager against the live
  object (filled as it was stored: a field changed to its zero value is the writer's change, one left
  there nobody's), then fills again.

Where each fact comes from:

- *no omitempty*: a field the schema lists as ``required``. kube-openapi's generator makes a field
  optional when its comment says ``+optional`` *or* its JSON tag says ``omitempty``
  (``pkg/generators/openapi.go`` ``hasOptionalTag``), so a required field has no ``omitempty``. The
  fields written without ``omitempty`` but marked ``+optional`` are in :data:`_NOT_OMITEMPTY`.
- *value or pointer struct*: OpenAPI cannot tell. Every ``ObjectMeta`` field and every top-level
  ``spec`` and ``status`` of a kind (at the root or embedded, as a StatefulSet's claim templates) is a
  value in k8s.io/api; ``metav1.Time``/``MicroTime`` fields are values but for
  :data:`_POINTER_TIMES`; other value structs are in :data:`_VALUE_STRUCTS`. Each table row names its
  k8s.io/api release-1.32 ``types.go`` struct. A struct field in neither is a pointer: written only
  when sent. The tables cover the groups kubeloop serves (core, apps, batch, rbac, coordination,
  policy, scheduling, storage, apiextensions, autoscaling, discovery, networking).

The root object's own ``metadata`` is left to the write path, which sets its system fields (its empty
``managedFields`` asks the field manager for a reset). ``omitempty`` on a zero scalar (``minReadySeconds:
0``, ``paused: false``) is the decode walk's (:mod:`kubeloop.api._go_decode`, :attr:`Decoded.zeros`): OpenAPI
cannot tell an ``int32`` from an ``*int32`` (whose zero is written), so :mod:`kubeloop.api._go_pointers`
names the pointers, struct by struct; a struct it does not cover keeps its zeros as sent. Not reproduced:
the fills under a recursive struct (``JSONSchemaProps``) built while its own children are being built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._go_pointers import POINTER_SCALARS
from kubeloop.api._schemas import definitions

__all__ = ["GoEncoding", "drop_nulls", "fill_zero_fields", "go_encoding", "strip_zero_fields"]

_REF = "#/$defs/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_TIMES = frozenset({"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"})
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

# Fields written without omitempty though OpenAPI calls them optional (``+optional`` comment, bare
# JSON tag), by (definition's short name, field).
_NOT_OMITEMPTY = frozenset({
    ("Event", "reportingComponent"),  # core/v1 Event: ReportingController `json:"reportingComponent"`
    ("Event", "reportingInstance"),  # core/v1 Event: ReportingInstance `json:"reportingInstance"`
    ("Role", "rules"),  # rbac/v1 Role: Rules []PolicyRule `json:"rules"`
    ("ClusterRole", "rules"),  # rbac/v1 ClusterRole: Rules []PolicyRule `json:"rules"`
    ("EndpointSlice", "ports"),  # discovery/v1 EndpointSlice: Ports []EndpointPort `json:"ports"`
    ("StatefulSetOrdinals", "start"),  # apps/v1 StatefulSetOrdinals: Start int32 `json:"start"`
    ("StatefulSetStatus", "availableReplicas"),  # apps/v1 StatefulSetStatus: AvailableReplicas int32 `json:"availableReplicas"`
    # Optional pointers without omitempty: ``null`` when unset (their rows in _go_pointers.POINTER_SCALARS say
    # pointer, so their zero here is ``null``, not the value's zero).
    ("GRPCAction", "service"),  # core/v1 GRPCAction: Service *string `json:"service"`
    ("TypedLocalObjectReference", "apiGroup"),  # core/v1: APIGroup *string `json:"apiGroup"`
    ("TypedObjectReference", "apiGroup"),  # core/v1: APIGroup *string `json:"apiGroup"`
    ("AzureFilePersistentVolumeSource", "secretNamespace"),  # core/v1: SecretNamespace *string `json:"secretNamespace"`
    ("PodFailurePolicyOnExitCodesRequirement", "containerName"),  # batch/v1: ContainerName *string `json:"containerName"`
    ("PodFailurePolicyRule", "onExitCodes"),  # batch/v1: OnExitCodes *PodFailurePolicyOnExitCodesRequirement `json:"onExitCodes"`
    # Optional slices without omitempty: ``null`` when nil or empty (an empty one is stored as nil).
    ("PodFailurePolicyRule", "onPodConditions"),  # batch/v1: OnPodConditions []... `json:"onPodConditions"`
    ("ContainerImage", "names"),  # core/v1 ContainerImage: Names []string `json:"names"`
    ("ProjectedVolumeSource", "sources"),  # core/v1 ProjectedVolumeSource: Sources []VolumeProjection `json:"sources"`
    ("CustomResourceDefinitionStatus", "conditions"),  # apiextensions/v1: Conditions []... `json:"conditions"`
    ("CustomResourceDefinitionStatus", "storedVersions"),  # apiextensions/v1: StoredVersions []string `json:"storedVersions"`
})

# metav1.Time / MicroTime fields that are pointers (omitted when unset), by (struct, field).
_POINTER_TIMES = frozenset({
    ("ObjectMeta", "deletionTimestamp"),  # meta/v1 ObjectMeta: *Time
    ("ManagedFieldsEntry", "time"),  # meta/v1 ManagedFieldsEntry: *Time
    ("PodStatus", "startTime"),  # core/v1 PodStatus: StartTime *metav1.Time
    ("Taint", "timeAdded"),  # core/v1 Taint: TimeAdded *metav1.Time
    ("PersistentVolumeStatus", "lastPhaseTransitionTime"),  # core/v1: *metav1.Time
    ("JobStatus", "startTime"), ("JobStatus", "completionTime"),  # batch/v1 JobStatus: *metav1.Time
    ("CronJobStatus", "lastScheduleTime"), ("CronJobStatus", "lastSuccessfulTime"),  # batch/v1: *metav1.Time
    ("LeaseSpec", "acquireTime"), ("LeaseSpec", "renewTime"),  # coordination/v1 LeaseSpec: *metav1.MicroTime
    ("HorizontalPodAutoscalerStatus", "lastScaleTime"),  # autoscaling/v2: *metav1.Time
})

# Struct fields that are Go values (not pointers) besides ObjectMeta, times and top-level spec/status.
_VALUE_STRUCTS = frozenset({
    ("PodTemplateSpec", "spec"),  # core/v1 PodTemplateSpec: Spec PodSpec
    ("PodTemplate", "template"),  # core/v1 PodTemplate: Template PodTemplateSpec (ReplicationControllerSpec's is a pointer)
    ("PersistentVolumeClaimTemplate", "spec"),  # core/v1: Spec PersistentVolumeClaimSpec
    ("Container", "resources"),  # core/v1 Container: Resources ResourceRequirements
    ("EphemeralContainer", "resources"),  # core/v1 EphemeralContainerCommon: Resources ResourceRequirements
    ("ContainerStatus", "state"), ("ContainerStatus", "lastState"),  # core/v1 ContainerStatus: ContainerState
    ("NodeStatus", "daemonEndpoints"),  # core/v1 NodeStatus: DaemonEndpoints NodeDaemonEndpoints
    ("NodeStatus", "nodeInfo"),  # core/v1 NodeStatus: NodeInfo NodeSystemInfo
    ("NodeDaemonEndpoints", "kubeletEndpoint"),  # core/v1: KubeletEndpoint DaemonEndpoint
    ("ServiceStatus", "loadBalancer"),  # core/v1 ServiceStatus: LoadBalancer LoadBalancerStatus
    ("PersistentVolumeClaimSpec", "resources"),  # core/v1: Resources VolumeResourceRequirements
    ("Event", "source"),  # core/v1 Event: Source EventSource
    ("Event", "involvedObject"),  # core/v1 Event: InvolvedObject ObjectReference
    ("Binding", "target"),  # core/v1 Binding: Target ObjectReference
    ("WeightedPodAffinityTerm", "podAffinityTerm"),  # core/v1: PodAffinityTerm PodAffinityTerm
    ("PreferredSchedulingTerm", "preference"),  # core/v1: Preference NodeSelectorTerm
    ("DeploymentSpec", "template"), ("DeploymentSpec", "strategy"),  # apps/v1 DeploymentSpec
    ("ReplicaSetSpec", "template"),  # apps/v1 ReplicaSetSpec: Template v1.PodTemplateSpec
    ("StatefulSetSpec", "template"), ("StatefulSetSpec", "updateStrategy"),  # apps/v1 StatefulSetSpec
    ("DaemonSetSpec", "template"), ("DaemonSetSpec", "updateStrategy"),  # apps/v1 DaemonSetSpec
    ("JobSpec", "template"),  # batch/v1 JobSpec: Template corev1.PodTemplateSpec
    ("CronJobSpec", "jobTemplate"),  # batch/v1 CronJobSpec: JobTemplate JobTemplateSpec
    ("JobTemplateSpec", "spec"),  # batch/v1 JobTemplateSpec: Spec JobSpec
    ("RoleBinding", "roleRef"), ("ClusterRoleBinding", "roleRef"),  # rbac/v1: RoleRef RoleRef
    ("Endpoint", "conditions"),  # discovery/v1 Endpoint: Conditions EndpointConditions `json:"conditions,omitempty"`
    # networking/v1: NetworkPolicySpec.PodSelector metav1.LabelSelector `json:"podSelector"`, HTTPIngressPath.Backend
    # IngressBackend, IngressServiceBackend.Port ServiceBackendPort `json:"port,omitempty"`, IngressStatus.LoadBalancer
    # IngressLoadBalancerStatus `json:"loadBalancer,omitempty"`.
    ("NetworkPolicySpec", "podSelector"), ("HTTPIngressPath", "backend"), ("IngressServiceBackend", "port"),
    ("IngressStatus", "loadBalancer"),
    ("VolumeAttachmentSpec", "source"),  # storage/v1 VolumeAttachmentSpec: Source VolumeAttachmentSource
    ("CustomResourceDefinitionSpec", "names"),  # apiextensions/v1: Names CustomResourceDefinitionNames
    ("CustomResourceDefinitionStatus", "acceptedNames"),  # apiextensions/v1: AcceptedNames (a value)
    ("HorizontalPodAutoscalerSpec", "scaleTargetRef"),  # autoscaling/v2: CrossVersionObjectReference
    # autoscaling/v2 metric sources and statuses: Target MetricTarget, Current MetricValueStatus,
    # Metric MetricIdentifier, DescribedObject CrossVersionObjectReference (values).
    *((struct, field) for struct in ("ContainerResourceMetricSource", "ResourceMetricSource") for field in ("target",)),
    *((struct, field) for struct in ("ContainerResourceMetricStatus", "ResourceMetricStatus") for field in ("current",)),
    *((struct, field) for struct in ("ExternalMetricSource", "PodsMetricSource") for field in ("metric", "target")),
    *((struct, field) for struct in ("ExternalMetricStatus", "PodsMetricStatus") for field in ("metric", "current")),
    ("ObjectMetricSource", "describedObject"), ("ObjectMetricSource", "target"), ("ObjectMetricSource", "metric"),
    ("ObjectMetricStatus", "describedObject"), ("ObjectMetricStatus", "current"), ("ObjectMetricStatus", "metric"),
})

# intstr.IntOrString and resource.Quantity fields that are Go values, not pointers, by (struct, field),
# with their zero's encoding: ``omitempty`` never drops a struct, and a zero IntOrString (Type Int, IntVal 0)
# marshals as ``0`` (apimachinery ``util/intstr/intstr.go`` ``IntOrString.MarshalJSON``), a zero Quantity as
# ``"0"`` (``api/resource/quantity.go`` ``Quantity.MarshalJSON``: ``q.String()`` of zero). Every other
# IntOrString or Quantity field of the served groups is a pointer (``*intstr.IntOrString``: the rolling
# update bounds, PodDisruptionBudgetSpec's; ``*resource.Quantity``: EmptyDirVolumeSource.SizeLimit,
# autoscaling/v2 MetricTarget's and MetricValueStatus's, CSIStorageCapacity's).
_VALUE_SCALARS: dict[tuple[str, str], Any] = {
    ("HTTPGetAction", "port"): 0,  # core/v1 HTTPGetAction: Port intstr.IntOrString `json:"port"`
    ("TCPSocketAction", "port"): 0,  # core/v1 TCPSocketAction: Port intstr.IntOrString `json:"port"`
    ("ServicePort", "targetPort"): 0,  # core/v1 ServicePort: TargetPort intstr.IntOrString `json:"targetPort,omitempty"`
    ("ResourceFieldSelector", "divisor"): "0",  # core/v1: Divisor resource.Quantity `json:"divisor,omitempty"`
}

# Collections whose empty value is not the Go round trip's to drop: an empty ``managedFields`` in a body
# asks the field manager to reset the entries (apiserver ``fieldmanager``), so the write path reads it.
_KEPT_EMPTY = frozenset({("ObjectMeta", "managedFields")})

# Shapes of a field's value the walks descend into.
_STRUCT, _LIST, _MAP = 1, 2, 3
# What an empty collection field's stored form is: not written (``omitempty``), or ``null``.
_OMITTED, _NULLED = 1, 2


class GoEncoding:
    """One Go struct's encoding facts, built once per definition (lazily: schemas are recursive).

    ``always``: the fields Go always writes, with their zero (a scalar, or the struct's
    :class:`GoEncoding` for a value struct). ``nested``: every field whose value holds structs, with its
    shape and struct; ``scalars``: the zero of each other collection's element (lists and maps of strings,
    numbers, bools, quantities; ``None`` where a ``null`` item stays), for a ``null`` item; ``nils``: the
    always-written collections (``null`` when empty). ``walks`` by field, for the null and empty walks:
    (shape, struct or ``None``, an item's zero, what an empty value becomes: 0 kept, ``_OMITTED``,
    ``_NULLED``). ``fills``: the ``always`` fields plus
    the collections and nested ones under which something is filled (the fill walk follows only these);
    ``strips``: the ``always`` ones."""

    __slots__ = ("always", "defname", "fills", "known", "nested", "nils", "scalars", "strips", "walks")

    def __init__(self, defname: str) -> None:
        self.defname = defname
        self.known: frozenset[str] = frozenset()
        self.always: dict[str, Any] = {}
        self.nested: dict[str, tuple[int, GoEncoding]] = {}
        self.scalars: dict[str, tuple[int, Any]] = {}
        self.nils: frozenset[str] = frozenset()
        self.fills: tuple[tuple[str, int, Any], ...] = ()
        self.strips: tuple[tuple[str, Any], ...] = ()
        self.walks: dict[str, tuple[int, GoEncoding | None, Any, int]] = {}


# By definition name; a kind's root encoding (its own metadata left out) apart from the same struct
# met as a field (a StatefulSet's claim templates are PersistentVolumeClaims).
_encodings: dict[str, GoEncoding] = {}
_roots: dict[str, GoEncoding] = {}


def go_encoding(defname: str) -> GoEncoding:
    """The encoding facts of the kind of OpenAPI definition ``defname`` (callers may keep it)."""
    enc = _roots.get(defname)
    if enc is None:
        enc = _roots[defname] = GoEncoding(defname)
        _build(enc, root=True)
    return enc


def _child(defname: str) -> GoEncoding:
    enc = _encodings.get(defname)
    if enc is None:
        enc = _encodings[defname] = GoEncoding(defname)
        _build(enc, root=False)
    return enc


def _ref(node: Mapping[str, Any]) -> str | None:
    ref = node.get("$ref")
    return ref[len(_REF):] if isinstance(ref, str) and ref.startswith(_REF) else None


def _is_struct(defname: str) -> bool:
    node = definitions().get(defname) or {}
    return isinstance(node.get("properties"), dict) and defname not in _TIMES


def _scalar_zero(node: Mapping[str, Any]) -> tuple[bool, Any]:
    """(whether ``node`` is a plain scalar, its Go zero)."""
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    if "string" in kinds:
        return True, None if node.get("format") == "byte" else ""  # []byte is a nil slice
    if "integer" in kinds or "number" in kinds:
        return True, 0
    if "boolean" in kinds:
        return True, False
    return False, None


def _build(enc: GoEncoding, *, root: bool) -> None:
    node = definitions().get(enc.defname) or {}
    short = enc.defname.rpartition(".")[2]
    props = node.get("properties")
    required = set(node.get("required") or ()) if isinstance(node.get("required"), list) else set()
    top = bool(node.get("x-kubernetes-group-version-kind"))  # a kind, at the root or embedded
    enc.known = frozenset(props) if isinstance(props, dict) else frozenset()
    nils: set[str] = set()
    for key, sub in (props.items() if isinstance(props, dict) else ()):
        if not isinstance(sub, Mapping):
            continue
        ref = _ref(sub)
        if root and key == "metadata":  # the write path's: nulls go, nothing is filled
            if ref is not None:
                enc.nested[key] = (_STRUCT, _child(ref))
            continue
        always = key in required or (short, key) in _NOT_OMITEMPTY
        if (short, key) in _VALUE_SCALARS:  # an IntOrString or Quantity value: never dropped
            enc.always[key] = _VALUE_SCALARS[short, key]
            continue
        if ref is not None and ref in _TIMES:
            if always or (short, key) not in _POINTER_TIMES:
                enc.always[key] = None
            continue
        if ref is not None and _is_struct(ref):
            child = _child(ref)
            enc.nested[key] = (_STRUCT, child)
            if ref == _META or (short, key) in _VALUE_STRUCTS or (top and key in ("spec", "status")):
                enc.always[key] = child
            elif always:
                enc.always[key] = None  # a nil pointer without omitempty
            continue
        kinds = sub.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
        if "array" in kinds or ("object" in kinds and isinstance(sub.get("additionalProperties"), Mapping)):
            shape = _LIST if "array" in kinds else _MAP
            elem = sub.get("items") if shape == _LIST else sub.get("additionalProperties")
            elem_ref = _ref(elem) if isinstance(elem, Mapping) else None
            if elem_ref is not None and _is_struct(elem_ref):
                enc.nested[key] = (shape, _child(elem_ref))
            elif isinstance(elem, Mapping):
                plain, zero = _scalar_zero(elem)
                if elem.get("format") == "byte":
                    # A null []byte element decodes to nil, which the protobuf storage reads back as an
                    # empty slice (gogo's Unmarshal starts a map<string, bytes> value at ``[]byte{}``):
                    # ``""`` (a Secret's ``data: {a: null}`` reads ``{a: ""}``).
                    zero = ""
                # A null item is the element's zero: a scalar's, a time's (null), a quantity's ("0");
                # anything else (raw JSON) stays as it is.
                enc.scalars[key] = (shape, zero if plain or elem_ref in _TIMES else "0" if elem_ref == _QUANTITY
                                    else None)
            else:
                enc.scalars[key] = (shape, None)
            if always:
                enc.always[key] = None  # a nil slice or map
                nils.add(key)
            continue
        if always and ref is None:
            plain, zero = _scalar_zero(sub)
            if plain:
                # A pointer (GRPCAction's *string service) is nil when unset: ``null``, not the value's zero.
                enc.always[key] = None if key in POINTER_SCALARS.get(enc.defname, ()) else zero
    enc.nils = frozenset(nils)
    _settle(enc)


def _settle(enc: GoEncoding) -> None:
    """``fills``, ``strips`` and ``walks``, once the children exist (a child being built has none yet:
    recursive types, which hold no value struct of their own type, are complete without)."""
    fills: list[tuple[str, int, Any]] = []
    strips: list[tuple[str, Any]] = []
    nils = enc.nils
    for key, zero in enc.always.items():
        fills.append((key, 0, zero))
        strips.append((key, zero))
    for key, (shape, child) in enc.nested.items():
        # A value struct's own fields are filled through its ``always`` entry; an always-written list or
        # pointer holds structs to fill as any other does (an EndpointSlice's endpoints' conditions).
        if type(enc.always.get(key)) is not GoEncoding and key != "metadata" and _fills_something(child):
            fills.append((key, shape, child))
    enc.fills, enc.strips = tuple(fills), tuple(strips)
    short = enc.defname.rpartition(".")[2]
    walks: dict[str, tuple[int, GoEncoding | None, Any, int]] = {}
    for key, (shape, child) in enc.nested.items():
        walks[key] = (shape, child, child, _empty_form(short, key, nils) if shape != _STRUCT else 0)
    for key, (shape, zero) in enc.scalars.items():
        walks[key] = (shape, None, zero, _empty_form(short, key, nils))
    enc.walks = walks


def _empty_form(short: str, key: str, nils: frozenset[str]) -> int:
    """What becomes of a collection field left empty: kept as it is, not written, or written ``null``."""
    return 0 if (short, key) in _KEPT_EMPTY else _NULLED if key in nils else _OMITTED


def _fills_something(enc: GoEncoding, seen: frozenset[str] = frozenset()) -> bool:
    if enc.always:
        return True
    if enc.defname in seen:
        return False
    seen = seen | {enc.defname}
    return any(_fills_something(child, seen) for _, child in enc.nested.values())


def _zero(zero: Any) -> Any:
    """A fresh copy of a field's zero encoding."""
    if type(zero) is GoEncoding:
        return {key: _zero(value) for key, value in zero.always.items()}
    return zero


def drop_nulls(obj: dict[str, Any], enc: GoEncoding) -> None:
    """Replace every JSON ``null`` of ``obj`` as the typed decode and encode do (in place). Walks the
    object's own keys (fewer than its struct's fields), descending where a field holds structs."""
    nulls: list[str] | None = None
    walks = enc.walks
    for key, value in obj.items():
        if value is None:
            if nulls is None:
                nulls = [key]
            else:
                nulls.append(key)
            continue
        walk = walks.get(key)
        if walk is None:
            continue
        shape, child, zero, _ = walk
        if shape == _STRUCT:
            if child is not None and type(value) is dict:
                drop_nulls(value, child)
        elif shape == _LIST:
            if type(value) is list:
                for index, item in enumerate(value):
                    if item is None:
                        value[index] = _zero(zero)
                    elif child is not None and type(item) is dict:
                        drop_nulls(item, child)
        elif type(value) is dict:
            for name, item in value.items():
                if item is None:
                    value[name] = _zero(zero)
                elif child is not None and type(item) is dict:
                    drop_nulls(item, child)
    if nulls is not None:
        for key in nulls:
            if key in enc.always:
                obj[key] = _zero(enc.always[key])  # a fresh zero: its nulls are zero times
            elif key in enc.known:
                del obj[key]


def fill_zero_fields(obj: dict[str, Any], enc: GoEncoding) -> None:
    """Add every field Go writes at its zero value that ``obj`` lacks (or holds as ``null``), at any
    depth: struct fields, list items and map values alike (in place)."""
    for key, shape, zero in enc.fills:
        if not shape:
            value = obj.get(key)
            if value is None:
                obj[key] = _zero(zero)
            elif type(zero) is GoEncoding and type(value) is dict:
                fill_zero_fields(value, zero)
            continue
        value = obj.get(key)
        if shape == _STRUCT:
            if type(value) is dict:
                fill_zero_fields(value, zero)
        elif shape == _LIST:
            if type(value) is list:
                for item in value:
                    if type(item) is dict:
                        fill_zero_fields(item, zero)
        elif type(value) is dict:
            for item in value.values():
                if type(item) is dict:
                    fill_zero_fields(item, zero)


def strip_zero_fields(obj: dict[str, Any], enc: GoEncoding) -> None:
    """Remove, along struct fields from the root, every value that equals the empty object's there
    (an always-written field at its zero, a value struct that holds nothing else) (in place)."""
    for key, zero in enc.strips:
        if key not in obj:
            continue
        value = obj[key]
        if type(zero) is GoEncoding:
            if type(value) is dict:
                strip_zero_fields(value, zero)
                if not value:
                    del obj[key]
        elif value == zero and type(value) is type(zero):
            del obj[key]
