"""PersistentVolume and claim validation (k/k ``ValidatePersistentVolumeSpec``, ``ValidatePersistentVolumeUpdate``,
``ValidatePersistentVolumeClaimSpec``, ``ValidatePersistentVolumeClaimUpdate``, release 1.32): rules the
HTTP tests do not reach, and JSON of the wrong shape gives field errors, never a crash."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import FieldError
from kubeloop.api._pv_source_validation import volume_source_errors
from kubeloop.api._pv_validation import (
    semantic,
    validate_persistent_volume,
    validate_persistent_volume_update,
)
from kubeloop.api._pvc_validation import (
    validate_persistent_volume_claim,
    validate_persistent_volume_claim_status_update,
    validate_persistent_volume_claim_update,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-5, max_value=300) | st.sampled_from(
        ["", "/", "/a/..", "1Gi", "-1", "0", "iqn.2001-04.com.x:y", "ReadWriteOncePod", "Block", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["path", "server", "driver", "volumeHandle", "iqn", "lun", "targetWWNs", "wwids", "storage", "required",
         "nodeSelectorTerms", "matchExpressions", "key", "operator", "values", "name", "namespace", "kind",
         "apiGroup", "requests", "options", "nodePublishSecretRef", "type", "monitors", "registry"]), inner, max_size=4),
    max_leaves=16,
)
pv_specs = st.fixed_dictionaries({}, optional={
    key: json_values for key in ("accessModes", "capacity", "persistentVolumeReclaimPolicy", "nodeAffinity", "hostPath",
                                 "local", "nfs", "csi", "iscsi", "fc", "flexVolume", "quobyte", "azureDisk",
                                 "storageClassName", "volumeMode", "volumeAttributesClassName")})
pvc_specs = st.fixed_dictionaries({}, optional={
    key: json_values for key in ("accessModes", "selector", "resources", "storageClassName", "volumeMode",
                                 "dataSource", "dataSourceRef", "volumeName", "volumeAttributesClassName")})


@settings(max_examples=100, deadline=None)
@given(new=pv_specs, old=pv_specs, status=json_values)
def test_any_json_gives_field_errors_not_a_crash(new: dict[str, Any], old: dict[str, Any], status: Any) -> None:
    for errors in (validate_persistent_volume({"metadata": {"name": "v"}, "spec": new}),
                   validate_persistent_volume_update({"spec": new}, {"spec": old}),
                   validate_persistent_volume_claim({"spec": new}),
                   validate_persistent_volume_claim_update({"spec": new, "status": status}, {"spec": old}),
                   validate_persistent_volume_claim_status_update({"spec": new, "status": status})):
        assert all(isinstance(e, FieldError) for e in errors)
    # A volume compared with itself is no change: only the create checks, twice.
    same = validate_persistent_volume_update({"spec": new}, {"spec": new})
    assert [e for e in same if e.field in ("spec.persistentvolumesource", "volumeMode", "nodeAffinity")] == []


@settings(max_examples=60, deadline=None)
@given(spec=pvc_specs)
def test_a_claim_compared_with_itself_is_no_change(spec: dict[str, Any]) -> None:
    errors = validate_persistent_volume_claim_update({"spec": spec}, {"spec": spec})
    assert [e for e in errors if (e.type == "forbidden" and e.field == "spec") or e.field == "volumeMode"] == []


def test_zero_values_are_absent_except_in_pointer_fields() -> None:
    pointers = frozenset({("fc", "lun")})
    assert semantic({"iscsi": {"lun": 0, "readOnly": False, "fsType": ""}}, pointers) == {}
    assert semantic({"fc": {"lun": 0}}, pointers) == {"fc": {"lun": 0}}


def test_flex_volume_is_counted_without_the_one_source_check() -> None:
    errors, local = volume_source_errors({"hostPath": {"path": "/a"}, "flexVolume": {"options": {"a.k8s.io/x": "1"}}}, "v")
    assert not local
    assert [(e.type, e.field) for e in errors] == [
        ("required", "spec.flexVolume.driver"), ("invalid", "spec.flexVolume.options[a.k8s.io/x]")]
    errors, _ = volume_source_errors({"flexVolume": {"driver": "d"}, "local": {"path": "/a"}}, "v")
    assert [(e.type, e.field, e.detail) for e in errors] == [
        ("forbidden", "spec.local", "may not specify more than 1 volume type")]


def test_iscsi_names_and_the_portal_length() -> None:
    spec = {"iscsi": {"targetPortal": "p" * 60, "iqn": "eui.0123456789ABCDEF", "initiatorName": "naa.short"}}
    errors, _ = volume_source_errors(spec, "volume-name")
    assert [(e.field, str(e)) for e in errors] == [
        ("spec.iscsi.targetportal", 'spec.iscsi.targetportal: Invalid value: "' + "p" * 60 + '": Total length of '
         "<volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."),
        ("spec.iscsi.initiatorname", 'spec.iscsi.initiatorname: Invalid value: "naa.short": must be valid format')]


def test_quobyte_and_cephfs_use_upstreams_paths() -> None:
    errors, _ = volume_source_errors({"quobyte": {"registry": "host:7861,bad"}, "cephfs": {"monitors": ["m"]}}, "v")
    assert [str(e) for e in errors] == [
        'spec.quobyte.registry: Invalid value: "host:7861,bad": must be a host:port pair or multiple pairs separated by commas',
        "spec.quobyte.volume: Required value",
        "spec.cephFS: Forbidden: may not specify more than 1 volume type"]


def test_a_stored_volume_attributes_class_is_checked_and_may_not_change() -> None:
    old = {"spec": {"volumeAttributesClassName": "gold", "csi": {"driver": "d", "volumeHandle": "h"}}}
    new = {"spec": {"volumeAttributesClassName": "", "csi": {"driver": "d", "volumeHandle": "h"}}}
    found = [(e.type, e.field, e.detail) for e in validate_persistent_volume_update(new, old)
             if e.field.endswith("volumeAttributesClassName")]
    assert found == [
        ("required", "spec.volumeAttributesClassName", "an empty string is disallowed"),
        ("required", "spec.volumeAttributesClassName", "an empty string is disallowed"),
        ("forbidden", "spec.volumeAttributesClassName", "update is forbidden when the VolumeAttributesClass feature gate is disabled")]
    # On create, with the gate off (1.32's default), the class name is not looked at.
    assert [e for e in validate_persistent_volume({"spec": {"volumeAttributesClassName": ""}})
            if "volumeAttributesClassName" in e.field] == []


def test_a_claim_may_take_the_class_its_beta_annotation_names() -> None:
    old = {"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "gold"}},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    new = {**old, "spec": {**old["spec"], "storageClassName": "gold"}}
    assert validate_persistent_volume_claim_update(new, old) == []
    other = {**old, "spec": {**old["spec"], "storageClassName": "silver"}}
    assert [e.field for e in validate_persistent_volume_claim_update(other, old)] == ["spec"]
