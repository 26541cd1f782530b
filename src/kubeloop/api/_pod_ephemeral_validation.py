"""What an update through ``pods/NAME/ephemeralcontainers`` may do, as upstream's
``ValidatePodEphemeralContainersUpdate`` decides (k/k ``pkg/apis/core/validation/validation.go``, 1.32).

:func:`validate_pod_ephemeral_containers_update` takes the pod as the subresource's strategy leaves it
(everything but ``spec.ephemeralContainers`` is the stored pod's: :mod:`kubeloop.server._pod_strategy`)
and returns, in upstream's order:

1. ``validatePodMetadataAndSpec`` on the new pod: the whole spec's rules, the new ephemeral containers'
   among them (``validateEphemeralContainers``: a name unique across every container, a
   ``targetContainerName`` naming a regular or init container, no ports, probes, lifecycle, resources,
   ``subPath``; :mod:`kubeloop.api._pod_container_validation`), then ``ValidatePodSpecificAnnotationUpdates``;
2. a mirror (static) pod: only ``Forbidden`` at the empty path, ``static pods do not support ephemeral
   containers`` (upstream returns that error alone);
3. every stored ephemeral container must still be there (``spec.ephemeralContainers: Forbidden: existing
   ephemeral containers "C" may not be removed`` and a newline, as upstream's text ends) and unchanged
   (``spec.ephemeralContainers.C: Forbidden: existing ephemeral containers "C" may not be changed``, a
   newline, then a diff: upstream prints ``cmp.Diff``, this prints ``-``/``+`` lines of its own). The
   containers are matched by name (a patch may reorder them) and compared as ``Semantic.DeepEqual`` does.

``metadata`` itself (``ValidateObjectMetaUpdate``) is the generic write path's. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, mapping_of, objects_of, semantic_diff
from kubeloop.api._pod_spec_validation import validate_pod_spec_update
from kubeloop.api._pod_update_validation import semantic_form, validate_pod_annotation_updates

__all__ = ["validate_pod_ephemeral_containers_update"]

# v1.MirrorPodAnnotationKey: the kubelet marks the API copy of a static pod with it.
_MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
_PATH = "spec.ephemeralContainers"


def validate_pod_ephemeral_containers_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePodEphemeralContainersUpdate (see the module docstring)."""
    errs = validate_pod_spec_update(new, old)
    errs.extend(validate_pod_annotation_updates(new, old))
    if _MIRROR_POD_ANNOTATION in mapping_of(mapping_of(old.get("metadata")).get("annotations")):
        return [FieldError.forbidden("", "static pods do not support ephemeral containers")]
    added = {go_text(c.get("name")): c for _, c in objects_of(mapping_of(new.get("spec")).get("ephemeralContainers"))}
    for _, stored in objects_of(mapping_of(old.get("spec")).get("ephemeralContainers")):
        name = go_text(stored.get("name"))
        now = added.get(name)
        if now is None:
            errs.append(FieldError.forbidden(_PATH, f'existing ephemeral containers "{name}" may not be removed\n'))
            continue
        before, after = semantic_form(stored), semantic_form(now)
        if before != after:
            errs.append(FieldError.forbidden(f"{_PATH}.{name}", f'existing ephemeral containers "{name}" may not be '
                                             f"changed\n{semantic_diff(before, after, '')}"))
    return errs
