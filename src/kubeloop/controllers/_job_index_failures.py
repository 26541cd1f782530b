"""Backoff limit per index: an Indexed Job with ``spec.backoffLimitPerIndex`` counts failures per index.

Upstream: k/k ``pkg/controller/job/indexed_job_utils.go`` and ``backoff_utils.go`` (release 1.32,
JobBackoffLimitPerIndex beta and on since 1.29). Pure functions of the Job, its pods and the time.

- Every pod the controller makes for such a Job carries ``batch.kubernetes.io/job-index-failure-count``:
  how many counted failures its index had before it (:func:`replacement_annotations`,
  ``addIndexFailureCountAnnotation``), and ``batch.kubernetes.io/job-index-ignored-failure-count`` once a
  failure was ignored by the pod failure policy. A missing, malformed, negative or larger than int32
  value reads as 0 (``parseInt32``).
- :func:`is_index_failed` (``isIndexFailed``): a failed pod fails its index when the pod failure policy
  says FailIndex, or when it counts as a failure and its index already had ``backoffLimitPerIndex``
  counted failures: an index runs at most ``backoffLimitPerIndex + 1`` counted attempts.
- :func:`failed_indexes` (``calculateFailedIndexes``): ``status.failedIndexes`` plus the indexes of the
  not yet counted pods (tracking finalizer on, valid index) that failed them.
- :func:`delayed_deletions` (``getPodsWithDelayedDeletionPerIndex``): per index that is neither succeeded,
  failed nor active, its last failed pod (highest failure count, latest finish): its finalizer stays on,
  and it stays uncounted, until its replacement carries the counts forward.
- :func:`creatable_now` (``getPodCreationInfoForIndependentIndexes``, ``getRemainingTimePerIndex``): an
  index whose last pod failed waits 10 s doubled per earlier failure of the index (counted or ignored),
  at most 10 minutes, from that pod's finish; the Job-wide backoff does not apply to such a Job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.controllers._job_indexes import completion_index
from kubeloop.controllers._job_pods import (
    DEFAULT_POD_FAILURE_BACKOFF,
    MAX_POD_FAILURE_BACKOFF,
    finished_time,
    has_tracking_finalizer,
    is_pod_failed,
    match_pod_failure_policy,
    pod_failure_policy_action,
)

__all__ = [
    "INDEX_FAILURE_COUNT",
    "INDEX_IGNORED_FAILURE_COUNT",
    "creatable_now",
    "delayed_deletions",
    "failed_indexes",
    "has_backoff_limit_per_index",
    "is_index_failed",
    "replacement_annotations",
]

INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
_MAX_INT32 = 2**31 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")


def has_backoff_limit_per_index(job: Mapping[str, Any]) -> bool:
    spec = job.get("spec") or {}
    return spec.get("completionMode") == "Indexed" and isinstance(spec.get("backoffLimitPerIndex"), int)


def _count(pod: Mapping[str, Any], key: str) -> int:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    if not isinstance(value, str) or _INTEGER.fullmatch(value) is None:  # strconv.Atoi's syntax
        return 0
    number = int(value)
    return number if 0 <= number <= _MAX_INT32 else 0


def _absolute_count(pod: Mapping[str, Any]) -> int:
    """``getIndexAbsoluteFailureCount``: counted and ignored failures of the index before this pod."""
    return _count(pod, INDEX_FAILURE_COUNT) + _count(pod, INDEX_IGNORED_FAILURE_COUNT)


def _valid_index(pod: Mapping[str, Any], completions: int) -> int | None:
    ix = completion_index(pod)
    return ix if ix is not None and ix < completions else None


def is_index_failed(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    if not is_pod_failed(pod, job):
        return False
    spec = job.get("spec") or {}
    if spec.get("podFailurePolicy") is not None:
        if pod_failure_policy_action(job, pod) == "FailIndex":
            return True
        if not match_pod_failure_policy(job, pod)[1]:
            return False
    return _count(pod, INDEX_FAILURE_COUNT) >= int(spec.get("backoffLimitPerIndex") or 0)


def failed_indexes(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], previous: set[int],
                   completions: int) -> set[int]:
    """``previous`` (parsed from ``status.failedIndexes``) and the indexes the uncounted pods failed."""
    found = set(previous)
    for pod in pods:
        ix = _valid_index(pod, completions)
        if ix is not None and has_tracking_finalizer(pod) and is_index_failed(job, pod):
            found.add(ix)
    return found


def delayed_deletions(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], *, active: Iterable[Mapping[str, Any]],
                      succeeded: set[int], failed: set[int], completions: int, now: float) -> dict[int, Mapping[str, Any]]:
    """By index: the failed pod whose finalizer waits for its replacement (see the module docstring)."""
    busy = {ix for p in active if (ix := completion_index(p)) is not None}
    chosen: dict[int, Mapping[str, Any]] = {}
    for pod in pods:
        if not has_tracking_finalizer(pod) or not is_pod_failed(pod, job):
            continue
        ix = _valid_index(pod, completions)
        if ix is None or ix in succeeded or ix in failed or ix in busy:
            continue
        last = chosen.get(ix)
        if last is None or (_absolute_count(last) <= _absolute_count(pod)
                            and finished_time(pod, now) >= finished_time(last, now)):
            chosen[ix] = pod
    return chosen


def replacement_annotations(job: Mapping[str, Any], replaced: Mapping[str, Any] | None) -> dict[str, str]:
    """``addIndexFailureCountAnnotation``: the counts the next pod of an index starts with, given the
    failed pod it replaces (none: a first attempt, or one whose failed pod is already counted)."""
    counted = ignored = 0
    if replaced is not None:
        counted, ignored = _count(replaced, INDEX_FAILURE_COUNT), _count(replaced, INDEX_IGNORED_FAILURE_COUNT)
        if match_pod_failure_policy(job, replaced)[1]:
            counted += 1
        else:
            ignored += 1
    annotations = {INDEX_FAILURE_COUNT: str(counted)}
    if ignored > 0:
        annotations[INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
    return annotations


def _remaining(last_failed: Mapping[str, Any] | None, now: float) -> float:
    """``getRemainingTimePerIndex``: how long the index still waits before its next pod (0: now)."""
    if last_failed is None:
        return 0.0
    delay = DEFAULT_POD_FAILURE_BACKOFF
    for _ in range(1, _absolute_count(last_failed) + 1):
        delay *= 2
        if delay >= MAX_POD_FAILURE_BACKOFF:
            delay = MAX_POD_FAILURE_BACKOFF
            break
    elapsed = now - finished_time(last_failed, now)
    return 0.0 if delay < elapsed else delay - elapsed


def creatable_now(indexes: list[int], delayed: Mapping[int, Mapping[str, Any]], now: float) -> tuple[list[int], float]:
    """The indexes among ``indexes`` whose backoff has passed; when there is none, the shortest wait."""
    ready: list[int] = []
    wait: float | None = None
    for ix in indexes:
        remaining = _remaining(delayed.get(ix), now)
        if remaining == 0:
            ready.append(ix)
        elif wait is None or remaining < wait:
            wait = remaining
    return (ready, 0.0) if ready else (ready, wait or 0.0)
