"""CustomResourceDefinition (``apiextensions.k8s.io/v1``) defaulting, validation and status.

Pure functions over CRD dicts, following k/k ``staging/src/k8s.io/apiextensions-apiserver``:
``pkg/apis/apiextensions/v1/defaults.go`` (singular, listKind, conversion strategy),
``pkg/apis/apiextensions/validation/validation.go`` (names, scope, versions, schemas, scale paths,
immutable fields, ``x-kubernetes-validations`` rules: :mod:`kubeloop.api._cel_crd`) and ``pkg/controller/status/naming_controller.go`` (accepted names and the
``NamesAccepted``/``Established`` conditions). Errors are :class:`~kubeloop.api.FieldError` lists the
server turns into a 422 naming each bad field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kubeloop.api import FieldError
from kubeloop.api._cel_presence import has_validation_rules
from kubeloop.api._schema_validate import validate_structural

__all__ = ["CLEANUP_FINALIZER", "accepted_status", "default_crd", "served_versions", "validate_crd"]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1123_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _versions(crd: Mapping[str, Any]) -> list[dict[str, Any]]:
    versions = _dict(crd.get("spec")).get("versions")
    return [v for v in versions if isinstance(v, dict)] if isinstance(versions, list) else []


def default_crd(crd: dict[str, Any]) -> None:
    """v1 defaults, in place: ``names.singular``, ``names.listKind``, ``conversion.strategy``."""
    spec = crd.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    if not isinstance(spec.get("conversion"), dict):
        spec["conversion"] = {"strategy": "None"}


def served_versions(crd: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [v for v in _versions(crd) if v.get("served") is True]


def _validate_names(names: Mapping[str, Any], errors: list[FieldError]) -> None:
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errors.append(FieldError.required(f"spec.names.{key}"))
    for key in ("plural", "singular"):
        value = names.get(key)
        if isinstance(value, str) and value and not _DNS1035.match(value):
            errors.append(FieldError.invalid(f"spec.names.{key}", value, _DNS1035_MSG))
    for key in ("kind", "listKind"):
        value = names.get(key)
        if isinstance(value, str) and value and not _DNS1035.match(value.lower()):
            errors.append(
                FieldError.invalid(
                    f"spec.names.{key}",
                    value,
                    "may have mixed case, but should otherwise match: " + _DNS1035_MSG,
                )
            )
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errors.append(
            FieldError.invalid(
                "spec.names.listKind", names["listKind"], "kind and listKind may not be the same"
            )
        )
    for key in ("shortNames", "categories"):
        for i, value in enumerate(names.get(key) or ()):
            if not isinstance(value, str) or not _DNS1035.match(value):
                errors.append(FieldError.invalid(f"spec.names.{key}[{i}]", value, _DNS1035_MSG))


def _validate_scale(scale: Mapping[str, Any], path: str, errors: list[FieldError]) -> None:
    spec_path = scale.get("specReplicasPath")
    if not spec_path:
        errors.append(FieldError.required(f"{path}.specReplicasPath"))
    elif not str(spec_path).startswith(".spec."):
        errors.append(
            FieldError.invalid(f"{path}.specReplicasPath", spec_path, "should be a json path under .spec")
        )
    status_path = scale.get("statusReplicasPath")
    if not status_path:
        errors.append(FieldError.required(f"{path}.statusReplicasPath"))
    elif not str(status_path).startswith(".status."):
        errors.append(
            FieldError.invalid(
                f"{path}.statusReplicasPath", status_path, "should be a json path under .status"
            )
        )
    selector = scale.get("labelSelectorPath")
    if selector and not str(selector).startswith((".spec.", ".status.")):
        errors.append(
            FieldError.invalid(
                f"{path}.labelSelectorPath", selector, "should be a json path under either .spec or .status"
            )
        )


def _same_schemas(versions: list[dict[str, Any]]) -> bool:
    schemas = [_dict(v.get("schema")).get("openAPIV3Schema") for v in versions]
    return all(s == schemas[0] for s in schemas)


def _rules_path(versions: list[dict[str, Any]], version_path: str) -> str:
    """Where upstream reports a schema's rule errors: v1's conversion to the internal version hoists a
    schema every version shares to ``spec.validation`` (apiextensions/v1 conversion.go), so such a CRD's
    errors read ``spec.validation.openAPIV3Schema...``; distinct schemas stay per version."""
    if _same_schemas(versions):
        return "spec.validation.openAPIV3Schema"
    return f"{version_path}.schema.openAPIV3Schema"


def _validate_versions(
    spec: Mapping[str, Any], versions: list[dict[str, Any]], errors: list[FieldError]
) -> None:
    seen: set[str] = set()
    unique = True
    storage = 0
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        name = version.get("name")
        if not isinstance(name, str) or not _DNS1035.match(name):
            errors.append(FieldError.invalid(f"{path}.name", name if name is not None else "", _DNS1035_MSG))
        elif name in seen:
            unique = False
        else:
            seen.add(name)
        if version.get("storage") is True:
            storage += 1
        schema = _dict(version.get("schema")).get("openAPIV3Schema")
        if schema is None:
            errors.append(FieldError.required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
        else:
            structural = validate_structural(schema, f"{path}.schema.openAPIV3Schema")
            errors.extend(structural)
            if not structural and (i == 0 or not _same_schemas(versions)) and has_validation_rules(schema):
                # CEL is loaded only for a schema with rules (kubeloop.api._cel_presence).
                from kubeloop.api._cel_crd import validate_schema_rules

                errors.extend(validate_schema_rules(schema, _rules_path(versions, path)))
        scale = _dict(version.get("subresources")).get("scale")
        if isinstance(scale, dict):
            _validate_scale(scale, f"{path}.subresources.scale", errors)
        for j, selectable in enumerate(version.get("selectableFields") or ()):
            if not isinstance(selectable, dict) or not selectable.get("jsonPath"):
                errors.append(FieldError.required(f"{path}.selectableFields[{j}].jsonPath"))
    summary = [
        {"name": v.get("name"), "served": v.get("served"), "storage": v.get("storage")} for v in versions
    ]
    if not unique:
        errors.append(FieldError.invalid("spec.versions", summary, "must contain unique version names"))
    if storage != 1:
        errors.append(
            FieldError.invalid(
                "spec.versions", summary, "must have exactly one version marked as storage version"
            )
        )


def validate_crd(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """Every reason ``crd`` (after :func:`default_crd`) cannot be stored; ``old`` for updates."""
    errors: list[FieldError] = []
    spec = _dict(crd.get("spec"))
    names = _dict(spec.get("names"))
    group = spec.get("group")
    name = _dict(crd.get("metadata")).get("name")
    if name and name != f"{names.get('plural', '')}.{group or ''}":
        errors.append(FieldError.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errors.append(FieldError.required("spec.group"))
    elif not isinstance(group, str) or not _DNS1123_SUBDOMAIN.match(group):
        errors.append(FieldError.invalid("spec.group", group, _DNS1123_MSG))
    elif "." not in group:
        errors.append(FieldError.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errors.append(FieldError.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(FieldError.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    _validate_versions(spec, _versions(crd), errors)
    _validate_names(names, errors)
    if old is not None:
        old_spec = _dict(old.get("spec"))
        old_names = _dict(old_spec.get("names"))
        immutable = [
            ("spec.group", group, old_spec.get("group")),
            ("spec.names.plural", names.get("plural"), old_names.get("plural")),
        ]
        if _condition_true(old, "Established"):
            immutable += [
                ("spec.scope", scope, old_spec.get("scope")),
                ("spec.names.kind", names.get("kind"), old_names.get("kind")),
            ]
        for path, new_value, old_value in immutable:
            if new_value != old_value:
                errors.append(FieldError.invalid(path, new_value, "field is immutable"))
    return errors


def _condition_true(crd: Mapping[str, Any], kind: str) -> bool:
    for condition in _dict(crd.get("status")).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def _names_in_use(crd: Mapping[str, Any]) -> set[str]:
    names = _dict(_dict(crd.get("status")).get("acceptedNames")) or _dict(_dict(crd.get("spec")).get("names"))
    used = {names.get("plural"), names.get("singular"), *(names.get("shortNames") or ())}
    return {n for n in used if isinstance(n, str) and n}


def _conflict(crd: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(reason, message) of the first name clash with another CRD of the same group, upstream's order."""
    spec = _dict(crd.get("spec"))
    names = _dict(spec.get("names"))
    me = _dict(crd.get("metadata")).get("name")
    rivals = [
        o
        for o in others
        if _dict(o.get("spec")).get("group") == spec.get("group")
        and _dict(o.get("metadata")).get("name") != me
    ]
    taken: set[str] = set()
    kinds: set[str] = set()
    for other in rivals:
        taken |= _names_in_use(other)
        accepted = _dict(_dict(other.get("status")).get("acceptedNames")) or _dict(
            _dict(other.get("spec")).get("names")
        )
        kinds |= {k for k in (accepted.get("kind"), accepted.get("listKind")) if isinstance(k, str)}
    if names.get("plural") in taken:
        return "PluralConflict", f'"{names["plural"]}" is already in use'
    if names.get("singular") in taken:
        return "SingularConflict", f'"{names["singular"]}" is already in use'
    for short in names.get("shortNames") or ():
        if short in taken:
            return "ShortNamesConflict", f'"{short}" is already in use'
    if names.get("kind") in kinds:
        return "KindConflict", f'"{names["kind"]}" is already in use'
    if names.get("listKind") in kinds:
        return "ListKindConflict", f'"{names["listKind"]}" is already in use'
    return None


def _set_condition(
    conditions: list[dict[str, Any]], kind: str, status: str, reason: str, message: str, now: str
) -> None:
    for condition in conditions:
        if condition.get("type") == kind:
            if condition.get("status") != status:
                condition["lastTransitionTime"] = now
            condition.update(status=status, reason=reason, message=message)
            return
    conditions.append(
        {"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
    )


def accepted_status(
    crd: Mapping[str, Any], others: Iterable[Mapping[str, Any]], *, now: str
) -> dict[str, Any]:
    """The status the naming and establishing controllers converge to, given the other CRDs."""
    status = dict(_dict(crd.get("status")))
    conditions = [dict(c) for c in status.get("conditions") or () if isinstance(c, dict)]
    names = dict(_dict(_dict(crd.get("spec")).get("names")))
    conflict = _conflict(crd, others)
    was_established = _condition_true(crd, "Established")
    if conflict is None:
        status["acceptedNames"] = names
        _set_condition(conditions, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
        if not was_established:
            _set_condition(
                conditions,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                now,
            )
    else:
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        _set_condition(conditions, "NamesAccepted", "False", conflict[0], conflict[1], now)
        if not was_established:
            _set_condition(
                conditions, "Established", "False", "NotAccepted", "not all names are accepted", now
            )
    if _dict(crd.get("metadata")).get("deletionTimestamp"):
        _set_condition(
            conditions,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            now,
        )
    status["conditions"] = conditions
    stored = [v for v in status.get("storedVersions") or () if isinstance(v, str)]
    for version in _versions(crd):
        if version.get("storage") is True and version.get("name") not in stored:
            stored.append(str(version.get("name")))
    status["storedVersions"] = stored
    return status
