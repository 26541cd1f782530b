"""Validation of names, labels, annotations, finalizers, ownerReferences and object metadata.

Every function is pure and returns ``list[FieldError]`` (empty when valid), never raises; callers
turn a non-empty list into a 422 with :func:`kubeloop.api.invalid`. Messages, field paths and the
order of errors follow upstream so that clients see the same text as from a real cluster:

- apimachinery ``pkg/util/validation/validation.go`` (DNS-1123 / DNS-1035 names, qualified names,
  label values; the ``(e.g. 'MyName',  or 'my.name', ...`` quirk of ``RegexError`` included);
- apimachinery ``pkg/api/validation/generic.go`` (name functions, ``generateName`` prefixes);
- apimachinery ``pkg/api/validation/objectmeta.go`` (ObjectMeta on create and update,
  ownerReferences, finalizers, annotations) at Kubernetes 1.32;
- apimachinery ``pkg/apis/meta/v1/validation`` (labels).

Lengths are counted in UTF-8 bytes, as Go's ``len`` does. Maps are walked in sorted key order so
the error list is deterministic (Go's map order is random; upstream's text per error is the same).

:func:`type_errors` runs first on untrusted JSON: it reports wrong JSON types in ``metadata`` as
``type_invalid`` errors, so the value checks after it may assume well-typed input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeloop.api._errors import FieldError

__all__ = [
    "FINALIZER_DELETE_DEPENDENTS",
    "FINALIZER_ORPHAN_DEPENDENTS",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "NameValidator",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_domain_prefixed_path",
    "is_qualified_name",
    "is_valid_label_value",
    "is_wildcard_dns1123_subdomain",
    "name_is_dns1035_label",
    "name_is_dns1123_label",
    "name_is_dns1123_subdomain",
    "path_segment_name_errors",
    "type_errors",
    "validate_annotations",
    "validate_field_selector_requirement",
    "validate_finalizers",
    "validate_label_selector",
    "validate_label_selector_requirement",
    "validate_labels",
    "validate_object_meta",
    "validate_object_meta_update",
    "validate_owner_references",
    "well_typed",
]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
FINALIZER_ORPHAN_DEPENDENTS = "orphan"
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"
# apimachinery objectmeta.go BannedOwners: (group, version, kind).
_BANNED_OWNERS = frozenset({("", "v1", "Event")})

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)

# Go's regexp with ^...$ anchors the whole text; Python's fullmatch does the same ($ alone would
# also accept a trailing newline).
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # validation.go RegexError, including its double space between examples.
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {listed}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _blen(value: str) -> int:
    # isascii is a flag check on CPython's compact strings: no copy for the common case.
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


# Each ``is_*`` check tries the pattern first: a match is ASCII, so its UTF-8 length is ``len`` and
# a valid value (nearly every one) costs one match. The error list, order included, is unchanged.


# Label keys and values, annotation keys, finalizers and namespaces repeat from object to object:
# the valid ones seen last are remembered (a bounded set of strings; validity depends on the text only).
_valid_qualified_names: set[str] = set()
_valid_label_values: set[str] = set()
_valid_dns1123_labels: set[str] = set()
_REMEMBERED = 4096


def _remember(valid: set[str], value: str) -> None:
    if len(valid) >= _REMEMBERED:
        valid.clear()
    valid.add(value)


def is_dns1123_label(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 label (namespace names), empty when valid."""
    if value in _valid_dns1123_labels:
        return []
    if _DNS1123_LABEL_RE.fullmatch(value):
        if len(value) > 63:
            return [_max_len_error(63)]
        _remember(_valid_dns1123_labels, value)
        return []
    errs: list[str] = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 subdomain (most object names), empty when valid."""
    if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        return [] if len(value) <= 253 else [_max_len_error(253)]
    errs: list[str] = []
    if _blen(value) > 253:
        errs.append(_max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


_WILDCARD_SUBDOMAIN_FMT = "\\*\\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_SUBDOMAIN_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of "
    "lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character"
)
_WILDCARD_SUBDOMAIN_RE = re.compile(_WILDCARD_SUBDOMAIN_FMT)


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """``IsWildcardDNS1123Subdomain``: ``*.`` then an RFC 1123 subdomain (Ingress hosts), empty when valid."""
    errs: list[str] = []
    if _blen(value) > 253:
        errs.append(_max_len_error(253))
    if not _WILDCARD_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_WILDCARD_SUBDOMAIN_MSG, _WILDCARD_SUBDOMAIN_FMT, "*.example.com"))
    return errs


_HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(_HTTP_PATH_FMT)


def is_domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """``IsDomainPrefixedPath`` at field ``path``: ``host/path`` with an RFC 1123 subdomain host (a Job's
    ``spec.managedBy``, an IngressClass's ``spec.controller``)."""
    if not value:
        return [FieldError.required(path)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [FieldError.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [FieldError.invalid(path, host, message) for message in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.fullmatch(rest):
        errs.append(FieldError.invalid(path, rest, _regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


def path_segment_name_errors(name: str) -> list[str]:
    """apimachinery ``path.IsValidPathSegmentName``: a name that can be one segment of a URL path."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def is_dns1035_label(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1035 label (Service names), empty when valid."""
    if _DNS1035_LABEL_RE.fullmatch(value):
        return [] if len(value) <= 63 else [_max_len_error(63)]
    errs: list[str] = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Problems with ``value`` as ``[prefix/]name`` (label keys, finalizers), empty when valid."""
    if value in _valid_qualified_names:
        return []
    if len(value) <= 63 and _QUALIFIED_NAME_RE.fullmatch(value):
        _remember(_valid_qualified_names, value)  # no prefix, a valid name part
        return []
    prefix, slash, name = value.partition("/")
    if (slash and len(name) <= 63 and _QUALIFIED_NAME_RE.fullmatch(name) and len(prefix) <= 253
            and _DNS1123_SUBDOMAIN_RE.fullmatch(prefix)):
        _remember(_valid_qualified_names, value)  # a valid prefix and a valid name part
        return []
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _blen(name) > 63:
        errs.append("name part " + _max_len_error(63))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Problems with ``value`` as a label value (empty is valid), empty when valid."""
    if value in _valid_label_values:
        return []
    if _LABEL_VALUE_RE.fullmatch(value):
        if len(value) > 63:
            return [_max_len_error(63)]
        _remember(_valid_label_values, value)
        return []
    errs: list[str] = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


# A name validator takes (name, prefix) where prefix means "this is a generateName"; generic.go.
NameValidator = Callable[[str, bool], list[str]]


def _mask_trailing_dash(name: str) -> str:
    # generic.go maskTrailingDash: replaces the last *two* characters by "a" (upstream quirk, kept so
    # that the same generateName values are accepted and rejected).
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns1123_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1123_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def validate_labels(labels: Mapping[str, Any] | None, field: str = "metadata.labels") -> list[FieldError]:
    errs: list[FieldError] = []
    if not labels:
        return errs
    for key in sorted(labels):
        value = labels[key]
        if messages := is_qualified_name(key):
            errs.extend(FieldError.invalid(field, key, m) for m in messages)
        if messages := is_valid_label_value(value if type(value) is str else str(value)):
            errs.extend(FieldError.invalid(field, value, m) for m in messages)
    return errs


def validate_annotations(annotations: Mapping[str, Any] | None, field: str = "metadata.annotations") -> list[FieldError]:
    errs: list[FieldError] = []
    if not annotations:
        return errs
    total = 0
    for key in sorted(annotations):
        # Keys are qualified names, except that case does not matter.
        if messages := is_qualified_name(key.lower()):
            errs.extend(FieldError.invalid(field, key, m) for m in messages)
        value = annotations[key]
        total += _blen(key) + _blen(value if type(value) is str else str(value))
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(FieldError.too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_finalizers(finalizers: Sequence[str] | None, field: str = "metadata.finalizers") -> list[FieldError]:
    errs: list[FieldError] = []
    items = list(finalizers or [])
    for name in items:
        if messages := is_qualified_name(name):
            errs.extend(FieldError.invalid(field, name, m) for m in messages)
    if FINALIZER_ORPHAN_DEPENDENTS in items and FINALIZER_DELETE_DEPENDENTS in items:
        errs.append(FieldError.invalid(
            field, items,
            f"finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set",
        ))
    return errs


def _group_version(api_version: str) -> tuple[str, str]:
    # schema.ParseGroupVersion; more than one "/" is an error, which leaves the version empty.
    if api_version in ("", "/"):
        return "", ""
    count = api_version.count("/")
    if count == 0:
        return "", api_version
    if count == 1:
        group, _, version = api_version.partition("/")
        return group, version
    return "", ""


def validate_owner_references(
    refs: Sequence[Mapping[str, Any]] | None, field: str = "metadata.ownerReferences"
) -> list[FieldError]:
    """Each reference names an owner by apiVersion (with a version), kind, name and uid; at most one
    is the controller; ``v1 Event`` cannot own anything. Scope is not checked (GC semantics)."""
    errs: list[FieldError] = []
    first_controller = ""
    items = list(refs or [])
    for ref in items:
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        name = str(ref.get("name") or "")
        uid = str(ref.get("uid") or "")
        group, version = _group_version(api_version)
        # 1.32 texts ("uid must not be empty"); later releases dropped the field word.
        if not version:
            errs.append(FieldError.invalid(f"{field}.apiVersion", api_version, "version must not be empty"))
        if not kind:
            errs.append(FieldError.invalid(f"{field}.kind", kind, "kind must not be empty"))
        if not name:
            errs.append(FieldError.invalid(f"{field}.name", name, "name must not be empty"))
        if not uid:
            errs.append(FieldError.invalid(f"{field}.uid", uid, "uid must not be empty"))
        if (group, version, kind) in _BANNED_OWNERS:
            errs.append(FieldError.invalid(field, dict(ref), f"{group}/{version}, Kind={kind} is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{kind}/{name}"
            if first_controller:
                errs.append(FieldError.invalid(
                    field, [dict(r) for r in items],
                    "Only one reference can have Controller set to true. "
                    f'Found "true" in references for {first_controller} and {current}',
                ))
            else:
                first_controller = current
    return errs


def validate_label_selector(selector: Mapping[str, Any] | None, field: str = "spec.selector") -> list[FieldError]:
    """A ``metav1.LabelSelector`` in a spec (meta/v1 validation ValidateLabelSelector)."""
    errs: list[FieldError] = []
    if selector is None:
        return errs
    errs.extend(validate_labels(selector.get("matchLabels"), f"{field}.matchLabels"))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        errs.extend(validate_label_selector_requirement(expr, f"{field}.matchExpressions[{i}]"))
    return errs


def validate_label_selector_requirement(expr: Mapping[str, Any], path: str, *,
                                        allow_unknown_operator: bool = False) -> list[FieldError]:
    """meta/v1 validation ValidateLabelSelectorRequirement: the operator's values, then the key (a qualified
    name) and each value (a label value). ``allow_unknown_operator`` is LabelSelectorValidationOptions'
    AllowUnknownOperatorInRequirement (the access reviews set it: a newer client's operator only narrows)."""
    values = list(expr.get("values") or [])
    errs = _operator_values_errors(expr.get("operator"), values, path, allow_unknown_operator)
    key = str(expr.get("key") or "")
    errs.extend(FieldError.invalid(f"{path}.key", key, m) for m in is_qualified_name(key))
    for j, value in enumerate(values):
        errs.extend(FieldError.invalid(f"{path}.values[{j}]", value, m) for m in is_valid_label_value(str(value)))
    return errs


def validate_field_selector_requirement(expr: Mapping[str, Any], path: str, *,
                                        allow_unknown_operator: bool = False) -> list[FieldError]:
    """meta/v1 validation ValidateFieldSelectorRequirement: a key, then the operator's values (messages as
    upstream's authorization TestValidateSAR expects them). ``allow_unknown_operator``: as for a label
    requirement."""
    errs = [] if expr.get("key") else [FieldError.required(f"{path}.key", "must be specified")]
    errs.extend(_operator_values_errors(expr.get("operator"), list(expr.get("values") or []), path,
                                        allow_unknown_operator))
    return errs


def _operator_values_errors(operator: Any, values: list[Any], path: str, allow_unknown: bool) -> list[FieldError]:
    """What a selector requirement's operator asks of its values: some for In and NotIn, none for Exists
    and DoesNotExist; another operator is invalid unless ``allow_unknown``."""
    if operator in ("In", "NotIn"):
        if not values:
            return [FieldError.required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")]
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            return [FieldError.forbidden(f"{path}.values",
                                         "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")]
    elif not allow_unknown:
        return [FieldError.invalid(f"{path}.operator", operator, "not a valid selector operator")]
    return []


def _go_string_slice(values: Sequence[str]) -> str:
    # Go's %#v of a []string, as in ValidateNoNewFinalizers.
    return "[]string{" + ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


def _plain_label(name: str) -> bool:
    """A sufficient test that ``name``'s characters make an RFC 1123 label (hence a subdomain), for the
    common names (lowercase letters, digits and inner dashes), in a few string methods instead of a
    pattern match (about half the instructions: ``fullmatch`` sets up a matcher per call). The length
    is not looked at: the caller checks it. ``False`` says nothing."""
    # islower: at least one letter and none uppercase; isalnum without dashes: nothing but [A-Za-z0-9-].
    return (name.isascii() and name.islower() and name[0] != "-" and name[-1] != "-"
            and name.replace("-", "").isalnum())


def _invalid_each(path: str, value: Any, messages: list[str]) -> list[FieldError]:
    # A loop here rather than generator expressions in validate_object_meta: every variable such an
    # expression reads becomes a cell, made and freed on each call, error or not.
    return [FieldError.invalid(path, value, m) for m in messages]


# The fields validate_object_meta checks besides the name and the namespace.
_META_OTHERS = frozenset(("generateName", "generation", "labels", "annotations", "ownerReferences", "finalizers"))


def validate_object_meta(
    meta: Mapping[str, Any],
    *,
    namespaced: bool,
    name_validator: NameValidator = name_is_dns1123_subdomain,
    field: str = "metadata",
) -> list[FieldError]:
    """ObjectMeta on create, after name generation (objectmeta.go ValidateObjectMetaAccessor)."""
    errs: list[FieldError] = []
    # Most objects carry none of the other checked fields (a create's metadata is often its name,
    # namespace, uid and timestamp): one test in C instead of six lookups that find nothing.
    others = not _META_OTHERS.isdisjoint(meta)
    if others and (generate_name := str(meta.get("generateName") or "")) and (
            messages := name_validator(generate_name, True)):
        errs.extend(_invalid_each(f"{field}.generateName", generate_name, messages))
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    if not name:
        errs.append(FieldError.required(f"{field}.name", "name or generateName is required"))
    elif name_validator is name_is_dns1123_subdomain and len(name) <= 253 and (
            _plain_label(name) or _DNS1123_SUBDOMAIN_RE.fullmatch(name)):
        pass  # what the validator answers for a valid subdomain (most kinds' rule), without the calls
    elif messages := name_validator(name, False):
        errs.extend(_invalid_each(f"{field}.name", name, messages))
    if namespaced:
        if not namespace:
            errs.append(FieldError.required(f"{field}.namespace"))
        elif namespace in _valid_dns1123_labels:
            pass
        elif messages := is_dns1123_label(namespace):
            errs.extend(_invalid_each(f"{field}.namespace", namespace, messages))
    elif namespace:
        errs.append(FieldError.forbidden(f"{field}.namespace", "not allowed on this type"))
    if not others:
        return errs
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        errs.append(FieldError.invalid(f"{field}.generation", generation, "must be greater than or equal to 0"))
    # Each check finds nothing in an absent or empty field: most objects skip most of them.
    if labels := meta.get("labels"):
        errs.extend(validate_labels(labels, f"{field}.labels"))
    if annotations := meta.get("annotations"):
        errs.extend(validate_annotations(annotations, f"{field}.annotations"))
    if references := meta.get("ownerReferences"):
        errs.extend(validate_owner_references(references, f"{field}.ownerReferences"))
    if finalizers := meta.get("finalizers"):
        errs.extend(validate_finalizers(finalizers, f"{field}.finalizers"))
    return errs


_IMMUTABLE = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


def _immutable_value(meta: Mapping[str, Any], key: str) -> Any:
    value = meta.get(key)
    # Go compares the zero value: an absent string field equals "".
    if value is None and key in ("name", "namespace", "uid"):
        return ""
    return value


def validate_object_meta_update(
    new_meta: Mapping[str, Any], old_meta: Mapping[str, Any], *, field: str = "metadata"
) -> list[FieldError]:
    """ObjectMeta on update (objectmeta.go ValidateObjectMetaAccessorUpdate).

    The caller fills system fields the client omitted (uid, creationTimestamp ...) from the stored
    object first, as upstream's ``FillObjectMetaSystemFields`` does, and applies the per-kind rule
    for a missing ``resourceVersion`` (unconditional update) before calling this.
    """
    errs: list[FieldError] = []
    if old_meta.get("deletionTimestamp"):
        old_finalizers = set(old_meta.get("finalizers") or [])
        extra = sorted(set(new_meta.get("finalizers") or []) - old_finalizers)
        if extra:
            errs.append(FieldError.forbidden(
                f"{field}.finalizers",
                "no new finalizers can be added if the object is being deleted, "
                f"found new finalizers {_go_string_slice(extra)}",
            ))
    if not new_meta.get("resourceVersion"):
        errs.append(FieldError.invalid(f"{field}.resourceVersion", str(new_meta.get("resourceVersion") or ""),
                                       "must be specified for an update"))
    new_generation = new_meta.get("generation") or 0
    old_generation = old_meta.get("generation") or 0
    if isinstance(new_generation, int) and isinstance(old_generation, int) and new_generation < old_generation:
        errs.append(FieldError.invalid(f"{field}.generation", new_generation, "must not be decremented"))
    for key in _IMMUTABLE:
        # Values equal as sent are equal as Go compares them (their zero values stand in for absent ones):
        # only a difference is looked at again.
        if new_meta.get(key) != old_meta.get(key):
            new_value = _immutable_value(new_meta, key)
            if new_value != _immutable_value(old_meta, key):
                errs.append(FieldError.invalid(f"{field}.{key}", new_value, "field is immutable"))
    # Each check finds nothing in an absent or empty field, as on create.
    if labels := new_meta.get("labels"):
        errs.extend(validate_labels(labels, f"{field}.labels"))
    if annotations := new_meta.get("annotations"):
        errs.extend(validate_annotations(annotations, f"{field}.annotations"))
    if references := new_meta.get("ownerReferences"):
        errs.extend(validate_owner_references(references, f"{field}.ownerReferences"))
    return errs


# --- JSON types -------------------------------------------------------------------------------

_JSON_TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
                    float: "number", type(None): "null"}


def _json_type(value: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _type_error(field: str, value: Any, expected: str) -> FieldError:
    # The shape of an OpenAPI schema type error (apiextensions: "in body must be of type string").
    actual = _json_type(value)
    where = f"{field} in body" if field else "body"
    return FieldError.type_invalid(field, actual, f'{where} must be of type {expected}: "{actual}"')


# Strings, and the timestamps (also strings, may be null), in the order their errors are reported.
_META_STRINGS = ("name", "generateName", "namespace", "uid", "resourceVersion", "selfLink",
                 "creationTimestamp", "deletionTimestamp")
_META_INTEGERS = ("generation", "deletionGracePeriodSeconds")
_OWNER_STRINGS = ("apiVersion", "kind", "name", "uid")
_OWNER_BOOLS = ("controller", "blockOwnerDeletion")


def _check_string_map(value: Any, field: str, errs: list[FieldError]) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        errs.append(_type_error(field, value, "object"))
        return
    for key, item in value.items():
        if not isinstance(item, str):
            errs.append(_type_error(f"{field}[{key}]", item, "string"))


# What :func:`well_typed` accepts per metadata field without looking further (``None`` is fine
# everywhere); labels, annotations, finalizers and ownerReferences need a look inside.
_META_SCALAR_TYPES: dict[str, type] = {
    **dict.fromkeys(_META_STRINGS, str), **dict.fromkeys(_META_INTEGERS, int), "managedFields": list,
}


def well_typed(obj: dict[str, Any]) -> bool:
    """A sufficient test that :func:`type_errors` finds nothing, one pass over the fields present
    (exact types only: anything unusual takes the full check, which reports in its fixed order)."""
    # An absent field reads as "" (a str); a present null is not a str, as type_errors says.
    if type(obj.get("apiVersion", "")) is not str or type(obj.get("kind", "")) is not str:
        return False
    meta = obj.get("metadata")
    if meta is None:
        return True
    if type(meta) is not dict:
        return False
    for key, value in meta.items():
        if value is None:
            continue
        expected = _META_SCALAR_TYPES.get(key)
        if expected is not None:
            if type(value) is not expected:
                return False
        elif key in ("labels", "annotations"):
            if type(value) is not dict or not all(type(item) is str for item in value.values()):
                return False
        elif key == "finalizers":
            if type(value) is not list or not all(type(item) is str for item in value):
                return False
        elif key == "ownerReferences":
            if type(value) is not list:
                return False
            for ref in value:
                if type(ref) is not dict:
                    return False
                for name in _OWNER_STRINGS:
                    item = ref.get(name)
                    if item is not None and type(item) is not str:
                        return False
                for name in _OWNER_BOOLS:
                    item = ref.get(name)
                    if item is not None and type(item) is not bool:
                        return False
    return True


def type_errors(obj: Any) -> list[FieldError]:
    """Wrong JSON types where every object has a fixed shape: the object itself, ``apiVersion``,
    ``kind`` and ``metadata`` (strings, integers, string maps, string lists, ownerReferences).

    Run it on a request body before anything indexes into it; a non-empty result is a 422 whose
    causes name each field, instead of a crash deeper in the server.
    """
    if not isinstance(obj, dict):
        return [_type_error("", obj, "object")]
    return [] if well_typed(obj) else _all_type_errors(obj)


def _all_type_errors(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("apiVersion", "kind"):
        if key in obj and not isinstance(obj[key], str):
            errs.append(_type_error(key, obj[key], "string"))
    meta = obj.get("metadata")
    if meta is None:
        return errs
    if not isinstance(meta, dict):
        return [*errs, _type_error("metadata", meta, "object")]
    for key in _META_STRINGS:
        if meta.get(key) is not None and not isinstance(meta[key], str):
            errs.append(_type_error(f"metadata.{key}", meta[key], "string"))
    for key in _META_INTEGERS:
        value = meta.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            errs.append(_type_error(f"metadata.{key}", value, "integer"))
    _check_string_map(meta.get("labels"), "metadata.labels", errs)
    _check_string_map(meta.get("annotations"), "metadata.annotations", errs)
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list):
            errs.append(_type_error("metadata.finalizers", finalizers, "array"))
        else:
            errs.extend(_type_error(f"metadata.finalizers[{i}]", f, "string")
                        for i, f in enumerate(finalizers) if not isinstance(f, str))
    refs = meta.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            errs.append(_type_error("metadata.ownerReferences", refs, "array"))
        else:
            for i, ref in enumerate(refs):
                path = f"metadata.ownerReferences[{i}]"
                if not isinstance(ref, dict):
                    errs.append(_type_error(path, ref, "object"))
                    continue
                errs.extend(_type_error(f"{path}.{k}", ref[k], "string")
                            for k in _OWNER_STRINGS if ref.get(k) is not None and not isinstance(ref[k], str))
                errs.extend(_type_error(f"{path}.{k}", ref[k], "boolean")
                            for k in _OWNER_BOOLS if ref.get(k) is not None and not isinstance(ref[k], bool))
    managed = meta.get("managedFields")
    if managed is not None and not isinstance(managed, list):
        errs.append(_type_error("metadata.managedFields", managed, "array"))
    return errs
