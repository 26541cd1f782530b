"""Validation of DaemonSets, as upstream's daemonset strategy runs it (release 1.32).

Sources: k/k ``pkg/apis/apps/validation/validation.go`` (``ValidateDaemonSet``, ``ValidateDaemonSetSpec``,
``ValidateDaemonSetUpdateStrategy``, ``ValidateRollingUpdateDaemonSet``, ``ValidateDaemonSetUpdate``,
``ValidateDaemonSetStatusUpdate``) and ``pkg/registry/apps/daemonset/strategy.go``. ObjectMeta is
checked by the write path; everything else is here, in upstream's order.

:func:`validate_daemonset` is ``ValidateDaemonSetSpec``: the selector valid (``ValidateLabelSelector``;
a missing one is not refused as such: it selects nothing, so the template's labels do not match it),
the template's labels matched by it, a selector that is set but empty refused; then
``ValidatePodTemplateSpec`` (the template's labels, annotations and pod spec), ``restartPolicy``
Always and no ``activeDeadlineSeconds``; ``minReadySeconds`` not negative; the update strategy
(``OnDelete``; ``RollingUpdate`` with a ``rollingUpdate`` whose ``maxUnavailable`` and ``maxSurge`` are
each a non-negative integer or a percentage of at most 100%, exactly one of them non-zero; any other
type unsupported); ``revisionHistoryLimit`` not negative.

:func:`validate_daemonset_update` is the strategy's ``ValidateUpdate`` for apps/v1:
``ValidateDaemonSet`` and ``ValidateDaemonSetUpdate`` each run the spec checks (a bad spec's causes
come twice; the message names each once), then the immutable selector. ``templateGeneration`` is
kept by the strategy (the ``deprecated.daemonset.template.generation`` annotation in apps/v1), so
its update rules never fire.

:func:`validate_daemonset_status_update` is ``ValidateDaemonSetStatusUpdate``: every count not
negative and ``collisionCount`` never decremented. Pure functions; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._errors import FieldError
from kubeloop.api._pod_fields import go_text, label_selector_errors, mapping_of
from kubeloop.api._pod_spec_validation import validate_pod_template
from kubeloop.api._validation import validate_annotations, validate_labels
from kubeloop.api._workload_validation import (
    collision_count_errors,
    go_int_or_string,
    go_label_selector,
    go_string,
    go_string_map,
    immutable_selector,
    int_or_percent_value,
    nonnegative,
    not_more_than_100_percent,
    parsed_selector,
    positive_int_or_percent,
)

__all__ = ["validate_daemonset", "validate_daemonset_status_update", "validate_daemonset_update"]

_STATUS_COUNTS = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                  "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable")


def _rolling_update_errors(rolling: Mapping[str, Any]) -> list[FieldError]:
    """ValidateRollingUpdateDaemonSet."""
    path = "spec.updateStrategy.rollingUpdate"
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = [*positive_int_or_percent(unavailable, f"{path}.maxUnavailable"),
            *positive_int_or_percent(surge, f"{path}.maxSurge"),
            *not_more_than_100_percent(unavailable, f"{path}.maxUnavailable"),
            *not_more_than_100_percent(surge, f"{path}.maxSurge")]
    has_unavailable, has_surge = int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errs.append(FieldError("invalid", f"{path}.maxSurge",
                               f"{go_int_or_string(surge)}: may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        errs.append(FieldError.required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return errs


def _update_strategy_errors(strategy: Mapping[str, Any]) -> list[FieldError]:
    """ValidateDaemonSetUpdateStrategy."""
    kind = go_text(strategy.get("type"))
    rolling = strategy.get("rollingUpdate")
    if kind == "OnDelete":
        return []
    if kind == "RollingUpdate":
        if not isinstance(rolling, Mapping):
            return [FieldError.required("spec.updateStrategy.rollingUpdate")]
        return _rolling_update_errors(rolling)
    pointer = "(*apps.RollingUpdateDaemonSet)" + ("(nil)" if rolling is None else "(0xc000000000)")
    return [FieldError("not_supported", "spec.updateStrategy",
                       f"apps.DaemonSetUpdateStrategy{{Type:{go_string(kind)}, RollingUpdate:{pointer}}}: "
                       'supported values: "RollingUpdate", "OnDelete"')]


def _selector_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """The selector's rules: valid, matching the template's labels, not empty once set."""
    selector = spec.get("selector")
    errs: list[FieldError] = []
    if isinstance(selector, Mapping):
        errs.extend(label_selector_errors(selector, "spec.selector", allow_invalid_values=False))
    parsed = parsed_selector(spec)
    labels = mapping_of(mapping_of(spec.get("template")).get("metadata")).get("labels")
    string_labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
    if parsed is not None and not parsed.matches(string_labels):
        errs.append(FieldError("invalid", "spec.template.metadata.labels",
                               f"{go_string_map(labels)}: `selector` does not match template `labels`"))
    if isinstance(selector, Mapping) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errs.append(FieldError("invalid", "spec.selector",
                               f"{go_label_selector(selector)}: empty selector is invalid for daemonset"))
    return errs


def validate_daemonset(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """``ValidateDaemonSetSpec`` (``old``, on update, relaxes the pod template's rules as upstream's options do)."""
    spec = mapping_of(obj.get("spec"))
    errs = _selector_errors(spec)
    template_meta = mapping_of(mapping_of(spec.get("template")).get("metadata"))
    labels, annotations = template_meta.get("labels"), template_meta.get("annotations")
    errs.extend(validate_labels(labels if isinstance(labels, Mapping) else None, "spec.template.labels"))
    errs.extend(validate_annotations(annotations if isinstance(annotations, Mapping) else None,
                                     "spec.template.annotations"))
    errs.extend(validate_pod_template(obj, kind="DaemonSet", old=old))
    errs.extend(nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"))
    errs.extend(_update_strategy_errors(mapping_of(spec.get("updateStrategy"))))
    errs.extend(nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit"))
    return errs


def validate_daemonset_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """The DaemonSet strategy's ``ValidateUpdate`` (the spec twice, then the immutable selector)."""
    spec_errors = validate_daemonset(new, old)
    return [*spec_errors, *spec_errors, *immutable_selector(new, old)]


def validate_daemonset_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateDaemonSetStatusUpdate``: ``validateDaemonSetStatus``, then the collision count."""
    status = mapping_of(new.get("status"))
    errs = [e for key in (*_STATUS_COUNTS, "collisionCount") for e in nonnegative(status.get(key), f"status.{key}")]
    return [*errs, *collision_count_errors(new, old)]
