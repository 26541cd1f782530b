"""openAPIV3Schema validation, pruning and defaulting, with upstream's paths and messages.

Messages: kube-openapi ``pkg/validation/errors`` mapped by apiextensions-apiserver
``kubeOpenAPIResultToFieldErrors``; pruning: ``pkg/apiserver/schema/pruning``; defaulting:
``pkg/apiserver/schema/defaulting``.
"""

from __future__ import annotations

from typing import Any

from kubeloop.api._schema_validate import coerce, prune, validate, validate_structural

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "image": {"type": "string", "minLength": 3, "maxLength": 20, "pattern": "^[a-z]+$"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "format": "int32", "default": 1},
                "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                "port": {"x-kubernetes-int-or-string": True},
                "when": {"type": "string", "format": "date-time"},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "note": {"type": "string", "nullable": True},
                "ratio": {"type": "number"},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "size": {"type": "integer", "default": 5}},
                    },
                },
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate(obj, SCHEMA)]


def test_a_valid_object_has_no_errors() -> None:
    obj = {"spec": {"image": "nginx", "replicas": 3, "mode": "Fast", "port": "http", "tags": ["a"]}}
    assert validate(obj, SCHEMA) == []


def test_wrong_type_reads_like_upstream() -> None:
    assert messages({"spec": {"image": "nginx", "replicas": "three"}}) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'
    ]


def test_type_error_cause_is_field_value_type_invalid() -> None:
    (error,) = validate({"spec": {"image": "nginx", "replicas": "x"}}, SCHEMA)
    assert error.to_cause() == {
        "reason": "FieldValueTypeInvalid",
        "message": 'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "field": "spec.replicas",
    }


def test_missing_required_field_is_required_value() -> None:
    assert messages({"spec": {}}) == ["spec.image: Required value"]


def test_bounds_lengths_and_pattern_each_report_their_own_error() -> None:
    errors = messages({"spec": {"image": "AB", "replicas": 11}})
    assert errors == [
        'spec.image: Invalid value: "AB": spec.image in body should be at least 3 chars long',
        "spec.image: Invalid value: \"AB\": spec.image in body should match '^[a-z]+$'",
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
    ]
    assert messages({"spec": {"image": "abc", "replicas": 0}}) == [
        "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
    ]
    assert messages({"spec": {"image": "a" * 21}}) == ["spec.image: Too long: may not be more than 20 bytes"]


def test_enum_violation_lists_supported_values() -> None:
    assert messages({"spec": {"image": "abc", "mode": "Medium"}}) == [
        'spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow"'
    ]


def test_int_or_string_accepts_both_and_rejects_others() -> None:
    assert messages({"spec": {"image": "abc", "port": 80}}) == []
    assert messages({"spec": {"image": "abc", "port": True}}) == [
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'
    ]


def test_array_limits_and_item_paths() -> None:
    assert messages({"spec": {"image": "abc", "tags": ["a", "b", "c"]}}) == [
        "spec.tags: Too many: 3: must have at most 2 items"
    ]
    assert messages({"spec": {"image": "abc", "tags": []}}) == [
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"
    ]
    assert messages({"spec": {"image": "abc", "tags": ["a", 2]}}) == [
        'spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"'
    ]


def test_list_map_keys_must_be_unique() -> None:
    errors = messages({"spec": {"image": "abc", "items": [{"name": "a"}, {"name": "a"}]}})
    assert errors == ['spec.items[1]: Duplicate value: {"name": "a"}']


def test_additional_properties_validate_every_value() -> None:
    assert messages({"spec": {"image": "abc", "labels": {"a": "x", "b": 1}}}) == [
        'spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer"'
    ]


def test_date_time_format_is_checked() -> None:
    assert messages({"spec": {"image": "abc", "when": "2024-01-01T00:00:00Z"}}) == []
    assert messages({"spec": {"image": "abc", "when": "yesterday"}}) == [
        'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"'
    ]


def test_null_is_accepted_only_where_nullable() -> None:
    assert messages({"spec": {"image": "abc", "note": None}}) == []
    assert messages({"spec": {"image": None}}) == [
        'spec.image: Invalid value: "null": spec.image in body must be of type string: "null"'
    ]


def test_integral_float_counts_as_integer_and_integer_as_number() -> None:
    assert messages({"spec": {"image": "abc", "replicas": 2.0, "ratio": 3}}) == []


def test_embedded_resource_requires_api_version_and_kind() -> None:
    assert messages({"spec": {"image": "abc", "template": {"spec": {}}}}) == [
        "spec.template.apiVersion: Required value: must not be empty",
        "spec.template.kind: Required value: must not be empty",
    ]


def test_pruning_drops_undeclared_fields_and_reports_their_paths() -> None:
    obj = {
        "apiVersion": "x.io/v1",
        "kind": "Foo",
        "metadata": {"name": "a"},
        "spec": {
            "image": "abc",
            "foo": 1,
            "items": [{"name": "a", "bogus": True}],
            "extra": {"anything": {"x": 1}},
        },
        "top": 1,
    }
    unknown = prune(obj, SCHEMA)
    assert unknown == ["spec.foo", "spec.items[0].bogus", "top"]
    assert obj == {
        "apiVersion": "x.io/v1",
        "kind": "Foo",
        "metadata": {"name": "a"},
        "spec": {"image": "abc", "items": [{"name": "a"}], "extra": {"anything": {"x": 1}}},
    }


def test_embedded_resource_keeps_its_type_and_metadata_but_prunes_its_body() -> None:
    obj = {
        "spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"b": 1}}}
    }
    assert prune(obj, SCHEMA) == ["spec.template.spec.b"]
    assert obj["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {},
    }


def test_coerce_defaults_absent_fields_and_works_on_a_copy() -> None:
    original = {"spec": {"image": "abc", "items": [{"name": "a"}], "mode": None}}
    result = coerce(original, SCHEMA)
    assert result.object == {"spec": {"image": "abc", "items": [{"name": "a", "size": 5}], "replicas": 1}}
    assert result.unknown_fields == []
    assert original == {"spec": {"image": "abc", "items": [{"name": "a"}], "mode": None}}


def test_coerce_replaces_non_nullable_null_with_default() -> None:
    result = coerce({"spec": {"image": "abc", "replicas": None}}, SCHEMA)
    assert result.object["spec"]["replicas"] == 1


def test_structural_schema_requires_types_and_an_object_root() -> None:
    path = "spec.versions[0].schema.openAPIV3Schema"
    assert validate_structural({"type": "object", "properties": {"spec": {"type": "object"}}}, path) == []
    errors = [str(e) for e in validate_structural({"type": "array", "items": {"type": "string"}}, path)]
    assert errors == [f'{path}.type: Invalid value: "array": must be object at the root']
    errors = [str(e) for e in validate_structural({"type": "object", "properties": {"spec": {}}}, path)]
    assert errors == [
        f"{path}.properties[spec].type: Required value: must not be empty for specified object fields"
    ]


def test_structural_schema_rejects_properties_with_additional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "string"},
    }
    (error,) = validate_structural(schema, "s")
    assert error.field == "s.additionalProperties"
