"""Validation of a pod's and its containers' security settings, as upstream's ``ValidatePodSpec`` does it.

Each function returns one :class:`FieldError` per problem with upstream's path, type and text (k/k
``pkg/apis/core/validation/validation.go``, release 1.32):

- :func:`container_security_errors` is ``ValidateSecurityContext`` (a container's ``securityContext``:
  user and group IDs, ``procMount``, ``seccompProfile``, ``allowPrivilegeEscalation`` false beside
  ``privileged`` or an added ``CAP_SYS_ADMIN``, ``windowsOptions``, ``appArmorProfile``);
- :func:`pod_security_context_errors` is ``validatePodSpecSecurityContext`` (``fsGroup``, ``runAsUser``,
  ``runAsGroup``, ``supplementalGroups``, ``shareProcessNamespace`` with ``hostPID``, ``sysctls``
  (``validateSysctls``, ``ValidateHostSysctl``), ``fsGroupChangePolicy``, ``seccompProfile``,
  ``windowsOptions``, ``appArmorProfile``, ``supplementalGroupsPolicy``, ``seLinuxChangePolicy``);
- :func:`host_users_errors` is ``validateHostUsers``; the OS-specific rules are
  :mod:`kubeloop.api._pod_os_validation`'s.

Upstream keeps ``hostNetwork``, ``hostPID``, ``hostIPC``, ``shareProcessNamespace`` and ``hostUsers`` in
its internal pod security context, so some paths name them there
(``spec.securityContext.shareProcessNamespace``) or spell them as upstream does (``spec.HostPID``).
kube-apiserver's ``--allow-privileged`` is taken as true, as kubeadm, kind and k3s set it: a
privileged container is never "disallowed by cluster policy". The pod strategy drops
``hostUsers``, ``supplementalGroupsPolicy`` and ``seLinuxChangePolicy`` (and forces ``procMount`` to
``Default``) before validation while 1.32's default gates have them off, unless the stored object
already uses them (:mod:`kubeloop.api._pod_drop_disabled`); what remains is checked here as upstream
checks it when kept; with
1.32's SELinuxMount gate off, ``seLinuxChangePolicy`` may only be ``Recursive`` unless the stored
object already had another value (:class:`SecurityOptions`). Input that is not the expected JSON shape
is skipped, never a crash. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, int_of, mapping_of, objects_of
from kubeloop.api._pod_volume_validation import local_descending_path_errors
from kubeloop.api._validation import is_dns1123_subdomain

__all__ = [
    "SecurityOptions",
    "apparmor_profile_errors",
    "container_security_errors",
    "host_users",
    "host_users_errors",
    "pod_security_context_errors",
    "security_options_from",
]

_ID_RANGE = "must be between 0 and 2147483647, inclusive"  # IsValidUserID / IsValidGroupID
_MAX_ID = 2**31 - 1
_PROC_MOUNTS = ["Default", "Unmasked"]
_SECCOMP_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]
_APPARMOR_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]
_FS_GROUP_CHANGE_POLICIES = ["Always", "OnRootMismatch"]  # sets.List(validFSGroupChangePolicies)
_SUPPLEMENTAL_GROUPS_POLICIES = ["Merge", "Strict"]
_SELINUX_CHANGE_POLICIES = ["MountOption", "Recursive"]
_MAX_LOCALHOST_PROFILE = 4095  # PATH_MAX - 1
# validateSysctls: a sysctl name, with "/" allowed as a separator.
_SYSCTL_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_REGEX = "^(" + _SYSCTL_SEGMENT + "[\\./])*" + _SYSCTL_SEGMENT + "$"
_SYSCTL_NAME = re.compile(_SYSCTL_REGEX)
_SYSCTL_MESSAGE = f"must have at most 253 characters and match regex {_SYSCTL_REGEX}"
# component-helpers sysctl.NamespacedBy: the sysctls a pod sharing the host's network or IPC may not set.
_IPC_SYSCTLS = frozenset({"kernel.sem"})
_NAMESPACE_PREFIXES = (("kernel.shm", "ipc"), ("kernel.msg", "ipc"), ("fs.mqueue.", "ipc"), ("net.", "net"))
# validateWindowsSecurityContextOptions.
_GMSA_SPEC_LIMIT = 64 * 1024
_CONTROL_CHARS = re.compile("[\x00-\x1f\x7f]")
_NETBIOS_DOMAIN = re.compile(r'^[^\\/:*?"<>|.][^\\/:*?"<>|]{0,14}$')
_DNS_LABEL = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
_DNS_DOMAIN = re.compile(f"^{_DNS_LABEL}(?:\\.{_DNS_LABEL})*$")
_BAD_USER_CHARS = re.compile(r'["/\\:;|=,+*?<>@\[\]]')
_DOTS_AND_SPACES = re.compile(r"^[. ]+$")


@dataclass(frozen=True)
class SecurityOptions:
    """The ``PodValidationOptions`` of these checks (``GetValidationOptionsFromPodSpecAndMeta``)."""

    # AllowNamespacedSysctlsForHostNetAndHostIPC: the stored spec already had such a sysctl.
    allow_host_sysctls: bool = False
    # AllowOnlyRecursiveSELinuxChangePolicy (SELinuxMount is off in 1.32).
    only_recursive_selinux_change: bool = True


def security_options_from(old_spec: Any) -> SecurityOptions:
    """The relaxations an update gets from the stored spec (all off on create)."""
    if not isinstance(old_spec, Mapping):
        return SecurityOptions()
    context = mapping_of(old_spec.get("securityContext"))
    host_sysctl = any(_host_sysctl_problem(go_text(s.get("name")), old_spec) for _, s in objects_of(context.get("sysctls")))
    selinux = context.get("seLinuxChangePolicy")
    return SecurityOptions(allow_host_sysctls=host_sysctl,
                           only_recursive_selinux_change=selinux is None or selinux == "Recursive")


def host_users(spec: Mapping[str, Any]) -> bool:
    """Whether the pod uses the host's user namespace (``hostUsers`` defaults to true)."""
    return spec.get("hostUsers") is not False


def _id_errors(holder: Mapping[str, Any], key: str, path: str) -> list[FieldError]:
    value = int_of(holder.get(key))
    if value is not None and not 0 <= value <= _MAX_ID:
        return [FieldError.invalid(f"{path}.{key}", value, _ID_RANGE)]
    return []


# -- profiles ------------------------------------------------------------------------------------------


def _seccomp_errors(profile: Any, path: str) -> list[FieldError]:
    """validateSeccompProfileField."""
    if not isinstance(profile, Mapping):
        return []
    kind = go_text(profile.get("type"))
    errs: list[FieldError] = []
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "type is required when seccompProfile is set"))
    elif kind not in _SECCOMP_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind, _SECCOMP_TYPES))
    local = profile.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            errs.append(FieldError.required(f"{path}.localhostProfile", "must be set when seccomp type is Localhost"))
        else:
            errs.extend(local_descending_path_errors(go_text(local), f"{path}.localhostProfile"))
    elif local is not None:
        errs.append(FieldError.invalid(f"{path}.localhostProfile", dict(profile), "can only be set when seccomp type is Localhost"))
    return errs


def _apparmor_errors(profile: Any, path: str) -> list[FieldError]:
    """ValidateAppArmorProfileField."""
    if not isinstance(profile, Mapping):
        return []
    kind = go_text(profile.get("type"))
    local = profile.get("localhostProfile")
    local_path = f"{path}.localhostProfile"
    if kind == "Localhost":
        if local is None:
            return [FieldError.required(local_path, "must be set when AppArmor type is Localhost")]
        text = go_text(local)
        errs: list[FieldError] = []
        if text.strip() != text:
            errs.append(FieldError.invalid(local_path, text, "must not be padded with whitespace"))
        elif not text:
            errs.append(FieldError.required(local_path, "must be set when AppArmor type is Localhost"))
        if len(text.encode()) > _MAX_LOCALHOST_PROFILE:
            errs.append(FieldError.too_long(local_path, _MAX_LOCALHOST_PROFILE))
        return errs
    if kind in ("RuntimeDefault", "Unconfined"):
        if local is not None:
            return [FieldError.invalid(local_path, local, "can only be set when AppArmor type is Localhost")]
        return []
    if not kind:
        return [FieldError.required(f"{path}.type", "type is required when appArmorProfile is set")]
    return [FieldError.not_supported(f"{path}.type", kind, _APPARMOR_TYPES)]


# The pod strategy's AppArmor version skew checks a profile derived from an annotation with it.
apparmor_profile_errors = _apparmor_errors


def _run_as_user_name_errors(name: str, path: str) -> list[FieldError]:
    """The ``runAsUserName`` part of validateWindowsSecurityContextOptions."""
    def bad(message: str) -> list[FieldError]:
        return [FieldError.invalid(path, name, message)]

    if not name:
        return bad("runAsUserName cannot be an empty string")
    if _CONTROL_CHARS.search(name):
        return bad("runAsUserName cannot contain control characters")
    parts = name.split("\\")
    if len(parts) > 2:
        return bad("runAsUserName cannot contain more than one backslash")
    domain, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    errs: list[FieldError] = []
    if len(domain.encode()) >= 256:
        errs += bad("runAsUserName's Domain length must be under 256 characters")
    if len(parts) == 2 and not (_NETBIOS_DOMAIN.fullmatch(domain) or _DNS_DOMAIN.fullmatch(domain)):
        errs += bad("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
    if not user:
        errs += bad("runAsUserName's User cannot be empty")
    elif len(user.encode()) > 104:
        errs += bad("runAsUserName's User length must not be longer than 104 characters")
    if _DOTS_AND_SPACES.fullmatch(user):
        errs += bad("runAsUserName's User cannot contain only periods or spaces")
    if _BAD_USER_CHARS.search(user):
        errs += bad('runAsUserName\'s User cannot contain the following characters: "/\\:;|=,+*?<>@[]')
    return errs


def _windows_options_errors(options: Any, path: str) -> list[FieldError]:
    """validateWindowsSecurityContextOptions."""
    if not isinstance(options, Mapping):
        return []
    errs: list[FieldError] = []
    if (spec_name := options.get("gmsaCredentialSpecName")) is not None:
        errs.extend(FieldError.invalid(f"{path}.gmsaCredentialSpecName", spec_name, m)
                    for m in is_dns1123_subdomain(go_text(spec_name)))
    if (spec := options.get("gmsaCredentialSpec")) is not None:
        size = len(go_text(spec).encode())
        if size == 0:
            errs.append(FieldError.invalid(f"{path}.gmsaCredentialSpec", spec, "gmsaCredentialSpec cannot be an empty string"))
        elif size > _GMSA_SPEC_LIMIT:
            errs.append(FieldError.invalid(f"{path}.gmsaCredentialSpec", spec, "gmsaCredentialSpec size must be under 64 KiB"))
    if (user := options.get("runAsUserName")) is not None:
        errs.extend(_run_as_user_name_errors(go_text(user), f"{path}.runAsUserName"))
    return errs


# -- containers ----------------------------------------------------------------------------------------


def container_security_errors(context: Any, path: str, *, host_users: bool) -> list[FieldError]:
    """ValidateSecurityContext on a container's ``securityContext`` at ``path``."""
    if not isinstance(context, Mapping) or not context:
        return []
    errs = [*_id_errors(context, "runAsUser", path), *_id_errors(context, "runAsGroup", path)]
    proc_mount = context.get("procMount")
    if proc_mount is not None:
        if proc_mount not in _PROC_MOUNTS:
            errs.append(FieldError.not_supported(f"{path}.procMount", proc_mount, _PROC_MOUNTS))
        if host_users and proc_mount == "Unmasked":
            errs.append(FieldError.invalid(f"{path}.procMount", proc_mount, "`hostUsers` must be false to use `Unmasked`"))
    errs.extend(_seccomp_errors(context.get("seccompProfile"), f"{path}.seccompProfile"))
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged") is True:
            errs.append(FieldError.invalid(path, dict(context), "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        added = mapping_of(context.get("capabilities")).get("add")
        for capability in added if isinstance(added, list) else []:
            if capability == "CAP_SYS_ADMIN":
                errs.append(FieldError.invalid(path, dict(context),
                                               "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
    errs.extend(_windows_options_errors(context.get("windowsOptions"), f"{path}.windowsOptions"))
    errs.extend(_apparmor_errors(context.get("appArmorProfile"), f"{path}.appArmorProfile"))
    return errs


# -- the pod -------------------------------------------------------------------------------------------


def _sysctl_namespace(name: str) -> str:
    """sysctl.GetNamespace: "net", "ipc" or "" (names with "/" first read with "." and "/" swapped)."""
    first = next((c for c in name if c in "./"), "")
    if first == "/":
        name = name.translate(str.maketrans("./", "/."))
    name = name.split("*", 1)[0]
    if name in _IPC_SYSCTLS:
        return "ipc"
    return next((ns for prefix, ns in _NAMESPACE_PREFIXES if name.startswith(prefix)), "")


def _host_sysctl_problem(name: str, spec: Mapping[str, Any]) -> str:
    """ValidateHostSysctl's message for a namespaced sysctl on a pod sharing that namespace with the host."""
    namespace = _sysctl_namespace(name)
    if spec.get("hostNetwork") is True and namespace == "net":
        return "may not be specified when 'hostNetwork' is true"
    if spec.get("hostIPC") is True and namespace == "ipc":
        return "may not be specified when 'hostIPC' is true"
    return ""


def _sysctl_errors(sysctls: Any, spec: Mapping[str, Any], path: str, opts: SecurityOptions) -> list[FieldError]:
    """validateSysctls."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, sysctl in objects_of(sysctls):
        p = f"{path}[{i}].name"
        name = go_text(sysctl.get("name"))
        if not name:
            errs.append(FieldError.required(p))
        elif len(name.encode()) > 253 or not _SYSCTL_NAME.fullmatch(name):
            errs.append(FieldError.invalid(p, name, _SYSCTL_MESSAGE))
        elif name in names:
            errs.append(FieldError.duplicate(p, name))
        if not opts.allow_host_sysctls and (problem := _host_sysctl_problem(name, spec)):
            errs.append(FieldError.invalid(p, name, problem))
        names.add(name)
    return errs


def pod_security_context_errors(spec: Mapping[str, Any], field: str, opts: SecurityOptions) -> list[FieldError]:
    """validatePodSpecSecurityContext on the pod spec at ``field``."""
    context = mapping_of(spec.get("securityContext"))
    path = f"{field}.securityContext"
    errs = [*_id_errors(context, "fsGroup", path), *_id_errors(context, "runAsUser", path),
            *_id_errors(context, "runAsGroup", path)]
    groups = context.get("supplementalGroups")
    for i, gid in enumerate(groups if isinstance(groups, list) else []):
        if (value := int_of(gid)) is not None and not 0 <= value <= _MAX_ID:
            errs.append(FieldError.invalid(f"{path}.supplementalGroups[{i}]", value, _ID_RANGE))
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        errs.append(FieldError.invalid(f"{path}.shareProcessNamespace", True, "ShareProcessNamespace and HostPID cannot both be enabled"))
    if sysctls := context.get("sysctls"):
        errs.extend(_sysctl_errors(sysctls, spec, f"{path}.sysctls", opts))
    if (policy := context.get("fsGroupChangePolicy")) is not None and policy not in _FS_GROUP_CHANGE_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.fsGroupChangePolicy", policy, _FS_GROUP_CHANGE_POLICIES))
    errs.extend(_seccomp_errors(context.get("seccompProfile"), f"{path}.seccompProfile"))
    errs.extend(_windows_options_errors(context.get("windowsOptions"), f"{path}.windowsOptions"))
    errs.extend(_apparmor_errors(context.get("appArmorProfile"), f"{path}.appArmorProfile"))
    if (groups_policy := context.get("supplementalGroupsPolicy")) is not None and groups_policy not in _SUPPLEMENTAL_GROUPS_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.supplementalGroupsPolicy", groups_policy, _SUPPLEMENTAL_GROUPS_POLICIES))
    if (selinux := context.get("seLinuxChangePolicy")) is not None:
        allowed = ["Recursive"] if opts.only_recursive_selinux_change else _SELINUX_CHANGE_POLICIES
        if selinux not in allowed:
            errs.append(FieldError.not_supported(f"{path}.seLinuxChangePolicy", selinux, allowed))
    return errs


def host_users_errors(spec: Mapping[str, Any], field: str) -> list[FieldError]:
    """validateHostUsers: a pod in its own user namespace shares no other namespace with the host
    (upstream's paths: ``hostNetwork``, ``HostPID``, ``HostIPC``)."""
    if host_users(spec):
        return []
    return [FieldError.forbidden(f"{field}.{name}", "when `pod.Spec.HostUsers` is false")
            for key, name in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC"))
            if spec.get(key) is True]
