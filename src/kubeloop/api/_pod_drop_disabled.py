"""The pod fields upstream drops because their feature gate is off by default in Kubernetes 1.32.

Upstream's pod strategy calls ``podutil.DropDisabledPodFields(pod, oldPod)`` in ``PrepareForCreate``
(``oldPod`` nil) and ``PrepareForUpdate``, and the workload strategies call
``DropDisabledTemplateFields`` on their pod template (k/k ``pkg/api/pod/util.go``, release-1.32:
``dropDisabledFields``, ``dropDisabledPodStatusFields``). A field behind a gate that is off is cleared
unless the stored object already uses it (the ``...InUse`` helpers), so an object written while the
gate was on stays writable. kubeloop models 1.32's default gates (``pkg/features/kube_features.go``;
the stages are those of the kubernetes/website feature-gate pages), so :data:`GATES_OFF` are off and
everything else these functions look at is on (``SidecarContainers``, ``RecursiveReadOnlyMounts``,
``PodLifecycleSleepAction``, ``NodeInclusionPolicyInPodTopologySpread``,
``MatchLabelKeysInPodTopologySpread``, ``MatchLabelKeysInPodAffinity``: nothing of theirs is dropped).

What each off gate clears, in ``dropDisabledFields``' order (the JSON paths of ``core/v1``):

- ``UserNamespacesSupport`` (beta, off): ``spec.hostUsers``;
- ``SupplementalGroupsPolicy`` (alpha): ``spec.securityContext.supplementalGroupsPolicy`` and, in the
  status, each container status's ``user``;
- ``PodLevelResources`` (alpha): ``spec.resources`` (in use when it has requests or limits);
- ``ProcMountType`` (beta, off): a container's ``securityContext.procMount`` is forced to ``Default``
  (not removed: upstream once defaulted it, and removing it would diff stored objects), in use when
  some container has another value;
- ``DynamicResourceAllocation`` (beta, off): ``spec.resourceClaims``, each container's
  ``resources.claims`` and ``status.resourceClaimStatuses``;
- ``ClusterTrustBundleProjection`` (alpha): the ``clusterTrustBundle`` of each projected volume source
  (the source itself stays, empty);
- ``InPlacePodVerticalScaling`` (alpha): each container's ``resizePolicy`` and, in the status, each
  container status's ``resources`` and ``status.resize``; with ``InPlacePodVerticalScalingAllocatedStatus``
  (alpha) each container status's ``allocatedResources`` too, whatever the stored object holds;
- ``ImageVolume`` (alpha): ``image`` volumes and the mounts that name them;
- ``SELinuxChangePolicy`` (alpha): ``spec.securityContext.seLinuxChangePolicy``;
- ``ResourceHealthStatus`` (alpha): each container status's ``allocatedResourcesStatus``, always.

Every function works in place on plain JSON dicts; a part that is not the expected JSON shape is left
alone (the decoder's job upstream), never a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubeloop.api._pod_fields import dict_or_none, dicts_in

__all__ = ["GATES_OFF", "drop_disabled_pod_fields", "drop_disabled_template_fields"]

GATES_OFF = (
    "UserNamespacesSupport", "SupplementalGroupsPolicy", "PodLevelResources", "ProcMountType",
    "DynamicResourceAllocation", "ClusterTrustBundleProjection", "InPlacePodVerticalScaling",
    "InPlacePodVerticalScalingAllocatedStatus", "ImageVolume", "SELinuxChangePolicy", "ResourceHealthStatus",
)

_CONTAINER_KEYS = ("initContainers", "containers", "ephemeralContainers")  # VisitContainers' order
_STATUS_KEYS = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")


def _containers(spec: dict[str, Any] | None, keys: tuple[str, ...] = _CONTAINER_KEYS) -> Iterator[dict[str, Any]]:
    for key in keys if spec is not None else ():
        assert spec is not None
        yield from dicts_in(spec.get(key))


def _security_context(spec: dict[str, Any] | None) -> dict[str, Any]:
    return (dict_or_none(spec.get("securityContext")) if spec is not None else None) or {}


def _set(value: Any) -> bool:
    """A Go pointer or slice that is not nil: present and not ``null``."""
    return value is not None


# -- the InUse helpers, on the stored spec (None on create) --------------------------------------


def _host_users_in_use(spec: dict[str, Any] | None) -> bool:
    return spec is not None and _set(spec.get("hostUsers"))


def _pod_level_resources_in_use(spec: dict[str, Any] | None) -> bool:
    resources = dict_or_none(spec.get("resources")) if spec is not None else None
    return resources is not None and bool(resources.get("requests") or resources.get("limits"))


def _proc_mount_in_use(spec: dict[str, Any] | None) -> bool:
    return any(_set(mount := _security_context(c).get("procMount")) and mount != "Default" for c in _containers(spec))


def _dra_in_use(spec: dict[str, Any] | None) -> bool:
    return spec is not None and bool(spec.get("resourceClaims"))


def _trust_bundle_in_use(spec: dict[str, Any] | None) -> bool:
    return any(_set(source.get("clusterTrustBundle")) for source in _projected_sources(spec))


def _resize_policy_in_use(spec: dict[str, Any] | None) -> bool:
    # 1.32's inPlacePodVerticalScalingInUse looks at the regular containers only.
    return any(c.get("resizePolicy") for c in _containers(spec, ("containers",)))


def _image_volumes_in_use(spec: dict[str, Any] | None) -> bool:
    return spec is not None and any(_set(v.get("image")) for v in dicts_in(spec.get("volumes")))


def _projected_sources(spec: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    for volume in dicts_in(spec.get("volumes")) if spec is not None else ():
        projected = dict_or_none(volume.get("projected"))
        if projected is not None:
            yield from dicts_in(projected.get("sources"))


# -- the drops ------------------------------------------------------------------------------------


def _drop_image_volumes(spec: dict[str, Any]) -> None:
    """dropImageVolumes: the volumes and every container's mounts of them (an emptied list is nil)."""
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return
    names = {v.get("name") for v in dicts_in(volumes) if _set(v.get("image"))}
    if not names:
        return
    kept = [v for v in volumes if not (isinstance(v, dict) and _set(v.get("image")))]
    if kept:
        spec["volumes"] = kept
    else:
        del spec["volumes"]
    for container in _containers(spec):
        mounts = container.get("volumeMounts")
        if isinstance(mounts, list):
            left = [m for m in mounts if not (isinstance(m, dict) and m.get("name") in names)]
            if left:
                container["volumeMounts"] = left
            else:
                del container["volumeMounts"]


def _drop_spec(spec: dict[str, Any], old: dict[str, Any] | None) -> None:
    """dropDisabledFields on one pod spec (``old`` the stored one, or None)."""
    context = dict_or_none(spec.get("securityContext"))
    if not _host_users_in_use(old):
        spec.pop("hostUsers", None)
    if context is not None and not _set(_security_context(old).get("supplementalGroupsPolicy")):
        context.pop("supplementalGroupsPolicy", None)
    if not _pod_level_resources_in_use(old):
        spec.pop("resources", None)
    if not _proc_mount_in_use(old):
        for container in _containers(spec):
            container_context = dict_or_none(container.get("securityContext"))
            if container_context is not None and _set(container_context.get("procMount")):
                container_context["procMount"] = "Default"
    if not _dra_in_use(old):
        for container in _containers(spec):
            if (resources := dict_or_none(container.get("resources"))) is not None:
                resources.pop("claims", None)
        spec.pop("resourceClaims", None)
    if not _trust_bundle_in_use(old):
        for source in _projected_sources(spec):
            source.pop("clusterTrustBundle", None)
    if not _resize_policy_in_use(old):
        for container in _containers(spec):
            container.pop("resizePolicy", None)
    if not _image_volumes_in_use(old):
        _drop_image_volumes(spec)
    if context is not None and not _set(_security_context(old).get("seLinuxChangePolicy")):
        context.pop("seLinuxChangePolicy", None)


def _drop_status(status: dict[str, Any], old_spec: dict[str, Any] | None) -> None:
    """dropDisabledPodStatusFields (1.32)."""
    statuses = [s for key in _STATUS_KEYS for s in dicts_in(status.get(key))]
    resize_in_use = _resize_policy_in_use(old_spec)
    if not resize_in_use:
        for container_status in statuses:
            container_status.pop("resources", None)
        status.pop("resize", None)
    for container_status in statuses:  # InPlacePodVerticalScalingAllocatedStatus: no InUse check
        container_status.pop("allocatedResources", None)
    if not _dra_in_use(old_spec):
        status.pop("resourceClaimStatuses", None)
    for container_status in statuses:  # ResourceHealthStatus: no InUse check
        container_status.pop("allocatedResourcesStatus", None)
    if not _set(_security_context(old_spec).get("supplementalGroupsPolicy")):
        for container_status in statuses:
            container_status.pop("user", None)


def drop_disabled_pod_fields(pod: dict[str, Any], old: dict[str, Any] | None) -> None:
    """``DropDisabledPodFields``: ``pod``'s spec and status, ``old`` the stored pod (None on create)."""
    spec = dict_or_none(pod.get("spec"))
    old_spec = dict_or_none(old.get("spec")) if old is not None else None
    if spec is not None:
        _drop_spec(spec, old_spec)
    if (status := dict_or_none(pod.get("status"))) is not None:
        _drop_status(status, old_spec)


def _template_spec(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    spec = dict_or_none(obj.get("spec")) if obj is not None else None
    template = dict_or_none(spec.get("template")) if spec is not None else None
    return dict_or_none(template.get("spec")) if template is not None else None


def drop_disabled_template_fields(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """``DropDisabledTemplateFields`` on a workload's ``spec.template`` (``old`` the stored workload)."""
    spec = _template_spec(obj)
    if spec is not None:
        _drop_spec(spec, _template_spec(old))
