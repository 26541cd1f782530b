"""The validation fast paths (pattern first, remembered valid values, the one-pass type test) give
exactly what the straightforward checks give: the same messages in the same order, or none."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api import (
    FieldError,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    type_errors,
    validate_annotations,
    validate_finalizers,
    validate_labels,
    validate_object_meta,
)
from kubeloop.api import _validation as v

# -- the straightforward checks, as validation.go writes them (length first, then the pattern) --------


def _blen(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _ref_label(value: str) -> list[str]:
    errs = [v._max_len_error(63)] if _blen(value) > 63 else []
    if not re.fullmatch(v._DNS1123_LABEL_FMT, value):
        if re.fullmatch(v._DNS1123_SUBDOMAIN_FMT, value):
            errs.append("must not contain dots")
        else:
            errs.append(v._regex_error(v._DNS1123_LABEL_MSG, v._DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def _ref_subdomain(value: str) -> list[str]:
    errs = [v._max_len_error(253)] if _blen(value) > 253 else []
    if not re.fullmatch(v._DNS1123_SUBDOMAIN_FMT, value):
        errs.append(v._regex_error(v._DNS1123_SUBDOMAIN_MSG, v._DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def _ref_1035(value: str) -> list[str]:
    errs = [v._max_len_error(63)] if _blen(value) > 63 else []
    if not re.fullmatch(v._DNS1035_LABEL_FMT, value):
        errs.append(v._regex_error(v._DNS1035_LABEL_MSG, v._DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def _ref_qualified(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in _ref_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + v._regex_error(v._QUALIFIED_NAME_MSG, v._QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _blen(name) > 63:
        errs.append("name part " + v._max_len_error(63))
    if not re.fullmatch(v._QUALIFIED_NAME_FMT, name):
        errs.append("name part " + v._regex_error(v._QUALIFIED_NAME_MSG, v._QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc"))
    return errs


def _ref_label_value(value: str) -> list[str]:
    errs = [v._max_len_error(63)] if _blen(value) > 63 else []
    if not re.fullmatch(v._LABEL_VALUE_FMT, value):
        errs.append(v._regex_error(v._LABEL_VALUE_MSG, v._LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


# Text near the boundaries: the alphabet of the patterns, the separators, upper case, non-ASCII,
# and lengths around 63 and 253.
_PIECE = st.sampled_from(["a", "z", "0", "9", "-", ".", "_", "/", "A", "é", " ", "\n", "x" * 30, "y" * 62])
_TEXT = st.lists(_PIECE, max_size=12).map("".join) | st.sampled_from(
    ["", "a" * 63, "a" * 64, "a." * 126 + "a", "a." * 127, "example.com/" + "n" * 63, "example.com/" + "n" * 64,
     "é" * 32, "a/b/c", "/a", "a/", "app.kubernetes.io/name", "kubernetes.io/metadata.name"])


@settings(max_examples=600, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=4))
def test_name_and_label_checks_give_the_straightforward_answers(values: list[str]) -> None:
    for _ in range(2):  # the second round answers from the remembered valid values
        for value in values:
            assert is_dns1123_label(value) == _ref_label(value)
            assert is_dns1123_subdomain(value) == _ref_subdomain(value)
            assert is_dns1035_label(value) == _ref_1035(value)
            assert is_qualified_name(value) == _ref_qualified(value)
            assert is_valid_label_value(value) == _ref_label_value(value)


def test_remembered_values_stay_bounded() -> None:
    for i in range(3 * v._REMEMBERED):
        assert is_valid_label_value(f"v{i}") == []
    assert len(v._valid_label_values) <= v._REMEMBERED


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_TEXT, _TEXT | st.integers(0, 3), max_size=4), st.lists(_TEXT, max_size=3))
def test_labels_annotations_and_finalizers_report_what_the_checks_report(labels: dict[str, Any],
                                                                          finalizers: list[str]) -> None:
    expected = []
    for key in sorted(labels):
        expected += [FieldError.invalid("metadata.labels", key, m) for m in _ref_qualified(key)]
        expected += [FieldError.invalid("metadata.labels", labels[key], m) for m in _ref_label_value(str(labels[key]))]
    assert validate_labels(labels) == expected
    expected = [FieldError.invalid("metadata.annotations", key, m) for key in sorted(labels)
                for m in _ref_qualified(key.lower())]
    assert validate_annotations(labels) == expected
    expected = [FieldError.invalid("metadata.finalizers", f, m) for f in finalizers for m in _ref_qualified(f)]
    assert validate_finalizers(finalizers) == expected


_SCALAR = st.none() | st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=False) | st.sampled_from(["", "a"])
_VALUE = _SCALAR | st.lists(_SCALAR, max_size=2) | st.dictionaries(st.sampled_from(["a", "b"]), _SCALAR, max_size=2)
_REF = st.fixed_dictionaries({}, optional={k: _VALUE for k in ("apiVersion", "kind", "name", "uid", "controller",
                                                                  "blockOwnerDeletion", "other")})
_META_KEYS = [*v._META_STRINGS, *v._META_INTEGERS, "labels", "annotations", "finalizers", "ownerReferences",
              "managedFields", "other"]
_META = st.dictionaries(st.sampled_from(_META_KEYS),
                        _VALUE | st.lists(_REF, max_size=2) | st.dictionaries(st.sampled_from(["k"]), _VALUE),
                        max_size=6)
_OBJECT = st.fixed_dictionaries({}, optional={"apiVersion": _VALUE, "kind": _VALUE, "metadata": _META | _VALUE})


@settings(max_examples=600, deadline=None)
@given(_OBJECT)
def test_the_one_pass_type_test_only_passes_objects_without_type_errors(obj: dict[str, Any]) -> None:
    full = v._all_type_errors(obj)
    if v.well_typed(obj):
        assert full == []
    assert type_errors(obj) == full


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({"name": _TEXT, "namespace": _TEXT}, optional={"generateName": _TEXT}))
def test_object_meta_reports_every_name_problem(meta: dict[str, Any]) -> None:
    expected = []
    if meta.get("generateName"):
        prefix = meta["generateName"]
        masked = prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
        expected += [FieldError.invalid("metadata.generateName", prefix, m) for m in _ref_subdomain(masked)]
    if not meta["name"]:
        expected.append(FieldError.required("metadata.name", "name or generateName is required"))
    else:
        expected += [FieldError.invalid("metadata.name", meta["name"], m) for m in _ref_subdomain(meta["name"])]
    if not meta["namespace"]:
        expected.append(FieldError.required("metadata.namespace"))
    else:
        expected += [FieldError.invalid("metadata.namespace", meta["namespace"], m) for m in _ref_label(meta["namespace"])]
    assert validate_object_meta(meta, namespaced=True) == expected


_NAME_PIECE = st.sampled_from(["a", "z", "0", "9", "-", "--", ".", "_", "A", "Z", "é", "É", "ǅ", "ß", "ª", " ", "\n"])


@settings(max_examples=600, deadline=None)
@given(st.lists(_NAME_PIECE, min_size=1, max_size=10).map("".join) | _TEXT)
def test_the_plain_name_test_only_passes_rfc1123_labels(name: str) -> None:
    # validate_object_meta skips the pattern for a name of at most 253 characters _plain_label accepts:
    # it must be a valid subdomain (the length is the caller's test, as there).
    if len(name) <= 253 and v._plain_label(name):
        assert re.fullmatch(v._DNS1123_LABEL_FMT, name)
        assert _ref_subdomain(name) == []


def test_a_plain_name_longer_than_a_subdomain_is_still_refused() -> None:
    name = "a" * 254
    assert v._plain_label(name)  # the characters pass; the length is validate_object_meta's test
    assert validate_object_meta({"name": name}, namespaced=False) == [
        FieldError.invalid("metadata.name", name, m) for m in _ref_subdomain(name)
    ]


def test_common_names_take_the_plain_name_test() -> None:
    for name in ("c0", "web", "web-7d9f8c-x2x4z", "a--b", "0a", "kube-root-ca"):
        assert v._plain_label(name)
    for name in ("", "-a", "a-", "A", "a.b", "a_b", "é", "123", "a b"):
        assert not v._plain_label(name)  # the pattern decides ("123" and "a.b" are valid, the others not)


_OTHER_META = st.fixed_dictionaries(
    {"name": _TEXT},
    optional={"namespace": _TEXT, "uid": _TEXT, "creationTimestamp": _TEXT, "generateName": _TEXT,
              "generation": st.integers(-2, 2) | _SCALAR, "labels": st.dictionaries(_TEXT, _TEXT, max_size=2),
              "annotations": st.dictionaries(_TEXT, _TEXT, max_size=2), "finalizers": st.lists(_TEXT, max_size=2),
              "ownerReferences": st.lists(st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Pod"),
                                                                 "name": _TEXT, "uid": _TEXT}), max_size=2)},
)


@settings(max_examples=400, deadline=None)
@given(_OTHER_META, st.booleans())
def test_object_meta_without_the_other_fields_skips_them_with_the_same_answer(meta: dict[str, Any],
                                                                             namespaced: bool) -> None:
    # An empty field of each kind the skip tests for adds no error, and forces the path that looks at all
    # of them: the answers must be the same whether the skip is taken or not.
    forced = {"labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": [], **meta}
    assert validate_object_meta(meta, namespaced=namespaced) == validate_object_meta(forced, namespaced=namespaced)


# -- ObjectMeta on update: immutable fields compared as sent first, empty collections skipped ----------


def _reference_meta_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """validate_object_meta_update as it read before round 11 (each immutable field normalised on both
    sides, every collection check called): objectmeta.go ValidateObjectMetaAccessorUpdate."""
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        extra = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if extra:
            errs.append(FieldError.forbidden(
                "metadata.finalizers", "no new finalizers can be added if the object is being deleted, "
                f"found new finalizers {v._go_string_slice(extra)}"))
    if not new.get("resourceVersion"):
        errs.append(FieldError.invalid("metadata.resourceVersion", str(new.get("resourceVersion") or ""),
                                       "must be specified for an update"))
    new_generation, old_generation = new.get("generation") or 0, old.get("generation") or 0
    if isinstance(new_generation, int) and isinstance(old_generation, int) and new_generation < old_generation:
        errs.append(FieldError.invalid("metadata.generation", new_generation, "must not be decremented"))
    for key in v._IMMUTABLE:
        new_value = v._immutable_value(new, key)
        if new_value != v._immutable_value(old, key):
            errs.append(FieldError.invalid(f"metadata.{key}", new_value, "field is immutable"))
    errs.extend(validate_labels(new.get("labels"), "metadata.labels"))
    errs.extend(validate_annotations(new.get("annotations"), "metadata.annotations"))
    errs.extend(v.validate_owner_references(new.get("ownerReferences"), "metadata.ownerReferences"))
    return errs


# Values that meet at the edges of "equal as sent" and "equal as Go compares": absent, None, "", 0, False.
_IMMUTABLE_VALUE = st.sampled_from([None, "", "a", "b", 0, 1, 0.0, False, "2024-01-01T00:00:00Z"])
_UPDATE_META = st.fixed_dictionaries(
    {},
    optional={**{key: _IMMUTABLE_VALUE for key in v._IMMUTABLE},
              "resourceVersion": st.sampled_from([None, "", "5"]), "generation": st.integers(-1, 2) | _SCALAR,
              "labels": st.dictionaries(_TEXT, _TEXT, max_size=2) | st.none(),
              "annotations": st.dictionaries(_TEXT, _TEXT, max_size=2) | st.none(),
              "finalizers": st.lists(_TEXT, max_size=2),
              "ownerReferences": st.lists(st.fixed_dictionaries({"apiVersion": st.sampled_from(["v1", "v"]),
                                                                 "kind": st.just("Pod"), "name": _TEXT,
                                                                 "uid": _TEXT}), max_size=2) | st.none()},
)


@settings(max_examples=600, deadline=None)
@given(_UPDATE_META, _UPDATE_META)
def test_object_meta_update_gives_the_straightforward_answer(new: dict[str, Any], old: dict[str, Any]) -> None:
    assert v.validate_object_meta_update(new, old) == _reference_meta_update(new, old)
