"""Indexed Jobs: each pod runs one completion index; the Job is done when every index has succeeded.

Upstream: k/k ``pkg/controller/job/indexed_job_utils.go`` (release 1.32).

- :func:`completion_index` reads a pod's ``batch.kubernetes.io/job-completion-index`` annotation (the
  label carries the same value since PodIndexLabel); a missing or malformed one is no index.
- :func:`parse_indexes` / :func:`format_indexes`: ``status.completedIndexes`` as upstream writes it:
  increasing decimal integers separated by commas, three or more consecutive ones as ``first-last``
  (``1,3-5,7``).
- :func:`indexed_pod` (``addCompletionIndexEnvVariables``, ``addCompletionIndexAnnotation``, the
  hostname): the annotation and label, ``spec.hostname`` ``<job>-<index>``, the
  ``JOB_COMPLETION_INDEX`` environment variable (from the annotation, through the downward API) in every
  container and init container that does not set it, and ``generateName`` ``<job>-<index>-``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["COMPLETION_INDEX", "completion_index", "format_indexes", "indexed_pod", "parse_indexes"]

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_ENV = "JOB_COMPLETION_INDEX"


def completion_index(pod: Mapping[str, Any]) -> int | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    if not isinstance(value, str) or not value.isdigit():
        return None
    return int(value)


def parse_indexes(text: Any, completions: int) -> set[int]:
    """The indexes below ``completions`` that ``text`` names (malformed parts are skipped)."""
    found: set[int] = set()
    if not isinstance(text, str) or not text:
        return found
    for part in text.split(","):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            continue
        low, high = int(first), int(last) if last else int(first)
        found.update(i for i in range(low, min(high, completions - 1) + 1))
    return found


def format_indexes(indexes: Iterable[int]) -> str:
    ordered = sorted(set(indexes))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(ordered[k]) for k in range(i, j + 1))
        i = j + 1
    return ",".join(parts)


def indexed_pod(pod: dict[str, Any], *, job_name: str, index: int) -> dict[str, Any]:
    """``pod`` (made from the template, our own copy) as the pod of ``index``."""
    meta = pod["metadata"]
    meta["generateName"] = f"{job_name}-{index}-"
    meta.setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
    meta.setdefault("labels", {})[COMPLETION_INDEX] = str(index)
    spec = pod["spec"]
    spec["hostname"] = f"{job_name}-{index}"
    ref = {"valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            env = container.setdefault("env", [])
            if not any(isinstance(e, dict) and e.get("name") == _ENV for e in env):
                env.append({"name": _ENV, **ref})
    return pod
