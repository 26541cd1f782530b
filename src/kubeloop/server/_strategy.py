"""Per-kind registry strategies: what upstream's ``pkg/registry/<group>/<kind>/strategy.go`` decide.

A :class:`Strategy` answers, for one kind, the questions the generic write path asks: what to reset
on create (status for kinds with a status subresource), what an update through the main resource or
through ``/status`` may change, when ``generation`` moves, which name rule applies, whether a delete
is graceful, and when an update should delete the object. :class:`GenericStrategy` covers most kinds
from the switches on :class:`~kubeloop.api.ResourceInfo`; the few kinds with their own rules (Pod,
Namespace, Service) subclass it. Every hook works on plain JSON dicts in place; none copies.

Sources (k/k master): ``pkg/registry/core/{pod,namespace,service,persistentvolume,
persistentvolumeclaim}/strategy.go``, ``pkg/registry/apps/{deployment,replicaset,statefulset,daemonset}/
strategy.go``, ``pkg/registry/batch/job/strategy.go``, ``staging/.../customresource/strategy.go``, apiserver ``pkg/registry/rest``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from kubeloop.api import BadRequest, Clock, FieldError, ResourceInfo, SystemClock, format_time
from kubeloop.api._daemonset_validation import (
    validate_daemonset,
    validate_daemonset_status_update,
    validate_daemonset_update,
)
from kubeloop.api._deployment_validation import (
    validate_deployment,
    validate_deployment_status_update,
    validate_deployment_update,
    validate_replicaset,
    validate_replicaset_status_update,
    validate_replicaset_update,
)
from kubeloop.api._job_validation import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    validate_job,
    validate_job_status_update,
    validate_job_update,
)
from kubeloop.api._pod_create_mutations import (
    apply_apparmor_version_skew,
    apply_scheduling_gated_condition,
    merge_pod_affinity_label_keys,
)
from kubeloop.api._pod_drop_disabled import drop_disabled_pod_fields, drop_disabled_template_fields
from kubeloop.api._pod_spec_validation import validate_pod_create, validate_pod_template
from kubeloop.api._pod_update_validation import validate_pod_status_update
from kubeloop.api._pod_warnings import pod_template_warnings, pod_warnings
from kubeloop.api._pv_validation import validate_persistent_volume, validate_persistent_volume_update
from kubeloop.api._pvc_data_source import prepare_claim_data_sources
from kubeloop.api._pvc_validation import (
    validate_persistent_volume_claim,
    validate_persistent_volume_claim_status_update,
    validate_persistent_volume_claim_update,
)
from kubeloop.api._quantity import QuantityError, parse_quantity
from kubeloop.api._quantity_fields import QuantityFields, quantities_by_value, quantity_fields
from kubeloop.api._statefulset_validation import (
    validate_statefulset,
    validate_statefulset_status_update,
    validate_statefulset_update,
)
from kubeloop.api._storage_warnings import (
    persistent_volume_claim_warnings,
    persistent_volume_warnings,
    statefulset_warnings,
)
from kubeloop.api._validation import (
    is_dns1123_label,
    name_is_dns1123_label,
    name_is_dns1123_subdomain,
)
from kubeloop.server._defaults import apply_defaults
from kubeloop.server._pod_update import validate_pod_main_update

__all__ = ["GenericStrategy", "NamespaceStrategy", "PodStrategy", "Strategy", "decode_quantities", "strategy_for"]

# (object, the stored object on update or None, the request's warnings) -> what is wrong with it.
Validator = Callable[[dict[str, Any], dict[str, Any] | None, list[str]], list[FieldError]]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


class GenericStrategy:
    """The rules every kind shares, switched by its :class:`ResourceInfo`."""

    name_validator: Callable[[str, bool], list[str]] = staticmethod(name_is_dns1123_subdomain)
    # The status a freshly created object shows (Go zero values that are not omitempty).
    empty_status: dict[str, Any] | None = {}
    # Whether warnings_on_create / warnings_on_update may say anything: most kinds' never do, and the
    # write path then skips the calls.
    warns = False
    # Whether prepare_identity has work: only kinds whose PrepareForCreate reads the new object's uid
    # and generated name (upstream fills them before the strategy runs); the write path tests this flag.
    needs_identity = False
    # Whether the write path calls begin_create / begin_update (storage hooks that allocate: Services).
    allocates = False

    def __init__(self, info: ResourceInfo) -> None:
        self.info = info

    # -- create ---------------------------------------------------------------------------------
    def prepare_for_create(self, obj: dict[str, Any]) -> list[str] | None:
        """PrepareForCreate; the texts of any ``Warning`` it records (upstream's ctx recorder) are returned."""
        info = self.info
        if info.status_subresource:
            if info.custom or self.empty_status is None:
                obj.pop("status", None)
            else:
                obj["status"] = dict(self.empty_status)
        meta = obj.get("metadata")
        if type(meta) is not dict:  # _meta's test first: the write path has made it a dict (a call less)
            meta = _meta(obj)
        if info.tracks_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        return None

    def prepare_identity(self, obj: dict[str, Any]) -> None:
        """The part of ``PrepareForCreate`` that reads ``metadata.uid`` and the (generated) name: called
        once the write path has set them, before validation (only when :attr:`needs_identity`)."""

    # -- update ---------------------------------------------------------------------------------
    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Main-resource update: status is kept from ``old`` when the kind has a status subresource."""
        if self.info.status_subresource:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        self._bump_generation(new, old)

    def prepare_for_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        """``/status`` update: everything but status (and metadata edits built-ins allow) from ``old``.

        Built-ins keep the request's metadata except the fields validation would protect; custom
        resources keep nothing but ``status`` (customresource status_strategy.go).
        """
        result = {k: v for k, v in old.items() if k != "status"}
        if "status" in new:
            result["status"] = new["status"]
        if not self.info.custom:
            new_meta = dict(_meta(new))
            old_meta = _meta(old)
            for key in ("generation", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
                if key in old_meta:
                    new_meta[key] = old_meta[key]
                else:
                    new_meta.pop(key, None)
            result["metadata"] = new_meta
        else:
            result["metadata"] = dict(_meta(old))
            for key in ("resourceVersion", "uid"):
                if key in _meta(new):
                    result["metadata"][key] = _meta(new)[key]
                elif key == "resourceVersion":
                    result["metadata"].pop(key, None)
        return result

    def _spec_changed(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        if self.info.custom:
            skip = {"metadata", "status"} if self.info.status_subresource else {"metadata"}
            keys = (set(new) | set(old)) - skip - {"apiVersion", "kind"}
            return any(new.get(k) != old.get(k) for k in keys)
        if new.get("spec") != old.get("spec"):
            return True
        if self.info.generation_includes_annotations:
            return _meta(new).get("annotations") != _meta(old).get("annotations")
        return False

    def _bump_generation(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        old_generation = _meta(old).get("generation")
        if old_generation is None:
            _meta(new).pop("generation", None)
        else:
            _meta(new)["generation"] = old_generation
        if self.info.tracks_generation and self._spec_changed(new, old):
            _meta(new)["generation"] = int(old_generation or 0) + 1

    # -- storage hooks (only when ``allocates``) --------------------------------------------------
    async def begin_create(self, obj: dict[str, Any], *, dry_run: bool) -> Any:
        """store.go BeginCreate: something with ``finish()`` the write path calls once the create is
        stored or has failed, or ``None``."""
        return None

    async def begin_update(self, new: dict[str, Any], old: dict[str, Any], *, dry_run: bool) -> Any:
        """store.go BeginUpdate (main resource), finished like :meth:`begin_create`'s."""
        return None

    # -- validation -----------------------------------------------------------------------------
    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        """Kind-specific checks beyond ObjectMeta (the CRD helper adds schema validation here)."""
        return []

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        """The same checks on update (``subresource`` as in the URL, "" for the main resource)."""
        return self.validate(new)

    # -- warnings (rest.BeforeCreate / BeforeUpdate add them once validation has passed) ------------
    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        """``WarningsOnCreate``: texts for ``Warning`` headers of a valid create (only when ``warns``)."""
        return []

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        """``WarningsOnUpdate`` (of the status strategy for ``/status``), only when ``warns``."""
        return []

    # -- delete ---------------------------------------------------------------------------------
    def before_delete(self, name: str) -> None:
        """A DELETE of one object by name (not deletecollection) may be refused here, before anything is
        read: a registry's own ``Delete`` override upstream (PriorityClass's system classes)."""

    def graceful_period(self, obj: dict[str, Any], requested: int | None) -> int | None:
        """The grace period a delete should use, or ``None`` when the kind deletes immediately."""
        return None

    def should_delete_during_update(self, obj: dict[str, Any]) -> bool:
        """store.go ShouldDeleteDuringUpdate: deleting, no finalizers left, grace period zero."""
        meta = _meta(obj)
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return False
        grace = meta.get("deletionGracePeriodSeconds")
        return grace is None or grace == 0


def decode_quantities(info: ResourceInfo, obj: Any) -> None:
    """The typed decode of a create or update body (``_handlers``): a built-in kind's quantities made
    canonical in place, or 400 (handlers/rest.go transformDecodeError) for a bad one.

    Upstream decodes the body into the Go type, so a bad quantity anywhere in it (even in a part the
    write then discards, such as the status of a create) fails the request at decode, before any
    check of the write (namespace, name, resourceVersion) and before fieldValidation=Strict's
    unknown-field errors. Patches and server-side apply decode the patched object in their own way
    (:mod:`kubeloop.server._patching`)."""
    fields = None if info.custom else quantity_fields(info.group, info.kind)
    if fields is None or type(obj) is not dict:
        return
    try:
        fields(obj, True)
    except QuantityError as err:
        kind, version = info.kind, info.version
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {err}') from None


class _DecodesQuantities(GenericStrategy):
    """Kinds with ``resource.Quantity`` fields: every quantity in the canonical form the typed decode writes.

    A body's bad quantity was refused at decode (:func:`decode_quantities`, or the patch's own decode),
    so here the walk is lenient: it canonicalises what a retried attempt decoded afresh from the body's
    bytes, and the stored object, decoded as upstream decodes what it reads from etcd, so an object
    stored before canonical form compares by what it says, not how it was spelt
    (:mod:`kubeloop.api._quantity_fields`).
    """

    @property
    def _quantity_fields(self) -> QuantityFields:
        fields = quantity_fields(self.info.group, self.info.kind)
        assert fields is not None, self.info.kind
        return fields

    def prepare_for_create(self, obj: dict[str, Any]) -> list[str] | None:
        self._quantity_fields(obj, False)
        return super().prepare_for_create(obj)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        fields = self._quantity_fields
        fields(new, False)
        fields(old, False)
        super().prepare_for_update(new, old)

    def prepare_for_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        fields = self._quantity_fields
        fields(new, False)
        fields(old, False)
        return super().prepare_for_status_update(new, old)

    def _spec_changed(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        """The spec compared as ``apiequality.Semantic.DeepEqual`` compares it: Quantities by value, so
        ``1Gi`` written as ``1073741824`` (or ``1k`` as ``1e3``) is no new generation, though what is
        stored changes with the spelling. The copies are made only when the specs differ as JSON."""
        if not super()._spec_changed(new, old):
            return False
        group, kind = self.info.group, self.info.kind
        return super()._spec_changed(quantities_by_value(group, kind, new), quantities_by_value(group, kind, old))


class PodStrategy(_DecodesQuantities):
    """Pods: status Pending on create, then upstream's create-time mutations; graceful delete when
    scheduled and not finished.

    ``PrepareForCreate`` (release-1.32): status Pending with the QoS class, ``DropDisabledPodFields``
    (:mod:`kubeloop.api._pod_drop_disabled`), then ``applySchedulingGatedCondition``,
    ``mutatePodAffinity`` and ``applyAppArmorVersionSkew`` (:mod:`kubeloop.api._pod_create_mutations`),
    so validation sees the pod as it will be stored. ``PrepareForUpdate`` drops disabled fields too,
    against the stored pod. ``clock`` dates the SchedulingGated condition.
    """

    def __init__(self, info: ResourceInfo, *, clock: Clock | None = None) -> None:
        super().__init__(info)
        self.clock: Clock = clock if clock is not None else SystemClock()

    def prepare_for_create(self, obj: dict[str, Any]) -> list[str]:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "qosClass": _pod_qos(obj.get("spec"))}
        drop_disabled_pod_fields(obj, None)
        apply_scheduling_gated_condition(obj, format_time(self.clock.now()))
        merge_pod_affinity_label_keys(obj)
        return apply_apparmor_version_skew(obj)  # its warnings, recorded before validation as upstream's ctx does

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)  # status from old first, as upstream, then the drop
        drop_disabled_pod_fields(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_pod_create(obj)

    # The pod strategy's WarningsOnCreate is GetWarningsForPod; its WarningsOnUpdate says nothing (upstream
    # skips the cost on what may be a busy path), which the generic hook already does.
    warns = True

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return pod_warnings(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        # ValidatePodStatusUpdate does not look at the spec (which /status cannot change).
        if subresource:
            return validate_pod_status_update(new, old) if subresource == "status" else []
        return validate_pod_main_update(self.info, new, old)

    def graceful_period(self, obj: dict[str, Any], requested: int | None) -> int | None:
        # pod strategy CheckGracefulDelete: the option, else the pod's own period (default 30);
        # an unscheduled or finished pod is deleted at once.
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        assert isinstance(status, dict)
        if requested is not None:
            period = requested
        else:
            configured = spec.get("terminationGracePeriodSeconds")
            period = configured if isinstance(configured, int) else 30
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return period


def _pod_qos(spec: Any) -> str:
    """pkg/apis/core/helper/qos GetPodQOS: compares quantities by value, counts only those above zero.

    Runs before defaulting here, so a container's missing request reads as its limit (SetDefaults_Pod).
    """
    if not isinstance(spec, dict):
        return "BestEffort"
    containers = [c for key in ("containers", "initContainers") for c in spec.get(key) or [] if isinstance(c, dict)]
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in containers:
        resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
        assert isinstance(resources, dict)
        container_limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
        container_requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
        assert isinstance(container_limits, dict) and isinstance(container_requests, dict)
        container_requests = {**container_limits, **container_requests}
        for name, quantity in container_requests.items():
            if name in _QOS_RESOURCES and (value := _positive(quantity)) is not None:
                requests[name] = requests.get(name, Fraction(0)) + value
        found = set()
        for name, quantity in container_limits.items():
            if name in _QOS_RESOURCES and (value := _positive(quantity)) is not None:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + value
        if found != _QOS_RESOURCES:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# isSupportedQoSComputeResource: cpu and memory.
_QOS_RESOURCES = frozenset({"cpu", "memory"})
# Larger values are summed as this cap (no manifest reaches it; it keeps the sums small).
_QOS_CAP = Fraction(10**30)


def _positive(quantity: Any) -> Fraction | None:
    """The value of a quantity above zero, else ``None`` (``quantity.Cmp(zeroQuantity) == 1``)."""
    try:
        parsed = parse_quantity(quantity.strip()) if isinstance(quantity, str) else None
    except QuantityError:
        return None
    if parsed is None or parsed.sign() <= 0:
        return None
    return _QOS_CAP if parsed.exponent > 30 else min(parsed.value, _QOS_CAP)


def _label_with_name(namespace: dict[str, Any]) -> None:
    """Namespace Canonicalize (and SetDefaults_Namespace): ``kubernetes.io/metadata.name`` = name."""
    meta = _meta(namespace)
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        labels = {}
        meta["labels"] = labels
    if meta.get("name"):
        labels["kubernetes.io/metadata.name"] = meta["name"]


class NamespaceStrategy(GenericStrategy):
    """Namespaces: DNS-1123 label names, phase Active and the ``kubernetes`` spec finalizer on create."""

    name_validator = staticmethod(name_is_dns1123_label)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        finalizers = list(spec.get("finalizers") or [])
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
        spec["finalizers"] = finalizers
        obj["spec"] = spec
        _label_with_name(obj)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        # spec.finalizers change only through /finalize (namespace strategy PrepareForUpdate).
        super().prepare_for_update(new, old)
        _label_with_name(new)
        spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
        assert isinstance(old_spec, dict)
        if "finalizers" in old_spec:
            spec["finalizers"] = old_spec["finalizers"]
        else:
            spec.pop("finalizers", None)
        new["spec"] = spec

    def prepare_for_finalize(self, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        """``/finalize``: only ``spec.finalizers`` changes."""
        result = dict(old)
        spec = dict(old.get("spec") or {})
        new_spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
        assert isinstance(new_spec, dict)
        if new_spec.get("finalizers"):
            spec["finalizers"] = new_spec["finalizers"]
        else:
            spec.pop("finalizers", None)
        result["spec"] = spec
        result["metadata"] = dict(_meta(old))
        if "resourceVersion" in _meta(new):
            result["metadata"]["resourceVersion"] = _meta(new)["resourceVersion"]
        return result

    def should_delete_during_update(self, obj: dict[str, Any]) -> bool:
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        return not spec.get("finalizers") and super().should_delete_during_update(obj)


class _ZeroStatus(GenericStrategy):
    def __init__(self, info: ResourceInfo, status: dict[str, Any]) -> None:
        super().__init__(info)
        self.empty_status = status


class _PodTemplateOwner(_DecodesQuantities, _ZeroStatus):
    """Deployments, ReplicaSets, StatefulSets: the zero status, the template's disabled fields dropped,
    and the pod template's rules (not on /status; each kind's subclass runs them inside its own checks).

    Deployments and ReplicaSets run ValidatePodTemplateSpec (ValidatePodTemplateSpecForReplicaSet, whose
    activeDeadlineSeconds message names a ReplicaSet for both); a StatefulSet's template skips
    ValidatePodSpec upstream (ValidatePodTemplateSpecForStatefulSet), its mounts may name claim templates.
    """

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        drop_disabled_template_fields(obj, None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        # DropDisabledTemplateFields before the generation compares the specs (deployment strategy.go).
        drop_disabled_template_fields(new, old)
        super().prepare_for_update(new, old)

    def _template_errors(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        stateful = self.info.kind == "StatefulSet"
        return validate_pod_template(obj, kind="StatefulSet" if stateful else "ReplicaSet", old=old,
                                     check_spec=not stateful)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self._template_errors(obj, None)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return [] if subresource == "status" else self._template_errors(new, old)

    # WarningsOnCreate / WarningsOnUpdate (deployment, replicaset and statefulset strategy.go): the pod
    # template's warnings on create, and on an update (``/scale`` included: ScaleREST updates through
    # the main strategy) only when the generation moved; the status strategies say nothing.
    warns = True

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return pod_template_warnings(obj)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource == "status" or _meta(new).get("generation") == _meta(old).get("generation"):
            return []
        return pod_template_warnings(new)


def _pod_name_warnings(obj: dict[str, Any]) -> list[str]:
    """The Deployment and ReplicaSet WarningsOnCreate's first check: the name becomes a pod name and
    hostname prefix, so upstream recommends a DNS label (``%v`` of IsDNS1123Label's messages)."""
    messages = is_dns1123_label(str(_meta(obj).get("name") or ""))
    if not messages:
        return []
    return ["metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; "
            f"a DNS label is recommended: [{' '.join(messages)}]"]


# The fields at which PersistentVolume and claim updates report a change from the stored object.
_CHANGED_FROM_STORED = frozenset({"spec", "spec.persistentvolumesource", "volumeMode", "nodeAffinity"})


def _against_stored(info: ResourceInfo, validate: Callable[[dict[str, Any], dict[str, Any]], list[FieldError]],
                    new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """``validate(new, old)``; when it reports a change, again against a defaulted copy of ``old``.

    Upstream compares with the stored object as decoded, defaults filled in; the store here keeps
    objects as written, so one stored before a default existed (or written directly) is not refused
    for a default nobody changed. The common update, which reports no change, copies nothing.
    """
    errs = validate(new, old)
    if any(e.field in _CHANGED_FROM_STORED for e in errs):
        defaulted = {**old, "spec": copy.deepcopy(old.get("spec")), "status": copy.deepcopy(old.get("status"))}
        apply_defaults(info, defaulted)
        errs = validate(new, defaulted)
    return errs


class _DropsVolumeAttributesClass(GenericStrategy):
    """DropDisabledSpecFields (pkg/api/persistentvolume) and DropDisabledFields (pkg/api/persistentvolumeclaim):
    with the VolumeAttributesClass feature gate off (1.32's default), ``spec.volumeAttributesClassName``
    is dropped on create, and on update unless the stored object already has one."""

    @staticmethod
    def _drop(new: dict[str, Any], old: dict[str, Any] | None) -> None:
        spec = new.get("spec")
        old_spec = old.get("spec") if old is not None else None
        if (isinstance(spec, dict) and "volumeAttributesClassName" in spec
                and not (isinstance(old_spec, dict) and old_spec.get("volumeAttributesClassName") is not None)):
            del spec["volumeAttributesClassName"]

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        self._drop(obj, None)
        super().prepare_for_create(obj)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self._drop(new, old)
        super().prepare_for_update(new, old)


class _PersistentVolume(_DropsVolumeAttributesClass, _DecodesQuantities, _ZeroStatus):
    """PersistentVolumes: ValidatePersistentVolume on create, and ValidatePersistentVolumeUpdate on a
    main-resource update; ValidatePersistentVolumeStatusUpdate checks nothing of the status.
    GetWarningsForPersistentVolume on create and main-resource update."""

    warns = True

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_persistent_volume(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        return [] if subresource == "status" else _against_stored(self.info, validate_persistent_volume_update, new, old)

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return persistent_volume_warnings(obj)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        return [] if subresource else persistent_volume_warnings(new)


Strategy = GenericStrategy

# Go zero values that survive JSON encoding (fields without omitempty) in each kind's status.
_ZERO_STATUS: dict[tuple[str, str], dict[str, Any]] = {
    ("apps", "ReplicaSet"): {"replicas": 0},
    ("", "ReplicationController"): {"replicas": 0},
    ("apps", "StatefulSet"): {"replicas": 0, "availableReplicas": 0},
    ("apps", "DaemonSet"): {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                            "numberReady": 0},
    ("policy", "PodDisruptionBudget"): {
        "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0,
    },
    ("", "PersistentVolumeClaim"): {"phase": "Pending"},
    ("", "PersistentVolume"): {"phase": "Pending"},
}


def strategy_for(info: ResourceInfo, *, clock: Clock | None = None, allocator: Any = None) -> GenericStrategy:
    """The strategy of a kind; custom kinds use the generic one. ``clock`` (the server's) dates what a
    strategy writes itself (a new pod's SchedulingGated condition); the system clock by default.
    ``allocator`` (the server's :class:`~kubeloop.server._service_alloc.ServiceAllocator`) gives Services
    their cluster IPs and node ports; without one they get none."""
    if info.custom:
        return GenericStrategy(info)
    key = (info.group, info.kind)
    if key == ("", "Pod"):
        return PodStrategy(info, clock=clock)
    if key == ("", "Namespace"):
        return NamespaceStrategy(info)
    if key == ("", "Service"):
        from kubeloop.server._service_strategy import ServiceStrategy  # a subclass: imported late (cycle)

        return ServiceStrategy(info, allocator)
    if key in (("", "Endpoints"), ("discovery.k8s.io", "EndpointSlice")):
        from kubeloop.server._endpoints_strategy import EndpointSliceStrategy, EndpointsStrategy

        return EndpointsStrategy(info) if key[0] == "" else EndpointSliceStrategy(info)
    if info.group == "rbac.authorization.k8s.io":
        from kubeloop.server._authz_strategy import RbacStrategy  # a subclass: imported late to avoid a cycle

        return RbacStrategy(info)
    if key == ("scheduling.k8s.io", "PriorityClass"):
        from kubeloop.server._priority_class import PriorityClassStrategy  # a subclass: imported late (cycle)

        return PriorityClassStrategy(info)
    if info.group == "admissionregistration.k8s.io" and info.kind.startswith("ValidatingAdmissionPolicy"):
        from kubeloop.server._admission_policy_strategy import (  # late (cycle)
            PolicyBindingStrategy,
            PolicyStrategy,
        )

        return PolicyBindingStrategy(info) if info.kind.endswith("Binding") else PolicyStrategy(info)
    if info.group == "admissionregistration.k8s.io" and info.kind.endswith("WebhookConfiguration"):
        from kubeloop.server._webhook_strategy import WebhookConfigurationStrategy  # a subclass: late (cycle)

        return WebhookConfigurationStrategy(info)
    if key in (("", "LimitRange"), ("", "ResourceQuota")):
        from kubeloop.server._quota_strategies import (  # subclasses: late
            LimitRangeStrategy,
            ResourceQuotaStrategy,
        )

        return LimitRangeStrategy(info) if info.kind == "LimitRange" else ResourceQuotaStrategy(info)
    if key == ("", "Node"):
        # Kubelets register nodes with their status (node strategy keeps it on create).
        return _Node(info)
    if key == ("apps", "StatefulSet"):
        return _StatefulSet(info, _ZERO_STATUS[key])
    if key == ("apps", "Deployment"):
        return _Deployment(info, {})
    if key == ("apps", "DaemonSet"):
        return _DaemonSet(info, _ZERO_STATUS[key])
    if key == ("batch", "Job"):
        return _Job(info, {})
    if key == ("batch", "CronJob"):
        from kubeloop.server._cronjob_strategy import CronJobStrategy  # a subclass: imported late (cycle)

        return CronJobStrategy(info, {})
    if key == ("apps", "ReplicaSet"):
        return _ReplicaSet(info, _ZERO_STATUS[key])
    if key in (("", "ReplicationController"), ("", "PodTemplate")):
        from kubeloop.server._replication_controller_strategy import (  # subclasses: late (cycle)
            PodTemplateStrategy,
            ReplicationControllerStrategy,
        )

        if key[1] == "PodTemplate":
            return PodTemplateStrategy(info)
        return ReplicationControllerStrategy(info, _ZERO_STATUS[key])
    if key == ("", "PersistentVolume"):
        return _PersistentVolume(info, _ZERO_STATUS[key])
    if key == ("", "PersistentVolumeClaim"):
        return _PersistentVolumeClaim(info, _ZERO_STATUS[key])
    if key in _ZERO_STATUS:
        return _ZeroStatus(info, _ZERO_STATUS[key])
    return GenericStrategy(info)


class _Node(_DecodesQuantities):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        status = obj.get("status")
        super().prepare_for_create(obj)
        if status is not None:
            obj["status"] = status


class _PersistentVolumeClaim(_DropsVolumeAttributesClass, _DecodesQuantities, _ZeroStatus):
    """PersistentVolumeClaims: the zero status, quantities in canonical form, the data source fields
    prepared (:mod:`kubeloop.api._pvc_data_source`), ValidatePersistentVolumeClaim on create,
    ValidatePersistentVolumeClaimUpdate on a main-resource update, and
    ValidatePersistentVolumeClaimStatusUpdate on ``/status``; GetWarningsForPersistentVolumeClaim on
    create and main-resource update."""

    warns = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)  # the status, then DropDisabledFields (volumeAttributesClassName) first
        prepare_claim_data_sources(obj.get("spec"), None, create=True)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        prepare_claim_data_sources(new.get("spec"), old.get("spec"), create=False)

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return persistent_volume_claim_warnings(obj)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        return [] if subresource else persistent_volume_claim_warnings(new)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_persistent_volume_claim(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_persistent_volume_claim_status_update(new) if subresource == "status" else []
        return _against_stored(self.info, validate_persistent_volume_claim_update, new, old)


class _StatefulSet(_PodTemplateOwner):
    """StatefulSets: DNS-1123 label names (ValidateStatefulSetName), ValidateStatefulSetSpec before the
    pod template's rules, ValidateStatefulSetUpdate's immutable spec, ValidateStatefulSetStatusUpdate on
    ``/status`` (:mod:`kubeloop.api._statefulset_validation`); ``rollingUpdate.maxUnavailable`` dropped
    unless stored (MaxUnavailableStatefulSet, alpha, off in 1.32); the claim templates' warnings."""

    name_validator = staticmethod(name_is_dns1123_label)

    @staticmethod
    def _drop_max_unavailable(new: dict[str, Any], old: dict[str, Any] | None) -> None:
        """dropStatefulSetDisabledFields."""
        rolling = ((new.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")
        old_rolling = (((old or {}).get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")
        if isinstance(rolling, dict) and not (isinstance(old_rolling, dict) and old_rolling.get("maxUnavailable") is not None):
            rolling.pop("maxUnavailable", None)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        self._drop_max_unavailable(obj, None)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        self._drop_max_unavailable(new, old)  # before the generation compares the specs
        super().prepare_for_update(new, old)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return [*validate_statefulset(obj), *self._template_errors(obj, None)]

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_statefulset_status_update(new, old) if subresource == "status" else []
        errs = [*validate_statefulset(new), *self._template_errors(new, old)]
        return [*errs, *_against_stored(self.info, validate_statefulset_update, new, old)]

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*super().warnings_on_create(obj), *statefulset_warnings(obj, update=False)]

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource == "status":
            return []
        return [*super().warnings_on_update(new, old, subresource), *statefulset_warnings(new, update=True)]


# apps/v1 DeprecatedTemplateGeneration: where the v1 conversion keeps the internal spec.templateGeneration.
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _template_generation(obj: dict[str, Any]) -> int:
    value = (_meta(obj).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value) if isinstance(value, str) else 0
    except ValueError:
        return 0


def _set_template_generation(obj: dict[str, Any], generation: int) -> None:
    meta = _meta(obj)
    annotations = meta.get("annotations")
    meta["annotations"] = {**(annotations if isinstance(annotations, dict) else {}),
                           TEMPLATE_GENERATION_ANNOTATION: str(generation)}


class _DaemonSet(_PodTemplateOwner):
    """DaemonSets (``pkg/registry/apps/daemonset/strategy.go``): the zero status and generation 1 on
    create, with ``spec.templateGeneration`` at least 1; an update keeps the status and the template
    generation, and a changed template moves both the generation and the template generation (any
    other spec change only the generation). apps/v1 has no ``templateGeneration`` field: its conversion
    keeps it in the ``deprecated.daemonset.template.generation`` annotation (read back on decode,
    written on every encode), which is where it lives here. ValidateDaemonSet on create,
    the strategy's ValidateUpdate (:mod:`kubeloop.api._daemonset_validation`), ValidateDaemonSetStatusUpdate
    on ``/status``; the pod template's warnings on create and when the template generation moved."""

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        _set_template_generation(obj, max(_template_generation(obj), 1))

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)  # the generation moves on any spec change
        generation = _template_generation(old)
        group, kind = self.info.group, self.info.kind
        template, stored = (new.get("spec") or {}).get("template"), (old.get("spec") or {}).get("template")
        if template != stored and ((quantities_by_value(group, kind, new).get("spec") or {}).get("template")
                                   != (quantities_by_value(group, kind, old).get("spec") or {}).get("template")):
            generation += 1
        _set_template_generation(new, generation)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_daemonset(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_daemonset_status_update(new, old) if subresource == "status" else []
        return validate_daemonset_update(new, old)

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource or _template_generation(new) == _template_generation(old):
            return []
        return pod_template_warnings(new)


class _Deployment(_PodTemplateOwner):
    """Deployments: ValidateDeploymentSpec (its pod template's rules inside), the strategy's immutable
    selector on update (and on ``/scale``, which updates through the main strategy upstream: ScaleREST),
    ValidateDeploymentStatusUpdate on ``/status`` (:mod:`kubeloop.api._deployment_validation`), whose
    update keeps the stored labels as well as the spec (deploymentStatusStrategy.PrepareForUpdate)."""

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *super().warnings_on_create(obj)]

    def prepare_for_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        result = super().prepare_for_status_update(new, old)
        meta = _meta(result)  # a copy of the request's metadata (the generic step made it)
        if "labels" in _meta(old):
            meta["labels"] = _meta(old)["labels"]
        else:
            meta.pop("labels", None)
        return result

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_deployment(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_deployment_status_update(new, old)
        return validate_deployment_update(new, old)


class _ReplicaSet(_PodTemplateOwner):
    """ReplicaSets: ValidateReplicaSetSpec, the ReplicaSet strategy's ValidateUpdate (the spec twice, the
    immutable selector) on update and ``/scale``, ValidateReplicaSetStatusUpdate on ``/status``."""

    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *super().warnings_on_create(obj)]

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_replicaset(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource == "status":
            return validate_replicaset_status_update(new, old)
        return validate_replicaset_update(new, old)


class _Job(_PodTemplateOwner):
    """Jobs (``pkg/registry/batch/job/strategy.go``): an empty status and generation 1 on create, the
    selector generated from the new Job's uid unless ``manualSelector`` (``generateSelector``: the
    ``batch.kubernetes.io/controller-uid`` selector, the template labelled with the uid and name under the
    prefixed and the legacy keys, a label already there kept for validation to judge), ``ValidateJob`` and
    ``ValidateJobUpdate``, and the status rules on ``/status`` (:mod:`kubeloop.api._job_validation`).

    A Job without labels takes its template's (SetDefaults_Job); upstream's read back from storage
    defaults again, after the selector's labels were added, so a Job created with none shows them: done
    here once they exist."""

    needs_identity = True

    def prepare_identity(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("manualSelector") is True:
            return
        meta = _meta(obj)
        uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
        template = spec.get("template")
        if not isinstance(template, dict):
            template = spec["template"] = {}
        template_meta = template.get("metadata")
        if not isinstance(template_meta, dict):
            template_meta = template["metadata"] = {}
        labels = template_meta.get("labels")
        if not isinstance(labels, dict):
            labels = template_meta["labels"] = {}
        for key, value in ((LEGACY_JOB_NAME_LABEL, name), (JOB_NAME_LABEL, name),
                           (LEGACY_CONTROLLER_UID_LABEL, uid), (CONTROLLER_UID_LABEL, uid)):
            labels.setdefault(key, value)
        selector = spec.get("selector")
        if not isinstance(selector, dict):
            selector = spec["selector"] = {}
        match = selector.get("matchLabels")
        if not isinstance(match, dict):
            match = selector["matchLabels"] = {}
        match.setdefault(CONTROLLER_UID_LABEL, uid)
        if not meta.get("labels"):
            meta["labels"] = dict(labels)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_job(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[FieldError]:
        if subresource:
            return validate_job_status_update(new, old) if subresource == "status" else []
        return validate_job_update(new, old)

    # job strategy.go WarningsOnCreate (the name warning, then WarningsForJobSpec) and WarningsOnUpdate
    # (WarningsForJobSpec when the generation moved; the status strategy says nothing).
    def warnings_on_create(self, obj: dict[str, Any]) -> list[str]:
        return [*_pod_name_warnings(obj), *_job_spec_warnings(obj)]

    def warnings_on_update(self, new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[str]:
        if subresource == "status" or _meta(new).get("generation") == _meta(old).get("generation"):
            return []
        return _job_spec_warnings(new)


def _job_spec_warnings(job: dict[str, Any]) -> list[str]:
    """WarningsForJobSpec (k/k pkg/api/job/warnings.go): an Indexed Job past both soft limits (10^5
    completions, 10^4 parallelism), then the pod template's warnings under ``spec.template``."""
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    warnings: list[str] = []
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 100_000 \
            and isinstance(parallelism, int) and parallelism > 10_000:
        warnings.append("spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism "
                        "higher than 10^4, Kubernetes might not be able to track completedIndexes when a big "
                        "number of indexes fail")
    warnings.extend(pod_template_warnings(job))
    return warnings
