"""Validation of a pod's deprecated seccomp and AppArmor annotations, as upstream's pod validation does it.

Before their fields existed, seccomp and AppArmor profiles were pod annotations; upstream still checks
them (k/k ``pkg/apis/core/validation/validation.go``, release 1.32):

- :func:`security_annotation_errors` is the seccomp and AppArmor part of ``ValidatePodSpecificAnnotations``
  (``ValidateSeccompPodAnnotations``, ``ValidateAppArmorPodAnnotations``), run for pods and every
  workload template: a seccomp annotation names a known profile or a relative ``localhost/`` path
  (reported at ``annotations.<key>``, upstream's ``Child``); an AppArmor annotation names a container of
  the pod and a known profile (at ``annotations[<key>]``, upstream's ``Key``);
- :func:`annotation_field_match_errors` is ``validateSeccompAnnotationsAndFields`` and
  ``validateAppArmorAnnotationsAndFieldsMatchOnCreate``, run on a pod's create: where both an
  annotation and its field are set, they must say the same;
- :data:`APPARMOR_ANNOTATION_PREFIX` is what ``ValidatePodSpecificAnnotationUpdates`` forbids adding,
  changing or removing on update.

Upstream's PrepareForCreate also copies an annotation into its unset field (the version skew
strategy); kubeloop does not, so a pod keeps only what it was sent. Annotations are read in the order
they were sent where upstream walks a Go map. Pure functions; input that is not the expected JSON
shape is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import containers_with_paths, go_text, mapping_of
from kubeloop.api._pod_volume_validation import local_descending_path_errors

__all__ = ["APPARMOR_ANNOTATION_PREFIX", "annotation_field_match_errors", "security_annotation_errors"]

SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_LOCALHOST = "localhost/"
_RUNTIME_DEFAULT = "runtime/default"
_UNCONFINED = "unconfined"


def _seccomp_profile_errors(profile: str, path: str) -> list[FieldError]:
    """ValidateSeccompProfile."""
    if profile in (_RUNTIME_DEFAULT, "docker/default", _UNCONFINED):
        return []
    if profile.startswith(_LOCALHOST):
        return local_descending_path_errors(profile[len(_LOCALHOST):], path)
    return [FieldError.invalid(path, profile, "must be a valid seccomp profile")]


def security_annotation_errors(annotations: Any, spec: Any, path: str) -> list[FieldError]:
    """ValidateSeccompPodAnnotations, then ValidateAppArmorPodAnnotations, on the annotations at ``path``."""
    annotations = mapping_of(annotations)
    if not annotations:
        return []
    spec = mapping_of(spec)
    errs: list[FieldError] = []
    if isinstance(pod_profile := annotations.get(SECCOMP_POD_ANNOTATION), str):
        errs.extend(_seccomp_profile_errors(pod_profile, f"{path}.{SECCOMP_POD_ANNOTATION}"))
    for key, value in annotations.items():
        if key.startswith(SECCOMP_CONTAINER_PREFIX):
            errs.extend(_seccomp_profile_errors(go_text(value), f"{path}.{key}"))
    names: set[str] | None = None  # the pod's container names, gathered once an AppArmor annotation needs them
    for key, value in annotations.items():
        if not key.startswith(APPARMOR_ANNOTATION_PREFIX):
            continue
        if names is None:
            names = {go_text(c.get("name")) for c, _ in containers_with_paths(spec, "")}
        container = key[len(APPARMOR_ANNOTATION_PREFIX):]
        if container not in names:
            errs.append(FieldError.invalid(f"{path}[{key}]", container, "container not found"))
        profile = go_text(value)
        if profile not in ("", _RUNTIME_DEFAULT, _UNCONFINED) and not profile.startswith(_LOCALHOST):
            errs.append(FieldError.invalid(f"{path}[{key}]", profile, f"invalid AppArmor profile name: {json.dumps(profile)}"))
    return errs


def _seccomp_match(annotation: str, profile: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateSeccompAnnotationsAndFieldsMatch."""
    kind = profile.get("type")
    if kind == "Unconfined" and annotation != _UNCONFINED:
        return [FieldError.forbidden(f"{path}.type", "seccomp type in annotation and field must match")]
    if kind == "RuntimeDefault" and annotation not in (_RUNTIME_DEFAULT, "docker/default"):
        return [FieldError.forbidden(f"{path}.type", "seccomp type in annotation and field must match")]
    if kind == "Localhost":
        if not annotation.startswith(_LOCALHOST):
            return [FieldError.forbidden(f"{path}.type", "seccomp type in annotation and field must match")]
        local = profile.get("localhostProfile")
        if local is None or annotation[len(_LOCALHOST):] != go_text(local):
            return [FieldError.forbidden(f"{path}.localhostProfile", "seccomp profile in annotation and field must match")]
    return []


def _apparmor_match(annotation: str, profile: Mapping[str, Any], path: str) -> list[FieldError]:
    kind = profile.get("type")
    if (kind == "Unconfined" and annotation != _UNCONFINED) or (kind == "RuntimeDefault" and annotation != _RUNTIME_DEFAULT):
        return [FieldError.forbidden(f"{path}.type", "apparmor type in annotation and field must match")]
    if kind == "Localhost":
        if not annotation.startswith(_LOCALHOST):
            return [FieldError.forbidden(f"{path}.type", "apparmor type in annotation and field must match")]
        local = profile.get("localhostProfile")
        if local is None or annotation[len(_LOCALHOST):] != go_text(local):
            return [FieldError.forbidden(f"{path}.localhostProfile", "apparmor profile in annotation and field must match")]
    return []


def annotation_field_match_errors(annotations: Any, spec: Any) -> list[FieldError]:
    """ValidatePodCreate's validateSeccompAnnotationsAndFields and validateAppArmorAnnotationsAndFieldsMatchOnCreate."""
    annotations, spec = mapping_of(annotations), mapping_of(spec)
    if not annotations:
        return []
    errs: list[FieldError] = []
    pod_context = mapping_of(spec.get("securityContext"))
    pod_seccomp = pod_context.get("seccompProfile")
    if isinstance(pod_seccomp, Mapping) and isinstance(annotation := annotations.get(SECCOMP_POD_ANNOTATION), str):
        errs.extend(_seccomp_match(annotation, pod_seccomp, "spec.securityContext.seccompProfile"))
    for container, path in containers_with_paths(spec, "spec"):
        seccomp = mapping_of(container.get("securityContext")).get("seccompProfile")
        key = SECCOMP_CONTAINER_PREFIX + go_text(container.get("name"))
        if isinstance(seccomp, Mapping) and isinstance(annotation := annotations.get(key), str):
            errs.extend(_seccomp_match(annotation, seccomp, f"{path}.securityContext.seccompProfile"))
    if go_text(mapping_of(spec.get("os")).get("name")) == "windows":
        return errs  # no AppArmor consistency check for windows pods
    pod_apparmor = pod_context.get("appArmorProfile")
    for container, path in containers_with_paths(spec, "spec"):
        profile = mapping_of(container.get("securityContext")).get("appArmorProfile")
        profile = profile if isinstance(profile, Mapping) else pod_apparmor
        key = APPARMOR_ANNOTATION_PREFIX + go_text(container.get("name"))
        if isinstance(profile, Mapping) and isinstance(annotation := annotations.get(key), str):
            errs.extend(_apparmor_match(annotation, profile, f"{path}.securityContext.appArmorProfile"))
    return errs
