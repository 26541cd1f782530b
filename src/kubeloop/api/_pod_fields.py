"""Readers of a pod spec's JSON and the label checks the pod validation modules share.

Validation sees a body as the client sent it: these read a field of the expected JSON shape and treat
anything else as absent (the decoder's job is to refuse wrong types; validation never crashes on
them). ``label_selector_errors`` is meta/v1 ``ValidateLabelSelector`` with upstream's
``LabelSelectorValidationOptions``; ``label_name_errors`` is ``ValidateLabelName``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._validation import is_qualified_name, validate_label_selector

__all__ = [
    "PREFERRED_DURING_SCHEDULING",
    "REQUIRED_DURING_SCHEDULING",
    "as_list",
    "containers_with_paths",
    "dict_or_none",
    "dicts_in",
    "go_text",
    "int_of",
    "label_name_errors",
    "label_selector_errors",
    "mapping_of",
    "objects_of",
    "semantic_diff",
    "values_of",
    "well_shaped",
]

# The key of the hard (scheduling-time) half of a node or pod affinity.
REQUIRED_DURING_SCHEDULING = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_DURING_SCHEDULING = "preferredDuringSchedulingIgnoredDuringExecution"
# A label value error inside a selector requirement (ValidateLabelSelectorRequirement's last loop).
_SELECTOR_VALUE_PATH = re.compile(r"\.matchExpressions\[\d+\]\.values\[\d+\]$")


def mapping_of(value: Any) -> Mapping[str, Any]:
    # A JSON object is a dict: checking for one (and for null) first skips the slower ABC check.
    if isinstance(value, dict):
        return value
    return value if value is not None and isinstance(value, Mapping) else {}


def objects_of(value: Any) -> list[tuple[int, Mapping[str, Any]]]:
    """The objects of a JSON list with their indexes (anything else in it is skipped)."""
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, (dict, Mapping))]


def containers_with_paths(spec: Mapping[str, Any], field: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """podshelper.VisitContainersWithPath: init, regular, then ephemeral containers, with their paths."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, container in objects_of(spec.get(key)):
            yield container, f"{field}.{key}[{i}]"


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def values_of(requirement: Mapping[str, Any]) -> list[Any]:
    return as_list(requirement.get("values"))


def int_of(value: Any) -> int | None:
    """A JSON integer field's value; ``None`` when absent or not an integer (a bool is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def go_text(value: Any) -> str:
    """A Go string field: absent or null reads as ""."""
    return value if isinstance(value, str) else "" if value is None else str(value)


def label_name_errors(key: str, path: str) -> list[FieldError]:
    # unversionedvalidation.ValidateLabelName.
    return [FieldError.invalid(path, key, m) for m in is_qualified_name(key)]


def well_shaped(selector: Mapping[str, Any]) -> bool:
    """Whether a label selector has the JSON shape ``label_selector_errors`` checks."""
    labels, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
    return (labels is None or isinstance(labels, Mapping)) and (expressions is None or (isinstance(expressions, list) and all(
        isinstance(e, Mapping) and isinstance(e.get("values"), (list, type(None))) for e in expressions)))


def label_selector_errors(selector: Any, path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    """meta/v1 ``ValidateLabelSelector`` with ``LabelSelectorValidationOptions``."""
    if not isinstance(selector, Mapping) or not well_shaped(selector):
        return []
    errs = validate_label_selector(selector, path)
    if allow_invalid_values:
        errs = [e for e in errs if not (e.type == "invalid" and _SELECTOR_VALUE_PATH.search(e.field))]
    return errs


def semantic_diff(old: Any, new: Any, path: str) -> str:
    """One ``- path: old`` / ``+ path: new`` line per changed field (what stands in for ``cmp.Diff``)."""
    lines: list[str] = []
    _diff(old, new, path, lines)
    return "\n".join(lines)


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted({*old, *new}):
            _diff(old.get(key), new.get(key), f"{path}.{key}" if path else key, out)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, f"{path}[{i}]", out)
        return
    if old is not None:
        out.append(f"- {path}: {json.dumps(old, sort_keys=True)}")
    if new is not None:
        out.append(f"+ {path}: {json.dumps(new, sort_keys=True)}")


def dict_or_none(value: Any) -> dict[str, Any] | None:
    """``value`` when it is a JSON object, for code that changes it in place; else ``None``."""
    return value if isinstance(value, dict) else None


def dicts_in(value: Any) -> Iterator[dict[str, Any]]:
    """The JSON objects of a list (others skipped), for code that changes them in place."""
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))
