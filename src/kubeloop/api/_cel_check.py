"""Type-checking a CEL expression, as cel-go's checker does when a rule or policy is written.

:func:`check` types the tree of :mod:`kubeloop.api._cel_parse` bottom-up in an environment of typed
variables (``self`` from the schema, :mod:`kubeloop.api._cel_types`; the admission variables as dyn) and
returns the expression's type and cel-go's errors, each at cel-go's offset (cel-go ``checker/checker.go``
and ``checker/errors.go``):

- ``found no matching overload for '_+_' applied to '(string, int)'`` (``'string.(int)'`` for a
  receiver-style call), against the signatures of :mod:`kubeloop.api._cel_overloads`;
- ``undefined field 'x'`` for a field a schema object does not declare (in a selection or ``has()``);
- ``type 'string' does not support field selection``;
- ``expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)``.

Guarantee: no error where upstream has none. dyn matches anything and an expression built on an error
is dyn (as cel-go's error type), so one mistake is reported once; a function outside the table, a
global call with a Kubernetes library value as argument, ``null`` and objects compared with anything are
not reported; a tree the parser cannot read gives no error and type dyn. Undeclared names are reported
by :mod:`kubeloop.api._cel_compile` (the engine lists them), not here.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubeloop.api._cel_overloads import OVERLOADS, Overload
from kubeloop.api._cel_parse import Node, parse
from kubeloop.api._cel_types import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    NULL,
    STRING,
    TYPE,
    UINT,
    CelType,
    field_type,
    list_of,
    map_of,
    optional_of,
)

__all__ = ["TypeIssue", "check"]

TypeIssue = tuple[int, str]  # a source offset and cel-go's text
_LITERALS = {"int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES, "bool": BOOL,
             "null_type": NULL}
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type",
                         "dyn"})
_NAMESPACES = frozenset({"sets", "format", "optional", "strings", "math", "ip"})
_LENIENT = frozenset({"dyn", "null_type", "object"})
_TYPE_PARAMS = frozenset({"A", "B", "K", "V"})
# Where a schema object might act as a map (its runtime value is one: size(), in, [], == against a map
# literal or another object's type), kubeloop is not sure of cel-go's answer: not reported.
_OBJECT_LENIENT = frozenset({"_==_", "_!=_", "@in", "_?_:_", "_[_]", "size"})


def check(source: str, variables: Mapping[str, CelType]) -> tuple[CelType, list[TypeIssue]]:
    """The type of ``source`` and cel-go's type errors in it, sorted by offset."""
    tree = parse(source)
    if tree is None:
        return DYN, []
    checker = _Checker(variables)
    try:
        result = checker.type_of(tree, {})
    except RecursionError:  # nesting deeper than Python's stack: no verdict, as for an unreadable tree
        return DYN, []
    return result, sorted(checker.issues)


def _compatible(a: CelType, b: CelType) -> bool:
    """Whether values of ``a`` and ``b`` may meet in one type parameter (lenient: see the module)."""
    if a.name in _LENIENT or b.name in _LENIENT:
        return a.name != "object" or b.name in ("object", "map", "dyn", "null_type")
    if a.name != b.name or len(a.params) != len(b.params):
        return False
    return all(_compatible(x, y) for x, y in zip(a.params, b.params, strict=True))


def _bind(param: CelType, arg: CelType, bound: dict[str, CelType]) -> bool:
    if param.name in _TYPE_PARAMS:
        previous = bound.get(param.name)
        if previous is None or previous.name == "dyn":
            bound[param.name] = arg
            return True
        return _compatible(previous, arg)
    if "dyn" in (param.name, arg.name) or (
            arg.name == "null_type" and param.name not in ("bool", "int", "uint", "double")):
        return True
    if param.name != arg.name or len(param.params) != len(arg.params):
        return False
    return all(_bind(p, a, bound) for p, a in zip(param.params, arg.params, strict=True))


def _substitute(result: CelType, bound: Mapping[str, CelType]) -> CelType:
    if result.name in _TYPE_PARAMS:
        return bound.get(result.name, DYN)
    if not result.params:
        return result
    return CelType(result.name, tuple(_substitute(p, bound) for p in result.params))


def _signature(args: list[CelType], member: bool) -> str:
    texts = [a.text() for a in args]
    if member:
        return f"{texts[0]}.({', '.join(texts[1:])})"
    return f"({', '.join(texts)})"


def _element(kind: CelType) -> CelType | None:
    """What a comprehension over ``kind`` binds its variable to; None when it cannot range over it."""
    if kind.name == "list":
        return kind.params[0]
    if kind.name == "map":
        return kind.params[0]
    if kind.name in ("dyn", "object"):
        return DYN
    return None


def _join(types: list[CelType]) -> CelType:
    """A literal's element type: the common one, else dyn."""
    if not types:
        return DYN
    first = types[0]
    return first if all(t == first for t in types) else DYN


class _Checker:
    def __init__(self, variables: Mapping[str, CelType]) -> None:
        self.variables = variables
        self.issues: list[TypeIssue] = []

    def report(self, pos: int, text: str) -> CelType:
        self.issues.append((pos, text))
        return DYN

    def type_of(self, node: Node, scope: Mapping[str, CelType]) -> CelType:
        kind = node.kind
        if kind == "literal":
            return _LITERALS[node.value]
        if kind == "ident":
            if node.value in scope:
                return scope[node.value]
            if node.value in self.variables:
                return self.variables[node.value]
            return TYPE if node.value in _TYPE_NAMES else DYN
        if kind in ("select", "optselect"):
            return self.select(node, scope)
        if kind == "list":
            return list_of(_join([self.type_of(a, scope) for a in node.args]))
        if kind == "map":
            types = [self.type_of(a, scope) for a in node.args]
            return map_of(_join(types[0::2]), _join(types[1::2]))
        if kind == "macro":
            return self.macro(node, scope)
        if kind == "member":
            return self.member(node, scope)
        return self.call(node, scope)

    def select(self, node: Node, scope: Mapping[str, CelType], *, presence: bool = False) -> CelType:
        owner = self.type_of(node.args[0], scope)
        optional = node.kind == "optselect" or owner.name == "optional_type"
        if owner.name == "optional_type":
            owner = owner.params[0]
        if owner.name == "object":
            found = field_type(owner, node.value)
            if found is None:
                return self.report(node.pos, f"undefined field '{node.value}'")
            result = found
        elif owner.name == "map":
            result = owner.params[1]
        elif owner.name in ("dyn", "null_type") or owner.name.startswith("kubernetes.") or "." in owner.name:
            result = DYN
        else:
            return self.report(node.pos, f"type '{owner.text()}' does not support field selection")
        if presence:
            return BOOL
        return optional_of(result) if optional else result

    def macro(self, node: Node, scope: Mapping[str, CelType]) -> CelType:
        target, variable, *body = node.args
        range_type = self.type_of(target, scope)
        element = _element(range_type)
        if element is None:
            self.report(target.pos, f"expression of type '{range_type.text()}' cannot be range of a comprehension "
                        "(must be list, map, or dynamic)")
            element = DYN
        inner = {**scope, variable.value: element}
        types = [self.type_of(b, inner) for b in body]
        if node.value in ("all", "exists", "exists_one"):
            return BOOL
        if node.value == "map":
            return list_of(types[-1]) if types else list_of(DYN)
        return list_of(element)  # filter

    def member(self, node: Node, scope: Mapping[str, CelType]) -> CelType:
        target = node.args[0]
        if target.kind == "ident" and target.value not in scope:
            qualified = f"{target.value}.{node.value}"
            if qualified in OVERLOADS:
                return self.resolve(qualified, node, [self.type_of(a, scope) for a in node.args[1:]], member=False)
            if target.value in _NAMESPACES and target.value not in self.variables:
                for arg in node.args[1:]:
                    self.type_of(arg, scope)
                return DYN  # a namespaced function outside the table (format.dns1123Label(), math.greatest)
        args = [self.type_of(a, scope) for a in node.args]
        return self.resolve(node.value, node, args, member=True)

    def call(self, node: Node, scope: Mapping[str, CelType]) -> CelType:
        if node.value == "has" and len(node.args) == 1 and node.args[0].kind == "select":
            return self.select(node.args[0], scope, presence=True)
        args = [self.type_of(a, scope) for a in node.args]
        if node.value in ("_[?_]",):
            container = args[0]
            if container.name == "optional_type":
                container = container.params[0]
            found = self.resolve("_[_]", node, [container, args[1]], member=False)
            return optional_of(found)
        if node.value == "_[_]" and args[0].name == "optional_type":
            return optional_of(self.resolve("_[_]", node, [args[0].params[0], args[1]], member=False))
        return self.resolve(node.value, node, args, member=False)

    def resolve(self, name: str, node: Node, args: list[CelType], *, member: bool) -> CelType:
        overloads = OVERLOADS.get(name)
        if overloads is None:
            return DYN
        results: list[CelType] = []
        for overload in overloads:
            found = _apply(overload, args, member)
            if found is not None:
                results.append(found)
        if results:
            return _join(results)
        if (name in _OBJECT_LENIENT and any(a.name == "object" for a in args)) or (
                not member and any("." in a.name for a in args)):
            return DYN  # see the module's guarantee
        if name == "_[_]" and args and args[0].name not in ("list", "map"):
            return DYN  # indexing an object or a library value: not modelled
        return self.report(node.pos, f"found no matching overload for '{name}' applied to '{_signature(args, member)}'")


def _apply(overload: Overload, args: list[CelType], member: bool) -> CelType | None:
    if overload.member != member or len(overload.params) != len(args):
        return None
    bound: dict[str, CelType] = {}
    if not all(_bind(p, a, bound) for p, a in zip(overload.params, args, strict=True)):
        return None
    return _substitute(overload.result, bound)
