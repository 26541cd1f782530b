"""Registry rules of the RBAC kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding).

As upstream (k/k ``pkg/apis/rbac/validation/validation.go``, ``pkg/apis/rbac/v1/defaults.go``,
``pkg/registry/rbac/*/strategy.go``):

- Names are path segments, not DNS subdomains (``ValidateRBACName`` = apimachinery
  ``path.IsValidPathSegmentName``): anything but ``.`` and ``..`` without ``/`` or ``%``, which is
  what lets the bootstrap roles be named ``system:discovery``.
- Subjects of kind User or Group without ``apiGroup`` get ``rbac.authorization.k8s.io``.
- Rules need verbs; resource rules need apiGroups and resources; non-resource rules may not name
  resources and may not appear in a namespaced Role.
- A ClusterRole's ``aggregationRule``, when set, needs at least one ``clusterRoleSelectors`` entry,
  each a valid label selector.
- A binding's ``roleRef`` must name a Role or ClusterRole (only a ClusterRole for a
  ClusterRoleBinding) in ``rbac.authorization.k8s.io`` and cannot change on update.
- Subjects are User, Group (apiGroup ``rbac.authorization.k8s.io``) or ServiceAccount (apiGroup ``""``,
  a namespace required in a ClusterRoleBinding).
"""

from __future__ import annotations

from typing import Any

from kubeloop.api import FieldError, invalid, validate_label_selector
from kubeloop.server._authz import go_quote
from kubeloop.server._authz_rbac import RBAC_GROUP
from kubeloop.server._strategy import GenericStrategy

__all__ = ["RbacStrategy", "path_segment_name_errors"]


def path_segment_name_errors(name: str, prefix: bool = False) -> list[str]:
    """apimachinery ``path.IsValidPathSegmentName`` (``prefix`` is ignored, as upstream)."""
    for illegal in (".", ".."):
        if name == illegal:
            return [f"may not be '{illegal}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _go_role_ref(ref: Any) -> str:
    """The ``%#v`` rendering upstream's ``cannot change roleRef`` error prints."""
    ref = ref if isinstance(ref, dict) else {}
    fields = ", ".join(f'{k}:"{ref.get(j) or ""}"' for k, j in (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name")))
    return f"rbac.RoleRef{{{fields}}}"


class RbacStrategy(GenericStrategy):
    name_validator = staticmethod(path_segment_name_errors)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        _default_subjects(obj)

    def prepare_for_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(new, old)
        _default_subjects(new)
        if self.info.kind in ("RoleBinding", "ClusterRoleBinding") and new.get("roleRef") != old.get("roleRef"):
            name = str((new.get("metadata") or {}).get("name") or "")
            error = _invalid_go("roleRef", _go_role_ref(new.get("roleRef")), "cannot change roleRef")
            raise invalid(self.info.kind, name, [error], RBAC_GROUP)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        kind = self.info.kind
        if kind in ("Role", "ClusterRole"):
            rules = obj.get("rules") or []
            errors: list[FieldError] = []
            for i, rule in enumerate(rules if isinstance(rules, list) else []):
                errors.extend(_rule_errors(rule if isinstance(rule, dict) else {}, kind == "Role", f"rules[{i}]"))
            if kind == "ClusterRole" and isinstance(obj.get("aggregationRule"), dict):
                errors.extend(_aggregation_rule_errors(obj["aggregationRule"]))
            return errors
        return _binding_errors(obj, namespaced=kind == "RoleBinding")


def _invalid_go(field: str, rendered: str, detail: str) -> FieldError:
    """``Invalid value: <rendered>: <detail>``, for values Go prints with ``%#v`` (structs, slices)."""
    return FieldError("invalid", field, f"{rendered}: {detail}")


def _go_strings(values: Any) -> str:
    items = values if isinstance(values, list) else []
    return "[]string{" + ", ".join(go_quote(str(v)) for v in items) + "}"


def _default_subjects(obj: dict[str, Any]) -> None:
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group") and not subject.get("apiGroup"):
            subject["apiGroup"] = RBAC_GROUP


def _rule_errors(rule: dict[str, Any], namespaced: bool, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not rule.get("verbs"):
        errors.append(FieldError.required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            errors.append(
                _invalid_go(f"{path}.nonResourceURLs", _go_strings(urls), "namespaced rules cannot apply to non-resource URLs")
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errors.append(
                _invalid_go(
                    f"{path}.nonResourceURLs", _go_strings(urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )  # fmt: skip
        return errors
    if not rule.get("apiGroups"):
        errors.append(FieldError.required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errors.append(FieldError.required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errors


def _aggregation_rule_errors(rule: dict[str, Any]) -> list[FieldError]:
    """``ValidateClusterRole``: an aggregationRule needs selectors, each a valid label selector."""
    path = "aggregationRule.clusterRoleSelectors"
    selectors = rule.get("clusterRoleSelectors") or []
    if not isinstance(selectors, list) or not selectors:
        return [FieldError.required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil")]
    errors: list[FieldError] = []
    for i, selector in enumerate(selectors):
        errors.extend(validate_label_selector(selector if isinstance(selector, dict) else {}, f"{path}[{i}]"))
    return errors


def _binding_errors(obj: dict[str, Any], *, namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    ref = obj.get("roleRef") if isinstance(obj.get("roleRef"), dict) else {}
    assert isinstance(ref, dict)
    if ref.get("apiGroup") != RBAC_GROUP:
        errors.append(FieldError.not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [RBAC_GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.get("kind") not in kinds:
        errors.append(FieldError.not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        errors.append(FieldError.required("roleRef.name"))
    else:
        errors.extend(FieldError.invalid("roleRef.name", name, m) for m in path_segment_name_errors(str(name)))
    subjects = obj.get("subjects") or []
    for i, subject in enumerate(subjects if isinstance(subjects, list) else []):
        errors.extend(_subject_errors(subject if isinstance(subject, dict) else {}, namespaced, f"subjects[{i}]"))
    return errors


def _subject_errors(subject: dict[str, Any], namespaced: bool, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not subject.get("name"):
        errors.append(FieldError.required(f"{path}.name"))
    kind = subject.get("kind") or ""
    group = subject.get("apiGroup") or ""
    if kind == "ServiceAccount":
        if group:
            errors.append(FieldError.not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            errors.append(FieldError.required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            errors.append(FieldError.not_supported(f"{path}.apiGroup", group, [RBAC_GROUP]))
    else:
        errors.append(FieldError.not_supported(f"{path}.kind", kind, ["ServiceAccount", "User", "Group"]))
    return errors
