"""The Status causes controllers act on: ``apierrors.HasStatusCause`` (k8s.io/apimachinery).

A create refused because its namespace is being deleted carries the cause ``NamespaceTerminating``
(``reason`` in the cause's JSON; kube-apiserver's NamespaceLifecycle plugin sets it). Upstream's
controllers neither retry such a create nor record an Event for it, since every later create would fail
the same way: pod control (``RealPodControl.createPods``) records no ``FailedCreate``, and the
ReplicaSet, Job, DaemonSet, CronJob, Endpoints, EndpointSlice-mirroring, ServiceAccount and root-CA
controllers end the sync without an error.
"""

from __future__ import annotations

from kubeloop.api import ApiError

__all__ = ["NAMESPACE_TERMINATING_CAUSE", "has_status_cause", "is_namespace_terminating_error"]

NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"  # corev1.NamespaceTerminatingCause


def has_status_cause(error: BaseException, cause: str) -> bool:
    """``apierrors.HasStatusCause``: ``error`` is an API error whose details list ``cause``."""
    return isinstance(error, ApiError) and any(c.get("reason") == cause for c in error.causes if isinstance(c, dict))


def is_namespace_terminating_error(error: BaseException) -> bool:
    """``apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause)``."""
    return has_status_cause(error, NAMESPACE_TERMINATING_CAUSE)
