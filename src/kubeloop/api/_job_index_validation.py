"""A Job status update's ``completedIndexes`` and ``failedIndexes``, as k/k validates them (release 1.32).

Upstream: ``pkg/apis/batch/validation/validation.go`` (``validateJobStatus``: ``validateIndexesFormat``,
``parseIndexInterval``, ``validateFailedIndexesNotOverlapCompleted``) with the options the job status
strategy sets when JobManagedBy (beta, on in 1.32) is enabled (``pkg/registry/batch/job/strategy.go``):
each rule runs only when a field it reads changed, so a status that went stale after a spec change (a
scaled-down Indexed Job) can still be written by the controller.

- ``completedIndexes`` (when it changed and ``completions`` is set) and ``failedIndexes`` (when it changed
  and the Job has ``completions`` and ``backoffLimitPerIndex``): comma-separated increasing intervals
  ``x`` or ``x-y`` (x < y) of indexes below ``completions``.
- Non-empty ``completedIndexes`` only on an Indexed Job; ``failedIndexes`` (even empty) only with
  ``backoffLimitPerIndex``.
- ``failedIndexes`` and ``completedIndexes`` share no index (when either changed).

Pure functions; nothing is mutated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError, _go_quote
from kubeloop.api._pod_fields import int_of, mapping_of

__all__ = ["index_status_errors"]

_ATOI = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi's syntax


def _atoi(text: str) -> int:
    if _ATOI.fullmatch(text) is None:
        raise ValueError(f"cannot convert string to integer for index: {_go_quote(text)}")
    return int(text)


def _interval(text: str, completions: int) -> tuple[int, int]:
    """``parseIndexInterval``: ``x`` or ``x-y`` with x < y, both below completions (ValueError: why not)."""
    limits = text.split("-")
    if len(limits) > 2:
        raise ValueError(f"the fragment {_go_quote(text)} violates the requirement that an index interval "
                         "can have at most two parts separated by '-'")
    first = _atoi(limits[0])
    if first >= completions:
        raise ValueError(f"too large index: {_go_quote(limits[0])}")
    if len(limits) == 1:
        return first, first
    last = _atoi(limits[1])
    if last >= completions:
        raise ValueError(f"too large index: {_go_quote(limits[1])}")
    if first >= last:
        raise ValueError(f"non-increasing order, previous: {first}, current: {last}")
    return first, last


def _format_error(text: str, completions: int) -> str | None:
    """``validateIndexesFormat``: why ``text`` is not a list of increasing intervals, or None."""
    if not text:
        return None
    previous: int | None = None
    try:
        for part in text.split(","):
            first, last = _interval(part, completions)
            if previous is not None and previous >= first:
                return f"non-increasing order, previous: {previous}, current: {first}"
            previous = last
    except ValueError as err:
        return str(err)
    return None


def _parsed(parts: list[str], pos: int, completions: int) -> tuple[int, int] | None:
    try:
        return _interval(parts[pos], completions)
    except ValueError:
        return None


def _overlap(completed: str, failed: str, completions: int) -> str | None:
    """``validateFailedIndexesNotOverlapCompleted``: intervals that do not parse are skipped (the format
    rules report them)."""
    if not completed or not failed:
        return None
    done, lost = completed.split(","), failed.split(",")
    i = j = 0
    a, b = _parsed(done, 0, completions), _parsed(lost, 0, completions)
    while i < len(done) and j < len(lost):
        if a is None:
            i += 1
            a = _parsed(done, i, completions) if i < len(done) else None
        elif b is None:
            j += 1
            b = _parsed(lost, j, completions) if j < len(lost) else None
        else:
            if a[0] <= b[1] and b[0] <= a[1]:
                return f"failedIndexes and completedIndexes overlap at index: {max(a[0], b[0])}"
            if a[0] <= b[0]:
                i += 1
                a = _parsed(done, i, completions) if i < len(done) else None
            else:
                j += 1
                b = _parsed(lost, j, completions) if j < len(lost) else None
    return None


def index_status_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    spec = mapping_of(new.get("spec"))
    status, old_status = mapping_of(new.get("status")), mapping_of(old.get("status"))
    raw_completed, raw_failed = status.get("completedIndexes"), status.get("failedIndexes")
    completed: str = raw_completed if isinstance(raw_completed, str) else ""
    failed: str | None = raw_failed if isinstance(raw_failed, str) else None
    completed_changed = completed != (old_status.get("completedIndexes") or "")
    failed_changed = failed != old_status.get("failedIndexes")
    completions = int_of(spec.get("completions"))
    per_index = spec.get("backoffLimitPerIndex") is not None
    errs: list[FieldError] = []
    if completed_changed and completions is not None and (why := _format_error(completed, completions)):
        errs.append(FieldError.invalid("status.completedIndexes", completed, f"error parsing completedIndexes: {why}"))
    if failed_changed and completions is not None and per_index and failed is not None \
            and (why := _format_error(failed, completions)):
        errs.append(FieldError.invalid("status.failedIndexes", failed, f"error parsing failedIndexes: {why}"))
    if completed_changed and completed and spec.get("completionMode") != "Indexed":
        errs.append(FieldError.invalid("status.completedIndexes", completed,
                                       "cannot set non-empty completedIndexes when non-indexed completion mode"))
    if failed_changed and not per_index and failed is not None:
        errs.append(FieldError.invalid("status.failedIndexes", failed,
                                       "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
    if (failed_changed or completed_changed) and completions is not None and failed is not None \
            and (why := _overlap(completed, failed, completions)):
        errs.append(FieldError.invalid("status.failedIndexes", failed, why))
    return errs
