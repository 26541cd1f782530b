"""Validation of a pod, and of a workload's pod template, in the order upstream validates them.

:func:`validate_pod_spec` is the volume and container part of ``ValidatePodSpec`` (k/k
``pkg/apis/core/validation/validation.go``): ``ValidateVolumes`` (:mod:`kubeloop.api._pod_volume_validation`),
``validatePodResourceClaims`` (:mod:`kubeloop.api._pod_resources_validation`),
``validateContainers`` / ``validateInitContainers`` / ``validateEphemeralContainers``
(:mod:`kubeloop.api._pod_container_validation`), ``validatePodHostNetworkDeps``, ``validateRestartPolicy``
and ``validateDNSPolicy``; the scheduling part that follows them in ``ValidatePodSpec`` is
:mod:`kubeloop.api._pod_scheduling_validation`'s. The entry points put the two together:

- :func:`validate_pod_create` is ``ValidatePodCreate``: the seccomp and AppArmor annotations
  (:mod:`kubeloop.api._pod_security_annotations`), the spec, ``validateContainersOnlyForPod`` (no
  whitespace around an image), no ephemeral containers on create, no ``nodeName`` while scheduling
  gates remain, annotations that agree with their seccomp and AppArmor fields;
- :func:`validate_pod_spec_update` is the ``validatePodMetadataAndSpec`` part of ``ValidatePodUpdate``
  (the rest is :mod:`kubeloop.api._pod_update_validation`'s);
- :func:`validate_pod_template` is ``ValidatePodTemplateSpec`` for Deployments and ReplicaSets
  (k/k ``pkg/apis/apps/validation/validation.go`` ``ValidatePodTemplateSpecForReplicaSet``: also
  ``restartPolicy`` Always and no ``activeDeadlineSeconds``) and, with ``check_spec=False``, the template
  rules of a StatefulSet (``ValidatePodTemplateSpecForStatefulSet`` does not run ``ValidatePodSpec``:
  a StatefulSet's mounts may name its claim templates, which are not pod volumes).

On update the stored spec relaxes some rules, as ``GetValidationOptionsFromPodSpecAndMeta`` (k/k
``pkg/api/pod/util.go``) does for pods and ``GetValidationOptionsFromPodTemplate`` for templates: a
hugepage request that is not a whole number of pages, a projected token path that is not local, a
namespaced sysctl on a pod sharing the host's network or IPC, are kept if the stored object had one.
Both pod entry points end as ``validatePodMetadataAndSpec`` does, with its pod-only rules after the spec:
a projected ``serviceAccountToken`` source is forbidden while ``serviceAccountName`` is empty (the
ServiceAccount admission plugin names ``default`` before validation, so this refuses a pod only where
that plugin is off, as envtest runs kube-apiserver), then ``validateContainersOnlyForPod``.

The object is read after defaulting (``restartPolicy`` and ``dnsPolicy`` are then never empty).
Input that is not the expected JSON shape is skipped, never a crash. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_container_validation import (
    PodContext,
    image_whitespace_errors,
    validate_containers,
    validate_ephemeral_containers,
    validate_init_containers,
)
from kubeloop.api._pod_fields import go_text, mapping_of, objects_of
from kubeloop.api._pod_resources_validation import (
    claim_names_of,
    indivisible_hugepages_in,
    pod_resource_claims_errors,
)
from kubeloop.api._pod_scheduling_validation import validate_pod_scheduling, validate_pod_template_scheduling
from kubeloop.api._pod_security_annotations import annotation_field_match_errors, security_annotation_errors
from kubeloop.api._pod_security_validation import host_users
from kubeloop.api._pod_volume_validation import non_local_token_path_in, validate_volumes

__all__ = ["validate_pod_create", "validate_pod_spec", "validate_pod_spec_update", "validate_pod_template"]

_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]


def _host_network_ports(spec: Mapping[str, Any], field: str, *, is_pod: bool) -> list[FieldError]:
    """validatePodHostNetworkDeps: with the host's network a container port is its host port (a
    template may leave the host port 0: SetDefaults_Pod fills it in each pod)."""
    if spec.get("hostNetwork") is not True:
        return []
    errs: list[FieldError] = []
    for i, container in objects_of(spec.get("containers")):
        for j, port in objects_of(container.get("ports")):
            host_port, container_port = port.get("hostPort") or 0, port.get("containerPort") or 0
            if (is_pod or host_port != 0) and host_port != container_port:
                errs.append(FieldError.invalid(f"{field}.containers[{i}].ports[{j}].hostPort", host_port,
                                               "must match `containerPort` when `hostNetwork` is true"))
    return errs


def validate_pod_spec(spec: Any, field: str, *, is_pod: bool, pod_name: str = "", old_spec: Any = None) -> list[FieldError]:
    """ValidatePodSpec's checks up to ``dnsPolicy`` on the spec at ``field`` (see the module docstring);
    ``old_spec`` is the stored spec on update."""
    spec = spec if isinstance(spec, dict) else {}
    volumes, errs = validate_volumes(
        spec.get("volumes"), f"{field}.volumes", pod_name=pod_name,
        allow_non_local_token_path=old_spec is not None and non_local_token_path_in(old_spec),
    ) if spec.get("volumes") else ({}, [])
    if claims := spec.get("resourceClaims"):
        errs.extend(pod_resource_claims_errors(claims, f"{field}.resourceClaims"))
    containers, init_containers = spec.get("containers"), spec.get("initContainers")
    grace = spec.get("terminationGracePeriodSeconds")
    pod = PodContext(
        volumes, grace if isinstance(grace, int) and not isinstance(grace, bool) else None,
        claim_names=claim_names_of(spec) if claims else frozenset(),
        restart_policy=go_text(spec.get("restartPolicy")) or "Always", host_users=host_users(spec),
        allow_indivisible_hugepages=old_spec is not None and indivisible_hugepages_in(old_spec),
    )
    errs.extend(validate_containers(containers, pod, f"{field}.containers"))
    if init_containers:
        errs.extend(validate_init_containers(init_containers, containers, pod, f"{field}.initContainers"))
    if ephemeral := spec.get("ephemeralContainers"):
        errs.extend(validate_ephemeral_containers(ephemeral, containers, init_containers, pod,
                                                  f"{field}.ephemeralContainers"))
    errs.extend(_host_network_ports(spec, field, is_pod=is_pod))
    restart = go_text(spec.get("restartPolicy"))
    if restart and restart not in _RESTART_POLICIES:  # "" is defaulted to Always
        errs.append(FieldError.not_supported(f"{field}.restartPolicy", restart, _RESTART_POLICIES))
    dns = go_text(spec.get("dnsPolicy"))
    if dns and dns not in _DNS_POLICIES:  # "" is defaulted to ClusterFirst
        errs.append(FieldError.not_supported(f"{field}.dnsPolicy", dns, _DNS_POLICIES))
    return errs


def _pod_only(spec: Mapping[str, Any]) -> list[FieldError]:
    """validatePodMetadataAndSpec's pod-only rules: a projected token needs a service account, then
    validateContainersOnlyForPod on containers and init containers."""
    errs: list[FieldError] = []
    if not go_text(spec.get("serviceAccountName")):  # the deprecated alias was folded in by defaulting
        for i, volume in objects_of(spec.get("volumes")):
            for j, source in objects_of(mapping_of(volume.get("projected")).get("sources")):
                if isinstance(source.get("serviceAccountToken"), dict):
                    errs.append(FieldError.forbidden(f"spec.volumes[{i}].projected.sources[{j}].serviceAccountToken",
                                                     "must not be specified when serviceAccountName is not set"))
    errs.extend(e for key in ("containers", "initContainers") for i, c in objects_of(spec.get(key))
                for e in image_whitespace_errors(c, f"spec.{key}[{i}]"))
    return errs


def validate_pod_create(pod: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePodCreate's spec checks, in upstream's order."""
    spec, meta = mapping_of(pod.get("spec")), mapping_of(pod.get("metadata"))
    errs = security_annotation_errors(meta.get("annotations"), spec, "metadata.annotations")
    errs.extend(validate_pod_spec(spec, "spec", is_pod=True, pod_name=go_text(meta.get("name"))))
    errs.extend(validate_pod_scheduling(spec))
    errs.extend(_pod_only(spec))
    if spec.get("ephemeralContainers"):
        # Ephemeral containers are added through the ephemeralcontainers subresource only.
        errs.append(FieldError.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(FieldError.forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    errs.extend(annotation_field_match_errors(meta.get("annotations"), spec))
    return errs


def validate_pod_spec_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The spec checks of ``validatePodMetadataAndSpec`` on an updated pod (``old`` relaxes the selectors)."""
    spec, old_spec, meta = mapping_of(new.get("spec")), mapping_of(old.get("spec")), mapping_of(new.get("metadata"))
    errs = security_annotation_errors(meta.get("annotations"), spec, "metadata.annotations")
    errs.extend(validate_pod_spec(spec, "spec", is_pod=True, pod_name=go_text(meta.get("name")), old_spec=old_spec))
    errs.extend(validate_pod_scheduling(spec, old_spec=old_spec))
    return [*errs, *_pod_only(spec)]


def _template_spec(obj: Any) -> Any:
    return mapping_of(mapping_of(mapping_of(obj).get("spec")).get("template")).get("spec")


def validate_pod_template(obj: Mapping[str, Any], *, kind: str, old: Mapping[str, Any] | None = None,
                          check_spec: bool = True, workload_rules: bool = True) -> list[FieldError]:
    """A workload's ``spec.template`` rules (``kind`` names it in the activeDeadlineSeconds message).

    ``workload_rules`` adds what the apps kinds ask of a template beyond ``ValidatePodTemplateSpec``
    (restartPolicy Always, no activeDeadlineSeconds); a Job has its own restartPolicy rule instead."""
    spec = _template_spec(obj)
    field = "spec.template.spec"
    # ValidatePodTemplateSpec names the template's annotations without "metadata".
    template_meta = mapping_of(mapping_of(mapping_of(mapping_of(obj).get("spec")).get("template")).get("metadata"))
    errs = security_annotation_errors(template_meta.get("annotations"), spec, "spec.template.annotations")
    errs += validate_pod_spec(spec, field, is_pod=False, old_spec=_template_spec(old) if old is not None else None) if check_spec else []
    errs.extend(validate_pod_template_scheduling(obj, old=old, with_security=check_spec))
    spec = mapping_of(spec)
    if check_spec and spec.get("ephemeralContainers"):
        errs.append(FieldError.forbidden(f"{field}.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    if not workload_rules:
        return errs
    restart = go_text(spec.get("restartPolicy")) or "Always"  # defaulted
    if restart != "Always":
        errs.append(FieldError.not_supported(f"{field}.restartPolicy", restart, ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden(f"{field}.activeDeadlineSeconds", f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs
