"""Pod update validation (k/k ``ValidatePodUpdate``) and PersistentVolume node affinity validation
(``validateVolumeNodeAffinity``) never crash on JSON of the wrong shape, and a spec compared with
itself, give or take zero values, is never a forbidden change."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import FieldError
from kubeloop.api._pod_update_validation import validate_pod_update
from kubeloop.api._pv_validation import validate_persistent_volume_node_affinity

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-5, max_value=200) | st.sampled_from(
        ["", " x", "nginx", "In", "Exists", "NoExecute", "g", "k", "zone"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["name", "image", "key", "operator", "value", "effect", "tolerationSeconds", "values", "nodeSelectorTerms",
         "matchExpressions", "matchFields", "requiredDuringSchedulingIgnoredDuringExecution", "nodeAffinity",
         "podAffinity", "required", "zone"]), inner, max_size=4),
    max_leaves=16,
)
specs = st.fixed_dictionaries({}, optional={
    "containers": json_values, "initContainers": json_values, "activeDeadlineSeconds": json_values,
    "tolerations": json_values, "schedulingGates": json_values, "nodeSelector": json_values,
    "affinity": json_values, "terminationGracePeriodSeconds": json_values, "restartPolicy": json_values,
})


@settings(max_examples=150, deadline=None)
@given(new=specs, old=specs, annotations=st.dictionaries(st.sampled_from(["a", "kubernetes.io/config.mirror"]),
                                                          st.sampled_from(["", "x"]), max_size=2))
def test_any_json_gives_field_errors_not_a_crash(new: dict[str, Any], old: dict[str, Any],
                                                 annotations: dict[str, str]) -> None:
    errors = validate_pod_update({"metadata": {"annotations": annotations}, "spec": new}, {"spec": old})
    assert all(isinstance(e, FieldError) and e.field.split(".")[0] in ("spec", "metadata") for e in errors)
    # Zero values a client may add or leave out are no change (Semantic.DeepEqual on the decoded structs).
    padded = {**new, "volumes": [], "hostNetwork": False, "nodeName": None, "securityContext": {}}
    assert all(e.field != "spec" for e in validate_pod_update({"spec": padded}, {"spec": new}))
    pv_errors = validate_persistent_volume_node_affinity({"spec": {"nodeAffinity": new.get("affinity")}},
                                                         old={"spec": {"nodeAffinity": old.get("affinity")}})
    assert all(e.field.startswith("spec.nodeAffinity") for e in pv_errors)
