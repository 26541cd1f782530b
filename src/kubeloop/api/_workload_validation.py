"""What the apps kinds' own validations share (k/k ``pkg/apis/apps/validation/validation.go``, release 1.32).

A workload's ``spec.selector`` is required, valid (``ValidateLabelSelector`` without invalid label
values) and not empty (:func:`selector_errors`); once it parses (``LabelSelectorAsSelector``,
:func:`parsed_selector`) it must match the template's labels, which are then checked as labels and
the template's annotations as annotations (:func:`template_metadata_errors`). Counts may not be
negative (:func:`nonnegative`) and a status's ``collisionCount`` may not go down
(:func:`collision_count_errors`).

Where upstream prints a Go value in a message it formats it as ``field.Error`` does in 1.32: a
pointer is dereferenced and the struct printed with ``%#v`` (``v1.LabelSelector{...}``, never
``&v1.LabelSelector{...}``: ``field is immutable`` on a changed Deployment selector prints
``Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"x"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}``);
these functions print the same text. Pure functions; nothing is mutated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import ApiError, FieldError
from kubeloop.api._pod_fields import go_text, int_of, label_selector_errors, mapping_of
from kubeloop.api._pv_validation import semantic
from kubeloop.api._selectors import LabelSelector, label_selector_from_dict
from kubeloop.api._validation import validate_annotations, validate_labels

__all__ = [
    "NEGATIVE",
    "collision_count_errors",
    "go_int_or_string",
    "go_label_selector",
    "go_string",
    "go_string_map",
    "immutable_selector",
    "int_or_percent_value",
    "nonnegative",
    "not_more_than_100_percent",
    "parsed_selector",
    "positive_int_or_percent",
    "selector_errors",
    "template_metadata_errors",
]

NEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg


def go_string(value: Any) -> str:
    """``%#v`` of a Go string."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else json.dumps(str(value))


def go_string_map(value: Any) -> str:
    """``%#v`` of a ``map[string]string`` (Go prints map keys sorted)."""
    if not isinstance(value, Mapping):
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{go_string(k)}:{go_string(value[k])}" for k in sorted(value)) + "}"


def _go_strings(value: Any) -> str:
    if not isinstance(value, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_string(v) for v in value) + "}"


def go_label_selector(selector: Mapping[str, Any]) -> str:
    """A ``*metav1.LabelSelector`` as ``field.Error`` prints it: dereferenced, with ``%#v``."""
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        items = ", ".join(
            f"v1.LabelSelectorRequirement{{Key:{go_string(go_text(e.get('key')))}, "
            f"Operator:{go_string(go_text(e.get('operator')))}, Values:{_go_strings(e.get('values'))}}}"
            for e in expressions if isinstance(e, Mapping))
        shown = f"[]v1.LabelSelectorRequirement{{{items}}}"
    else:
        shown = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, MatchExpressions:{shown}}}"


def nonnegative(value: Any, path: str) -> list[FieldError]:
    """``ValidateNonnegativeField`` (an absent field is Go's zero, which passes)."""
    number = int_of(value)
    return [FieldError.invalid(path, number, NEGATIVE)] if number is not None and number < 0 else []


def selector_errors(spec: Mapping[str, Any], *, kind: str) -> list[FieldError]:
    """``spec.selector`` required, valid, and not empty (``kind`` ends the message: "deployment" for
    ReplicaSets too, as upstream says)."""
    selector = spec.get("selector")
    if selector is None:
        return [FieldError.required("spec.selector")]
    if not isinstance(selector, Mapping):
        return []
    errs = label_selector_errors(selector, "spec.selector", allow_invalid_values=False)
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errs.append(FieldError("invalid", "spec.selector",
                               f"{go_label_selector(selector)}: empty selector is invalid for {kind}"))
    return errs


def parsed_selector(spec: Mapping[str, Any]) -> LabelSelector | None:
    """``LabelSelectorAsSelector(spec.selector)``, or ``None`` when it fails (``selector_errors`` said why).
    A missing selector is ``labels.Nothing()``: not empty, and it matches no labels."""
    selector = spec.get("selector")
    try:
        return label_selector_from_dict(selector if isinstance(selector, Mapping) else None)
    except ApiError:
        return None


def template_metadata_errors(spec: Mapping[str, Any], selector: LabelSelector) -> list[FieldError]:
    """The template's labels matched by the selector (unless it is empty), then its labels and annotations
    as ``ValidatePodTemplateSpec`` checks them (at ``spec.template.labels``, without ``metadata``)."""
    template_meta = mapping_of(mapping_of(spec.get("template")).get("metadata"))
    labels = template_meta.get("labels")
    errs: list[FieldError] = []
    string_labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
    if not selector.empty and not selector.matches(string_labels):
        errs.append(FieldError("invalid", "spec.template.metadata.labels",
                               f"{go_string_map(labels)}: `selector` does not match template `labels`"))
    errs.extend(validate_labels(labels if isinstance(labels, Mapping) else None, "spec.template.labels"))
    annotations = template_meta.get("annotations")
    errs.extend(validate_annotations(annotations if isinstance(annotations, Mapping) else None, "spec.template.annotations"))
    return errs


def collision_count_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``IsDecremented(status.collisionCount)``: once set it may not go down or be unset."""
    new_count = int_of(mapping_of(new.get("status")).get("collisionCount"))
    old_count = int_of(mapping_of(old.get("status")).get("collisionCount"))
    if old_count is not None and (new_count is None or new_count < old_count):
        return [FieldError.invalid("status.collisionCount", new_count or 0, "cannot be decremented")]
    return []


# -- int-or-percent (ValidatePositiveIntOrPercent, getIntOrPercentValue, IsNotMoreThan100Percent) ---------
# apimachinery IsValidPercent: RegexError(percentErrMsg, "[0-9]+%", "1%", "93%"), with its double space.
_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' "
                "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
_ATOI = re.compile(r"[+-]?[0-9]+")


def go_int_or_string(value: Any) -> str:
    """``%#v`` of an ``intstr.IntOrString`` (absent is the zero value, an integer 0)."""
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_string(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{int_of(value) or 0}, StrVal:""}}'


def _percent(value: Any) -> int | None:
    return int(value[:-1]) if isinstance(value, str) and _PERCENT.fullmatch(value) else None


def int_or_percent_value(value: Any) -> int:
    """getIntOrPercentValue: a percentage's number, else ``IntValue()`` (a string through ``Atoi``, 0 when
    it is no number)."""
    if isinstance(value, str):
        percent = _percent(value)
        if percent is not None:
            return percent
        return int(value) if _ATOI.fullmatch(value) else 0
    return int_of(value) or 0


def positive_int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, str):
        return [] if _percent(value) is not None else [FieldError("invalid", path, f"{go_int_or_string(value)}: {_PERCENT_MSG}")]
    return nonnegative(value, path)


def not_more_than_100_percent(value: Any, path: str) -> list[FieldError]:
    percent = _percent(value)
    if percent is None or percent <= 100:
        return []
    return [FieldError("invalid", path, f"{go_int_or_string(value)}: must not be greater than 100%")]


def immutable_selector(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateImmutableField(spec.selector)`` (apps/v1; ``Semantic.DeepEqual``: unset and empty maps
    and lists are equal, a nil selector is not an empty one)."""
    selector, stored = mapping_of(new.get("spec")).get("selector"), mapping_of(old.get("spec")).get("selector")
    if selector == stored or (selector is not None and stored is not None and semantic(selector) == semantic(stored)):
        return []
    if not isinstance(selector, Mapping):
        return [FieldError.invalid("spec.selector", "null", "field is immutable")]
    return [FieldError("invalid", "spec.selector", f"{go_label_selector(selector)}: field is immutable")]
