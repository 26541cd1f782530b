"""Label selectors (and the field selector names, re-exported): parse, match, print, as upstream.

Label selectors (apimachinery ``pkg/labels/selector.go``): the full string syntax
(``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``, ``k>1``, ``k<1``;
comma = AND; whitespace between tokens ignored), parsed by the same lexer/parser rules and with
the same error texts (``unable to parse requirement: ...``), raised as :class:`BadRequest`.
:func:`label_selector_from_dict` converts a ``metav1.LabelSelector`` (``matchLabels`` and
``matchExpressions``) like ``LabelSelectorAsSelector``: ``None`` matches nothing, ``{}`` matches
everything. Requirements are kept sorted by key (stable) and values sorted and unique, so
``str(sel)`` is canonical and ``parse_label_selector(str(sel)) == sel``.

Field selectors live in ``_field_selectors`` and are re-exported here.

Selectors are immutable; ``matches`` runs for every object of every list and watch,
so each selector precompiles a flat plan at construction and matching does no allocation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeloop.api._errors import BadRequest, FieldError
from kubeloop.api._field_selectors import (
    FieldRequirement,
    FieldSelector,
    check_field_selector,
    escape_field_value,
    field_value,
    parse_field_selector,
    requires_exact_name,
)
from kubeloop.api._validation import is_qualified_name, is_valid_label_value

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "check_field_selector",
    "escape_field_value",
    "field_value",
    "go_label_selector_string",
    "label_selector_from_dict",
    "parse_field_selector",
    "parse_label_selector",
    "requires_exact_name",
]

# selection.Operator values.
EQUALS, DOUBLE_EQUALS, NOT_EQUALS, IN, NOT_IN = "=", "==", "!=", "in", "notin"
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"
_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_ALL_OPERATORS = (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST)
_INT64 = re.compile(r"[+-]?[0-9]+")

# Plan opcodes.
_OP_EQ, _OP_IN, _OP_NE, _OP_NOTIN, _OP_EXISTS, _OP_ABSENT, _OP_GT, _OP_LT = range(8)
_EMPTY: Mapping[str, str] = {}


def _aggregate(errors: list[str]) -> str:
    # utilerrors aggregate: one message as is, several deduplicated inside [a, b].
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _parse_int64(value: str) -> int | None:
    if not _INT64.fullmatch(value):
        return None
    number = int(value)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One term of a label selector: ``key``, an operator (``=``, ``==``, ``!=``, ``in``, ``notin``,
    ``exists``, ``!``, ``gt``, ``lt``) and its sorted, unique ``values``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: str, values: Iterable[str] = ()) -> LabelRequirement:
        """Validate like ``labels.NewRequirement``; raises :class:`BadRequest` with its messages."""
        vals = list(values)
        errs = [str(e) for e in _requirement_errors(key, operator, vals)]
        if errs:
            raise BadRequest(_aggregate(errs))
        return cls(key, operator, tuple(sorted(set(vals))))

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(self.values)
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({joined})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{joined}"

    def matches(self, labels: Mapping[str, str]) -> bool:
        return LabelSelector((self,)).matches(labels)


def _requirement_errors(key: str, operator: str, values: list[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    key_errors = is_qualified_name(key)
    if key_errors:
        errs.append(FieldError.invalid("key", key, "; ".join(key_errors)))
    if operator in (IN, NOT_IN):
        if not values:
            errs.append(FieldError.invalid("values", values, "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(values) != 1:
            errs.append(FieldError.invalid("values", values, "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            errs.append(FieldError.invalid("values", values, "values set must be empty for exists and does not exist"))
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            errs.append(FieldError.invalid("values", values, "for 'Gt', 'Lt' operators, exactly one value is required"))
        errs.extend(FieldError.invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
                    for i, v in enumerate(values) if _parse_int64(v) is None)
    else:
        errs.append(FieldError.not_supported("operator", operator, list(_ALL_OPERATORS)))
    for i, value in enumerate(values):
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(FieldError.invalid(f"values[{i}][{key}]", value, "; ".join(msgs)))
    return errs


def _compile(req: LabelRequirement) -> tuple[int, str, Any]:
    op, key, values = req.operator, req.key, req.values
    if op in (EQUALS, DOUBLE_EQUALS, IN):
        return (_OP_EQ, key, values[0]) if len(values) == 1 else (_OP_IN, key, frozenset(values))
    if op in (NOT_EQUALS, NOT_IN):
        return (_OP_NE, key, values[0]) if len(values) == 1 else (_OP_NOTIN, key, frozenset(values))
    if op == EXISTS:
        return (_OP_EXISTS, key, None)
    if op == DOES_NOT_EXIST:
        return (_OP_ABSENT, key, None)
    bound = _parse_int64(values[0]) if len(values) == 1 else None
    return (_OP_GT if op == GREATER_THAN else _OP_LT, key, bound)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """An AND of :class:`LabelRequirement`; ``LabelSelector()`` matches everything and
    ``LabelSelector.nothing()`` (a nil ``metav1.LabelSelector``) matches nothing."""

    requirements: tuple[LabelRequirement, ...] = ()
    matches_nothing: bool = False
    _plan: tuple[tuple[int, str, Any], ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plan", tuple(_compile(r) for r in self.requirements))

    @classmethod
    def everything(cls) -> LabelSelector:
        return cls()

    @classmethod
    def nothing(cls) -> LabelSelector:
        return cls(matches_nothing=True)

    @classmethod
    def from_labels(cls, labels: Mapping[str, str] | None) -> LabelSelector:
        """Exactly these labels (``labels.SelectorFromSet``, no validation); empty matches all."""
        return cls(tuple(LabelRequirement(k, EQUALS, (v,)) for k, v in sorted((labels or {}).items())))

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (``Selector.Empty``)."""
        return not self.requirements and not self.matches_nothing

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.matches_nothing:
            return False
        lbls = labels if labels is not None else _EMPTY
        for code, key, arg in self._plan:
            value = lbls.get(key)
            if code == _OP_EQ:
                if value != arg:
                    return False
            elif code == _OP_IN:
                if value is None or value not in arg:
                    return False
            elif code == _OP_NE:
                if value is not None and value == arg:
                    return False
            elif code == _OP_NOTIN:
                if value is not None and value in arg:
                    return False
            elif code == _OP_EXISTS:
                if value is None:
                    return False
            elif code == _OP_ABSENT:
                if value is not None:
                    return False
            else:
                number = _parse_int64(value) if value is not None else None
                if number is None or arg is None:
                    return False
                if (code == _OP_GT and not number > arg) or (code == _OP_LT and not number < arg):
                    return False
        return True

    def requires_exact_match(self, key: str) -> str | None:
        """The one value ``key`` must have (``=``, ``==`` or a one-value ``in`` on the first term for
        ``key``), else None (``Selector.RequiresExactMatch``)."""
        for req in self.requirements:
            if req.key == key:
                if req.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(req.values) == 1:
                    return req.values[0]
                return None
        return None


# --- label selector string parser (selector.go Lexer/Parser) ------------------------------------

_T_ERROR, _T_EOS, _T_CLOSE, _T_COMMA, _T_NOT, _T_DEQ, _T_EQ, _T_GT, _T_ID, _T_IN, _T_LT, _T_NE, _T_NOTIN, _T_OPEN = range(14)
_STRING_TO_TOKEN = {")": _T_CLOSE, ",": _T_COMMA, "!": _T_NOT, "==": _T_DEQ, "=": _T_EQ, ">": _T_GT, "in": _T_IN,
                    "<": _T_LT, "!=": _T_NE, "notin": _T_NOTIN, "(": _T_OPEN}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKEN_TO_OPERATOR = {_T_IN: IN, _T_EQ: EQUALS, _T_DEQ: DOUBLE_EQUALS, _T_GT: GREATER_THAN, _T_LT: LESS_THAN,
                      _T_NOTIN: NOT_IN, _T_NE: NOT_EQUALS}


class _ParseError(Exception):
    pass


def _lex(text: str) -> list[tuple[int, str]]:
    items: list[tuple[int, str]] = []
    pos, end = 0, len(text)
    # A NUL ends the input, as Go's lexer uses 0 for end of string.
    nul = text.find("\x00")
    if nul >= 0:
        end = nul
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= end:
            items.append((_T_EOS, ""))
            return items
        if text[pos] in _SPECIAL:
            buffer, last = "", (_T_ERROR, "")
            while pos < end and text[pos] in _SPECIAL:
                buffer += text[pos]
                token = _STRING_TO_TOKEN.get(buffer)
                if token is not None:
                    last = (token, buffer)
                elif last[0] != _T_ERROR:
                    break
                pos += 1
            if last[0] == _T_ERROR:
                last = (_T_ERROR, f"error expected: keyword found '{buffer}'")
            items.append(last)
        else:
            start = pos
            while pos < end and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            word = text[start:pos]
            items.append((_STRING_TO_TOKEN.get(word, _T_ID), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def lookahead(self, values: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, lit

    def consume(self, values: bool) -> tuple[int, str]:
        item = self.lookahead(values)
        self.pos += 1
        return item

    def parse(self) -> list[LabelRequirement]:
        reqs: list[LabelRequirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self.requirement())
                except _ParseError as exc:
                    raise _ParseError(f"unable to parse requirement: {exc}") from None
                tok, lit = self.consume(True)
                if tok == _T_EOS:
                    return reqs
                if tok == _T_COMMA:
                    tok2, lit2 = self.lookahead(True)
                    if tok2 not in (_T_ID, _T_NOT):
                        raise _ParseError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise _ParseError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _T_EOS:
                return reqs
            else:
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> LabelRequirement:
        operator = ""
        tok, lit = self.consume(True)
        if tok == _T_NOT:
            operator = DOES_NOT_EXIST
            tok, lit = self.consume(True)
        if tok != _T_ID:
            raise _ParseError(f"found '{lit}', expected: identifier")
        key_errors = is_qualified_name(lit)
        if key_errors:
            # The parser validates the key with a nil field path, printed by Go as "<nil>".
            raise _ParseError(str(FieldError.invalid("<nil>", lit, "; ".join(key_errors))))
        if operator != DOES_NOT_EXIST and self.lookahead(True)[0] in (_T_EOS, _T_COMMA):
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            return self.new(lit, operator, [])
        op_tok, op_lit = self.consume(False)
        operator = _TOKEN_TO_OPERATOR.get(op_tok, "")
        if not operator:
            raise _ParseError(f"found '{op_lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        values = self.set_values() if operator in (IN, NOT_IN) else self.exact_value()
        return self.new(lit, operator, sorted(values))

    @staticmethod
    def new(key: str, operator: str, values: list[str]) -> LabelRequirement:
        errs = [str(e) for e in _requirement_errors(key, operator, values)]
        if errs:
            raise _ParseError(_aggregate(errs))
        return LabelRequirement(key, operator, tuple(values))

    def set_values(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok != _T_OPEN:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_T_ID, _T_COMMA):
            values = self.identifiers()
            self.consume(True)  # the ')' that identifiers() stopped at
            return values
        if tok == _T_CLOSE:
            self.consume(True)
            return {""}
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok == _T_ID:
                values.add(lit)
                tok2, lit2 = self.lookahead(True)
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_CLOSE:
                    return values
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _T_COMMA:
                if not values:
                    values.add("")  # "(,"
                tok2, _ = self.lookahead(True)
                if tok2 == _T_CLOSE:
                    values.add("")  # ",)"
                    return values
                if tok2 == _T_COMMA:
                    self.consume(True)
                    values.add("")  # ",,"
            else:
                raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.lookahead(True)
        if tok in (_T_EOS, _T_COMMA):
            return {""}
        tok, lit = self.consume(True)
        if tok == _T_ID:
            return {lit}
        raise _ParseError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the ``labelSelector`` string syntax; "" and None match everything.

    Raises :class:`BadRequest` with upstream's message for a malformed selector.
    """
    if not text:
        return LabelSelector()
    try:
        reqs = _Parser(text).parse()
    except _ParseError as exc:
        raise BadRequest(str(exc)) from None
    reqs.sort(key=lambda r: r.key)
    return LabelSelector(tuple(reqs))


_DICT_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` as a selector (``LabelSelectorAsSelector``).

    ``None`` matches nothing; a selector with no ``matchLabels`` and no ``matchExpressions``
    matches everything. Raises :class:`BadRequest` for an invalid key, value or operator.
    """
    if selector is None:
        return LabelSelector.nothing()
    if not isinstance(selector, Mapping):
        raise BadRequest(f"a label selector must be an object, got {type(selector).__name__}")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        raise BadRequest("matchLabels must be an object and matchExpressions a list")
    reqs: list[LabelRequirement] = []
    for key, value in match_labels.items():
        reqs.append(LabelRequirement.new(str(key), EQUALS, [str(value)]))
    for expr in expressions:
        if not isinstance(expr, Mapping):
            raise BadRequest("each matchExpressions item must be an object")
        operator = str(expr.get("operator") or "")
        if operator not in _DICT_OPERATORS:
            raise BadRequest(f'"{operator}" is not a valid label selector operator')
        values = expr.get("values") or []
        if not isinstance(values, list):
            raise BadRequest("matchExpressions values must be a list")
        reqs.append(LabelRequirement.new(str(expr.get("key") or ""), _DICT_OPERATORS[operator],
                                         [str(v) for v in values]))
    reqs.sort(key=lambda r: r.key)
    return LabelSelector(tuple(reqs))


def go_label_selector_string(selector: Mapping[str, Any]) -> str:
    """Go's generated ``LabelSelector.String()`` (gogo protobuf), which ``%v`` of a ``*LabelSelector`` prints
    (a printer column, an error text): each requirement printed with ``%v`` as a plain struct (its
    ``String`` has a pointer receiver)."""
    labels = selector.get("matchLabels") or {}
    pairs = "".join(f"{key}: {labels[key]}," for key in sorted(labels))
    expressions = "".join(f"{{{e.get('key', '')} {e.get('operator', '')} [{' '.join(e.get('values') or [])}]}},"
                          for e in selector.get("matchExpressions") or [])
    return f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
