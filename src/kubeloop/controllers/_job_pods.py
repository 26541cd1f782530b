"""What the Job controller reads from pods and conditions: pure functions of the objects and the time.

Upstream: k/k ``pkg/controller/job/job_controller.go`` (release 1.32) and ``backoff_utils.go``.

- :data:`JOB_TRACKING_FINALIZER` is on every pod the controller creates; a finished pod is counted
  (through ``status.uncountedTerminatedPods``) before the finalizer comes off, so no pod is missed or
  counted twice even when the GC or a user deletes it.
- :func:`is_pod_failed` (``isPodFailed``): phase Failed, or (podReplacementPolicy TerminatingOrFailed and
  no podFailurePolicy) deleted before it succeeded: orphans that never reach a phase count as failures.
  Otherwise (:func:`only_replaces_failed`) a terminating pod is not replaced until it has failed.
- :func:`past_backoff_limit_on_failure` (``pastBackoffLimitOnFailure``): with restartPolicy OnFailure the
  containers' restarts in running or pending pods count against ``backoffLimit``.
- :class:`BackoffRecord` (``backoffRecord``): failures since the last success and when the last one
  happened; the next pod waits 10 s doubled per further failure, at most 10 minutes
  (``DefaultJobPodFailureBackOff``, ``MaxJobPodFailureBackOff``), on the injected clock.
- :func:`ensure_condition` (``ensureJobConditionStatus``) and :func:`new_condition` (``newCondition``).
- :func:`match_pod_failure_policy` (``pod_failure_policy.go``): the first rule of ``spec.podFailurePolicy``
  a failed pod matches (a container's non-zero exit code In or NotIn the rule's values, or one of the
  pod's conditions) decides whether it counts, and FailJob fails the Job with upstream's message;
  :func:`pod_failure_policy_action` names that rule's action (FailIndex fails the pod's index at once:
  :mod:`._job_index_failures`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeloop.api import format_time, parse_time

__all__ = [
    "DEFAULT_POD_FAILURE_BACKOFF",
    "JOB_TRACKING_FINALIZER",
    "MAX_POD_FAILURE_BACKOFF",
    "BackoffRecord",
    "condition_true",
    "ensure_condition",
    "finished_time",
    "has_tracking_finalizer",
    "is_pod_failed",
    "is_terminating",
    "match_pod_failure_policy",
    "new_condition",
    "only_replaces_failed",
    "past_backoff_limit_on_failure",
    "pod_failure_policy_action",
]

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _phase(pod: Mapping[str, Any]) -> str:
    status = pod.get("status")
    return str(status.get("phase") or "") if isinstance(status, Mapping) else ""


def has_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    return JOB_TRACKING_FINALIZER in (_meta(pod).get("finalizers") or ())


def is_terminating(pod: Mapping[str, Any]) -> bool:
    """``CountTerminatingPods``: being deleted and not yet Succeeded or Failed."""
    return bool(_meta(pod).get("deletionTimestamp")) and _phase(pod) not in ("Succeeded", "Failed")


def only_replaces_failed(job: Mapping[str, Any]) -> bool:
    """``onlyReplaceFailedPods``: podReplacementPolicy Failed (the default with a podFailurePolicy)."""
    spec = job.get("spec") or {}
    return spec.get("podFailurePolicy") is not None or spec.get("podReplacementPolicy") == "Failed"


def is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    if only_replaces_failed(job):
        return _phase(pod) == "Failed"
    if _phase(pod) == "Failed":
        return True
    return bool(_meta(pod).get("deletionTimestamp")) and _phase(pod) != "Succeeded"


def past_backoff_limit_on_failure(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> bool:
    spec = job.get("spec") or {}
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        if _phase(pod) in ("Running", "Pending"):
            status = pod.get("status") or {}
            for key in ("initContainerStatuses", "containerStatuses"):
                restarts += sum(int(s.get("restartCount") or 0) for s in status.get(key) or () if isinstance(s, Mapping))
    limit = int(spec.get("backoffLimit") or 0)
    return restarts > 0 if limit == 0 else restarts >= limit


def _time(value: Any) -> float | None:
    try:
        return parse_time(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def finished_time(pod: Mapping[str, Any], now: float) -> float:
    """``getFinishedTime``: the last container's ``finishedAt``, else the deletion time, else now."""
    status = pod.get("status") or {}
    ends = [t for s in status.get("containerStatuses") or () if isinstance(s, Mapping)
            if (t := _time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))) is not None]
    if ends:
        return max(ends)
    deleted = _time(_meta(pod).get("deletionTimestamp"))
    return deleted if deleted is not None else now


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def updated(self, succeeded: list[Mapping[str, Any]], failed: list[Mapping[str, Any]], now: float) -> BackoffRecord:
        """``newBackoffRecord``: the record after this sync's newly finished pods."""
        if not failed:
            return BackoffRecord() if succeeded else self
        last_failure = max(finished_time(p, now) for p in failed)
        if not succeeded:
            return BackoffRecord(self.failures_after_last_success + len(failed), last_failure)
        last_success = max(finished_time(p, now) for p in succeeded)
        after = [p for p in failed if finished_time(p, now) > last_success]
        return BackoffRecord(len(after), last_failure) if after else BackoffRecord()

    def remaining(self, now: float) -> float:
        """``getRemainingTime``: how long the next pod creation still waits (0: now)."""
        if self.failures_after_last_success == 0 or self.last_failure_time is None:
            return 0.0
        delay = DEFAULT_POD_FAILURE_BACKOFF
        for _ in range(1, self.failures_after_last_success):
            delay *= 2
            if delay >= MAX_POD_FAILURE_BACKOFF:
                delay = MAX_POD_FAILURE_BACKOFF
                break
        elapsed = now - self.last_failure_time
        return 0.0 if delay < elapsed else delay - elapsed


def condition_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or ())


def new_condition(kind: str, status: str, reason: str, message: str, now: float) -> dict[str, Any]:
    """``newCondition``: probe and transition time both now."""
    stamp = format_time(now)
    return {"type": kind, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def ensure_condition(conditions: list[dict[str, Any]], kind: str, status: str, reason: str, message: str,
                     now: float) -> bool:
    """``ensureJobConditionStatus`` in place: change an existing condition's status (and reason,
    message, times), or append a new one unless it would be False. True when something changed."""
    for cond in conditions:
        if cond.get("type") == kind:
            if (cond.get("status"), cond.get("reason"), cond.get("message")) == (status, reason, message):
                return False
            cond.update(new_condition(kind, status, reason, message, now))
            return True
    if status == "False":
        return False
    conditions.append(new_condition(kind, status, reason, message, now))
    return True


def _exit_code_container(pod: Mapping[str, Any], requirement: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``matchOnExitCodes``: the first container (then init container) that terminated with a non-zero
    code the requirement matches (In: among ``values``; NotIn: not among them)."""
    status = pod.get("status") or {}
    name, values = requirement.get("containerName"), set(requirement.get("values") or ())
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if not isinstance(cs, Mapping) or (name is not None and cs.get("name") != name):
                continue
            code = ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
            if isinstance(code, int) and code != 0 and (code in values) == (requirement.get("operator") == "In"):
                return cs
    return None


def _matching_condition(pod: Mapping[str, Any], patterns: Iterable[Mapping[str, Any]]) -> str | None:
    """``matchOnPodConditions``: the type of the first pattern one of the pod's conditions matches."""
    conditions = [c for c in (pod.get("status") or {}).get("conditions") or () if isinstance(c, Mapping)]
    for pattern in patterns:
        if any(c.get("type") == pattern.get("type") and c.get("status") == pattern.get("status", "True")
               for c in conditions):
            return str(pattern.get("type"))
    return None


def _matching_rule(job: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """The action of the first rule of ``spec.podFailurePolicy`` a failed pod matches, and the message
    a FailJob rule fails the Job with; None without a policy or a match."""
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    if not isinstance(policy, Mapping):
        return None
    meta = pod.get("metadata") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}"
    for index, rule in enumerate(policy.get("rules") or ()):
        action = str(rule.get("action"))
        on_exit = rule.get("onExitCodes")
        if isinstance(on_exit, Mapping):
            container = _exit_code_container(pod, on_exit)
            if container is None:
                continue
            code = container["state"]["terminated"]["exitCode"]
            message = (f"Container {container.get('name')} for pod {where} failed with exit code {code} "
                       f"matching {action} rule at index {index}")
        else:
            kind = _matching_condition(pod, rule.get("onPodConditions") or ())
            if kind is None:
                continue
            message = f"Pod {where} has condition {kind} matching {action} rule at index {index}"
        return action, message
    return None


def match_pod_failure_policy(job: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``matchPodFailurePolicy`` for a failed pod: (the FailJob message, whether it counts as a failure).

    The first matching rule decides: Ignore does not count the pod, Count and FailIndex do, FailJob
    does and fails the Job; no match counts it."""
    matched = _matching_rule(job, pod)
    if matched is None:
        return None, True
    action, message = matched
    if action == "Ignore":
        return None, False
    return (message if action == "FailJob" else None), True


def pod_failure_policy_action(job: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    """The action of the rule a failed pod matches (``matchPodFailurePolicy``'s third result), if any."""
    matched = _matching_rule(job, pod)
    return None if matched is None else matched[0]
