"""Defaults and validation of ``admissionregistration.k8s.io/v1`` Validating/MutatingWebhookConfiguration.

Upstream facts (k8s.io/kubernetes ``pkg/apis/admissionregistration/v1/defaults.go`` and
``pkg/apis/admissionregistration/validation/validation.go``; k8s.io/apiserver ``pkg/util/webhook/validation.go``
for ``clientConfig``; apimachinery ``util/validation.IsFullyQualifiedName`` for webhook names):

- :func:`default_webhook_configuration`: each webhook gets ``failurePolicy: Fail``, ``matchPolicy:
  Equivalent``, ``namespaceSelector: {}``, ``objectSelector: {}``, ``timeoutSeconds: 10`` (and a
  mutating one ``reinvocationPolicy: Never``); each rule ``scope: "*"``; a service reference ``port:
  443``. ``sideEffects`` and ``admissionReviewVersions`` have no default in v1.
- :func:`validate_webhook_configuration`: webhook names fully qualified and unique, ``rules``
  (operations, groups, versions, resources with their ``*`` and ``x/*`` forms, scope),
  ``failurePolicy``, ``matchPolicy``, ``sideEffects`` (required; None or NoneOnDryRun on create),
  ``timeoutSeconds`` 1..30, the selectors, ``reinvocationPolicy``, ``clientConfig`` (exactly one of
  ``url`` (https, a host, no user, query or fragment) and ``service``), ``admissionReviewVersions``
  (one of v1, v1beta1) and ``matchConditions`` (at most 64, qualified unique names, a CEL expression
  that compiles against ``object``, ``oldObject``, ``request``, ``authorizer``).
- On update, as ``ValidateXWebhookConfigurationUpdate``: a rule the stored object already broke
  (duplicate names, side effects other than None/NoneOnDryRun, no accepted review version) is not
  enforced again, and unchanged match conditions are not compiled again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from kubeloop.api._admission_rules import go_string_slice, rule_errors
from kubeloop.api._errors import FieldError
from kubeloop.api._match_conditions import match_conditions_errors
from kubeloop.api._validation import (
    is_dns1035_label,
    is_dns1123_subdomain,
    validate_label_selector,
)

__all__ = ["ACCEPTED_REVIEW_VERSIONS", "default_webhook_configuration", "validate_webhook_configuration"]

ACCEPTED_REVIEW_VERSIONS = ("v1", "v1beta1")
_FAILURE_POLICIES = ["Fail", "Ignore"]
_MATCH_POLICIES = ["Equivalent", "Exact"]
_NO_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
_ALL_SIDE_EFFECTS = ["None", "NoneOnDryRun", "Some", "Unknown"]
_REINVOCATION_POLICIES = ["IfNeeded", "Never"]
_URL_FORM = "; desired format: https://host[/path]"


def _webhooks(obj: Mapping[str, Any]) -> list[Any]:
    hooks = obj.get("webhooks")
    return hooks if isinstance(hooks, list) else []


def default_webhook_configuration(obj: dict[str, Any], *, mutating: bool) -> None:
    """SetDefaults_ValidatingWebhook / SetDefaults_MutatingWebhook, SetDefaults_Rule, SetDefaults_ServiceReference."""
    for hook in _webhooks(obj):
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        if hook.get("namespaceSelector") is None:
            hook["namespaceSelector"] = {}
        if hook.get("objectSelector") is None:
            hook["objectSelector"] = {}
        if hook.get("timeoutSeconds") is None:
            hook["timeoutSeconds"] = 10
        if mutating and hook.get("reinvocationPolicy") is None:
            hook["reinvocationPolicy"] = "Never"
        for rule in hook.get("rules") or ():
            if isinstance(rule, dict) and rule.get("scope") is None:
                rule["scope"] = "*"
        service = (hook.get("clientConfig") or {}).get("service") if isinstance(hook.get("clientConfig"), dict) else None
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _fully_qualified(path: str, name: str) -> list[FieldError]:
    """utilvalidation.IsFullyQualifiedName."""
    if not name:
        return [FieldError.required(path)]
    name = name.removesuffix(".")
    problems = is_dns1123_subdomain(name)
    if problems:
        return [FieldError.invalid(path, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [FieldError.invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _url(path: str, url: str) -> list[FieldError]:
    """webhook.ValidateWebhookURL with forceHttps."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError as exc:
        return [FieldError.required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errors: list[FieldError] = []
    if parts.scheme != "https":
        errors.append(FieldError.invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not host:
        errors.append(FieldError.invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        errors.append(FieldError.invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        errors.append(FieldError.invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errors.append(FieldError.invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return errors


def _service(path: str, service: Mapping[str, Any]) -> list[FieldError]:
    """webhook.ValidateWebhookService."""
    errors: list[FieldError] = []
    if not service.get("name"):
        errors.append(FieldError.required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        errors.append(FieldError.required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port")
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errors.append(FieldError.invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return errors
    if url_path == "//":
        return [*errors, FieldError.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errors.append(FieldError.invalid(f"{path}.path", url_path, "must start with a '/'"))
    for i, step in enumerate(url_path[1:].removesuffix("/").split("/")):
        if not step:
            errors.append(FieldError.invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        errors.extend(FieldError.invalid(f"{path}.path", url_path, f"segment[{i}]: {m}") for m in is_dns1123_subdomain(step))
    return errors


def _match_conditions(path: str, conditions: list[Any]) -> list[FieldError]:
    """validateMatchConditions, the expressions compiled in the webhooks' CEL environment."""
    from kubeloop.api._webhook_conditions import condition_error  # CEL: loaded only when a condition is set

    return match_conditions_errors(conditions, path, lambda expression: condition_error(expression) or None)


def _review_versions(path: str, versions: list[str], require_accepted: bool) -> list[FieldError]:
    if not versions:
        return [FieldError.required(path, f"must specify one of {', '.join(ACCEPTED_REVIEW_VERSIONS)}")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            errors.append(FieldError.invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        errors.extend(FieldError.invalid(f"{path}[{i}]", version, m) for m in is_dns1035_label(version))
    if require_accepted and not seen.intersection(ACCEPTED_REVIEW_VERSIONS):
        errors.append(FieldError.invalid(path, go_string_slice("string", versions),
                                         f"must include at least one of {', '.join(ACCEPTED_REVIEW_VERSIONS)}"))
    return errors


def _webhook(path: str, hook: Mapping[str, Any], *, mutating: bool, no_side_effects: bool,
             check_conditions: bool) -> list[FieldError]:
    errors = _fully_qualified(f"{path}.name", str(hook.get("name") or ""))
    for i, rule in enumerate(hook.get("rules") or ()):
        errors.extend(rule_errors(f"{path}.rules[{i}]", rule if isinstance(rule, Mapping) else {}))
    for key, allowed in (("failurePolicy", _FAILURE_POLICIES), ("matchPolicy", _MATCH_POLICIES)):
        value = hook.get(key)
        if value is not None and value not in allowed:
            errors.append(FieldError.not_supported(f"{path}.{key}", value, allowed))
    side_effects = _NO_SIDE_EFFECTS if no_side_effects else _ALL_SIDE_EFFECTS
    value = hook.get("sideEffects")
    if value is None or value == "":  # a nil pointer (the Go encoding's zero fill writes it as "")
        errors.append(FieldError.required(f"{path}.sideEffects", f"must specify one of {', '.join(side_effects)}"))
    elif value not in side_effects:
        errors.append(FieldError.not_supported(f"{path}.sideEffects", value, side_effects))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errors.append(FieldError.invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    for key in ("namespaceSelector", "objectSelector"):
        selector = hook.get(key)
        if isinstance(selector, Mapping):
            errors.extend(validate_label_selector(selector, f"{path}.{key}"))
    if mutating:
        value = hook.get("reinvocationPolicy")
        if value is not None and value not in _REINVOCATION_POLICIES:
            errors.append(FieldError.not_supported(f"{path}.reinvocationPolicy", value, _REINVOCATION_POLICIES))
    config = hook.get("clientConfig") if isinstance(hook.get("clientConfig"), Mapping) else {}
    assert isinstance(config, Mapping)
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        errors.append(FieldError.required(f"{path}.clientConfig", "exactly one of url or service is required"))
    elif url is not None:
        errors.extend(_url(f"{path}.clientConfig.url", str(url)))
    else:
        errors.extend(_service(f"{path}.clientConfig.service", service if isinstance(service, Mapping) else {}))
    conditions = hook.get("matchConditions")
    if check_conditions and isinstance(conditions, list):
        errors.extend(_match_conditions(f"{path}.matchConditions", conditions))
    return errors


def validate_webhook_configuration(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None, *,
                                   mutating: bool) -> list[FieldError]:
    """The ``webhooks`` of a configuration (its metadata is validated by the generic path)."""
    hooks = _webhooks(obj)
    old_hooks = _webhooks(old) if old is not None else None
    if old_hooks is None:
        no_side_effects = require_accepted = unique = check_conditions = True
    else:
        no_side_effects = all(isinstance(h, Mapping) and h.get("sideEffects") in _NO_SIDE_EFFECTS for h in old_hooks)
        require_accepted = all(
            not _strings(h.get("admissionReviewVersions"))
            or bool(set(_strings(h.get("admissionReviewVersions"))).intersection(ACCEPTED_REVIEW_VERSIONS))
            for h in old_hooks if isinstance(h, Mapping))
        old_names = [h.get("name") for h in old_hooks if isinstance(h, Mapping)]
        unique = len(old_names) == len(set(old_names))
        check_conditions = len(hooks) != len(old_hooks) or any(
            (h.get("matchConditions") if isinstance(h, Mapping) else None)
            != (o.get("matchConditions") if isinstance(o, Mapping) else None)
            for h, o in zip(hooks, old_hooks, strict=True))
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, hook in enumerate(hooks):
        hook = hook if isinstance(hook, Mapping) else {}
        path = f"webhooks[{i}]"
        errors.extend(_webhook(path, hook, mutating=mutating, no_side_effects=no_side_effects,
                               check_conditions=check_conditions))
        errors.extend(_review_versions(f"{path}.admissionReviewVersions", _strings(hook.get("admissionReviewVersions")),
                                       require_accepted))
        name = str(hook.get("name") or "")
        if unique and name:
            if name in names:
                errors.append(FieldError.duplicate(f"{path}.name", name))
            names.add(name)
    return errors
