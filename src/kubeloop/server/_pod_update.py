"""The pod checks of an update through the main resource, with the object upstream would validate.

Upstream validates a pod update (``ValidatePodUpdate``) on the request body after defaulting and
mutating admission, against the stored pod as decoded from storage, which defaulting fills too. The
write path here runs mutating admission before validation too (so a PUT of a manifest without the
default tolerations gets them back from DefaultTolerationSeconds before it is compared), and keeps
the stored object as it was written, so :func:`validate_pod_main_update`, only when the spec reads
as changed, compares again with a defaulted copy of the stored pod (a pod stored before a default
existed, or written to the store directly, is not refused for fields nobody changed). The common
update, which leaves the spec alone, copies nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from kubeloop.api import FieldError, ResourceInfo
from kubeloop.api._pod_spec_validation import validate_pod_spec_update
from kubeloop.api._pod_update_validation import validate_pod_update
from kubeloop.server._defaults import apply_defaults

__all__ = ["validate_pod_main_update"]


def validate_pod_main_update(info: ResourceInfo, new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """ValidatePodSpec's checks on ``new``, then ValidatePodUpdate's (see the module docstring)."""
    errs = validate_pod_spec_update(new, old)
    update_errs = validate_pod_update(new, old)
    if any(e.field == "spec" and e.type == "forbidden" for e in update_errs):
        defaulted = {**old, "spec": copy.deepcopy(old.get("spec"))}
        apply_defaults(info, defaulted)
        update_errs = validate_pod_update(new, defaulted)
    return [*errs, *update_errs]
