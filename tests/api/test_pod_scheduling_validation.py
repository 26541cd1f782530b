"""The pod scheduling checks never crash on JSON of the wrong shape (the decoder's job upstream), and
find nothing wrong with a spec that has no scheduling fields."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import FieldError
from kubeloop.api._pod_scheduling_validation import validate_pod_scheduling, validate_pod_template_scheduling

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-5, max_value=200) | st.sampled_from(
        ["", "In", "NotIn", "Exists", "Gt", "NoExecute", "DoNotSchedule", "metadata.name", "a b", "zone"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["key", "operator", "values", "effect", "value", "tolerationSeconds", "weight", "preference",
         "nodeSelectorTerms", "matchExpressions", "matchFields", "matchLabels", "labelSelector", "topologyKey",
         "podAffinityTerm", "namespaces", "matchLabelKeys", "mismatchLabelKeys", "maxSkew", "minDomains",
         "whenUnsatisfiable", "nodeAffinityPolicy", "requiredDuringSchedulingIgnoredDuringExecution",
         "preferredDuringSchedulingIgnoredDuringExecution", "nodeAffinity", "podAffinity", "podAntiAffinity"]),
        inner, max_size=4),
    max_leaves=16,
)
specs = st.fixed_dictionaries({}, optional={
    "nodeSelector": json_values, "affinity": json_values, "topologySpreadConstraints": json_values,
    "tolerations": json_values,
})


@settings(max_examples=100, deadline=None)
@given(spec=specs, old=specs | json_values)
def test_any_json_gives_field_errors_not_a_crash(spec: dict[str, Any], old: Any) -> None:
    errors = validate_pod_scheduling(spec, old_spec=old)
    assert all(isinstance(e, FieldError) and e.field.startswith("spec.") for e in errors)
    workload = {"spec": {"template": {"spec": spec}}}
    assert [e.field for e in validate_pod_template_scheduling(workload, old={"spec": {"template": {"spec": old}}})] == [
        "spec.template." + e.field for e in errors]


def test_a_spec_without_scheduling_fields_is_valid() -> None:
    assert validate_pod_scheduling({"containers": [{"name": "c", "image": "nginx"}]}) == []
    assert validate_pod_scheduling(None) == []
    assert validate_pod_template_scheduling({"spec": "not an object"}) == []


def test_a_selector_of_the_wrong_shape_is_left_to_the_decoder() -> None:
    term = {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": 5}]},
            "matchLabelKeys": [{"not": "a string"}]}
    spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": {}}, "matchLabelKeys": [["x"]]}]}
    # The selector with a number for values is skipped; the keys that are not strings are bad label keys.
    assert [e.field for e in validate_pod_scheduling(spec)] == [
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]",
        "spec.topologySpreadConstraints[0].matchLabelKeys[0]"]
