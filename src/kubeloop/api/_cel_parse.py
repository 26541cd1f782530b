"""A CEL expression as a tree with source offsets, for the type checker (:mod:`kubeloop.api._cel_check`).

The CEL engine (the ``cel`` package) parses and runs expressions but exposes no syntax tree, so this module
parses again, into :class:`Node` values that carry what cel-go's checker reports against: each node's
offset is where cel-go's parser puts the node's id (the operator of a binary or unary expression, the
``.`` of a selection, the ``(`` of a call, the ``[`` of an index, the ``?`` of a conditional, the first
character of a literal or identifier), so an error reads ``ERROR: <input>:1:11: ...`` at upstream's column.

Contract: :func:`parse` is called only on text the engine has already accepted, and returns ``None`` for
anything it does not understand; the checker then reports nothing, so an expression this parser cannot
read never gets an error the engine's parser did not give. Operators are named as in cel-go
(``_+_``, ``_&&_``, ``!_``, ``-_``, ``_?_:_``, ``@in``, ``_[_]``); the macros (``has``, ``all``,
``exists``, ``exists_one``, ``map``, ``filter``) are kept as their own node kinds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MACROS", "Node", "parse"]


@dataclass(frozen=True, slots=True)
class Node:
    """One expression: ``kind`` (literal, ident, select, optselect, index, call, member, macro, list, map,
    struct), ``value`` (a literal's type name, a name, a field or a function), ``args`` (operands; a member
    call's target first), ``pos`` (the source offset cel-go reports for it)."""

    kind: str
    value: str
    args: tuple[Node, ...]
    pos: int


MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>[rR]?[bB]?[rR]?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||\.\?|[-+*/%!<>?:.,\[\](){}])
""", re.VERBOSE | re.DOTALL)

_BINARY = {"||": (1, "_||_"), "&&": (2, "_&&_"), "<": (3, "_<_"), "<=": (3, "_<=_"), ">": (3, "_>_"),
           ">=": (3, "_>=_"), "==": (3, "_==_"), "!=": (3, "_!=_"), "in": (3, "@in"), "+": (4, "_+_"),
           "-": (4, "_-_"), "*": (5, "_*_"), "/": (5, "_/_"), "%": (5, "_%_")}


class _Unreadable(Exception):
    """The text is outside what this parser reads: the checker stays silent."""


def _tokens(source: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    position = 0
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None:
            raise _Unreadable
        kind = match.lastgroup or ""
        if kind != "space":
            text = match.group(0)
            if kind == "name" and text in ("true", "false", "null", "in"):
                kind = "op" if text == "in" else "keyword"
            out.append((kind, text, position))
        position = match.end()
    out.append(("end", "", len(source)))
    return out


class _Parser:
    def __init__(self, source: str) -> None:
        self.tokens = _tokens(source)
        self.at = 0

    def peek(self, offset: int = 0) -> tuple[str, str, int]:
        return self.tokens[min(self.at + offset, len(self.tokens) - 1)]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.at]
        self.at = min(self.at + 1, len(self.tokens) - 1)
        return token

    def expect(self, text: str) -> int:
        kind, value, pos = self.take()
        if kind != "op" or value != text:
            raise _Unreadable
        return pos

    def is_op(self, text: str) -> bool:
        kind, value, _ = self.peek()
        return kind == "op" and value == text

    def expression(self) -> Node:
        condition = self.binary(1)
        if not self.is_op("?"):
            return condition
        pos = self.expect("?")
        then = self.binary(1)
        self.expect(":")
        otherwise = self.expression()
        return Node("call", "_?_:_", (condition, then, otherwise), pos)

    def binary(self, level: int) -> Node:
        """Precedence climbing: operators of one level associate to the left."""
        left = self.unary()
        while True:
            kind, text, pos = self.peek()
            entry = _BINARY.get(text) if kind == "op" else None
            if entry is None or entry[0] < level:
                return left
            self.take()
            right = self.binary(entry[0] + 1)
            left = Node("call", entry[1], (left, right), pos)

    def unary(self) -> Node:
        kind, text, pos = self.peek()
        if kind == "op" and text in ("!", "-"):
            self.take()
            next_kind, _, _ = self.peek()
            if text == "-" and next_kind == "number":
                return self.member(self.literal(at=pos))
            operand = self.unary()
            return Node("call", "!_" if text == "!" else "-_", (operand,), pos)
        return self.member(self.primary())

    def arguments(self, close: str) -> tuple[Node, ...]:
        args: list[Node] = []
        while not self.is_op(close):
            args.append(self.expression())
            if not self.is_op(close):
                self.expect(",")
        self.expect(close)
        return tuple(args)

    def member(self, node: Node) -> Node:
        while True:
            kind, text, pos = self.peek()
            if kind != "op" or text not in (".", ".?", "["):
                return node
            self.take()
            if text == "[":
                optional = self.is_op("?")
                if optional:
                    self.take()
                index = self.expression()
                self.expect("]")
                node = Node("call", "_[?_]" if optional else "_[_]", (node, index), pos)
                continue
            name_kind, name, _ = self.take()
            if name_kind != "name":
                raise _Unreadable
            if text == "." and self.is_op("("):
                open_pos = self.expect("(")
                args = self.arguments(")")
                if name in MACROS and args and args[0].kind == "ident":
                    node = Node("macro", name, (node, *args), open_pos)
                else:
                    node = Node("member", name, (node, *args), open_pos)
            else:
                node = Node("optselect" if text == ".?" else "select", name, (node,), pos)

    def literal(self, *, at: int | None = None) -> Node:
        """A number; ``at``: the offset of a ``-`` before it (cel-go folds ``-1`` into one literal)."""
        _, text, pos = self.take()
        lowered = text.lower()
        if lowered.endswith("u"):
            type_name = "uint"
        elif not lowered.startswith("0x") and ("." in lowered or "e" in lowered):
            type_name = "double"
        else:
            type_name = "int"
        return Node("literal", type_name, (), pos if at is None else at)

    def primary(self) -> Node:
        kind, text, pos = self.peek()
        if kind == "number":
            return self.literal()
        if kind == "string":
            self.take()
            prefix = text[: len(text) - len(text.lstrip("rRbB"))]
            return Node("literal", "bytes" if "b" in prefix.lower() else "string", (), pos)
        if kind == "keyword":
            self.take()
            return Node("literal", "null_type" if text == "null" else "bool", (), pos)
        if kind == "op" and text == "(":
            self.take()
            inner = self.expression()
            self.expect(")")
            return inner
        if kind == "op" and text == "[":
            self.take()
            return Node("list", "", self.arguments("]"), pos)
        if kind == "op" and text == "{":
            self.take()
            entries: list[Node] = []
            while not self.is_op("}"):
                if self.is_op("?"):
                    self.take()
                entries.append(self.expression())
                self.expect(":")
                entries.append(self.expression())
                if not self.is_op("}"):
                    self.expect(",")
            self.expect("}")
            return Node("map", "", tuple(entries), pos)
        if kind == "op" and text == ".":
            self.take()  # a leading dot: the root container, which is empty here
            kind, text, pos = self.peek()
        if kind != "name":
            raise _Unreadable
        self.take()
        if self.is_op("("):
            open_pos = self.expect("(")
            args = self.arguments(")")
            return Node("call", text, args, open_pos)
        if self.is_op("{"):
            raise _Unreadable  # a message construction: no message types are declared here
        return Node("ident", text, (), pos)


def parse(source: str) -> Node | None:
    """The tree of ``source``, or None when this parser does not read it (see the module's contract)."""
    try:
        parser = _Parser(source)
        node = parser.expression()
        if parser.peek()[0] != "end":
            return None
        return node
    except (_Unreadable, RecursionError):
        return None
