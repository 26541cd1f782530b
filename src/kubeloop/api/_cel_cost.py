"""A lower bound of a rule's estimated cost, enough to refuse the rules upstream refuses by far.

Upstream multiplies cel-go's static cost estimate of each rule (``checker/cost.go``) by how many times
the rule can run (the node's cardinality: the product of its ancestors' ``maxItems``/``maxProperties``,
or, past an unbounded one, how many of the node fit in a 3 MiB request) and refuses a CRD whose rule
exceeds ``StaticEstimatedCostLimit`` (10,000,000): ``Forbidden: estimated rule cost exceeds budget by
factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength
where arrays, maps, and strings are declared)``
(k8s.io/apiextensions-apiserver ``pkg/apis/apiextensions/validation/validation.go``).

Without cel-go's checker this module reads the rule's text: each macro (``all``, ``exists``, ...) over
a list or map reached from ``self`` costs its estimated size times its body; each string traversal
(``matches``, ``contains``, ``find``, ``split``, ``lowerAscii``, ...) on a string reached from ``self`` or
a macro variable costs a tenth of the string's estimated length (times a quarter of a regex's length),
as cel-go's factors. The result is a lower bound of upstream's figure, so the module reports only
estimates past 100 times the limit, where upstream's text does not depend on the exact figure: a rule
refused here is refused upstream, not every rule upstream refuses is refused here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api._cel_values import unescape

__all__ = ["COST_LIMIT", "cost_error", "estimate_cost"]

Schema = Mapping[str, Any]
COST_LIMIT = 10_000_000  # StaticEstimatedCostLimit
_MAX_REQUEST = 3 * 1024 * 1024  # the apiserver's max request size, which bounds unbounded lists and strings
_MACRO = re.compile(
    r"((?:self|oldSelf|[A-Za-z_][A-Za-z0-9_]*)(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)"
    r"\s*\.\s*(all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_TRAVERSAL = re.compile(
    r"((?:self|oldSelf|[A-Za-z_][A-Za-z0-9_]*)(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*\.\s*"
    r"(matches|contains|endsWith|find|findAll|split|lowerAscii|upperAscii|replace|trim|indexOf|lastIndexOf)"
    r"\s*\(\s*('[^']*'|\"[^\"]*\")?")
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})


def _min_size(schema: Schema | None) -> int:
    """The fewest JSON bytes a value of ``schema`` takes (apiextensions' estimateMinSizeJSON)."""
    if schema is None:
        return 1
    kind = schema.get("type")
    if kind == "boolean":
        return 4
    if kind in ("number", "integer"):
        return 1
    if kind == "string":
        min_length = schema.get("minLength")
        return 2 + (min_length if isinstance(min_length, int) else 0)
    return 2  # [] or {}, or an int-or-string/preserve-unknown value at its smallest


def _items_of(schema: Schema | None) -> Schema | None:
    if schema is None:
        return None
    items = schema.get("items")
    if isinstance(items, Mapping):
        return items
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _size(schema: Schema | None) -> int:
    """The most elements (list or map) or characters (string) a value of ``schema`` can have."""
    if schema is None:
        return 0
    if schema.get("type") == "string":
        bound = schema.get("maxLength")
        return bound if isinstance(bound, int) else _MAX_REQUEST - 2
    bound = schema.get("maxItems") if schema.get("type") == "array" else schema.get("maxProperties")
    if isinstance(bound, int):
        return bound
    if schema.get("type") not in ("array", "object") or _items_of(schema) is None:
        return 0
    return (_MAX_REQUEST - 2) // (_min_size(_items_of(schema)) + 1)


def _resolve(chain: str, env: dict[str, Schema | None]) -> Schema | None:
    names = [n.strip() for n in chain.split(".")]
    if names[0] not in env:
        return None
    node = env[names[0]]
    for name in names[1:]:
        if node is None:
            return None
        props = node.get("properties")
        if isinstance(props, Mapping) and props:
            sub = props.get(unescape(name))
            node = sub if isinstance(sub, Mapping) else None
        else:
            node = _items_of(node) if isinstance(node.get("additionalProperties"), Mapping) else None
    return node


def _closing(text: str, start: int) -> int:
    """The index of the parenthesis closing the one opened just before ``start``."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _cost(text: str, env: dict[str, Schema | None]) -> int:
    total = 1
    position = 0
    while True:
        match = _MACRO.search(text, position)
        if match is None:
            break
        end = _closing(text, match.end())
        receiver = _resolve(match.group(1), env)
        body = _cost(text[match.end() : end], {**env, match.group(3): _items_of(receiver)})
        total += _cost(text[position : match.start()], env) - 1 + _size(receiver) * (body + 2)
        position = end + 1
    rest = text[position:]
    for call in _TRAVERSAL.finditer(rest):
        target = _resolve(call.group(1), env)
        if target is None or target.get("type") != "string":
            continue
        traversal = -(-_size(target) // 10)
        if call.group(2) in _REGEX_FUNCTIONS and call.group(3):
            traversal *= max(1, -(-(len(call.group(3)) - 2) // 4))
        total += traversal
    return total


def estimate_cost(rule: str, schema: Schema, cardinality: int) -> int:
    """A lower bound of upstream's estimated cost of ``rule`` at a node of ``schema`` run ``cardinality`` times."""
    return _cost(rule, {"self": schema, "oldSelf": schema}) * cardinality


def cost_error(rule: str, schema: Schema, cardinality: int) -> str:
    """Upstream's Forbidden detail when the estimate is past 100 times the limit, else ``""``."""
    if estimate_cost(rule, schema, cardinality) <= 100 * COST_LIMIT:
        return ""
    return ("estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding "
            "maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")


def node_cardinality(parent_cardinality: int | None, container: Schema, node: Schema) -> int | None:
    """How many times a rule at ``node`` (an item of ``container``) can run: None past an unbounded container."""
    bound = container.get("maxItems") if container.get("type") == "array" else container.get("maxProperties")
    if parent_cardinality is None or not isinstance(bound, int):
        return None
    return parent_cardinality * bound


def unbounded_cardinality(node: Schema) -> int:
    """How many values of ``node`` fit in one request (cel.Compile's MaxCardinality of a node)."""
    return _MAX_REQUEST // (_min_size(node) + 1)
