"""``PodLogOptions`` from a ``pods/NAME/log`` query string, decoded and validated as upstream 1.32 does.

Decoding is apimachinery's parameter codec (``Convert_Slice_string_To_*``): a bool is false when absent,
``0`` or ``false`` (any case) and true otherwise (``?follow`` alone is true); an int64 pointer is unset
when absent and a 400 ``strconv.ParseInt: parsing "x": invalid syntax`` when it is not a base-10 integer;
``sinceTime`` is RFC 3339 (``metav1.Time.UnmarshalQueryParameter``; empty or ``null`` is unset). Only the
first value of a repeated parameter counts.

Validation is ``pkg/apis/core/validation.ValidatePodLogOptions`` with the ``PodLogsQuerySplitStreams``
feature gate off (its 1.32 default, alpha): a 422 ``PodLogOptions "NAME" is invalid: ...`` with one cause
per error, in upstream's order: ``tailLines`` negative, ``limitBytes`` below 1, ``sinceSeconds`` and
``sinceTime`` together (one Forbidden error on the empty field path, printed ``: Forbidden: ...`` as
``field.Error.Error`` prints an empty path), else ``sinceSeconds`` below 1; ``stream`` given at all
(``stream: Forbidden: may not be specified``, the answer GKE 1.32 users met, kubernetes#133005).
``LogREST.Get`` validates before it reads the pod: bad options on a missing pod are still a 422.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubeloop.api import BadRequest, FieldError, Invalid
from kubeloop.server._requestinfo import truthy

__all__ = ["PodLogOptions", "parse_pod_log_options"]

# Go's time.RFC3339 layout, as time.Parse names it in its errors.
_RFC3339_LAYOUT = "2006-01-02T15:04:05Z07:00"
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_INT = re.compile(r"[+-]?\d+")
_INT64_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True, slots=True)
class PodLogOptions:
    """The query options of a log request (``core/v1`` ``PodLogOptions``); None: the field is unset."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    since_seconds: int | None = None
    since_time: float | None = None  # seconds since the epoch
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    insecure_skip_tls_verify_backend: bool = False
    stream: str | None = None


def _int64(query: Mapping[str, list[str]], name: str) -> int | None:
    values = query.get(name)
    if not values:
        return None
    text = values[0]
    if not _INT.fullmatch(text):
        raise BadRequest(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise BadRequest(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _time(query: Mapping[str, list[str]], name: str) -> float | None:
    values = query.get(name)
    if not values or values[0] in ("", "null"):
        return None
    text = values[0]
    if not _RFC3339.fullmatch(text):
        raise BadRequest(f'parsing time "{text}" as "{_RFC3339_LAYOUT}": cannot parse "{text}" as RFC 3339')
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise BadRequest(f'parsing time "{text}": {_RFC3339_LAYOUT} out of range') from None


def _validate(options: PodLogOptions) -> list[FieldError]:
    errors: list[FieldError] = []
    if options.tail_lines is not None and options.tail_lines < 0:
        errors.append(FieldError.invalid("tailLines", options.tail_lines, "must be greater than or equal to 0"))
    if options.limit_bytes is not None and options.limit_bytes < 1:
        errors.append(FieldError.invalid("limitBytes", options.limit_bytes, "must be greater than 0"))
    if options.since_seconds is not None and options.since_time is not None:
        errors.append(FieldError.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif options.since_seconds is not None and options.since_seconds < 1:
        errors.append(FieldError.invalid("sinceSeconds", options.since_seconds, "must be greater than 0"))
    if options.stream is not None:
        errors.append(FieldError.forbidden("stream", "may not be specified"))
    return errors


def _invalid(name: str, errors: list[FieldError]) -> Invalid:
    """``errors.NewInvalid(api.Kind("PodLogOptions"), name, errs)``: every error printed ``field: body``,
    the empty path included (``field.Error.Error``); a cause has no ``field`` when the path is empty."""
    texts = list(dict.fromkeys(f"{e.field}: {e.body}" for e in errors))
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    causes: list[dict[str, Any]] = []
    for error in errors:
        cause = error.to_cause()
        if not cause.get("field"):
            cause.pop("field", None)
        causes.append(cause)
    return Invalid(f'PodLogOptions "{name}" is invalid: {joined}',
                   details={"name": name, "kind": "PodLogOptions", "causes": causes})


def parse_pod_log_options(query: Mapping[str, list[str]], name: str) -> PodLogOptions:
    """The options of a log request for pod ``name``: 400 when a value does not decode, 422 when the
    options are not valid together (see the module docstring)."""
    stream = query.get("stream")
    options = PodLogOptions(
        container=(query.get("container") or [""])[0],
        follow=truthy(query.get("follow")),
        previous=truthy(query.get("previous")),
        since_seconds=_int64(query, "sinceSeconds"),
        since_time=_time(query, "sinceTime"),
        timestamps=truthy(query.get("timestamps")),
        tail_lines=_int64(query, "tailLines"),
        limit_bytes=_int64(query, "limitBytes"),
        insecure_skip_tls_verify_backend=truthy(query.get("insecureSkipTLSVerifyBackend")),
        stream=stream[0] if stream else None,
    )
    errors = _validate(options)
    if errors:
        raise _invalid(name, errors)
    return options
