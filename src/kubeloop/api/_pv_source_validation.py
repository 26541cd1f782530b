"""The volume sources of a PersistentVolume, checked as upstream's ``ValidatePersistentVolumeSpec`` checks them.

:func:`volume_source_errors` counts the sources of a PersistentVolume spec in upstream's order (k/k
``pkg/apis/core/validation/validation.go``, release 1.32, ``ValidatePersistentVolumeSpec``): the first
one found is checked in depth, every later one is refused at its own key with "may not specify more
than 1 volume type" (``flexVolume`` is the exception upstream makes: it is always counted and checked),
and a spec with none is refused with "must specify a volume type". It returns the errors and whether a
``local`` source was the one counted (the caller adds the local volume's node affinity requirement
there, as upstream does). Each source's checks are upstream's ``validate*PersistentVolumeSource`` /
``validate*VolumeSource`` rules, with upstream's paths, spellings included (a GCE disk's errors under
``persistentDisk``, CephFS's under ``cephfs`` but refused as a second source at ``cephFS``, an iSCSI
``targetportal`` and ``initiatorname`` in lower case).

:func:`mount_option_errors` is ``pkg/volume/validation`` ``checkMountOption``: the beta mount-options
annotation is refused on sources that do not take mount options. Upstream checks only the annotation;
``spec.mountOptions`` is not checked by the API server (the kubelet refuses it at mount time).

A value upstream prints with Go's ``%#v`` (a ``[]string``) is printed here in that form. Input that is
not the expected JSON shape reads as absent, never a crash. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import as_list, go_text, int_of, mapping_of
from kubeloop.api._pod_volume_validation import host_path_errors, path_no_backsteps_errors
from kubeloop.api._validation import is_dns1123_label, is_dns1123_subdomain, name_is_dns1123_label

__all__ = ["MOUNT_OPTION_ANNOTATION", "PERSISTENT_VOLUME_SOURCES", "csi_driver_name_errors", "mount_option_errors",
           "raw_invalid", "volume_source_errors"]

# pkg/volume/validation MountOptionAnnotation.
MOUNT_OPTION_ANNOTATION = "volume.beta.kubernetes.io/mount-options"
# sets.List(supportedHostPathTypes): sorted, the unset type first.
_PD_PARTITION = "must be between 1 and 255, inclusive"  # pdPartitionErrorMsg (InclusiveRangeError(1, 255))
_LUN_RANGE = "must be between 0 and 255, inclusive"  # InclusiveRangeError(0, 255)
# iscsiInitiator{Iqn,Eui,Naa}Regex (Go's ``$`` is the end of the text: ``\Z`` here).
_ISCSI_IQN = re.compile(r"iqn\.[0-9]{4}-[0-9]{2}\.([A-Za-z0-9\-.]+)(:[^,;*&$|\t\n\f\r ]+)\Z")
_ISCSI_EUI = re.compile(r"^eui.[A-Za-z0-9]{16}\Z")
_ISCSI_NAA = re.compile(r"^naa.[A-Za-z0-9]{32}\Z")
_ISCSI_PORTAL_TOO_LONG = ("Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if "
                          "iscsi.initiatorName is specified.")
_AZURE_CACHING = ["None", "ReadOnly", "ReadWrite"]
_AZURE_KINDS = ["Dedicated", "Managed", "Shared"]
# checkMountOption: the sources that take mount options.
_TAKES_MOUNT_OPTIONS = ("gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "nfs", "rbd", "quobyte", "iscsi",
                        "cinder", "cephfs", "azureFile", "vsphereVolume", "azureDisk", "photonPersistentDisk")


def raw_invalid(path: str, raw: str, detail: str) -> FieldError:
    """An "Invalid value" error whose value is printed as given (Go's ``%#v`` of a slice, map or struct)."""
    return FieldError("invalid", path, f"{raw}: {detail}")


def _go_strings(values: list[Any]) -> str:
    """Go's ``%#v`` of a ``[]string``."""
    return "[]string{" + ", ".join('"' + go_text(v).replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


def _required(source: Mapping[str, Any], path: str, *keys: str) -> list[FieldError]:
    return [FieldError.required(f"{path}.{key}") for key in keys if not go_text(source.get(key))]


def _partition(source: Mapping[str, Any], path: str) -> list[FieldError]:
    partition = int_of(source.get("partition"))
    if partition is not None and not 0 <= partition <= 255:
        return [FieldError.invalid(f"{path}.partition", partition, _PD_PARTITION)]
    return []


def _gce_disk(source: Mapping[str, Any], path: str) -> list[FieldError]:
    return [*_required(source, path, "pdName"), *_partition(source, path)]


def _aws_disk(source: Mapping[str, Any], path: str) -> list[FieldError]:
    return [*_required(source, path, "volumeID"), *_partition(source, path)]


def _glusterfs(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = _required(source, path, "endpoints", "path")
    namespace = source.get("endpointsNamespace")
    if isinstance(namespace, str):
        p = f"{path}.endpointsNamespace"
        if not namespace:
            errs.append(FieldError.invalid(p, namespace, "if the endpointnamespace is set, it must be a valid namespace name"))
        errs.extend(FieldError.invalid(p, namespace, m) for m in (name_is_dns1123_label(namespace, False) if namespace else []))
    return errs


def _flocker(source: Mapping[str, Any], path: str) -> list[FieldError]:
    name, uuid = go_text(source.get("datasetName")), go_text(source.get("datasetUUID"))
    errs = [] if name or uuid else [FieldError.required(path, "one of datasetName and datasetUUID is required")]
    if name and uuid:
        errs.append(FieldError.invalid(path, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
    if "/" in name:
        errs.append(FieldError.invalid(f"{path}.datasetName", name, "must not contain '/'"))
    return errs


def _nfs(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = _required(source, path, "server", "path")
    target = go_text(source.get("path"))
    if not target.startswith("/"):
        errs.append(FieldError.invalid(f"{path}.path", target, "must be an absolute path"))
    return errs


def _rbd(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = [] if as_list(source.get("monitors")) else [FieldError.required(f"{path}.monitors")]
    return [*errs, *_required(source, path, "image")]


def _host_port_ok(pair: str) -> bool:
    """net.SplitHostPort accepts it (a port after the last colon; a bracketed host for IPv6)."""
    if pair.startswith("["):
        end = pair.find("]")
        return end > 0 and pair[end + 1:end + 2] == ":" and "[" not in pair[1:end] and "]" not in pair[end + 1:]
    return pair.count(":") == 1 and "[" not in pair and "]" not in pair


def _quobyte(source: Mapping[str, Any], path: str) -> list[FieldError]:
    registry = go_text(source.get("registry"))
    message = "must be a host:port pair or multiple pairs separated by commas"
    errs: list[FieldError] = []
    if not registry:
        errs.append(FieldError.required(f"{path}.registry", message))
    elif len(go_text(source.get("tenant"))) >= 65:
        errs.append(FieldError.required(f"{path}.tenant", "must be a UUID and may not exceed a length of 64 characters"))
    else:
        errs.extend(FieldError.invalid(f"{path}.registry", registry, message)
                    for pair in registry.split(",") if not _host_port_ok(pair))
    return [*errs, *_required(source, path, "volume")]


def _cephfs(source: Mapping[str, Any], path: str) -> list[FieldError]:
    return [] if as_list(source.get("monitors")) else [FieldError.required(f"{path}.monitors")]


def _initiator_errors(value: str, path: str, prefix_detail: str) -> list[FieldError]:
    """The IQN, EUI or NAA format of an iSCSI name (upstream reports a bad prefix with ``prefix_detail``)."""
    if not value.startswith(("iqn", "eui", "naa")):
        return [FieldError.invalid(path, value, prefix_detail)]
    pattern = _ISCSI_IQN if value.startswith("iqn") else _ISCSI_EUI if value.startswith("eui") else _ISCSI_NAA
    return [] if pattern.search(value) else [FieldError.invalid(path, value, "must be valid format")]


def _iscsi(source: Mapping[str, Any], path: str, pv_name: str) -> list[FieldError]:
    portal = go_text(source.get("targetPortal"))
    errs = [] if portal else [FieldError.required(f"{path}.targetPortal")]
    initiator = source.get("initiatorName")
    if isinstance(initiator, str) and len(f"{pv_name}:{portal}") > 64:
        errs.append(FieldError.invalid(f"{path}.targetportal", portal, _ISCSI_PORTAL_TOO_LONG))
    iqn = go_text(source.get("iqn"))
    if not iqn:
        errs.append(FieldError.required(f"{path}.iqn"))
    else:
        errs.extend(_initiator_errors(iqn, f"{path}.iqn", "must be valid format starting with iqn, eui, or naa"))
    lun = int_of(source.get("lun"))
    if lun is not None and not 0 <= lun <= 255:
        errs.append(FieldError.invalid(f"{path}.lun", lun, _LUN_RANGE))
    secret = source.get("secretRef")
    if (source.get("chapAuthDiscovery") is True or source.get("chapAuthSession") is True) and not isinstance(secret, Mapping):
        errs.append(FieldError.required(f"{path}.secretRef"))
    if isinstance(secret, Mapping) and not go_text(secret.get("name")):
        errs.append(FieldError.required(f"{path}.secretRef.name"))
    if isinstance(initiator, str):
        # The persistent volume's variant says only "must be valid format" for a bad prefix.
        errs.extend(_initiator_errors(initiator, f"{path}.initiatorname", "must be valid format"))
    return errs


def _cinder(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = _required(source, path, "volumeID")
    secret = source.get("secretRef")
    if isinstance(secret, Mapping):
        errs.extend(_required(secret, f"{path}.secretRef", "name", "namespace"))
    return errs


def _fc(source: Mapping[str, Any], path: str) -> list[FieldError]:
    wwns, wwids = as_list(source.get("targetWWNs")), as_list(source.get("wwids"))
    errs: list[FieldError] = []
    if not wwns and not wwids:
        errs.append(FieldError.required(f"{path}.targetWWNs", "must specify either targetWWNs or wwids, but not both"))
    if wwns and wwids:
        errs.append(raw_invalid(f"{path}.targetWWNs", _go_strings(wwns), "targetWWNs and wwids can not be specified simultaneously"))
    if wwns:
        lun = source.get("lun")
        if lun is None:
            errs.append(FieldError.required(f"{path}.lun", "lun is required if targetWWNs is specified"))
        elif (value := int_of(lun)) is not None and not 0 <= value <= 255:
            errs.append(FieldError.invalid(f"{path}.lun", value, _LUN_RANGE))
    return errs


def _flex(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = _required(source, path, "driver")
    for key in sorted(mapping_of(source.get("options"))):  # a Go map: upstream's order varies, this one is sorted
        namespace = key.split("/", 1)[0] if "/" in key else key
        if ("." + namespace.lower()).endswith((".kubernetes.io", ".k8s.io")):
            errs.append(FieldError.invalid(f"{path}.options[{key}]", key, "kubernetes.io and k8s.io namespaces are reserved"))
    return errs


def _azure_file(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = _required(source, path, "secretName", "shareName")
    if source.get("secretNamespace") == "":
        errs.append(FieldError.required(f"{path}.secretNamespace"))
    return errs


def _azure_disk(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = _required(source, path, "diskName")
    uri = go_text(source.get("diskURI"))
    if not uri:
        errs.append(FieldError.required(f"{path}.diskURI"))
    caching, kind = source.get("cachingMode"), source.get("kind")
    if isinstance(caching, str) and caching not in _AZURE_CACHING:
        errs.append(FieldError.not_supported(f"{path}.cachingMode", caching, _AZURE_CACHING))
    if isinstance(kind, str):
        if kind not in _AZURE_KINDS:
            errs.append(FieldError.not_supported(f"{path}.kind", kind, _AZURE_KINDS))
        if kind == "Managed" and not uri.startswith("/subscriptions/"):
            errs.append(FieldError.not_supported(f"{path}.diskURI", uri, [
                "/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"]))
        if kind != "Managed" and not uri.startswith("https://"):
            errs.append(FieldError.not_supported(f"{path}.diskURI", uri, [
                "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"]))
    return errs


def _local(source: Mapping[str, Any], path: str) -> list[FieldError]:
    target = go_text(source.get("path"))
    return path_no_backsteps_errors(target, f"{path}.path") if target else [FieldError.required(f"{path}.path")]


def _storageos(source: Mapping[str, Any], path: str) -> list[FieldError]:
    name, namespace = go_text(source.get("volumeName")), go_text(source.get("volumeNamespace"))
    errs = ([FieldError.invalid(f"{path}.volumeName", name, m) for m in is_dns1123_label(name)] if name
            else [FieldError.required(f"{path}.volumeName")])
    if namespace:
        errs.extend(FieldError.invalid(f"{path}.volumeNamespace", namespace, m) for m in is_dns1123_label(namespace))
    secret = source.get("secretRef")
    if isinstance(secret, Mapping):
        errs.extend(_required(secret, f"{path}.secretRef", "name", "namespace"))
    return errs


def _secret_reference(ref: Mapping[str, Any], path: str) -> list[FieldError]:
    """validatePVSecretReference: a name (a subdomain) and a namespace (a label)."""
    name, namespace = go_text(ref.get("name")), go_text(ref.get("namespace"))
    errs = ([FieldError.invalid(f"{path}.name", name, m) for m in is_dns1123_subdomain(name)] if name
            else [FieldError.required(f"{path}.name")])
    errs.extend([FieldError.invalid(f"{path}.namespace", namespace, m) for m in is_dns1123_label(namespace)] if namespace
                else [FieldError.required(f"{path}.namespace")])
    return errs


def csi_driver_name_errors(driver: str, path: str) -> list[FieldError]:
    """ValidateCSIDriverName: required, at most 63 characters, a subdomain once lower-cased."""
    errs = [] if driver else [FieldError.required(path)]
    if len(driver) > 63:
        errs.append(FieldError.too_long(path, 63))
    return [*errs, *(FieldError.invalid(path, driver, m) for m in is_dns1123_subdomain(driver.lower()))]


def _csi(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = [*csi_driver_name_errors(go_text(source.get("driver")), f"{path}.driver"), *_required(source, path, "volumeHandle")]
    for key in ("controllerPublishSecretRef", "controllerExpandSecretRef", "nodePublishSecretRef", "nodeExpandSecretRef"):
        if isinstance(ref := source.get(key), Mapping):
            errs.extend(_secret_reference(ref, f"{path}.{key}"))
    return errs


def _no_checks(source: Mapping[str, Any], path: str) -> list[FieldError]:
    return []


def _simple(*keys: str) -> Callable[[Mapping[str, Any], str], list[FieldError]]:
    return lambda source, path: _required(source, path, *keys)


# ValidatePersistentVolumeSpec's order: (key, the path a second source is refused at, the path its own
# errors are reported under, its checks).
_SOURCES: tuple[tuple[str, str, str, Callable[[Mapping[str, Any], str], list[FieldError]]], ...] = (
    ("hostPath", "hostPath", "hostPath", host_path_errors),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk", _gce_disk),
    ("awsElasticBlockStore", "awsElasticBlockStore", "awsElasticBlockStore", _aws_disk),
    ("glusterfs", "glusterfs", "glusterfs", _glusterfs),
    ("flocker", "flocker", "flocker", _flocker),
    ("nfs", "nfs", "nfs", _nfs),
    ("rbd", "rbd", "rbd", _rbd),
    ("quobyte", "quobyte", "quobyte", _quobyte),
    ("cephfs", "cephFS", "cephfs", _cephfs),
    ("iscsi", "iscsi", "iscsi", _no_checks),  # needs the volume's name: checked in volume_source_errors
    ("cinder", "cinder", "cinder", _cinder),
    ("fc", "fc", "fc", _fc),
    ("flexVolume", "flexVolume", "flexVolume", _flex),
    ("azureFile", "azureFile", "azureFile", _azure_file),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume", _simple("volumePath")),
    ("photonPersistentDisk", "photonPersistentDisk", "photonPersistentDisk", _simple("pdID")),
    ("portworxVolume", "portworxVolume", "portworxVolume", _simple("volumeID")),
    ("azureDisk", "azureDisk", "azureDisk", _azure_disk),
    ("scaleIO", "scaleIO", "scaleIO", _simple("gateway", "system", "volumeName")),
    ("local", "local", "local", _local),
    ("storageos", "storageos", "storageos", _storageos),
    ("csi", "csi", "csi", _csi),
)
# The keys of PersistentVolumeSource, the part of the spec that is immutable after creation.
PERSISTENT_VOLUME_SOURCES = tuple(key for key, *_ in _SOURCES)


def volume_source_errors(spec: Mapping[str, Any], pv_name: str, path: str = "spec") -> tuple[list[FieldError], bool]:
    """The errors of the spec's volume sources, and whether ``local`` is the source counted."""
    errs: list[FieldError] = []
    counted = 0
    local = False
    for key, refused_at, checked_at, check in _SOURCES:
        source = spec.get(key)
        if not isinstance(source, Mapping):
            continue
        if counted and key != "flexVolume":  # upstream counts flexVolume without the "more than 1" test
            errs.append(FieldError.forbidden(f"{path}.{refused_at}", "may not specify more than 1 volume type"))
            continue
        counted += 1
        local = key == "local"
        errs.extend(_iscsi(source, f"{path}.{checked_at}", pv_name) if key == "iscsi" else check(source, f"{path}.{checked_at}"))
        if local and not isinstance(spec.get("nodeAffinity"), Mapping):
            errs.append(FieldError.required(f"{path}.nodeAffinity", "Local volume requires node affinity"))
    if not counted:
        errs.append(FieldError.required(path, "must specify a volume type"))
    return errs, local


def mount_option_errors(pv: Mapping[str, Any]) -> list[FieldError]:
    """checkMountOption: the mount-options annotation only on sources that take mount options."""
    spec = mapping_of(pv.get("spec"))
    if any(isinstance(spec.get(key), Mapping) for key in _TAKES_MOUNT_OPTIONS):
        return []
    if MOUNT_OPTION_ANNOTATION in mapping_of(mapping_of(pv.get("metadata")).get("annotations")):
        return [FieldError.forbidden(f"metadata.annotations.{MOUNT_OPTION_ANNOTATION}",
                                     "may not specify mount options for this volume type")]
    return []
