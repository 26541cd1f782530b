"""Validation of a container's probes and lifecycle hooks, as upstream's ``ValidatePodSpec`` does it.

:func:`handler_errors` checks, in ``validateContainers``' order, ``lifecycle`` (``postStart``,
``preStop``), ``livenessProbe``, ``readinessProbe`` and ``startupProbe`` of one container and returns
one :class:`FieldError` per problem with upstream's path, type and text (k/k
``pkg/apis/core/validation/validation.go``: ``validateLifecycle``, ``validateLivenessProbe``,
``validateReadinessProbe``, ``validateStartupProbe``, ``validateProbe``, ``validateHandler``,
``validateExecAction``, ``validateHTTPGetAction``, ``ValidatePortNumOrName``, ``validateSleepAction``;
apimachinery ``IsHTTPHeaderName``). A probe or hook names exactly one handler; a liveness or startup
probe succeeds once; a readiness probe has no grace period of its own; a sleep hook lasts more than
zero seconds and no longer than the pod's grace period (PodLifecycleSleepActionAllowZero is off in 1.32).

The probe is read as defaulting leaves it (SetDefaults_Probe: a zero ``timeoutSeconds`` is 1,
``periodSeconds`` 10, ``successThreshold`` 1, ``failureThreshold`` 3; SetDefaults_HTTPGetAction: an
empty ``path`` is ``/`` and an empty ``scheme`` ``HTTP``). Input that is not the expected JSON shape is
skipped, never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, int_of, objects_of

__all__ = ["handler_errors", "port_name_errors", "port_num_or_name_errors"]

_PORT_RANGE = "must be between 1 and 65535, inclusive"  # InclusiveRangeError(1, 65535)
_NEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
_SCHEMES = ["HTTP", "HTTPS"]  # sets.List(supportedHTTPSchemes)
_HEADER_NAME = re.compile("[-A-Za-z0-9]+")
_HEADER_MSG = ("a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', "
               "regex used for validation is '[-A-Za-z0-9]+')")
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")  # handlerFromProbe
_HOOK_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")  # handlerFromLifecycle


def port_name_errors(name: str) -> list[str]:
    """IsValidPortName."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not name or any(not ("a" <= c <= "z" or "0" <= c <= "9" or c == "-") for c in name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def port_num_or_name_errors(port: Any, path: str) -> list[FieldError]:
    """ValidatePortNumOrName on an IntOrString (absent is the integer 0)."""
    if isinstance(port, str):
        return [FieldError.invalid(path, port, m) for m in port_name_errors(port)]
    number = int_of(port) or 0
    return [] if 1 <= number <= 65535 else [FieldError.invalid(path, number, _PORT_RANGE)]


def _action_errors(kind: str, action: Mapping[str, Any], path: str, grace: int | None) -> list[FieldError]:
    if kind == "exec":
        return [] if action.get("command") else [FieldError.required(f"{path}.command")]
    if kind == "httpGet":
        errs = port_num_or_name_errors(action.get("port"), f"{path}.port")
        scheme = go_text(action.get("scheme")) or "HTTP"
        if scheme not in _SCHEMES:
            errs.append(FieldError.not_supported(f"{path}.scheme", scheme, _SCHEMES))
        for _, header in objects_of(action.get("httpHeaders")):
            name = go_text(header.get("name"))
            if not _HEADER_NAME.fullmatch(name):
                errs.append(FieldError.invalid(f"{path}.httpHeaders", name, _HEADER_MSG))
        return errs
    if kind == "tcpSocket":
        return port_num_or_name_errors(action.get("port"), f"{path}.port")
    if kind == "grpc":
        return port_num_or_name_errors(int_of(action.get("port")) or 0, f"{path}.port")
    seconds = int_of(action.get("seconds")) or 0  # sleep; no check without a grace period
    if grace is not None and (seconds <= 0 or seconds > grace):
        return [FieldError.invalid(path, seconds, f"must be greater than 0 and less than terminationGracePeriodSeconds "
                                                  f"({grace}). Enable AllowPodLifecycleSleepActionZeroValue feature gate "
                                                  "for zero sleep.")]
    return []


def _handler(handler: Mapping[str, Any], kinds: tuple[str, ...], path: str, grace: int | None) -> list[FieldError]:
    """validateHandler: exactly one handler, checked at its own key."""
    errs: list[FieldError] = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if not isinstance(action, dict):
            continue
        if count:
            errs.append(FieldError.forbidden(f"{path}.{kind}", "may not specify more than 1 handler type"))
            continue
        count += 1
        errs.extend(_action_errors(kind, action, f"{path}.{kind}", grace))
    if not count:
        errs.append(FieldError.required(path, "must specify a handler type"))
    return errs


def _probe(probe: Mapping[str, Any], path: str, grace: int | None) -> list[FieldError]:
    """validateProbe."""
    errs = _handler(probe, _PROBE_HANDLERS, path, grace)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        value = int_of(probe.get(key)) or _PROBE_DEFAULTS.get(key, 0)
        if value < 0:
            errs.append(FieldError.invalid(f"{path}.{key}", value, _NEGATIVE))
    own_grace = int_of(probe.get("terminationGracePeriodSeconds"))
    if own_grace is not None and own_grace <= 0:
        errs.append(FieldError.invalid(f"{path}.terminationGracePeriodSeconds", own_grace, "must be greater than 0"))
    return errs


def handler_errors(container: Mapping[str, Any], grace: int | None, path: str) -> list[FieldError]:
    """The lifecycle hooks and probes of one container (``grace``: the pod's terminationGracePeriodSeconds)."""
    errs: list[FieldError] = []
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(handler := lifecycle.get(hook), dict):
                errs.extend(_handler(handler, _HOOK_HANDLERS, f"{path}.lifecycle.{hook}", grace))
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if not isinstance(probe, dict):
            continue
        p = f"{path}.{kind}"
        errs.extend(_probe(probe, p, grace))
        if kind == "readinessProbe":
            if (own_grace := probe.get("terminationGracePeriodSeconds")) is not None:
                errs.append(FieldError.invalid(f"{p}.terminationGracePeriodSeconds", own_grace,
                                               "must not be set for readinessProbes"))
        elif (success := int_of(probe.get("successThreshold")) or 1) != 1:
            errs.append(FieldError.invalid(f"{p}.successThreshold", success, "must be 1"))
    return errs
