"""Validation of a pod's OS-specific settings, as upstream's ``ValidatePodSpec`` does it.

Each function returns one :class:`FieldError` per problem with upstream's path, type and text (k/k
``pkg/apis/core/validation/validation.go``, release 1.32): :func:`host_process_errors` is
``validateWindowsHostProcessPod`` (every container a hostProcess one or none, and then on the host's
network), :func:`os_errors` is ``validateOS`` followed by ``validateLinux`` (no ``windowsOptions``) or
``validateWindows`` (none of the Linux-only settings). kube-apiserver's ``--allow-privileged`` is taken
as true (kubeadm, kind and k3s set it), so hostProcess containers are never "disallowed by cluster
policy". Upstream keeps ``hostPID``, ``hostIPC``, ``shareProcessNamespace`` and ``hostUsers`` in its
internal pod security context; the paths are upstream's. Input that is not the expected JSON shape is
skipped, never a crash. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import containers_with_paths, go_text, mapping_of

__all__ = ["host_process_errors", "os_errors"]

_OSES = ["linux", "windows"]  # sets.List(validOS)
_WINDOWS = "cannot be set for a windows pod"


def _is_set(value: Any) -> bool:
    return value is not None


def host_process_errors(spec: Mapping[str, Any], field: str) -> list[FieldError]:
    """validateWindowsHostProcessPod (every container, or none, a hostProcess one; then on the host's network)."""
    pod_flag = mapping_of(mapping_of(spec.get("securityContext")).get("windowsOptions")).get("hostProcess")
    pod_flag = pod_flag if isinstance(pod_flag, bool) else None
    errs: list[FieldError] = []
    count = host_process_count = 0
    for container, path in containers_with_paths(spec, field):
        count += 1
        flag = mapping_of(mapping_of(container.get("securityContext")).get("windowsOptions")).get("hostProcess")
        flag = flag if isinstance(flag, bool) else None
        if pod_flag is not None and flag is not None and pod_flag != flag:
            errs.append(FieldError.invalid(f"{path}.securityContext.windowsOptions.hostProcess", flag,
                                           f"pod hostProcess value must be identical if both are specified, was {str(pod_flag).lower()}"))
        if flag is True or (flag is None and pod_flag is True):
            host_process_count += 1
    if host_process_count:
        if host_process_count != count:
            errs.append(FieldError.invalid(field, "", "If pod contains any hostProcess containers then all containers must be HostProcess containers"))
        if spec.get("hostNetwork") is not True:
            errs.append(FieldError.invalid(f"{field}.hostNetwork", False, "hostNetwork must be true if pod contains any hostProcess containers"))
    return errs


_WINDOWS_POD_FIELDS = ("appArmorProfile", "seLinuxOptions")
_WINDOWS_POD_CONTEXT_FIELDS = ("seccompProfile", "fsGroup", "fsGroupChangePolicy")
_WINDOWS_POD_IDS = ("runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy", "seLinuxChangePolicy")
_WINDOWS_CONTAINER_FIELDS = ("appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities", "readOnlyRootFilesystem",
                             "privileged", "allowPrivilegeEscalation", "procMount", "runAsUser", "runAsGroup")


def _windows_errors(spec: Mapping[str, Any], field: str) -> list[FieldError]:
    """validateWindows: the Linux-only settings of a windows pod, in upstream's order."""
    context = mapping_of(spec.get("securityContext"))
    path = f"{field}.securityContext"
    errs = [FieldError.forbidden(f"{path}.{key}", _WINDOWS) for key in _WINDOWS_POD_FIELDS if _is_set(context.get(key))]
    if _is_set(spec.get("hostUsers")):
        errs.append(FieldError.forbidden(f"{field}.hostUsers", _WINDOWS))
    errs.extend(FieldError.forbidden(f"{field}.{key}", _WINDOWS) for key in ("hostPID", "hostIPC") if spec.get(key) is True)
    errs.extend(FieldError.forbidden(f"{path}.{key}", _WINDOWS) for key in _WINDOWS_POD_CONTEXT_FIELDS if _is_set(context.get(key)))
    if context.get("sysctls"):
        errs.append(FieldError.forbidden(f"{path}.sysctls", _WINDOWS))
    if _is_set(spec.get("shareProcessNamespace")):
        errs.append(FieldError.forbidden(f"{field}.shareProcessNamespace", _WINDOWS))
    errs.extend(FieldError.forbidden(f"{path}.{key}", _WINDOWS) for key in _WINDOWS_POD_IDS if _is_set(context.get(key)))
    for container, container_path in containers_with_paths(spec, field):
        container_context = container.get("securityContext")
        if isinstance(container_context, Mapping):
            errs.extend(FieldError.forbidden(f"{container_path}.securityContext.{key}", _WINDOWS)
                        for key in _WINDOWS_CONTAINER_FIELDS if _is_set(container_context.get(key)))
    return errs


def _linux_errors(spec: Mapping[str, Any], field: str) -> list[FieldError]:
    """validateLinux: no Windows options on a linux pod."""
    message = "windows options cannot be set for a linux pod"
    errs = []
    if _is_set(mapping_of(spec.get("securityContext")).get("windowsOptions")):
        errs.append(FieldError.forbidden(f"{field}.securityContext.windowsOptions", message))
    for container, path in containers_with_paths(spec, field):
        if _is_set(mapping_of(container.get("securityContext")).get("windowsOptions")):
            errs.append(FieldError.forbidden(f"{path}.securityContext.windowsOptions", message))
    return errs


def os_errors(spec: Mapping[str, Any], field: str) -> list[FieldError]:
    """validateOS, then validateLinux or validateWindows for a pod that names its OS."""
    os = spec.get("os")
    if not isinstance(os, Mapping):
        return []
    name = go_text(os.get("name"))
    if not name:
        return [FieldError.required(f"{field}.os.name", "cannot be empty")]
    if name not in _OSES:
        return [FieldError.not_supported(f"{field}.os", name, _OSES)]
    return _linux_errors(spec, field) if name == "linux" else _windows_errors(spec, field)
