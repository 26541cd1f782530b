"""The simulated kubelet's Events: what changed between the status it stored and the one it writes.

:func:`kubelet_events` compares a pod's stored status with the status the kubelet is about to write
and returns the Events a kubelet would have recorded on the way (upstream ``pkg/kubelet/events``
reasons, messages as kubelet 1.32 words them), in order:

- a container run that began: ``Pulling`` ``Pulling image "nginx"`` and ``Pulled`` ``Successfully
  pulled image "nginx" in 0s (0s including waiting). Image size: 123456 bytes.`` (the first run, or every
  run with ``imagePullPolicy: Always``; otherwise ``Pulled`` ``Container image "nginx" already
  present on machine``), ``Created`` ``Created container: app``, ``Started`` ``Started container
  app``; init containers the same, once, before the others. The pull takes the simulated start delay;
  the size is the simulated image's, the one the node then reports in ``status.images``
  (:func:`~kubeloop.controllers._kubelet_images.simulated_image_size`).
- a container entering ``CrashLoopBackOff`` (again): Warning ``BackOff`` ``Back-off restarting failed
  container app in pod web-0_default(<uid>)``.
- a running container stopped because the pod is being deleted: ``Killing`` ``Stopping container app``.
- a run of a ``never-ready`` container that has a readiness probe: Warning ``Unhealthy``
  ``Readiness probe failed: ...`` (once per run; a real kubelet repeats it every probe period,
  which its recorder folds into ``count``).

The function is pure: events follow from a status *change*, so a kubelet that writes nothing (the
steady state) records nothing, and a status write that failed (a conflict) records nothing either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.controllers._events import Severity
from kubeloop.controllers._kubelet_images import simulated_image_size
from kubeloop.controllers._kubelet_profiles import FAULT, go_duration

__all__ = ["KubeletEvent", "kubelet_events"]

KubeletEvent = tuple[Severity, str, str]  # (type, reason, message)


def _runs_started(entry: Mapping[str, Any] | None) -> int:
    """How many runs of a container have begun, read from its status."""
    if not entry:
        return 0
    state = entry.get("state") or {}
    restarts = int(entry.get("restartCount") or 0)
    if "running" in state or "terminated" in state:
        return restarts + 1
    if (state.get("waiting") or {}).get("reason") == "CrashLoopBackOff":
        return restarts
    return 0


def _pull_policy(container: Mapping[str, Any]) -> str:
    policy = container.get("imagePullPolicy")
    if policy:
        return str(policy)
    image = str(container.get("image") or "")
    tail = image.rsplit("/", 1)[-1]
    tag = tail.split(":", 1)[1] if ":" in tail else ""
    return "IfNotPresent" if "@" in tail or (tag and tag != "latest") else "Always"


def _started(container: Mapping[str, Any], *, first: bool, pull_seconds: float) -> list[KubeletEvent]:
    name, image = container.get("name") or "", container.get("image") or ""
    policy = _pull_policy(container)
    events: list[KubeletEvent] = []
    if policy == "Always" or (first and policy != "Never"):
        took = go_duration(pull_seconds)
        events += [("Normal", "Pulling", f'Pulling image "{image}"'),
                   ("Normal", "Pulled", f'Successfully pulled image "{image}" in {took} ({took} including waiting). '
                                        f"Image size: {simulated_image_size(image)} bytes.")]  # fmt: skip
    else:
        events.append(("Normal", "Pulled", f'Container image "{image}" already present on machine'))
    events += [("Normal", "Created", f"Created container: {name}"), ("Normal", "Started", f"Started container {name}")]
    return events


def _probe_failure(container: Mapping[str, Any], pod_ip: str) -> str:
    probe = container.get("readinessProbe") or {}
    if "httpGet" in probe:
        return "Readiness probe failed: HTTP probe failed with statuscode: 503"
    if "tcpSocket" in probe:
        port = (probe.get("tcpSocket") or {}).get("port")
        return f"Readiness probe failed: dial tcp {pod_ip}:{port}: connect: connection refused"
    return "Readiness probe failed: "


def kubelet_events(pod: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any], *,
                   pull_seconds: float = 0.0) -> list[KubeletEvent]:  # fmt: skip
    """Events for the change from status ``old`` to status ``new`` of ``pod``."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    deleting = bool(meta.get("deletionTimestamp"))
    never_ready = (meta.get("annotations") or {}).get(FAULT) == "never-ready"
    events: list[KubeletEvent] = []
    if not deleting and new.get("initContainerStatuses") and not old.get("initContainerStatuses"):
        for container in spec.get("initContainers") or ():
            events += _started(container, first=True, pull_seconds=pull_seconds)
    old_by_name = {s.get("name"): s for s in old.get("containerStatuses") or ()}
    new_by_name = {s.get("name"): s for s in new.get("containerStatuses") or ()}
    for container in spec.get("containers") or ():
        name = container.get("name")
        before, after = old_by_name.get(name) or {}, new_by_name.get(name) or {}
        before_state, after_state = before.get("state") or {}, after.get("state") or {}
        if deleting:
            if "running" in before_state and "running" not in after_state:
                events.append(("Normal", "Killing", f"Stopping container {name}"))
            continue
        if _runs_started(after) > _runs_started(before):
            events += _started(container, first=_runs_started(before) == 0, pull_seconds=pull_seconds)
            if never_ready and container.get("readinessProbe") and "running" in after_state:
                events.append(("Warning", "Unhealthy", _probe_failure(container, str(new.get("podIP") or ""))))
        waiting = after_state.get("waiting") or {}
        was_waiting = before_state.get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff" and (
                was_waiting.get("reason") != "CrashLoopBackOff"
                or before.get("restartCount") != after.get("restartCount")):  # fmt: skip
            pod_ref = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
            events.append(("Warning", "BackOff", f"Back-off restarting failed container {name} in pod {pod_ref}"))
    return events
