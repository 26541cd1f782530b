"""Validation of Ingresses and IngressClasses (``networking.k8s.io/v1``), as the 1.32 registry validates them.

Each function returns one :class:`FieldError` per problem with upstream's path, type and text (k/k
``pkg/apis/networking/validation/validation.go``: ``ValidateIngressCreate``, ``ValidateIngressUpdate``,
``ValidateIngressStatusUpdate``, ``ValidateIngressClass``, ``ValidateIngressClassUpdate``):

- an Ingress has ``spec.defaultBackend`` or ``spec.rules``; a rule's ``host`` is a DNS subdomain or a
  wildcard one (``*.example.com``), never an IP address; an HTTP path has a ``pathType`` (``Exact``,
  ``Prefix`` or ``ImplementationSpecific``), is absolute, and for ``Exact``/``Prefix`` holds none of
  ``//``, ``/./``, ``/../``, ``%2f`` and ends in neither ``/..`` nor ``/.``; a backend is a service (a
  DNS-1035 name and a port name XOR number) or a resource, not both; TLS hosts are (wildcard) DNS
  subdomains and ``secretName`` a Secret name; ``ingressClassName`` is a DNS subdomain;
- on create, the deprecated ``kubernetes.io/ingress.class`` annotation must equal ``ingressClassName``
  when both are set (kubernetes#115447, 1.27); on update, an invalid TLS secret name or an invalid rule
  under a wildcard host that the stored object already had is kept (``allowInvalidSecretName``,
  ``allowInvalidWildcardHostRule``);
- ``/status``: each ``status.loadBalancer.ingress`` entry's ``ip`` is an IP address and its
  ``hostname`` a DNS subdomain that is not an IP (``ValidateIngressLoadBalancerStatus``);
- an IngressClass's ``spec.controller`` is a domain-prefixed path of at most 250 bytes, immutable;
  ``spec.parameters`` has a kind and a name (path segments), an optional apiGroup (a DNS subdomain),
  and a scope: ``Cluster`` without a namespace or ``Namespace`` with one (a DNS label).

ObjectMeta is checked by the generic write path. Values of the wrong JSON type were refused at decode;
here they read as Go's zero value. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError, GoSyntax
from kubeloop.api._ip_sloppy import parse_ip_sloppy
from kubeloop.api._pod_fields import go_text
from kubeloop.api._pod_probe_validation import port_name_errors
from kubeloop.api._validation import (
    is_dns1123_subdomain,
    is_domain_prefixed_path,
    is_wildcard_dns1123_subdomain,
    name_is_dns1035_label,
    name_is_dns1123_label,
    name_is_dns1123_subdomain,
    path_segment_name_errors,
)

__all__ = [
    "INGRESS_CLASS_ANNOTATION",
    "validate_ingress_class",
    "validate_ingress_class_update",
    "validate_ingress_create",
    "validate_ingress_status",
    "validate_ingress_update",
]

# The deprecated annotation ``ingressClassName`` replaced (networking/v1beta1 AnnotationIngressClass).
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]  # supportedPathTypes.List(): sorted
_INVALID_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_SUFFIXES = ("/..", "/.")
_SCOPES = ["Cluster", "Namespace"]
_MAX_CONTROLLER = 250
_PORT_RANGE = "must be between 1 and 65535, inclusive"


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(obj.get("spec"))


# -- Ingress -----------------------------------------------------------------------------------------------


def _typed_reference_errors(ref: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateIngressTypedLocalObjectReference (a backend's ``resource``, a class's ``parameters``)."""
    errs: list[FieldError] = []
    group = ref.get("apiGroup")
    if isinstance(group, str):
        errs.extend(FieldError.invalid(f"{path}.apiGroup", group, m) for m in is_dns1123_subdomain(group))
    for key in ("kind", "name"):
        value = go_text(ref.get(key))
        if not value:
            errs.append(FieldError.required(f"{path}.{key}", f"{key} is required"))
        else:
            errs.extend(FieldError.invalid(f"{path}.{key}", value, m) for m in path_segment_name_errors(value))
    return errs


def _backend_errors(backend: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateIngressBackend: a service or a resource, exactly one; a service port by name or number."""
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [FieldError.invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return _typed_reference_errors(_map(resource), f"{path}.resource")
    if service is None:
        return [FieldError.invalid(path, "", "resource or service backend is required")]
    service = _map(service)
    errs: list[FieldError] = []
    name = go_text(service.get("name"))
    if not name:
        errs.append(FieldError.required(f"{path}.service.name"))
    else:
        # apivalidation.ValidateServiceName: a DNS-1035 label.
        errs.extend(FieldError.invalid(f"{path}.service.name", name, m) for m in name_is_dns1035_label(name, False))
    port = _map(service.get("port"))
    port_name = go_text(port.get("name"))
    number = port.get("number")
    number = number if isinstance(number, int) and not isinstance(number, bool) else 0
    if port_name and number:
        errs.append(FieldError.invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs.extend(FieldError.invalid(f"{path}.service.port.name", port_name, m) for m in port_name_errors(port_name))
    elif number:
        if not 1 <= number <= 65535:
            errs.append(FieldError.invalid(f"{path}.service.port.number", number, _PORT_RANGE))
    else:
        errs.append(FieldError.required(path, "port name or number is required"))
    return errs


def _http_path_errors(entry: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateHTTPIngressPath."""
    path_type = entry.get("pathType")
    if path_type is None:
        return [FieldError.required(f"{path}.pathType", "pathType must be specified")]
    text = go_text(entry.get("path"))
    errs: list[FieldError] = []
    if path_type in ("Exact", "Prefix"):
        if not text.startswith("/"):
            errs.append(FieldError.invalid(f"{path}.path", text, "must be an absolute path"))
        if text:
            errs.extend(FieldError.invalid(f"{path}.path", text, f"must not contain '{s}'")
                        for s in _INVALID_SEQUENCES if s in text)
            errs.extend(FieldError.invalid(f"{path}.path", text, f"cannot end with '{s}'")
                        for s in _INVALID_SUFFIXES if text.endswith(s))
    elif path_type == "ImplementationSpecific":
        if text and not text.startswith("/"):
            errs.append(FieldError.invalid(f"{path}.path", text, "must be an absolute path"))
    else:
        errs.append(FieldError.not_supported(f"{path}.pathType", go_text(path_type), _PATH_TYPES))
    errs.extend(_backend_errors(_map(entry.get("backend")), f"{path}.backend"))
    return errs


def _rule_value_errors(rule: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateIngressRuleValue: an ``http`` rule has paths, each valid."""
    http = rule.get("http")
    if http is None:
        return []
    paths = _list(_map(http).get("paths"))
    errs: list[FieldError] = []
    if not paths:
        errs.append(FieldError.required(f"{path}.http.paths"))
    for i, entry in enumerate(paths):
        errs.extend(_http_path_errors(_map(entry), f"{path}.http.paths[{i}]"))
    return errs


def _host_errors(host: str, path: str) -> list[FieldError]:
    if "*" in host:
        return [FieldError.invalid(path, host, m) for m in is_wildcard_dns1123_subdomain(host)]
    return [FieldError.invalid(path, host, m) for m in is_dns1123_subdomain(host)]


def _rules_errors(rules: list[Any], path: str, *, allow_invalid_wildcard_rule: bool) -> list[FieldError]:
    """validateIngressRules."""
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        rule = _map(rule)
        host = go_text(rule.get("host"))
        if host:
            if parse_ip_sloppy(host) is not None:
                errs.append(FieldError.invalid(f"{path}[{i}].host", host, "must be a DNS name, not an IP address"))
            errs.extend(_host_errors(host, f"{path}[{i}].host"))
        if "*" not in host or not allow_invalid_wildcard_rule:
            errs.extend(_rule_value_errors(rule, f"{path}[{i}]"))
    return errs


def _secret_name_errors(name: str) -> list[str]:
    """validateTLSSecretName: empty is allowed, else a Secret name (a DNS subdomain)."""
    return name_is_dns1123_subdomain(name, False) if name else []


def _tls_errors(tls: list[Any], path: str, *, allow_invalid_secret_name: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for t, entry in enumerate(tls):
        entry = _map(entry)
        for i, host in enumerate(_list(entry.get("hosts"))):
            errs.extend(_host_errors(go_text(host), f"{path}[{t}].hosts[{i}]"))
        if not allow_invalid_secret_name:
            secret = go_text(entry.get("secretName"))
            errs.extend(FieldError.invalid(f"{path}[{t}].secretName", secret, m) for m in _secret_name_errors(secret))
    return errs


def _ingress_spec_errors(spec: Mapping[str, Any], *, allow_invalid_secret_name: bool = False,
                         allow_invalid_wildcard_rule: bool = False) -> list[FieldError]:
    """ValidateIngressSpec."""
    errs: list[FieldError] = []
    rules = spec.get("rules")
    default_backend = spec.get("defaultBackend")
    if not _list(rules) and default_backend is None:
        # field.Invalid(fldPath, spec.Rules, ...): Go prints the (nil or empty) slice with %#v.
        shown = "[]networking.IngressRule{}" if isinstance(rules, list) else "[]networking.IngressRule(nil)"
        errs.append(FieldError.invalid("spec", GoSyntax(shown), "either `defaultBackend` or `rules` must be specified"))
    if default_backend is not None:
        errs.extend(_backend_errors(_map(default_backend), "spec.defaultBackend"))
    if _list(rules):
        errs.extend(_rules_errors(_list(rules), "spec.rules", allow_invalid_wildcard_rule=allow_invalid_wildcard_rule))
    if _list(spec.get("tls")):
        errs.extend(_tls_errors(_list(spec.get("tls")), "spec.tls", allow_invalid_secret_name=allow_invalid_secret_name))
    class_name = spec.get("ingressClassName")
    if isinstance(class_name, str):
        errs.extend(FieldError.invalid("spec.ingressClassName", class_name, m)
                    for m in name_is_dns1123_subdomain(class_name, False))
    return errs


def validate_ingress_create(ingress: Mapping[str, Any]) -> list[FieldError]:
    """ValidateIngressCreate, without its ObjectMeta part."""
    errs = _ingress_spec_errors(_spec(ingress))
    annotations = _map(_map(ingress.get("metadata")).get("annotations"))
    class_name = _spec(ingress).get("ingressClassName")
    if INGRESS_CLASS_ANNOTATION in annotations and isinstance(class_name, str):
        value = go_text(annotations[INGRESS_CLASS_ANNOTATION])
        if value != class_name:
            # the path has no "metadata." prefix upstream (field.NewPath("annotations")).
            errs.append(FieldError.invalid(f"annotations.{INGRESS_CLASS_ANNOTATION}", value,
                                           "must match `ingressClassName` when both are specified"))
    return errs


def _has_invalid_secret_name(old: Mapping[str, Any]) -> bool:
    return any(_secret_name_errors(go_text(_map(t).get("secretName"))) for t in _list(_spec(old).get("tls")))


def _has_invalid_wildcard_rule(old: Mapping[str, Any]) -> bool:
    return any("*" in go_text(_map(rule).get("host")) and _rule_value_errors(_map(rule), "")
               for rule in _list(_spec(old).get("rules")))


def validate_ingress_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateIngressUpdate, without its ObjectMeta part: what the stored object already had is allowed."""
    return _ingress_spec_errors(_spec(new), allow_invalid_secret_name=_has_invalid_secret_name(old),
                                allow_invalid_wildcard_rule=_has_invalid_wildcard_rule(old))


def validate_ingress_status(ingress: Mapping[str, Any]) -> list[FieldError]:
    """ValidateIngressStatusUpdate's ValidateIngressLoadBalancerStatus (1.32: IPs parsed as ParseIPSloppy)."""
    errs: list[FieldError] = []
    entries = _list(_map(_map(ingress.get("status")).get("loadBalancer")).get("ingress"))
    for i, entry in enumerate(entries):
        entry = _map(entry)
        path = f"status.loadBalancer.ingress[{i}]"
        ip = go_text(entry.get("ip"))
        if ip and parse_ip_sloppy(ip) is None:
            errs.append(FieldError.invalid(f"{path}.ip", ip, "must be a valid IP address"))
        hostname = go_text(entry.get("hostname"))
        if hostname:
            errs.extend(FieldError.invalid(f"{path}.hostname", hostname, m) for m in is_dns1123_subdomain(hostname))
            if parse_ip_sloppy(hostname) is not None:
                errs.append(FieldError.invalid(f"{path}.hostname", hostname, "must be a DNS name, not an IP address"))
    return errs


# -- IngressClass ------------------------------------------------------------------------------------------


def _parameters_errors(params: Mapping[str, Any], path: str) -> list[FieldError]:
    """validateIngressClassParametersReference."""
    errs = _typed_reference_errors(params, path)
    scope = params.get("scope")
    if scope is None:
        errs.append(FieldError.required(f"{path}.scope"))
        return errs
    scope = go_text(scope)
    namespace = params.get("namespace")
    if scope not in _SCOPES:
        errs.append(FieldError.not_supported(f"{path}.scope", scope, _SCOPES))
    elif scope == "Namespace":
        if namespace is None:
            errs.append(FieldError.required(f"{path}.namespace", "`parameters.scope` is set to 'Namespace'"))
        else:
            text = go_text(namespace)
            errs.extend(FieldError.invalid(f"{path}.namespace", text, m) for m in name_is_dns1123_label(text, False))
    elif namespace is not None:
        errs.append(FieldError.forbidden(f"{path}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return errs


def validate_ingress_class(ingress_class: Mapping[str, Any]) -> list[FieldError]:
    """ValidateIngressClass, without its ObjectMeta part."""
    spec = _spec(ingress_class)
    controller = go_text(spec.get("controller"))
    errs: list[FieldError] = []
    if len(controller.encode()) > _MAX_CONTROLLER:
        errs.append(FieldError.too_long("spec.controller", _MAX_CONTROLLER))
    errs.extend(is_domain_prefixed_path("spec.controller", controller))
    params = spec.get("parameters")
    if params is not None:
        errs.extend(_parameters_errors(_map(params), "spec.parameters"))
    return errs


def validate_ingress_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """ValidateIngressClassUpdate, without its ObjectMeta part: ``spec.controller`` is immutable, then the
    class is validated as on create."""
    errs: list[FieldError] = []
    controller = go_text(_spec(new).get("controller"))
    if controller != go_text(_spec(old).get("controller")):
        errs.append(FieldError.invalid("spec.controller", controller, "field is immutable"))
    return [*errs, *validate_ingress_class(new)]
