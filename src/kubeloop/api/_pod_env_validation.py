"""Validation of a container's environment, as upstream's ``ValidateEnv`` and ``ValidateEnvFrom`` do it.

:func:`env_errors` and :func:`env_from_errors` return one :class:`FieldError` per problem with
upstream's path, type and text (k/k ``pkg/apis/core/validation/validation.go``: ``ValidateEnv``,
``validateEnvVarValueFrom``, ``ValidateEnvFrom``, ``validateConfigMapKeySelector`` /
``validateSecretKeySelector``; the field selectors are :mod:`kubeloop.api._pod_volume_validation`'s;
apimachinery ``pkg/util/validation``: ``IsRelaxedEnvVarName``, ``IsConfigMapKey``). Names follow
1.32's default (RelaxedEnvironmentVariableValidation, beta): any printable ASCII but ``=``. A
``valueFrom`` names exactly one source and no ``value`` beside it; an ``envFrom`` item names one source,
and its count errors name the list, not the item, as upstream's do. Input that is not the expected
JSON shape is skipped, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, objects_of
from kubeloop.api._pod_volume_validation import field_selector_errors, resource_field_selector_errors
from kubeloop.api._validation import name_is_dns1123_subdomain

__all__ = ["env_errors", "env_from_errors"]

# validEnvDownwardAPIFieldPathExpressions, sorted.
_ENV_FIELD_PATHS = ["metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
                    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"]
_RELAXED_ENV_NAME = "a valid environment variable name must consist only of printable ASCII characters other than '='"
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
                   f"'KEY_NAME',  or 'key-name', regex used for validation is '{_CONFIG_KEY_FMT}')")


def _env_name_errors(name: str, path: str) -> list[FieldError]:
    """IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation, on by default in 1.32)."""
    if all(" " <= c <= "~" and c != "=" for c in name):
        return []
    return [FieldError.invalid(path, name, _RELAXED_ENV_NAME)]


def _config_key_errors(key: str) -> list[str]:
    """IsConfigMapKey."""
    errs: list[str] = []
    if len(key.encode()) > 253:
        errs.append("must be no more than 253 characters")
    if not key or any(not (c.isascii() and (c.isalnum() or c in "-._")) for c in key):
        errs.append(_CONFIG_KEY_MSG)
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _key_selector(selector: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateConfigMapKeySelector / validateSecretKeySelector (the name checked even when empty)."""
    name = go_text(selector.get("name"))
    errs = [FieldError.invalid(f"{path}.name", name, m) for m in name_is_dns1123_subdomain(name, False)]
    key = go_text(selector.get("key"))
    if not key:
        return [*errs, FieldError.required(f"{path}.key")]
    return [*errs, *(FieldError.invalid(f"{path}.key", key, m) for m in _config_key_errors(key))]


def _value_from(env: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateEnvVarValueFrom: exactly one source, and no ``value`` beside it."""
    source = env.get("valueFrom")
    if not isinstance(source, dict):
        return []
    errs: list[FieldError] = []
    count = 0
    if isinstance(ref := source.get("fieldRef"), dict):
        count += 1
        errs.extend(field_selector_errors(ref, _ENV_FIELD_PATHS, f"{path}.fieldRef"))
    if isinstance(ref := source.get("resourceFieldRef"), dict):
        count += 1
        errs.extend(resource_field_selector_errors(ref, f"{path}.resourceFieldRef", volume=False))
    for kind in ("configMapKeyRef", "secretKeyRef"):
        if isinstance(ref := source.get(kind), dict):
            count += 1
            errs.extend(_key_selector(ref, f"{path}.{kind}"))
    if count == 0:
        errs.append(FieldError.invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
    elif go_text(env.get("value")):
        errs.append(FieldError.invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(FieldError.invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def env_errors(env: Any, path: str) -> list[FieldError]:
    """ValidateEnv."""
    errs: list[FieldError] = []
    for i, var in objects_of(env):
        p = f"{path}[{i}]"
        name = go_text(var.get("name"))
        errs.extend(_env_name_errors(name, f"{p}.name") if name else [FieldError.required(f"{p}.name")])
        errs.extend(_value_from(var, f"{p}.valueFrom"))
    return errs


def env_from_errors(sources: Any, path: str) -> list[FieldError]:
    """ValidateEnvFrom: the count errors name the list, not the item (as upstream)."""
    errs: list[FieldError] = []
    for i, source in objects_of(sources):
        p = f"{path}[{i}]"
        if prefix := go_text(source.get("prefix")):
            errs.extend(_env_name_errors(prefix, f"{p}.prefix"))
        count = 0
        for kind in ("configMapRef", "secretRef"):
            if isinstance(ref := source.get(kind), dict):
                count += 1
                name = go_text(ref.get("name"))
                errs.extend([FieldError.invalid(f"{p}.{kind}.name", name, m) for m in name_is_dns1123_subdomain(name, True)]
                            if name else [FieldError.required(f"{p}.{kind}.name")])
        if count == 0:
            errs.append(FieldError.invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(FieldError.invalid(path, "", "may not have more than one field specified at a time"))
    return errs
