"""Server-side apply and managedFields follow structured-merge-diff and apimachinery managedfields."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeloop.api import (
    BadRequest,
    Conflict,
    builtin_schema,
    decode_managed_fields,
    default_field_manager,
    fields_v1,
    parse_fields_v1,
    path_string,
    record_update,
    server_side_apply,
    to_field_set,
)

CM = builtin_schema("", "v1", "ConfigMap")
DEPLOY = builtin_schema("apps", "v1", "Deployment")
T0, T1, T2 = "2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z"


def _cm(data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta}}
    if data is not None:
        obj["data"] = data
    return obj


def _apply_cm(live: dict[str, Any] | None, config: dict[str, Any], manager: str, *, force: bool = False, now: str = T0) -> dict[str, Any]:
    return server_side_apply(live, config, manager=manager, force=force, schema=CM, now=now, api_version="v1")


def _update_cm(old: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str = T1) -> dict[str, Any]:
    return record_update(old, new, manager=manager, now=now, api_version="v1", schema=CM)


def _owners(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"].get("managedFields", [])}


def _deployment(containers: list[dict[str, Any]], replicas: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": containers}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


def _apply_deploy(live: dict[str, Any] | None, config: dict[str, Any], manager: str, *, force: bool = False) -> dict[str, Any]:
    return server_side_apply(live, config, manager=manager, force=force, schema=DEPLOY, now=T0, api_version="apps/v1")


def test_apply_on_an_absent_object_creates_it_with_one_apply_entry() -> None:
    obj = _apply_cm(None, _cm({"a": "1"}, labels={"x": "y"}), "kubectl")
    assert obj["data"] == {"a": "1"}
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:x": {}}}},
        }
    ]


def test_changing_a_field_another_manager_owns_is_a_conflict_with_upstream_text() -> None:
    obj = _apply_cm(None, _cm({"a": "1"}), "applier")
    obj = _update_cm(obj, {**obj, "data": {"a": "2"}}, "mgr")
    with pytest.raises(Conflict) as caught:
        _apply_cm(obj, _cm({"a": "3"}), "applier")
    error = caught.value
    assert error.status_code == 409
    assert error.message == 'Apply failed with 1 conflict: conflict with "mgr" using v1: .data.a'
    assert error.causes == [{"reason": "FieldManagerConflict", "message": 'conflict with "mgr" using v1', "field": ".data.a"}]


def test_several_conflicts_are_grouped_by_sorted_manager() -> None:
    obj = _apply_cm(None, _cm({"a": "1", "b": "1", "c": "1"}), "zeta")
    obj = _apply_cm(obj, _cm({"a": "1", "b": "1"}), "alpha")
    with pytest.raises(Conflict) as caught:
        _apply_cm(obj, _cm({"a": "2", "b": "2", "c": "2"}), "new")
    assert caught.value.message == (
        'Apply failed with 5 conflicts: conflicts with "alpha":\n- .data.a\n- .data.b\n'
        'conflicts with "zeta":\n- .data.a\n- .data.b\n- .data.c'
    )


def test_force_takes_ownership_and_removes_it_from_the_other_manager() -> None:
    obj = _apply_cm(None, _cm({"a": "1", "b": "1"}), "first")
    obj = _apply_cm(obj, _cm({"a": "2"}), "second", force=True, now=T1)
    assert obj["data"] == {"a": "2", "b": "1"}
    owners = _owners(obj)
    assert owners["first"]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert owners["second"]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_applying_the_same_value_shares_ownership_without_conflict() -> None:
    obj = _apply_cm(None, _cm({"a": "1"}), "first")
    obj = _apply_cm(obj, _cm({"a": "1"}), "second")
    owners = _owners(obj)
    assert owners["first"]["fieldsV1"] == owners["second"]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_a_field_the_applier_stops_applying_is_removed_when_nobody_else_owns_it() -> None:
    obj = _apply_cm(None, _cm({"a": "1", "b": "2"}, labels={"x": "1"}), "kubectl")
    obj = _apply_cm(obj, _cm({"a": "1"}), "kubectl", now=T1)
    assert obj["data"] == {"a": "1"}
    assert "labels" not in obj["metadata"]
    assert _owners(obj)["kubectl"]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_a_field_the_applier_stops_applying_stays_when_another_manager_shares_it() -> None:
    obj = _apply_cm(None, _cm({"a": "1", "b": "2"}), "one")
    obj = _apply_cm(obj, _cm({"b": "2"}), "two")
    obj = _apply_cm(obj, _cm({"a": "1"}), "one", now=T1)
    assert obj["data"] == {"a": "1", "b": "2"}
    assert _owners(obj)["two"]["fieldsV1"] == {"f:data": {"f:b": {}}}


def test_reapplying_the_same_config_changes_nothing() -> None:
    obj = _apply_cm(None, _cm({"a": "1"}), "kubectl")
    again = _apply_cm(obj, _cm({"a": "1"}), "kubectl", now=T2)
    assert again == obj


def test_update_takes_changed_fields_from_others_and_keeps_the_rest() -> None:
    obj = _apply_cm(None, _cm({"a": "1", "b": "1"}), "kubectl")
    updated = _update_cm(obj, {**obj, "data": {"a": "1", "b": "9", "c": "3"}}, "editor")
    owners = _owners(updated)
    assert owners["kubectl"]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert owners["editor"] == {
        "manager": "editor",
        "operation": "Update",
        "apiVersion": "v1",
        "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:b": {}, "f:c": {}}},
    }
    # Apply entries sort before Update entries.
    assert [e["operation"] for e in updated["metadata"]["managedFields"]] == ["Apply", "Update"]


def test_update_that_adds_a_map_owns_the_map_itself() -> None:
    created = _update_cm(None, _cm({"a": "1"}, annotations={"k": "v"}), "kubectl-create", now=T0)
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:data": {".": {}, "f:a": {}},
        "f:metadata": {"f:annotations": {".": {}, "f:k": {}}},
    }


def test_update_removing_a_field_drops_it_from_its_owner() -> None:
    obj = _apply_cm(None, _cm({"a": "1", "b": "1"}), "kubectl")
    updated = _update_cm(obj, {**obj, "data": {"a": "1"}}, "editor")
    assert _owners(updated)["kubectl"]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert "editor" not in _owners(updated)


def test_clearing_managed_fields_with_one_empty_entry() -> None:
    obj = _apply_cm(None, _cm({"a": "1"}), "kubectl")
    cleared = _update_cm(obj, {**obj, "metadata": {**obj["metadata"], "managedFields": [{}]}}, "editor")
    assert "managedFields" not in cleared["metadata"]


def test_apply_to_an_object_without_managed_fields_conflicts_with_before_first_apply() -> None:
    with pytest.raises(Conflict, match=r'conflict with "before-first-apply" using v1: \.data\.a'):
        _apply_cm(_cm({"a": "1"}), _cm({"a": "2"}), "kubectl")


def test_managed_fields_in_an_apply_body_are_rejected() -> None:
    with pytest.raises(BadRequest, match=r"metadata\.managedFields must be nil"):
        _apply_cm(None, _cm({"a": "1"}, managedFields=[]), "kubectl")


def test_containers_merge_by_name_and_are_owned_per_item() -> None:
    obj = _apply_deploy(None, _deployment([{"name": "app", "image": "app:1"}], replicas=2), "kubectl")
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}}},
            },
        }
    }
    obj = _apply_deploy(obj, _deployment([{"name": "sidecar", "image": "side:1"}]), "other")
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app", "sidecar"]
    with pytest.raises(Conflict) as caught:
        _apply_deploy(obj, _deployment([{"name": "app", "image": "app:2"}]), "other")
    assert caught.value.causes[0]["field"] == '.spec.template.spec.containers[name="app"].image'


def test_atomic_selector_is_one_leaf_and_replaced_whole() -> None:
    config = _deployment([{"name": "app", "image": "app:1"}])
    obj = _apply_deploy(None, config, "kubectl")
    config["spec"]["selector"] = {"matchLabels": {"tier": "x"}}
    obj = _apply_deploy(obj, config, "kubectl")
    assert obj["spec"]["selector"] == {"matchLabels": {"tier": "x"}}


def test_atomic_lists_are_replaced_not_merged() -> None:
    config = _deployment([{"name": "app", "image": "app:1", "args": ["a", "b"]}])
    obj = _apply_deploy(None, config, "kubectl")
    config["spec"]["template"]["spec"]["containers"][0]["args"] = ["c"]
    obj = _apply_deploy(obj, config, "kubectl")
    assert obj["spec"]["template"]["spec"]["containers"][0]["args"] == ["c"]


def test_status_is_not_owned_through_the_main_resource() -> None:
    config = {**_deployment([{"name": "app", "image": "app:1"}]), "status": {"replicas": 3}}
    obj = _apply_deploy(None, config, "kubectl")
    assert "f:status" not in obj["metadata"]["managedFields"][0]["fieldsV1"]


def test_finalizers_are_a_set_owned_per_value() -> None:
    obj = _apply_cm(None, _cm(finalizers=["example.com/a"]), "one")
    obj = _apply_cm(obj, _cm(finalizers=["example.com/b"]), "two")
    assert sorted(obj["metadata"]["finalizers"]) == ["example.com/a", "example.com/b"]
    assert _owners(obj)["two"]["fieldsV1"] == {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}}


def test_without_a_schema_lists_are_atomic_and_maps_granular() -> None:
    obj = server_side_apply(
        None,
        {"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"}, "spec": {"l": [1, 2], "m": {"a": 1}}},
        manager="m", force=False, schema=None, now=T0, api_version="x/v1",
    )
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:spec": {".": {}, "f:l": {}, "f:m": {".": {}, "f:a": {}}}
    }


def test_more_than_ten_update_managers_fold_into_ancient_changes() -> None:
    obj = _cm({})
    for index in range(12):
        new = {**obj, "data": {**obj.get("data", {}), f"k{index}": "v"}}
        obj = record_update(obj, new, manager=f"m{index:02}", now=f"2024-01-01T00:00:{index:02}Z", api_version="v1", schema=CM)
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(managers) == 10
    assert "ancient-changes" in managers and "m00" not in managers and "m11" in managers


def test_default_field_manager_is_the_user_agent_prefix() -> None:
    assert default_field_manager("kubectl/v1.32.5 (linux/amd64) kubernetes/abc") == "kubectl"
    assert default_field_manager("OpenAPI-Generator/30.1.0/python") == "OpenAPI-Generator"
    assert default_field_manager("x" * 200) == "x" * 128


def test_path_strings_match_smd() -> None:
    assert path_string(("f:spec", "f:replicas")) == ".spec.replicas"
    assert path_string(("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')) == '.ports[containerPort=80,protocol="TCP"]'
    assert path_string(("f:finalizers", 'v:"a"')) == '.finalizers[="a"]'


def test_decoding_garbage_managed_fields_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        decode_managed_fields([{"manager": "m", "fieldsV1": {"bogus": {}}}])


_NAMES = st.text(alphabet="abcxyz-.", min_size=1, max_size=5)
_ELEMENTS = st.one_of(
    _NAMES.map(lambda n: "f:" + n),
    _NAMES.map(lambda n: "k:" + json.dumps({"name": n}, separators=(",", ":"))),
    _NAMES.map(lambda n: "v:" + json.dumps(n)),
    st.integers(min_value=0, max_value=9).map(lambda i: f"i:{i}"),
)


@given(st.frozensets(st.lists(_ELEMENTS, min_size=1, max_size=4).map(tuple), max_size=12))
def test_fields_v1_round_trips(fields: frozenset[tuple[str, ...]]) -> None:
    encoded = fields_v1(fields)
    assert parse_fields_v1(json.loads(json.dumps(encoded))) == fields


def test_fields_v1_orders_keys_with_dot_first() -> None:
    encoded = fields_v1({("f:a",), ("f:a", "f:b"), ("f:a", 'k:{"name":"x"}'), ("f:a", "i:0"), ("f:a", 'v:"s"')})
    assert list(encoded["f:a"]) == [".", "f:b", 'k:{"name":"x"}', 'v:"s"', "i:0"]


def test_to_field_set_of_a_config_map() -> None:
    assert to_field_set(_cm({"a": "1"}), CM) == {
        ("f:apiVersion",), ("f:kind",), ("f:metadata", "f:name"), ("f:data", "f:a"),
    }


def test_a_container_the_applier_stops_applying_is_removed() -> None:
    obj = _apply_deploy(None, _deployment([{"name": "app", "image": "a"}, {"name": "extra", "image": "e"}]), "kubectl")
    obj = _apply_deploy(obj, _deployment([{"name": "app", "image": "a"}]), "kubectl")
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["app"]


def test_a_dropped_container_keeps_what_another_manager_owns_and_its_key() -> None:
    obj = _apply_deploy(None, _deployment([{"name": "app", "image": "a"}, {"name": "extra", "image": "e"}]), "kubectl")
    edited = json.loads(json.dumps(obj))
    edited["spec"]["template"]["spec"]["containers"][1]["args"] = ["--x"]
    obj = record_update(obj, edited, manager="editor", now=T1, api_version="apps/v1", schema=DEPLOY)
    obj = _apply_deploy(obj, _deployment([{"name": "app", "image": "a"}]), "kubectl")
    assert obj["spec"]["template"]["spec"]["containers"][1] == {"name": "extra", "args": ["--x"]}


def test_a_typed_apply_keeps_an_applied_null_map_entry_and_an_untyped_one_drops_it() -> None:
    """smd ``typed/merge.go``: ``ruleKeepRHS`` takes the applied value, ``null`` included, so the merged object
    keeps the key; a built-in kind's conversion then makes it the element's zero value (the caller's part).
    A struct field's null is still dropped (the conversion leaves an omitempty field out)."""
    live = _apply_cm(None, _cm({"a": "1", "b": "2"}), "first")
    config = _cm({"a": None, "c": None}, labels={"x": None})
    typed = server_side_apply(live, config, manager="second", force=True, schema=CM, now=T1, api_version="v1",
                              typed=True)
    assert typed["data"] == {"a": None, "b": "2", "c": None}
    assert typed["metadata"]["labels"] == {"x": None}
    assert live["data"] == {"a": "1", "b": "2"} and "labels" not in live["metadata"], "live is not changed"
    untyped = server_side_apply(live, config, manager="second", force=True, schema=CM, now=T1, api_version="v1")
    assert untyped["data"] == {"b": "2"} and untyped["metadata"]["labels"] == {}
    owned = {e["manager"]: e["fieldsV1"] for e in typed["metadata"]["managedFields"]}
    assert owned["second"] == {"f:data": {"f:a": {}, "f:c": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}
