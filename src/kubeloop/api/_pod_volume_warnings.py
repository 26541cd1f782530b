"""The ``Warning`` texts of a pod spec's volumes, as upstream's pod warnings word and order them.

k/k ``pkg/api/pod/warnings.go`` (release 1.32), the volume part of ``warningsForPodSpecAndMeta``:

- per volume, in upstream's order, the plugins that are deprecated or no longer work
  (photonPersistentDisk, gitRepo, scaleIO, flocker, storageOS, quobyte, glusterfs), a generic
  ephemeral volume's claim spec (``GetWarningsForPersistentVolumeClaimSpec``: a fractional storage
  quantity), then cephfs and rbd;
- then ``warningsForOverlappingVirtualPaths`` (kubernetes#121968, new in 1.32): two ``items`` of one
  configMap, secret or downwardAPI volume that write the same file or one inside the other, and across
  the sources of a projected volume (a service account token included), each collision as
  ``volume "<name>" (<what>): overlapping paths: "<path>" (<source>) with "<earlier path>" (<source>)``;
  a projected source with nothing in it is ``volume "<name>" (Projected) has no sources provided``.

As upstream, a projected source that contributes no paths (a configMap without ``items``) re-checks
the previous source's paths, which then collide with themselves; 1.32 does that, so this does too.
``prefix`` is ``""`` for a pod and ``"spec.template."`` for a template. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api._pod_fields import go_text, mapping_of, objects_of
from kubeloop.api._storage_warnings import claim_spec_warnings

__all__ = ["volume_warnings"]

# The plugins warned of before the ephemeral claim spec, then those after it (upstream's order).
_BEFORE_EPHEMERAL = (
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("gitRepo", "deprecated in v1.11"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
)
_AFTER_EPHEMERAL = (
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
)
_PROJECTIONS = ("secret", "downwardAPI", "configMap", "serviceAccountToken", "clusterTrustBundle")

# A path and where it came from ("" for a volume's own items).
_PathAndSource = tuple[str, str]


def _q(text: str) -> str:
    """Go's ``%q`` of a string."""
    return json.dumps(text, ensure_ascii=False)


def volume_warnings(prefix: str, spec: Mapping[str, Any]) -> list[str]:
    """The volume warnings of one pod spec (see the module docstring)."""
    volumes = objects_of(spec.get("volumes"))
    if not volumes:
        return []
    warnings: list[str] = []
    for i, volume in volumes:
        path = f"{prefix}spec.volumes[{i}]"
        warnings.extend(f"{path}.{key}: {text}" for key, text in _BEFORE_EPHEMERAL if volume.get(key) is not None)
        claim = mapping_of(volume.get("ephemeral")).get("volumeClaimTemplate")
        if claim is not None:
            warnings.extend(claim_spec_warnings(mapping_of(claim).get("spec"),
                                                f"{path}.ephemeral.volumeClaimTemplate.spec"))
        warnings.extend(f"{path}.{key}: {text}" for key, text in _AFTER_EPHEMERAL if volume.get(key) is not None)
    for _, volume in volumes:
        warnings.extend(_overlapping_paths(volume))
    return warnings


def _overlapping_paths(volume: Mapping[str, Any]) -> list[str]:
    """warningsForOverlappingVirtualPaths for one volume."""
    name = _q(go_text(volume.get("name")))
    warnings: list[str] = []
    for key, described in (("configMap", "ConfigMap"), ("secret", "Secret"), ("downwardAPI", "DownwardAPI")):
        source = volume.get(key)
        if isinstance(source, Mapping) and isinstance(source.get("items"), list):
            if key != "downwardAPI":
                described += " " + _q(go_text(source.get("secretName" if key == "secret" else "name")))
            warnings.extend(f"volume {name} ({described}): overlapping paths: {text}"
                            for text in _overlaps(_paths(source["items"], "")))
    projected = volume.get("projected")
    if isinstance(projected, Mapping):
        warnings.extend(_projected_overlaps(name, projected))
    return warnings


def _projected_overlaps(name: str, projected: Mapping[str, Any]) -> list[str]:
    warnings: list[str] = []
    source_paths: list[_PathAndSource] = []  # kept from one source to the next, as upstream's variable is
    seen: list[_PathAndSource] = []
    for _, source in objects_of(projected.get("sources")):
        if all(source.get(key) is None for key in _PROJECTIONS):
            warnings.append(f"volume {name} (Projected) has no sources provided")
            continue
        config_map, secret = mapping_of(source.get("configMap")), mapping_of(source.get("secret"))
        downward = mapping_of(source.get("downwardAPI"))
        if isinstance(config_map.get("items"), list):
            source_paths = _paths(config_map["items"], f"ConfigMap {_q(go_text(config_map.get('name')))}")
        elif isinstance(secret.get("items"), list):
            source_paths = _paths(secret["items"], f"Secret {_q(go_text(secret.get('name')))}")
        elif isinstance(downward.get("items"), list):
            source_paths = _paths(downward["items"], "DownwardAPI")
        elif source.get("serviceAccountToken") is not None:
            source_paths = [(go_text(mapping_of(source["serviceAccountToken"]).get("path")), "ServiceAccountToken")]
        elif source.get("clusterTrustBundle") is not None:
            bundle = mapping_of(source["clusterTrustBundle"])
            named = bundle.get("name") if bundle.get("name") is not None else bundle.get("signerName")
            source_paths = [(go_text(bundle.get("path")), f"ClusterTrustBundle {_q(go_text(named))}")]
        if not source_paths:
            continue
        for path, origin in source_paths:
            needle = (path.rstrip("/"), origin)
            warnings.extend(f"volume {name} (Projected): overlapping paths: {_text(needle)} with {_text(other)}"
                            for other in _collisions(seen, needle))
            seen.append(needle)
    return warnings


def _paths(items: list[Any], origin: str) -> list[_PathAndSource]:
    return [(go_text(item.get("path")), origin) for _, item in objects_of(items)]


def _overlaps(paths: list[_PathAndSource]) -> list[str]:
    """checkVolumeMappingForOverlap: each path against those before it."""
    out: list[str] = []
    seen: list[_PathAndSource] = []
    for path, origin in paths:
        needle = (path.rstrip("/"), origin)
        out.extend(f"{_text(needle)} with {_text(other)}" for other in _collisions(seen, needle))
        seen.append(needle)
    return out


def _collisions(haystack: list[_PathAndSource], needle: _PathAndSource) -> list[_PathAndSource]:
    """checkForOverlap: the same path, or one a directory of the other ("/"-separated); "" overlaps nothing."""
    if not needle[0]:
        return []
    inside = needle[0] + "/"
    return [item for item in haystack
            if item[0] and (item == needle or (item[0] + "/").startswith(inside) or inside.startswith(item[0] + "/"))]


def _text(path: _PathAndSource) -> str:
    """pathAndSource.String()."""
    return f"{_q(path[0])} ({path[1]})" if path[1] else _q(path[0])
