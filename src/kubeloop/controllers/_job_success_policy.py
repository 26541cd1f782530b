"""Success policy: an Indexed Job with ``spec.successPolicy`` succeeds once one of its rules is met.

Upstream: k/k ``pkg/controller/job/success_policy.go`` (release 1.32, JobSuccessPolicy beta and on since
1.31). :func:`match_success_policy` (``matchSuccessPolicy``) reads the rules in order; the first one met
gives the message of the ``SuccessCriteriaMet`` condition (reason ``SuccessPolicy``): ``Matched rules at
index N``. A rule with ``succeededIndexes`` is met when every index it names has succeeded, or, with
``succeededCount`` as well, when that many of them have (``matchSucceededIndexesRule``); a rule that
names no index below ``completions`` is skipped. A rule with only ``succeededCount`` is met when that
many indexes have succeeded. Nothing is met before the first index succeeds. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.controllers._job_indexes import parse_indexes

__all__ = ["SUCCESS_POLICY_REASON", "match_success_policy"]

SUCCESS_POLICY_REASON = "SuccessPolicy"


def match_success_policy(job: Mapping[str, Any], succeeded: set[int]) -> str | None:
    """The condition message of the first rule ``succeeded`` (the succeeded indexes) meets, if any."""
    spec = job.get("spec") or {}
    policy = spec.get("successPolicy")
    if not isinstance(policy, Mapping) or not succeeded:
        return None
    completions = int(spec.get("completions") or 0)
    for index, rule in enumerate(policy.get("rules") or ()):
        if not isinstance(rule, Mapping):
            continue
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(rule.get("succeededIndexes"), completions)
            if not required:
                continue
            contains = len(required & succeeded)
            if contains == len(required) or (isinstance(count, int) and contains >= count):
                return f"Matched rules at index {index}"
        elif isinstance(count, int) and len(succeeded) >= count:
            return f"Matched rules at index {index}"
    return None
