"""Type mismatches and unknown fields of a built-in object's JSON, as decoding it into its Go struct
reports them, in one walk.

Upstream decodes a built-in kind's body into its Go type (``sigs.k8s.io/json``, a fork of Go's
``encoding/json``). A JSON value of the wrong type for its field is an ``UnmarshalTypeError``:
``json: cannot unmarshal <value> into Go struct field <Struct>.<path> of type <Go type>``, where
``Struct`` is the innermost Go struct being decoded, ``path`` the JSON field names from the root
without list indices or map keys, and ``<value>`` what :func:`kubeloop.api._go_json.go_json_kind`
names (``number 1.5`` for a number an integer field cannot hold). The decoder records the first such
error in document order and goes on (``decodeState.saveError``); an error from a type's own
``UnmarshalJSON`` (``metav1.Time``, ``intstr.IntOrString``) ends the decode at once and wins
(``decodeState.value``). ``null`` decodes into anything. The same pass drops the fields the struct
does not declare and, decoding strictly (``UnmarshalStrict``), names them
(``unknown field "spec.foo"``; the server decides what the client is told).

:func:`decode` answers both from the kind's OpenAPI schema (definition names give Go struct names,
``format`` gives the integer widths): the first type error, and the unknown fields' paths in
document order, named as :mod:`kubeloop.api._unknown_fields` names them for custom resources and
strategic merge patches (``spec.containers[0].foo``, a map value by its key). Values with their own
decoding are left to it: quantities (:mod:`kubeloop.api._quantity_fields`), ``RawExtension``,
``apiextensions`` ``JSON``, ``FieldsV1`` and anything under ``x-kubernetes-preserve-unknown-fields``
(nothing below them is unknown). A CRD schema's ``items`` and ``additionalProperties``
(``JSONSchemaPropsOrArray``/``OrBool``, whose ``UnmarshalJSON`` decodes non-strictly) are walked for what
their schemas' decode leaves out, silently: unknown fields and value zeros. The same walk finds the value
scalars with ``omitempty`` at their zero (``paused: false``, ``minReadySeconds: 0``, ``workingDir: ""``): the
decoded struct holds them as it would hold an absent field, so the round trip drops them (:attr:`Decoded.zeros`, :meth:`Decoded.drop_zeros`); pointer
fields (``replicas: 0``) keep theirs, by the table of :mod:`kubeloop.api._go_pointers`, and a struct the table
does not cover keeps every zero. Named Go types the schema cannot tell (``types.UID``,
``v1.Protocol`` ...) come from a short table; any other named string type is reported as ``string``.
Top-level ``apiVersion`` and ``kind`` are read before the decode, by other code, and are not
type-checked here. :func:`conversion_error` is the other typed path, the converter of unstructured
maps a strategic merge patch's result goes through.

Since the walk sees every value it decodes, it also answers two questions for the write path: whether
the body may hold a ``null`` the decode replaces (:attr:`Decoded.nulls`, in place of a scan of the
body's bytes), and, given a :class:`~kubeloop.api._flat_entry.FlatPlan`, what a create's managedFields
entry owns of a flat body (:attr:`Decoded.owned`, in place of the field manager's own walk).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeloop.api._flat_entry import ATOMIC, MEMBER, FlatPlan, flat_children
from kubeloop.api._go_base64 import base64_error
from kubeloop.api._go_encode import _NOT_OMITEMPTY
from kubeloop.api._go_json import go_json_kind
from kubeloop.api._go_pointers import POINTER_SCALARS
from kubeloop.api._schemas import definitions, resolve

__all__ = ["Decoded", "GoStruct", "conversion_error", "decode", "go_struct"]

# Kinds of Go target.
_STRUCT, _MAP, _SLICE, _STR, _BOOL, _INT, _FLOAT, _BYTES, _ANY, _TIME, _INTSTR, _SCHEMA_OR = range(12)

_REF = "#/$defs/"
_EXEMPT = frozenset({
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
})
_TIMES = frozenset({"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"})
# apiextensions/v1 marshal.go: JSONSchemaPropsOrArray (a schema or a list of them) and JSONSchemaPropsOrBool (a
# schema or a bool) decode with their own UnmarshalJSON, through apimachinery's non-strict util/json.
_SCHEMA_PROPS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
_SCHEMA_OR_DEFS = frozenset({_SCHEMA_PROPS + "OrArray", _SCHEMA_PROPS + "OrBool"})
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

# Named Go types of common fields, by (struct, JSON field): the schema only says "string" or "object".
_NAMED: dict[tuple[str, str], str] = {
    ("ObjectMeta", "uid"): "types.UID",
    ("OwnerReference", "uid"): "types.UID",
    ("ContainerPort", "protocol"): "v1.Protocol",
    ("ServicePort", "protocol"): "v1.Protocol",
    ("Container", "imagePullPolicy"): "v1.PullPolicy",
    ("PodSpec", "restartPolicy"): "v1.RestartPolicy",
    ("PodSpec", "dnsPolicy"): "v1.DNSPolicy",
    ("ServiceSpec", "type"): "v1.ServiceType",
    ("Secret", "type"): "v1.SecretType",
    ("DeploymentStrategy", "type"): "v1.DeploymentStrategyType",
    ("ResourceRequirements", "limits"): "v1.ResourceList",
    ("PriorityClass", "preemptionPolicy"): "v1.PreemptionPolicy",
    ("PodSpec", "preemptionPolicy"): "v1.PreemptionPolicy",
    ("Container", "terminationMessagePolicy"): "v1.TerminationMessagePolicy",
    ("PodStatus", "phase"): "v1.PodPhase",
    ("PodStatus", "qosClass"): "v1.PodQOSClass",
    ("NamespaceStatus", "phase"): "v1.NamespacePhase",
    ("Toleration", "operator"): "v1.TolerationOperator",
    ("Toleration", "effect"): "v1.TaintEffect",
    ("Taint", "effect"): "v1.TaintEffect",
    ("StatefulSetSpec", "podManagementPolicy"): "v1.PodManagementPolicyType",
    ("StatefulSetUpdateStrategy", "type"): "v1.StatefulSetUpdateStrategyType",
    ("DaemonSetUpdateStrategy", "type"): "v1.DaemonSetUpdateStrategyType",
    ("JobSpec", "completionMode"): "v1.CompletionMode",
    ("JobSpec", "podReplacementPolicy"): "v1.PodReplacementPolicy",
    ("JobCondition", "type"): "v1.JobConditionType",
    ("JobCondition", "status"): "v1.ConditionStatus",
    ("CronJobSpec", "concurrencyPolicy"): "v1.ConcurrencyPolicy",
    ("ResourceRequirements", "requests"): "v1.ResourceList",
}


class _Go:
    """One Go target: its kind, its type as Go prints it, and what lies below it (built lazily:
    schemas are recursive). ``exact`` is the Python type that settles a value at once (a string or
    bool field's); ``strings`` is ``dict`` for a map of strings, ``list`` for a list of strings, the
    container that settles it when its items are all strings."""

    __slots__ = ("_fields", "_node", "defname", "elem", "exact", "kind", "name", "strings", "type", "zeros")

    def __init__(self, kind: int, go_type: str, *, name: str = "", node: Mapping[str, Any] | None = None,
                 elem: _Go | None = None, defname: str = "") -> None:
        self.kind, self.type, self.name, self.elem, self.defname = kind, go_type, name, elem, defname
        self._node = node
        self._fields: dict[str, _Go] | None = None
        # A struct's value scalars with omitempty, whose zero the round trip drops (set with ``fields``).
        self.zeros: frozenset[str] | None = None
        self.exact = _EXACT.get(kind)
        self.strings = (dict if kind == _MAP else list) if elem is not None and elem.kind == _STR else None

    @property
    def fields(self) -> dict[str, _Go]:
        """A struct's fields by JSON name (and, once they are built, :attr:`zeros`)."""
        if self._fields is None:
            fields: dict[str, _Go] = {}
            props = (self._node or {}).get("properties")
            for key, sub in (props.items() if isinstance(props, dict) else ()):
                if isinstance(sub, Mapping):
                    fields[key] = _target(sub, named=_NAMED.get((self.name, key)))
            self.zeros = _value_zeros(self.defname, self.name, self._node or {}, fields)
            self._fields = fields
        return self._fields


# What settles a value of each kind without a look further (``None`` settles every kind). A ``[]byte``'s string
# is looked at (its base64, :mod:`kubeloop.api._go_base64`): ``bytes`` is no type a decoded JSON value has.
_EXACT: dict[int, type] = {_STR: str, _BYTES: bytes, _BOOL: bool, _TIME: str, _INTSTR: str}

_by_def: dict[str, _Go] = {}


def _struct(defname: str) -> _Go:
    go = _by_def.get(defname)
    if go is None:
        short = defname.rpartition(".")[2]
        pkg = defname.split(".")[-2]
        go = _by_def[defname] = _Go(_STRUCT, f"{pkg}.{short}", name=short, node=definitions().get(defname) or {},
                                    defname=defname)
    return go


# Scalar kinds whose zero ``omitempty`` drops: ``""``, ``false``, ``0``, and a ``[]byte`` field's ``""`` (an
# empty slice, which ``encoding/json`` omits by its length: ``WebhookClientConfig.CABundle []byte
# `json:"caBundle,omitempty"```). The types with their own encoding (times, IntOrString) are not among them.
_PLAIN = frozenset({_STR, _BOOL, _INT, _FLOAT, _BYTES})


def _value_zeros(defname: str, short: str, node: Mapping[str, Any], fields: dict[str, _Go]) -> frozenset[str] | None:
    """The fields of struct ``defname`` whose zero value the round trip drops: its optional scalars that are
    Go values with ``omitempty`` (:data:`kubeloop.api._go_pointers.POINTER_SCALARS` names the pointers; a
    ``required`` field, or one in ``_go_encode._NOT_OMITEMPTY``, has no ``omitempty``). ``None`` when the
    struct is not in the table (its zeros stay) or has no such field. A kind's own ``apiVersion`` and
    ``kind`` are read before the decode and never dropped here."""
    pointers = POINTER_SCALARS.get(defname)
    if pointers is None:
        return None
    required = node.get("required")
    required = frozenset(required) if isinstance(required, list) else frozenset()
    type_meta = _TYPE_META if "metadata" in fields and "apiVersion" in fields and "kind" in fields else ()
    zeros = frozenset(key for key, go in fields.items()
                      if go.kind in _PLAIN and key not in pointers and key not in required
                      and key not in type_meta and (short, key) not in _NOT_OMITEMPTY)
    return zeros or None


_SCALARS = {"string": (_STR, "string"), "boolean": (_BOOL, "bool"), "number": (_FLOAT, "float64")}
_ANY_GO = _Go(_ANY, "")
# A managedFields entry's FieldsV1, not looked into either, but known to hold no null the typed decode replaces:
# its UnmarshalJSON keeps the raw bytes as sent (apimachinery pkg/apis/meta/v1/helpers.go), and the null
# replacement (:func:`kubeloop.api._go_encode.drop_nulls`) does not look into it. Every client-go Update and
# kubectl replace sends the managedFields it read.
_FIELDS_V1 = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"
_FIELDS_GO = _Go(_ANY, "")
_FIELDS_GO.exact = dict  # a map settles it at once (anything else is not looked into either)


def _target(node: Mapping[str, Any], *, named: str | None = None) -> _Go:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF):
        defname = ref[len(_REF):]
        if defname in _EXEMPT:
            return _FIELDS_GO if defname == _FIELDS_V1 else _ANY_GO
        if defname in _SCHEMA_OR_DEFS:
            return _Go(_SCHEMA_OR, "", elem=_struct(_SCHEMA_PROPS))
        if defname in _TIMES:
            return _Go(_TIME, "string")
        if defname == _INT_OR_STRING:
            return _Go(_INTSTR, "int32")
        target = definitions().get(defname) or {}
        if isinstance(target.get("properties"), dict):
            return _struct(defname)
    schema = resolve(node) or {}
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return _ANY_GO
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    for kind in kinds:
        if kind == "integer":
            fmt = schema.get("format")
            return _Go(_INT, named or ("int32" if fmt == "int32" else "int64"))
        if kind == "string" and schema.get("format") == "byte":
            return _Go(_BYTES, named or "[]uint8")
        if kind in _SCALARS:
            go_kind, go_type = _SCALARS[kind]
            return _Go(go_kind, named or go_type)
        if kind == "array":
            items = schema.get("items")
            elem = _target(items) if isinstance(items, Mapping) else _ANY_GO
            return _Go(_SLICE, named or ("[]" + (elem.type or "interface {}")), elem=elem)
        if kind == "object":
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping):
                elem = _target(extra)
                value_type = elem.type or "interface {}"
                if elem.kind == _ANY and "$ref" in extra:  # a map of quantities
                    value_type = "resource.Quantity"
                return _Go(_MAP, named or f"map[string]{value_type}", elem=elem)
            return _ANY_GO
    return _ANY_GO


class _Found(Exception):
    """An error from a type's own UnmarshalJSON: it ends the decode."""


GoStruct = _Go


def go_struct(defname: str) -> GoStruct:
    """The Go struct of OpenAPI definition ``defname``, for :func:`decode` (callers keep it)."""
    return _struct(defname)


class Decoded:
    """What one walk of a body against its Go struct found. The body is not changed by the walk:
    :meth:`drop_unknown` removes the unknown fields once the caller has seen them."""

    __slots__ = ("_drops", "empties", "error", "exact", "nulls", "owned", "unknown", "zeros")

    def __init__(self) -> None:
        # The decode's error (``json: cannot unmarshal ...``), or None.
        self.error: str | None = None
        # The fields the struct does not declare, as paths in document order (``spec.foo``,
        # ``spec.containers[0].bar``, a map's key as a field), as the strict decoder names them.
        self.unknown: list[str] = []
        # No error, and nothing for the metadata check of a request body to look at again
        # (:func:`kubeloop.api._validation.well_typed`): no null map value or list item, and
        # top-level ``apiVersion`` and ``kind`` strings (the decode itself skips those two).
        self.exact = True
        # A list or map field (not a struct) holds an empty value somewhere (what the encoding drops).
        self.empties = False
        # The body may hold a ``null`` the typed decode replaces: the walk saw one, or passed by a value
        # it does not look into (``RawExtension``, a map of quantities ...; not a ``FieldsV1``, whose nulls
        # stay as sent). False: nothing to replace (with a
        # plan, also when its only nulls are ones the replacement leaves null: :attr:`FlatPlan.kept`).
        self.nulls = False
        # What a create's managedFields entry owns of the body as the walk leaves it, given a
        # :class:`~kubeloop.api._flat_entry.FlatPlan` (FieldsV1, ``{}`` for nothing); ``None`` when
        # the body is not flat, or holds an error, a null other than the plan's harmless ones
        # (:attr:`FlatPlan.nulls`: ``metadata.creationTimestamp`` ...), an empty list or map, an unknown
        # field or a value scalar at its zero. A body with nulls still has them replaced before the hook.
        self.owned: dict[str, Any] | None = None
        self._drops: list[tuple[dict[str, Any], str]] | None = None  # built on the first unknown field
        # The value scalars with ``omitempty`` at their zero (``false``, ``0``, ``""``), as (parent, key):
        # what the decoded struct cannot tell from an absent field (:mod:`kubeloop.api._go_pointers`).
        self.zeros: list[tuple[dict[str, Any], str]] | None = None

    def drop_unknown(self) -> None:
        """Remove the unknown fields from the body, as decoding into the struct leaves them out."""
        for parent, key in self._drops or ():
            parent.pop(key, None)  # a YAML alias may put one map at two places

    def drop_zeros(self) -> bool:
        """Remove the value scalars found at their zero (whether there was any): the decoded struct holds
        the zero, which ``encoding/json`` omits and the field manager's conversion leaves out
        (apimachinery ``runtime/converter.go`` ``isZero``), so no client reads them and no manager owns them."""
        zeros = self.zeros
        if not zeros:
            return False
        for parent, key in zeros:
            parent.pop(key, None)  # a YAML alias may put one map at two places
        return True


def decode(obj: dict[str, Any], top: GoStruct, plan: FlatPlan | None = None) -> Decoded:
    """Decode ``obj`` into the Go struct ``top`` (from :func:`go_struct`), as the strict decoder does
    in one pass: the first type error, the unknown fields, and whether the body is :attr:`Decoded.exact`.
    Top-level ``apiVersion`` and ``kind`` are not type-checked. With a ``plan``, the same pass builds
    :attr:`Decoded.owned`."""
    found = Decoded()
    try:
        owned = _walk_top(obj, top, found, plan)
    except _Found as hard:
        found.error = str(hard)
        owned = None
    if found.error is not None:
        found.exact = False
    elif owned is not None and not (found.empties or found.unknown or found.zeros):  # nulls: the walk's own check
        found.owned = {element: owned[element] for element in sorted(owned)} if len(owned) > 1 else owned
        if found.nulls and plan is not None and _all_kept(obj, plan):
            found.nulls = False  # client-go's creationTimestamp: null, which the replacement leaves null
    return found


def _all_kept(obj: dict[str, Any], plan: FlatPlan) -> bool:
    """Whether the nulls of a body the walk answered for, which lie only at ``plan.nulls`` and metadata's
    ``nulls``, are all ones the typed decode's replacement leaves as they are (metadata's ``kept``)."""
    if None in obj.values():  # a top-level null: deleted (FlatPlan.nulls holds no kept field there)
        return False
    meta, level = obj.get("metadata"), plan.meta
    if type(meta) is not dict or level is None:
        return False
    nulls = list(meta.values()).count(None)  # in C: metadata's nulls, then the kept ones among them
    for key in level.kept:  # creationTimestamp
        if meta.get(key, 0) is None:
            nulls -= 1
    return not nulls


def _message(value: Any, go: _Go, struct: str, path: str) -> str:
    kind = go_json_kind(value, with_number=go.kind == _INT)
    return f"json: cannot unmarshal {kind} into Go struct field {struct}.{path} of type {go.type}"


_STR_ONLY = frozenset({str})
_TYPE_META = ("apiVersion", "kind")
_NO_PLAN = FlatPlan(frozenset(), {})


def _walk_top(obj: dict[str, Any], go: _Go, found: Decoded, plan: FlatPlan | None) -> dict[str, Any] | None:
    """The root struct's fields, as :func:`_walk_struct` walks a struct's, and (given a ``plan``) the
    unsorted ``f:`` children a create's entry owns of them, or ``None`` where the body is not flat."""
    fields = go._fields if go._fields is not None else go.fields
    owned: dict[str, Any] | None = None
    if plan is None:
        plan = _NO_PLAN  # read only where ``owned`` is a map
    else:
        owned = {}
    dropped, maps, meta, nulls = plan.dropped, plan.maps, plan.meta, plan.nulls
    for key, value in obj.items():
        field = fields.get(key)
        if field is None:
            found.unknown.append(key)
            if found._drops is None:
                found._drops = [(obj, key)]
            else:
                found._drops.append((obj, key))
            continue
        vtype = type(value)
        if vtype is field.exact:
            if not value and go.zeros is not None and key in go.zeros:  # "" or false of a value field: dropped
                _zero(found, obj, key)
            elif owned is not None and key not in dropped:
                owned["f:" + key] = {}
            continue
        if value is None:
            found.nulls = True
            if key in _TYPE_META:  # see below
                found.exact = False
                owned = None
            elif owned is not None and key not in nulls:  # a null the entry would see as a zero
                owned = None
            continue
        if vtype is dict:
            if field.kind == _STRUCT:
                _walk_struct(value, field, key, key, found)
                if owned is not None:
                    if meta is None or key != "metadata":
                        owned = None
                    # Else metadata of only the server's fields (a name, client-go's creationTimestamp: null)
                    # owns nothing; flat_children passes by the harmless nulls, or gives up.
                    # The server's fields hold scalars (or fail the decode), but managedFields a list, which
                    # may hold a null anywhere: flat_children gives up at the list.
                    elif not meta.dropped.issuperset(value) or (found.nulls and "managedFields" in value):
                        node = flat_children(value, meta)
                        if node is None:
                            owned = None
                        elif node:
                            owned["f:" + key] = node
                continue
            if field.strings is dict and _STR_ONLY.issuperset(map(type, value.values())):
                if not value:
                    found.empties = True
                elif owned is not None:
                    how = maps.get(key)
                    if how is None:
                        owned = None
                    elif how == ATOMIC:
                        owned["f:" + key] = {}
                    else:  # map_node, inlined: a call less per create (a ConfigMap's data)
                        head: dict[str, Any] = {".": {}} if how == MEMBER else {}
                        for item in sorted(value):
                            head["f:" + item] = {}
                        owned["f:" + key] = head
                continue
        elif vtype is list and field.strings is list and _STR_ONLY.issuperset(map(type, value)):
            if not value:
                found.empties = True
            owned = None  # list semantics (atomic, set) are the general path's
            continue
        owned = None
        if key in _TYPE_META:  # read before the decode, and type-checked there
            found.exact = False
            continue
        _walk(value, field, go.name, key, key, found)
        if (vtype is int or vtype is float or vtype is str) and not value and go.zeros is not None and key in go.zeros:
            _zero(found, obj, key)  # a number field's 0 (a float 0 in an integer field is a type error above), a []byte's ""
    return owned


def _walk_struct(obj: dict[str, Any], go: _Go, path: str, doc: str, found: Decoded) -> None:
    """The fields of one struct: ``path`` is the Go path (field names only), ``doc`` the document's."""
    fields = go._fields if go._fields is not None else go.fields  # the property's call, once per struct
    for key, value in obj.items():
        field = fields.get(key)
        if field is None:
            found.unknown.append(f"{doc}.{key}")
            if found._drops is None:
                found._drops = [(obj, key)]
            else:
                found._drops.append((obj, key))
            continue
        # Well-typed scalars, and maps and lists of strings, settle here: most bodies are all well-typed.
        vtype = type(value)
        if vtype is field.exact:
            if not value and go.zeros is not None and key in go.zeros:  # "" or false of a value field: dropped
                _zero(found, obj, key)
            continue
        if value is None:
            found.nulls = True
            continue
        if vtype is dict:
            if field.kind == _STRUCT:
                _walk_struct(value, field, f"{path}.{key}", f"{doc}.{key}", found)
                continue
            if field.strings is dict and _STR_ONLY.issuperset(map(type, value.values())):
                if not value:
                    found.empties = True
                continue
        elif vtype is list and field.strings is list and _STR_ONLY.issuperset(map(type, value)):
            if not value:
                found.empties = True
            continue
        _walk(value, field, go.name, f"{path}.{key}", f"{doc}.{key}", found)
        if (vtype is int or vtype is float or vtype is str) and not value and go.zeros is not None and key in go.zeros:
            _zero(found, obj, key)  # a number field's 0 (a float 0 in an integer field is a type error above), a []byte's ""


def _zero(found: Decoded, parent: dict[str, Any], key: str) -> None:
    if found.zeros is None:
        found.zeros = [(parent, key)]
    else:
        found.zeros.append((parent, key))


def _walk(value: Any, go: _Go, struct: str, path: str, doc: str, found: Decoded) -> None:
    """One value against its Go target; ``struct`` is the innermost struct's name."""
    kind = go.kind
    if value is None:
        found.nulls = True
        return
    if kind == _ANY:  # not looked into: it may hold a null (not a FieldsV1's: kept as sent)
        if type(value) in (dict, list) and go is not _FIELDS_GO:
            found.nulls = True
        return
    if kind == _STR:
        ok = type(value) is str
    elif kind == _BYTES:  # literalStore: base64.StdEncoding.Decode, its error saved (the first one wins) as a type error
        if type(value) is not str:
            ok = False
        else:
            if found.error is None and (err := base64_error(value)) is not None:
                found.error = err
            return
    elif kind == _BOOL:
        ok = type(value) is bool
    elif kind == _INT:
        bound = 2**31 if go.type == "int32" else 2**63
        ok = type(value) is int and -bound <= value < bound
    elif kind == _FLOAT:
        ok = type(value) in (int, float)
    elif kind == _STRUCT:
        if type(value) is dict:
            _walk_struct(value, go, path, doc, found)
            return
        ok = False
    elif kind == _MAP:
        if type(value) is dict:
            if not value:
                found.empties = True
            elem = go.elem
            assert elem is not None
            if elem.kind != _ANY:
                for key, item in value.items():
                    if item is None:  # decodes (to the zero value), but is not ``exact``
                        found.exact = False
                        found.nulls = True
                    elif type(item) is not elem.exact:
                        _walk(item, elem, struct, path, f"{doc}.{key}", found)
            elif value:
                found.nulls = True
            return
        ok = False
    elif kind == _SLICE:
        if type(value) is list:
            if not value:
                found.empties = True
            elem = go.elem
            assert elem is not None
            if elem.kind != _ANY:
                for i, item in enumerate(value):
                    if item is None:
                        found.exact = False
                        found.nulls = True
                    elif type(item) is not elem.exact:
                        _walk(item, elem, struct, path, f"{doc}[{i}]", found)
            elif value:
                found.nulls = True
            return
        ok = False
    elif kind == _TIME:  # metav1.Time.UnmarshalJSON decodes a string, its error ending the decode
        if type(value) is not str:
            raise _Found(_message(value, go, struct, path))
        return
    elif kind == _SCHEMA_OR:
        _walk_schema_or(value, go, found)
        return
    else:  # _INTSTR: a string, else an int32 (intstr.IntOrString.UnmarshalJSON)
        if type(value) is not str and not (type(value) is int and -(2**31) <= value < 2**31):
            raise _Found(_message(value, _Go(_INT, "int32"), struct, path))
        return
    if not ok and found.error is None:
        found.error = _message(value, go, struct, path)


def _walk_schema_or(value: Any, go: _Go, found: Decoded) -> None:
    """A CRD schema's ``items`` or ``additionalProperties``: the schemas in it decode into ``JSONSchemaProps``
    through the wrapper's own ``UnmarshalJSON`` (apiextensions/v1 ``marshal.go``), whose non-strict decode
    reports no unknown field: those, and the value scalars at their zero, are dropped silently (as
    :attr:`Decoded.zeros`). Type errors in it are left to the CRD's validation, as before this walk looked in."""
    schemas = (value,) if type(value) is dict else value if type(value) is list else ()
    elem = go.elem
    assert elem is not None
    inner = Decoded()
    for schema in schemas:
        if type(schema) is dict:
            _walk_struct(schema, elem, "", "", inner)
    for parent, key in (inner._drops or []) + (inner.zeros or []):
        _zero(found, parent, key)
    found.nulls = True  # not looked for in it (as for a value not looked into)
    found.empties = found.empties or inner.empties


# What ``reflect.Kind`` a decoded JSON value has in an unstructured map (apimachinery's JSON decoding
# gives int64 for integers, float64 for other numbers).
def _reflect_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "map" if isinstance(value, dict) else "slice"


_GO_KIND = {_STR: "string", _BOOL: "bool", _FLOAT: "float64"}


def conversion_error(obj: dict[str, Any], *, defname: str) -> str | None:
    """The error converting unstructured ``obj`` into the Go struct of ``defname`` gives, or ``None``
    (apimachinery ``runtime/converter.go`` ``fromUnstructured``, which a strategic merge patch's
    result goes through): the first one, fields taken in schema order (Go takes them in struct
    order, which the schema does not keep). Integers are not range-checked there, and values with
    their own conversion (Time, IntOrString, Quantity) are left alone."""
    return _convert_struct(obj, _struct(defname), top=True)


def _convert_struct(obj: dict[str, Any], go: _Go, *, top: bool = False) -> str | None:
    fields = go.fields
    for key in fields:
        if top and key in ("apiVersion", "kind"):
            continue
        value = obj.get(key)
        if value is not None and (err := _convert(value, fields[key])) is not None:
            return err
    return None


def _convert(value: Any, go: _Go) -> str | None:
    kind = go.kind
    found = _reflect_kind(value)
    if kind in (_STR, _BOOL, _FLOAT, _INT):
        name = go.type if kind == _INT else _GO_KIND[kind]
        if (kind == _STR and found == "string") or (kind == _BOOL and found == "bool"):
            return None
        if kind in (_FLOAT, _INT) and found in ("int64", "float64"):
            if kind == _FLOAT or found == "int64" or float(value).is_integer():
                return None
            return f"cannot convert float64 to {go.type}"
        if kind == _STR and found == "int64":  # Go converts an integer to a string (a rune), but not here
            return f"cannot convert int64 to {go.type}"
        return f"unrecognized type: {name}"
    if kind == _BYTES:  # sliceFromUnstructured: a JSON round trip of the string, its error wrapped
        if found != "string":
            return f"cannot restore slice from {found}"
        err = base64_error(value) if value else None
        return None if err is None else f"error decoding from json: {err}"
    if kind == _STRUCT:
        return _convert_struct(value, go) if found == "map" else f"cannot restore struct from: {found}"
    if kind == _MAP:
        if found != "map":
            return f"cannot restore map from {found}"
        assert go.elem is not None
        for item in value.values():
            if item is not None and (err := _convert(item, go.elem)) is not None:
                return err
        return None
    if kind == _SLICE:
        if found != "slice":
            return f"cannot restore slice from {found}"
        assert go.elem is not None
        for item in value:
            if item is not None and (err := _convert(item, go.elem)) is not None:
                return err
    return None
