"""Validation of a pod spec's volumes, as upstream's ``ValidateVolumes`` does it.

:func:`validate_volumes` returns the volumes that passed (by name, for the volume mount and device
checks of :mod:`kubeloop.api._pod_container_validation`) and one :class:`FieldError` per problem with
upstream's path, type and text (k/k ``pkg/apis/core/validation/validation.go``: ``ValidateVolumes``,
``validateVolumeSource``, ``validateHostPathVolumeSource``, ``validateHostPathType``,
``validateSecretVolumeSource``, ``validateConfigMapVolumeSource``, ``validateKeyToPath``,
``validatePersistentClaimVolumeSource``, ``validateDownwardAPIVolumeSource`` /
``validateDownwardAPIVolumeFile``, ``validateProjectedVolumeSource`` / ``validateProjectionSources``,
``ValidateLocalNonReservedPath``, ``validateLocalDescendingPath``, ``validatePathNoBacksteps``).

Every volume must name exactly one source: the sources are counted in ``validateVolumeSource``'s order
(the second and later are refused at their own key, with upstream's spellings, ``downwarAPI`` and
``cephFS`` included). Of the sources, emptyDir, hostPath, secret, configMap, persistentVolumeClaim,
downwardAPI and projected are checked in depth; the cloud and network sources (nfs, iscsi, csi, ...)
are only counted. A volume with an error is left out of the returned map, so a mount of it is also
"Not found", as upstream reports it. Defaulted fields are read as upstream's defaulting leaves them
(a projected token's ``expirationSeconds`` is 3600 when absent, a field selector's ``apiVersion`` is
``v1``). A projected service account token lasts at least 10 minutes and at most 2^32 seconds, and
its ``path`` is a relative one without ``..`` unless the stored object already had one that is not
(``AllowNonLocalProjectedTokenPath``: pass ``allow_non_local_token_path``, see
:func:`non_local_token_path_in`); its ``audience`` is free text, as upstream leaves it. Input that is
not the expected JSON shape is skipped, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, int_of, mapping_of, objects_of
from kubeloop.api._quantity import QuantityError, parse_quantity
from kubeloop.api._validation import is_dns1123_label, is_qualified_name

__all__ = [
    "field_selector_errors",
    "host_path_errors",
    "local_descending_path_errors",
    "non_local_token_path_in",
    "path_no_backsteps_errors",
    "resource_field_selector_errors",
    "validate_volumes",
]

# validateVolumeSource's order; the second name is the path child a second source is refused at.
_SOURCES: tuple[tuple[str, str], ...] = (
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"), ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"), ("nfs", "nfs"), ("iscsi", "iscsi"), ("glusterfs", "glusterfs"), ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"), ("cinder", "cinder"), ("cephfs", "cephFS"),
    ("quobyte", "quobyte"), ("downwardAPI", "downwarAPI"), ("fc", "fc"), ("flexVolume", "flexVolume"),
    ("configMap", "configMap"), ("azureFile", "azureFile"), ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"), ("portworxVolume", "portworxVolume"), ("azureDisk", "azureDisk"),
    ("storageos", "storageos"), ("projected", "projected"), ("scaleIO", "scaleIO"), ("csi", "csi"),
    ("ephemeral", "ephemeral"), ("image", "image"),
)
# sets.List(supportedHostPathTypes): sorted, the unset type first.
_HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"]
_FILE_MODE = "must be a number between 0 and 0777 (octal), both inclusive"  # fileModeErrorMsg
# validVolumeDownwardAPIFieldPathExpressions and validContainerResourceFieldPathExpressions, sorted.
VOLUME_FIELD_PATHS = ["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"]
_RESOURCE_FIELD_PATHS = ["limits.cpu", "limits.ephemeral-storage", "limits.memory",
                         "requests.cpu", "requests.ephemeral-storage", "requests.memory"]
_HUGEPAGES_PREFIXES = ("limits.hugepages-", "requests.hugepages-")
# podshelper.ConvertDownwardAPIFieldLabel: the labels a v1 field selector may name.
_DOWNWARD_LABELS = frozenset({
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
})
_SIZE_UNITS = ["1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"]
_DIVISORS: tuple[tuple[tuple[str, ...], list[str], str], ...] = (
    (("limits.cpu", "requests.cpu"), ["1m", "1"], "only divisor's values 1m and 1 are supported with the cpu resource"),
    (("limits.memory", "requests.memory"), _SIZE_UNITS,
     "only divisor's values " + ", ".join(_SIZE_UNITS) + " are supported with the memory resource"),
    (("limits.ephemeral-storage", "requests.ephemeral-storage"), _SIZE_UNITS,
     "only divisor's values " + ", ".join(_SIZE_UNITS) + " are supported with the local ephemeral storage resource"),
)
_HUGEPAGES_DIVISOR = "only divisor's values " + ", ".join(_SIZE_UNITS) + " are supported with the hugepages resource"
_TOKEN_DEFAULT_EXPIRATION = 3600  # SetDefaults_ServiceAccountTokenProjection


# -- paths ---------------------------------------------------------------------------------------------


def path_no_backsteps_errors(target: str, path: str) -> list[FieldError]:
    """validatePathNoBacksteps: one error however many ``..`` elements."""
    return [FieldError.invalid(path, target, "must not contain '..'")] if ".." in target.split("/") else []


def local_descending_path_errors(target: str, path: str) -> list[FieldError]:
    """validateLocalDescendingPath: relative, without ``..`` elements."""
    errs = [FieldError.invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    return [*errs, *path_no_backsteps_errors(target, path)]


def _local_non_reserved_path(target: str, path: str) -> list[FieldError]:
    """ValidateLocalNonReservedPath: also not starting with ``..`` (unless ``../``, reported above)."""
    errs = local_descending_path_errors(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(FieldError.invalid(path, target, "must not start with '..'"))
    return errs


def _mode(holder: Mapping[str, Any], key: str, path: str) -> list[FieldError]:
    mode = int_of(holder.get(key))
    if mode is not None and not 0 <= mode <= 0o777:
        return [FieldError.invalid(f"{path}.{key}", mode, _FILE_MODE)]
    return []


# -- field selectors (shared with env) -----------------------------------------------------------------


def _split_subscript(field_path: str) -> tuple[str, str] | None:
    """fieldpath.SplitMaybeSubscriptedPath: ``metadata.labels['k']`` is (``metadata.labels``, ``k``)."""
    if not field_path.endswith("']"):
        return None
    head, sep, subscript = field_path[:-2].partition("['")
    return (head, subscript) if sep and head else None


def field_selector_errors(selector: Mapping[str, Any], expressions: list[str], path: str) -> list[FieldError]:
    """validateObjectFieldSelector (``apiVersion`` defaults to ``v1``, SetDefaults_ObjectFieldSelector)."""
    api_version = go_text(selector.get("apiVersion")) or "v1"
    field_path = go_text(selector.get("fieldPath"))
    if not field_path:
        return [FieldError.required(f"{path}.fieldPath")]
    # podshelper.ConvertDownwardAPIFieldLabel.
    split = _split_subscript(field_path)
    problem = ""
    if api_version != "v1":
        problem = f"unsupported pod version: {api_version}"
    elif split is not None:
        if split[0] not in ("metadata.annotations", "metadata.labels"):
            problem = f"field label does not support subscript: {field_path}"
    elif field_path not in _DOWNWARD_LABELS and field_path != "spec.host":
        problem = f"field label not supported: {field_path}"
    if problem:
        return [FieldError.invalid(f"{path}.fieldPath", field_path, f"error converting fieldPath: {problem}")]
    if split is not None:
        key = split[1].lower() if split[0] == "metadata.annotations" else split[1]
        return [FieldError.invalid(path, key, m) for m in is_qualified_name(key)]
    internal = "spec.nodeName" if field_path == "spec.host" else field_path
    if internal not in expressions:
        return [FieldError.not_supported(f"{path}.fieldPath", internal, expressions)]
    return []


def resource_field_selector_errors(selector: Mapping[str, Any], path: str, *, volume: bool) -> list[FieldError]:
    """validateContainerResourceFieldSelector (hugepages resources allowed by prefix) and its divisor."""
    errs: list[FieldError] = []
    resource = go_text(selector.get("resource"))
    if volume and not go_text(selector.get("containerName")):
        errs.append(FieldError.required(f"{path}.containerName"))
    elif not resource:
        errs.append(FieldError.required(f"{path}.resource"))
    elif resource not in _RESOURCE_FIELD_PATHS and not resource.startswith(_HUGEPAGES_PREFIXES):
        errs.append(FieldError.not_supported(f"{path}.resource", resource, _RESOURCE_FIELD_PATHS))
    return [*errs, *_divisor_errors(resource, selector.get("divisor"), path)]


def _divisor_errors(resource: str, divisor: Any, path: str) -> list[FieldError]:
    """validateContainerResourceDivisor on the divisor as decoded (canonical text; "0" when unset)."""
    if not isinstance(divisor, str):
        return []
    try:
        if parse_quantity(divisor.strip()).sign() == 0:
            return []
    except QuantityError:
        return []
    errs = [FieldError.invalid(f"{path}.divisor", resource, message)
            for names, allowed, message in _DIVISORS if resource in names and divisor not in allowed]
    if resource.startswith(_HUGEPAGES_PREFIXES) and divisor not in _SIZE_UNITS:
        errs.append(FieldError.invalid(f"{path}.divisor", resource, _HUGEPAGES_DIVISOR))
    return errs


# -- volume sources ----------------------------------------------------------------------------------


def _key_to_path(item: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateKeyToPath."""
    errs: list[FieldError] = []
    if not go_text(item.get("key")):
        errs.append(FieldError.required(f"{path}.key"))
    target = go_text(item.get("path"))
    if not target:
        errs.append(FieldError.required(f"{path}.path"))
    return [*errs, *_local_non_reserved_path(target, f"{path}.path"), *_mode(item, "mode", path)]


def _items(source: Mapping[str, Any], path: str) -> list[FieldError]:
    return [e for i, item in objects_of(source.get("items")) for e in _key_to_path(item, f"{path}.items[{i}]")]


def host_path_errors(source: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateHostPathVolumeSource (a pod's volume and a PersistentVolume's source alike)."""
    target = go_text(source.get("path"))
    if not target:
        return [FieldError.required(f"{path}.path")]
    errs = path_no_backsteps_errors(target, f"{path}.path")
    kind = source.get("type")
    if isinstance(kind, str) and kind not in _HOST_PATH_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind, _HOST_PATH_TYPES))
    return errs


def _empty_dir(source: Mapping[str, Any], path: str) -> list[FieldError]:
    limit = source.get("sizeLimit")
    try:
        negative = isinstance(limit, str) and parse_quantity(limit.strip()).sign() < 0
    except QuantityError:
        negative = False
    return [FieldError.forbidden(f"{path}.sizeLimit", "SizeLimit field must be a valid resource quantity")] if negative else []


def _secret(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = [] if go_text(source.get("secretName")) else [FieldError.required(f"{path}.secretName")]
    return [*errs, *_mode(source, "defaultMode", path), *_items(source, path)]


def _config_map(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = [] if go_text(source.get("name")) else [FieldError.required(f"{path}.name")]
    return [*errs, *_mode(source, "defaultMode", path), *_items(source, path)]


def _claim(source: Mapping[str, Any], path: str) -> list[FieldError]:
    return [] if go_text(source.get("claimName")) else [FieldError.required(f"{path}.claimName")]


def _downward_file(item: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateDownwardAPIVolumeFile: ``path`` is the source's (upstream does not index the item)."""
    target = go_text(item.get("path"))
    errs = [] if target else [FieldError.required(f"{path}.path")]
    errs.extend(_local_non_reserved_path(target, f"{path}.path"))
    field_ref, resource_ref = item.get("fieldRef"), item.get("resourceFieldRef")
    if isinstance(field_ref, dict):
        errs.extend(field_selector_errors(field_ref, VOLUME_FIELD_PATHS, f"{path}.fieldRef"))
        if isinstance(resource_ref, dict):
            errs.append(FieldError.invalid(path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif isinstance(resource_ref, dict):
        errs.extend(resource_field_selector_errors(resource_ref, f"{path}.resourceFieldRef", volume=True))
    else:
        errs.append(FieldError.required(path, "one of fieldRef and resourceFieldRef is required"))
    return [*errs, *_mode(item, "mode", path)]


def _downward_api(source: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = _mode(source, "defaultMode", path)
    return [*errs, *(e for _, item in objects_of(source.get("items")) for e in _downward_file(item, path))]


def _projected(source: Mapping[str, Any], path: str, *, allow_non_local_token_path: bool = False) -> list[FieldError]:
    """validateProjectedVolumeSource / validateProjectionSources (clusterTrustBundle only counted)."""
    errs = _mode(source, "defaultMode", path)
    seen: set[str] = set()

    def unique(target: str, value: Any) -> None:
        if target in seen:
            errs.append(FieldError.invalid(path, value, "conflicting duplicate paths"))
        seen.add(target)

    for i, projection in objects_of(source.get("sources")):
        src = f"{path}.sources[{i}]"
        count = 0
        for kind in ("secret", "configMap"):
            if isinstance(ref := projection.get(kind), dict):
                count += 1
                if not go_text(ref.get("name")):
                    errs.append(FieldError.required(f"{src}.{kind}.name"))
                for j, item in objects_of(ref.get("items")):
                    errs.extend(_key_to_path(item, f"{src}.{kind}.items[{j}]"))
                    if target := go_text(item.get("path")):
                        unique(target, go_text(ref.get("name")))
        if isinstance(downward := projection.get("downwardAPI"), dict):
            count += 1
            for _, item in objects_of(downward.get("items")):
                errs.extend(_downward_file(item, f"{src}.downwardAPI"))
                if target := go_text(item.get("path")):
                    unique(target, target)
        if isinstance(token := projection.get("serviceAccountToken"), dict):
            count += 1
            expiration = int_of(token.get("expirationSeconds"))
            expiration = _TOKEN_DEFAULT_EXPIRATION if expiration is None else expiration
            if expiration < 600:
                errs.append(FieldError.invalid(f"{src}.serviceAccountToken.expirationSeconds", expiration,
                                               "may not specify a duration less than 10 minutes"))
            if expiration > 1 << 32:
                errs.append(FieldError.invalid(f"{src}.serviceAccountToken.expirationSeconds", expiration,
                                               "may not specify a duration larger than 2^32 seconds"))
            target = go_text(token.get("path"))
            # Upstream reports the token's path at the projected source's own path.
            if not target:
                errs.append(FieldError.required(f"{path}.path"))
            elif not allow_non_local_token_path:
                errs.extend(_local_non_reserved_path(target, f"{path}.path"))
        if isinstance(projection.get("clusterTrustBundle"), dict):
            count += 1
        if count > 1:
            errs.append(FieldError.forbidden(src, "may not specify more than 1 volume type per source"))
    return errs


_CHECKS = {
    "emptyDir": _empty_dir, "hostPath": host_path_errors, "secret": _secret, "configMap": _config_map,
    "persistentVolumeClaim": _claim, "downwardAPI": _downward_api, "projected": _projected,
}


_RANK = {key: rank for rank, (key, _) in enumerate(_SOURCES)}
_CHILD = dict(_SOURCES)


def non_local_token_path_in(spec: Any) -> bool:
    """``hasNonLocalProjectedTokenPath``: a projected token of ``spec`` has a path upstream now refuses."""
    return any(_local_non_reserved_path(go_text(token.get("path")), "")
               for _, volume in objects_of(mapping_of(spec).get("volumes"))
               for _, projection in objects_of(mapping_of(volume.get("projected")).get("sources"))
               if isinstance(token := projection.get("serviceAccountToken"), dict))


def _source_errors(volume: Mapping[str, Any], path: str, *, allow_non_local_token_path: bool = False) -> list[FieldError]:
    """validateVolumeSource: exactly one source, each checked at its own key (in upstream's order)."""
    present = [key for key in volume if key in _RANK and isinstance(volume[key], dict)]
    if not present:
        return [FieldError.required(path, "must specify a volume type")]
    if len(present) > 1:
        present.sort(key=_RANK.__getitem__)
    first = present[0]
    check = _CHECKS.get(first)
    if first == "projected":
        errs = _projected(volume[first], f"{path}.{first}", allow_non_local_token_path=allow_non_local_token_path)
    else:
        errs = check(volume[first], f"{path}.{first}") if check is not None else []
    errs.extend(FieldError.forbidden(f"{path}.{_CHILD[key]}", "may not specify more than 1 volume type") for key in present[1:])
    return errs


def validate_volumes(volumes: Any, path: str, *, pod_name: str = "",
                     allow_non_local_token_path: bool = False) -> tuple[dict[str, Mapping[str, Any]], list[FieldError]]:
    """ValidateVolumes: the valid volumes by name, and the errors (``pod_name`` for a pod, "" for a template)."""
    errs: list[FieldError] = []
    valid: dict[str, Mapping[str, Any]] = {}
    items = objects_of(volumes)
    created = {f"{pod_name}-{go_text(v.get('name'))}" for _, v in items if isinstance(v.get("ephemeral"), dict)} if pod_name else set()
    names: set[str] = set()
    for i, volume in items:
        p = f"{path}[{i}]"
        name = go_text(volume.get("name"))
        found = _source_errors(volume, p, allow_non_local_token_path=allow_non_local_token_path)
        if not name:
            found.append(FieldError.required(f"{p}.name"))
        else:
            found.extend(FieldError.invalid(f"{p}.name", name, m) for m in is_dns1123_label(name))
        if name in names:
            found.append(FieldError.duplicate(f"{p}.name", name))
        if found:
            errs.extend(found)
        else:
            names.add(name)
            valid[name] = volume
        claim = go_text(mapping_of(volume.get("persistentVolumeClaim")).get("claimName"))
        if claim and claim in created:
            errs.append(FieldError.invalid(f"{p}.persistentVolumeClaim.claimName", claim,
                                           "must not reference a PVC that gets created for an ephemeral volume"))
    return valid, errs
