"""Defaults of ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1).

k/k ``pkg/apis/admissionregistration/v1/defaults.go`` (release-1.32), applied when the body is decoded:

- ``SetDefaults_ValidatingAdmissionPolicySpec``: ``failurePolicy: Fail``;
- ``SetDefaults_MatchResources`` (a policy's ``matchConstraints``, a binding's ``matchResources``, when
  present): ``matchPolicy: Equivalent``, ``namespaceSelector: {}``, ``objectSelector: {}``;
- ``SetDefaults_Rule`` (each ``resourceRules`` / ``excludeResourceRules`` item): ``scope: "*"``.

A binding's ``paramRef.parameterNotFoundAction`` has no default in v1 (validation requires it).
Functions change the object in place and leave values of the wrong JSON type alone.
"""

from __future__ import annotations

from typing import Any

__all__ = ["default_policy", "default_policy_binding"]


def _match_resources(match: Any) -> None:
    if not isinstance(match, dict):
        return
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        rules = match.get(key)
        for rule in rules if isinstance(rules, list) else ():
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def default_policy(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("failurePolicy", "Fail")
    _match_resources(spec.get("matchConstraints"))


def default_policy_binding(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _match_resources(spec.get("matchResources"))
