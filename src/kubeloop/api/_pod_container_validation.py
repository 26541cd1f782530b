"""Validation of a pod spec's containers, init containers and ephemeral containers, as upstream's
``ValidatePodSpec`` does it.

:func:`validate_containers`, :func:`validate_init_containers` and :func:`validate_ephemeral_containers`
return one :class:`FieldError` per problem with upstream's path, type and text (k/k
``pkg/apis/core/validation/validation.go``: ``validateContainers``, ``validateInitContainers``,
``validateEphemeralContainers``, ``validateContainerCommon``, ``validateContainerPorts``,
``checkHostPortConflicts``, ``ValidateVolumeMounts``, ``ValidateVolumeDevices``,
``validateMountPropagation``, ``validateMountRecursiveReadOnly``, ``validatePullPolicy``,
``validateResizePolicy``, ``validateContainerOnlyForPod``; apimachinery ``pkg/util/validation``: ``IsValidPortName``,
``IsValidPortNum``). The environment is :mod:`kubeloop.api._pod_env_validation`'s, the resource
requirements :mod:`kubeloop.api._pod_resources_validation`'s, the security context
:mod:`kubeloop.api._pod_security_validation`'s. What a container is checked against (the pod's
volumes, resource claims, grace period, restart policy, user namespace) is one :class:`PodContext`.
Upstream's path quirks are kept (a
mount's ``subPath`` error names ``volumeMounts.subPath`` without the index; an init container's host
port clash is reported at index 0).

The checks run on the object after defaulting, as upstream's do: a field that defaulting fills
(``terminationMessagePolicy``, ``imagePullPolicy``, a port's ``protocol``) is never "Required" here.
Hooks and probes are :mod:`kubeloop.api._pod_probe_validation`'s. ``resizePolicy`` is checked
whenever set (upstream 1.32 drops it while its alpha gate, InPlacePodVerticalScaling, is off; kubeloop
drops no gated field, so it checks it as upstream does with the gate on), and refused on init
containers. Input that is not the expected JSON shape is skipped, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_env_validation import env_errors, env_from_errors
from kubeloop.api._pod_fields import go_text, int_of, mapping_of, objects_of
from kubeloop.api._pod_probe_validation import handler_errors, port_name_errors
from kubeloop.api._pod_resources_validation import resources_errors
from kubeloop.api._pod_security_validation import container_security_errors
from kubeloop.api._pod_volume_validation import local_descending_path_errors, path_no_backsteps_errors
from kubeloop.api._validation import is_dns1123_label

__all__ = [
    "PodContext",
    "image_whitespace_errors",
    "validate_containers",
    "validate_ephemeral_containers",
    "validate_init_containers",
]

Volumes = Mapping[str, Mapping[str, Any]]

_TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]  # sets.List(supportedPullPolicies)
_PROTOCOLS = ["SCTP", "TCP", "UDP"]  # sets.List(supportedPortProtocols)
_PROPAGATIONS = ["Bidirectional", "HostToContainer", "None"]
_RECURSIVE_READ_ONLY = ["Disabled", "Enabled", "IfPossible"]
_PORT_RANGE = "must be between 1 and 65535, inclusive"  # InclusiveRangeError(1, 65535)
# EphemeralContainerCommon's fields outside allowedEphemeralContainerFields, in the struct's order.
_NOT_FOR_EPHEMERAL = ("ports", "resources", "resizePolicy", "restartPolicy", "livenessProbe", "readinessProbe",
                      "startupProbe", "lifecycle")
_HANDLERS = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")
_RESIZE_RESOURCES = ["cpu", "memory"]  # sets.List(supportedResizeResources)
_RESIZE_POLICIES = ["NotRequired", "RestartContainer"]  # sets.List(supportedResizePolicies)


@dataclass(frozen=True)
class PodContext:
    """What ``ValidatePodSpec`` passes down to each container's checks."""

    volumes: Volumes
    # The pod's terminationGracePeriodSeconds, for hooks and probes.
    grace: int | None = None
    # gatherPodResourceClaimNames: what resources.claims may name.
    claim_names: frozenset[str] = frozenset()
    # The pod's restartPolicy (after defaulting).
    restart_policy: str = "Always"
    # Whether the pod shares the host's user namespace (hostUsers, true unless false).
    host_users: bool = True
    # AllowIndivisibleHugePagesValues (the stored object already had such a value).
    allow_indivisible_hugepages: bool = False


def _not_found(path: str, value: Any) -> FieldError:
    return FieldError("not_found", path, "", value)  # field.NotFound


# -- ports ---------------------------------------------------------------------------------------------


def _ports(ports: Any, path: str) -> list[FieldError]:
    """validateContainerPorts."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in objects_of(ports):
        p = f"{path}[{i}]"
        if name := go_text(port.get("name")):
            if messages := port_name_errors(name):
                errs.extend(FieldError.invalid(f"{p}.name", name, m) for m in messages)
            elif name in names:
                errs.append(FieldError.duplicate(f"{p}.name", name))
            else:
                names.add(name)
        container_port = int_of(port.get("containerPort")) or 0
        if not container_port:
            errs.append(FieldError.required(f"{p}.containerPort"))
        elif not 1 <= container_port <= 65535:
            errs.append(FieldError.invalid(f"{p}.containerPort", container_port, _PORT_RANGE))
        host_port = int_of(port.get("hostPort")) or 0
        if host_port and not 1 <= host_port <= 65535:
            errs.append(FieldError.invalid(f"{p}.hostPort", host_port, _PORT_RANGE))
        protocol = go_text(port.get("protocol"))
        if protocol and protocol not in _PROTOCOLS:  # "" is defaulted to TCP
            errs.append(FieldError.not_supported(f"{p}.protocol", protocol, _PROTOCOLS))
    return errs


def _host_port_conflicts(containers: list[tuple[int, Mapping[str, Any]]], path: str) -> list[FieldError]:
    """checkHostPortConflicts / AccumulateUniqueHostPorts over ``containers`` (index, container)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for ci, container in containers:
        for pi, port in objects_of(container.get("ports")):
            host_port = int_of(port.get("hostPort")) or 0
            if not host_port:
                continue
            key = f"{go_text(port.get('protocol')) or 'TCP'}/{go_text(port.get('hostIP'))}/{host_port}"
            if key in seen:
                errs.append(FieldError.duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return errs


# -- env -----------------------------------------------------------------------------------------------


# -- volume mounts and devices -------------------------------------------------------------------------


def _mounts(container: Mapping[str, Any], volumes: Volumes, path: str) -> list[FieldError]:
    """ValidateVolumeMounts."""
    errs: list[FieldError] = []
    devices = {go_text(d.get("name")): go_text(d.get("devicePath")) for _, d in objects_of(container.get("volumeDevices"))}
    device_paths = set(devices.values())
    privileged = mapping_of(container.get("securityContext")).get("privileged") is True
    mount_points: set[str] = set()
    for i, mount in objects_of(container.get("volumeMounts")):
        p = f"{path}[{i}]"
        name, mount_path = go_text(mount.get("name")), go_text(mount.get("mountPath"))
        if not name:
            errs.append(FieldError.required(f"{p}.name"))
        if name not in volumes:
            errs.append(_not_found(f"{p}.name", name))
        if not mount_path:
            errs.append(FieldError.required(f"{p}.mountPath"))
        if mount_path in mount_points:
            errs.append(FieldError.invalid(f"{p}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
        if name in devices:
            errs.append(FieldError.invalid(f"{p}.name", name, "must not already exist in volumeDevices"))
        if mount_path in device_paths:
            errs.append(FieldError.invalid(f"{p}.mountPath", mount_path, "must not already exist as a path in volumeDevices"))
        sub_path, sub_path_expr = go_text(mount.get("subPath")), go_text(mount.get("subPathExpr"))
        if name in volumes and isinstance(volumes[name].get("image"), dict):
            if sub_path:
                errs.append(FieldError.invalid(f"{p}.subPath", sub_path, "not allowed in image volume sources"))
            if sub_path_expr:
                errs.append(FieldError.invalid(f"{p}.subPathExpr", sub_path_expr, "not allowed in image volume sources"))
        if sub_path:
            errs.extend(local_descending_path_errors(sub_path, f"{path}.subPath"))
        if sub_path_expr:
            if sub_path:
                errs.append(FieldError.invalid(f"{p}.subPathExpr", sub_path_expr, "subPathExpr and subPath are mutually exclusive"))
            errs.extend(local_descending_path_errors(sub_path_expr, f"{path}.subPathExpr"))
        propagation = mount.get("mountPropagation")
        if isinstance(propagation, str):
            if propagation not in _PROPAGATIONS:
                errs.append(FieldError.not_supported(f"{path}.mountPropagation", propagation, _PROPAGATIONS))
            if propagation == "Bidirectional" and not privileged:
                errs.append(FieldError.forbidden(f"{path}.mountPropagation",
                                                 "Bidirectional mount propagation is available only to privileged containers"))
        errs.extend(_recursive_read_only(mount, f"{path}.recursiveReadOnly"))
    return errs


def _recursive_read_only(mount: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateMountRecursiveReadOnly."""
    value = mount.get("recursiveReadOnly")
    if not isinstance(value, str) or value == "Disabled":
        return []
    if value not in _RECURSIVE_READ_ONLY:
        return [FieldError.not_supported(path, value, _RECURSIVE_READ_ONLY)]
    errs: list[FieldError] = []
    if mount.get("readOnly") is not True:
        errs.append(FieldError.forbidden(path, "may only be specified when readOnly is true"))
    if mount.get("mountPropagation") not in (None, "None"):
        errs.append(FieldError.forbidden(path, "may only be specified when mountPropagation is None or not specified"))
    return errs


def _devices(container: Mapping[str, Any], volumes: Volumes, path: str) -> list[FieldError]:
    """ValidateVolumeDevices: block devices come from claims (a PVC or a generic ephemeral volume)."""
    errs: list[FieldError] = []
    mounts = {go_text(m.get("name")): go_text(m.get("mountPath")) for _, m in objects_of(container.get("volumeMounts"))}
    mount_paths = set(mounts.values())
    device_paths: set[str] = set()
    device_names: set[str] = set()
    for i, device in objects_of(container.get("volumeDevices")):
        p = f"{path}[{i}]"
        name, device_path = go_text(device.get("name")), go_text(device.get("devicePath"))
        volume = volumes.get(name)
        if not name:
            errs.append(FieldError.required(f"{p}.name"))
        if name in device_names:
            errs.append(FieldError.invalid(f"{p}.name", name, "must be unique"))
        if volume is not None and not (isinstance(volume.get("persistentVolumeClaim"), dict)
                                       or isinstance(volume.get("ephemeral"), dict)):
            errs.append(FieldError.invalid(f"{p}.name", name,
                                           "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
        if volume is None:
            errs.append(_not_found(f"{p}.name", name))
        if not device_path:
            errs.append(FieldError.required(f"{p}.devicePath"))
        if device_path in device_paths:
            errs.append(FieldError.invalid(f"{p}.devicePath", device_path, "must be unique"))
        if device_path and path_no_backsteps_errors(device_path, ""):
            errs.append(FieldError.invalid(f"{p}.devicePath", device_path, "can not contain backsteps ('..')"))
        else:
            device_paths.add(device_path)
        if name in mounts:
            errs.append(FieldError.invalid(f"{p}.name", name, "must not already exist in volumeMounts"))
        if device_path in mount_paths:
            errs.append(FieldError.invalid(f"{p}.devicePath", device_path, "must not already exist as a path in volumeMounts"))
        if name:
            device_names.add(name)
    return errs


# -- resources -----------------------------------------------------------------------------------------


# -- resize policy -------------------------------------------------------------------------------------


def _resize_policy(policies: Any, restart_policy: str, path: str) -> list[FieldError]:
    """validateResizePolicy: cpu and memory, each once, with a known restart policy (``NotRequired``
    in a pod that never restarts). Most errors name the list, as upstream's do."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, policy in objects_of(policies):
        name, restart = go_text(policy.get("resourceName")), go_text(policy.get("restartPolicy"))
        if name in seen:
            errs.append(FieldError.duplicate(f"{path}[{i}]", name))
        seen.add(name)
        if not name:
            errs.append(FieldError.required(path))
        elif name not in _RESIZE_RESOURCES:
            errs.append(FieldError.not_supported(path, name, _RESIZE_RESOURCES))
        if not restart:
            errs.append(FieldError.required(path))
        elif restart not in _RESIZE_POLICIES:
            errs.append(FieldError.not_supported(path, restart, _RESIZE_POLICIES))
        if restart_policy == "Never" and restart != "NotRequired":
            errs.append(FieldError.invalid(path, restart, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
    return errs


# -- containers ----------------------------------------------------------------------------------------


def _common(container: Mapping[str, Any], pod: PodContext, path: str) -> list[FieldError]:
    """validateContainerCommon."""
    volumes = pod.volumes
    errs: list[FieldError] = []
    name = go_text(container.get("name"))
    if not name:
        errs.append(FieldError.required(f"{path}.name"))
    else:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
    if not go_text(container.get("image")):
        errs.append(FieldError.required(f"{path}.image"))
    policy = go_text(container.get("terminationMessagePolicy"))
    if policy and policy not in _TERMINATION_MESSAGE_POLICIES:  # "" is defaulted to File
        errs.append(FieldError.not_supported(f"{path}.terminationMessagePolicy", policy, _TERMINATION_MESSAGE_POLICIES))
    # Each list is looked at only when present: a minimal container costs a few lookups.
    if ports := container.get("ports"):
        errs.extend(_ports(ports, f"{path}.ports"))
    if env := container.get("env"):
        errs.extend(env_errors(env, f"{path}.env"))
    if env_from := container.get("envFrom"):
        errs.extend(env_from_errors(env_from, f"{path}.envFrom"))
    if container.get("volumeMounts") or container.get("volumeDevices"):
        errs.extend(_mounts(container, volumes, f"{path}.volumeMounts"))
        errs.extend(_devices(container, volumes, f"{path}.volumeDevices"))
    pull = go_text(container.get("imagePullPolicy"))
    if pull and pull not in _PULL_POLICIES:  # "" is defaulted from the image's tag
        errs.append(FieldError.not_supported(f"{path}.imagePullPolicy", pull, _PULL_POLICIES))
    if resources := container.get("resources"):
        errs.extend(resources_errors(resources, f"{path}.resources", claim_names=pod.claim_names,
                                     allow_indivisible_hugepages=pod.allow_indivisible_hugepages))
    if policies := container.get("resizePolicy"):
        errs.extend(_resize_policy(policies, pod.restart_policy, f"{path}.resizePolicy"))
    if context := container.get("securityContext"):
        errs.extend(container_security_errors(context, f"{path}.securityContext", host_users=pod.host_users))
    return errs


def validate_containers(containers: Any, pod: PodContext, path: str) -> list[FieldError]:
    """validateContainers: at least one, unique names, valid hooks and probes, ``restartPolicy`` only on
    init containers."""
    grace = pod.grace
    items = objects_of(containers)
    if not items:
        return [FieldError.required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, container in items:
        p = f"{path}[{i}]"
        errs.extend(_common(container, pod, p))
        name = go_text(container.get("name"))
        if name in names:
            errs.append(FieldError.duplicate(f"{p}.name", name))
        names.add(name)
        errs.extend(handler_errors(container, grace, p))
        if container.get("restartPolicy") is not None:
            errs.append(FieldError.forbidden(f"{p}.restartPolicy", "may not be set for non-init containers"))
    return [*errs, *_host_port_conflicts(items, path)]


def validate_init_containers(init_containers: Any, containers: Any, pod: PodContext, path: str) -> list[FieldError]:
    """validateInitContainers: names unique across regular and init containers; handlers only on
    sidecars; no resize policy."""
    grace = pod.grace
    errs: list[FieldError] = []
    names = {go_text(c.get("name")) for _, c in objects_of(containers)}
    for i, container in objects_of(init_containers):
        p = f"{path}[{i}]"
        errs.extend(_common(container, pod, p))
        restart = container.get("restartPolicy")
        if isinstance(restart, str) and restart != "Always":
            errs.append(FieldError.not_supported(f"{p}.restartPolicy", restart, ["Always"]))
        name = go_text(container.get("name"))
        if name in names:
            errs.append(FieldError.duplicate(f"{p}.name", name))
        elif name:
            names.add(name)
        # Each init container runs alone, so its host ports are checked alone (and reported at index 0).
        errs.extend(_host_port_conflicts([(0, container)], path))
        if restart == "Always":
            errs.extend(handler_errors(container, grace, p))
        else:
            errs.extend(FieldError.forbidden(f"{p}.{key}", "may not be set for init containers without restartPolicy=Always")
                        for key in _HANDLERS if container.get(key) is not None)
        if isinstance(policies := container.get("resizePolicy"), list) and policies:
            errs.append(FieldError.invalid(f"{p}.resizePolicy", policies, "must not be set for init containers"))
    return errs


def _is_set(value: Any) -> bool:
    """Whether a field differs from its Go zero value (an empty object is a zero struct)."""
    return value is not None and value != {}


def validate_ephemeral_containers(ephemeral: Any, containers: Any, init_containers: Any, pod: PodContext,
                                  path: str) -> list[FieldError]:
    """validateEphemeralContainers: names unique across all containers, a real target, a restricted field set."""
    items = objects_of(ephemeral)
    if not items:
        return []
    others = {go_text(c.get("name")) for key in (containers, init_containers) for _, c in objects_of(key)}
    names = set(others)
    errs: list[FieldError] = []
    for i, container in items:
        p = f"{path}[{i}]"
        errs.extend(_common(container, pod, p))
        errs.extend(image_whitespace_errors(container, p))
        name = go_text(container.get("name"))
        if name in names:
            errs.append(FieldError.duplicate(f"{p}.name", name))
        names.add(name)
        target = go_text(container.get("targetContainerName"))
        if target and target not in others:
            errs.append(_not_found(f"{p}.targetContainerName", target))
        errs.extend(FieldError.forbidden(f"{p}.{key}", "cannot be set for an Ephemeral Container")
                    for key in _NOT_FOR_EPHEMERAL if _is_set(container.get(key)))
        for j, mount in objects_of(container.get("volumeMounts")):
            for key in ("subPath", "subPathExpr"):
                if go_text(mount.get(key)):
                    errs.append(FieldError.forbidden(f"{p}.volumeMounts[{j}].{key}", "cannot be set for an Ephemeral Container"))
    return errs


def image_whitespace_errors(container: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateContainerOnlyForPod: a pod's image may not be padded with whitespace."""
    image = go_text(container.get("image"))
    if image != image.strip():
        return [FieldError.invalid(f"{path}.image", image, "must not have leading or trailing whitespace")]
    return []
