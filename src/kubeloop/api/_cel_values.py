"""A custom resource's JSON as CEL sees it in ``self`` and ``oldSelf``: typed by the schema, names escaped.

What upstream's ``UnstructuredToVal`` (k8s.io/apiserver ``pkg/cel/common/values.go``) and
``SchemaDeclType`` (``pkg/cel/common/schemas.go``) do, as a conversion of plain JSON:

- an object with ``properties``: each declared property under its escaped name (:func:`escape`,
  k8s.io/apiserver ``pkg/cel/escaping.go``: ``foo-bar`` is ``foo__dash__bar``, ``namespace`` is
  ``__namespace__``; a name that cannot be escaped is not reachable); a ``null`` value is an absent
  field, so ``has()`` is false;
- an object with ``additionalProperties``: a map, keys as they are (``self['a.b']``);
- ``type: number``: a double, even when the JSON holds ``1``; ``type: integer``: an int;
- ``format: byte`` strings are bytes, ``duration`` a duration, ``date``/``date-time`` a timestamp;
- the root (and any ``x-kubernetes-embedded-resource``) keeps ``apiVersion`` and ``kind`` and only
  ``metadata.name`` and ``metadata.generateName`` (``model.WithTypeAndObjectMeta``);
- ``x-kubernetes-int-or-string`` and ``x-kubernetes-preserve-unknown-fields`` values pass as they are.

Pure functions over JSON values; nothing here evaluates a rule.
"""

from __future__ import annotations

import base64
import datetime
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["escape", "go_duration", "timestamp_of", "to_cel", "unescape"]

Schema = Mapping[str, Any]

# The CEL lexer's reserved words; "namespace" is the one Kubernetes fields hit.
_RESERVED = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
    "import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
})
_EXPAND = re.compile(r"(__|[-./]|[^a-zA-Z0-9\-./_])")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_UNESCAPE = re.compile(r"__(underscores|dot|dash|slash)__")
_UNESCAPES = {"underscores": "__", "dot": ".", "dash": "-", "slash": "/"}


def escape(name: str) -> str | None:
    """The identifier CEL reaches property ``name`` by, or None when it cannot be reached."""
    if not name or "0" <= name[0] <= "9":
        return None
    if name in _RESERVED:
        return f"__{name}__"
    unsupported = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unsupported
        text = match.group(0)
        if text in _ESCAPES:
            return _ESCAPES[text]
        unsupported = True
        return ""

    escaped = _EXPAND.sub(replace, name)
    return None if unsupported else escaped


def unescape(ident: str) -> str:
    """The property name an escaped identifier stands for (``__namespace__`` is ``namespace``)."""
    if ident.startswith("__") and ident.endswith("__") and ident[2:-2] in _RESERVED:
        return ident[2:-2]
    return _UNESCAPE.sub(lambda m: _UNESCAPES[m.group(1)], ident)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: str) -> datetime.timedelta | None:
    """Go's ``time.ParseDuration`` (``1h30m``, ``-1.5s``, ``0``), or None when it refuses ``text``."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return datetime.timedelta(0)
    if not body:
        return None
    seconds = 0.0
    position = 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != position:
            return None
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(body):
        return None
    return datetime.timedelta(seconds=-seconds if text.startswith("-") else seconds)


def _timestamp(text: str, fmt: str) -> datetime.datetime | None:
    try:
        if fmt == "date":
            day = datetime.date.fromisoformat(text)
            return datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC)
        value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)


def timestamp_of(text: str) -> datetime.datetime | None:
    """An RFC 3339 timestamp (``2024-01-01T00:00:00Z``), or None: what CEL's ``timestamp()`` accepts."""
    if "T" not in text.upper():
        return None
    return _timestamp(text, "date-time")


def _string(value: str, schema: Schema) -> Any:
    fmt = schema.get("format")
    if fmt == "byte":
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            return value
    if fmt == "duration":
        duration = go_duration(value)
        return value if duration is None else duration
    if fmt in ("date", "date-time"):
        stamp = _timestamp(value, str(fmt))
        return value if stamp is None else stamp
    return value


def to_cel(value: Any, schema: Schema | None, *, resource_root: bool = False) -> Any:
    """``value`` as the engine should see it under ``schema`` (None: as it is)."""
    if schema is None or schema.get("x-kubernetes-int-or-string"):
        return value
    if isinstance(value, dict):
        return _object(value, schema, resource_root or bool(schema.get("x-kubernetes-embedded-resource")))
    if isinstance(value, list):
        items = schema.get("items")
        sub = items if isinstance(items, Mapping) else None
        return [to_cel(v, sub) for v in value]  # a null item stays (indexes hold); CEL sees null
    if isinstance(value, str):
        return _string(value, schema) if schema.get("type") == "string" else value
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _object(value: dict[str, Any], schema: Schema, typed_meta: bool) -> dict[str, Any]:
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    out: dict[str, Any] = {}
    if isinstance(props, Mapping) and props:
        for name, item in value.items():
            if item is None:
                continue
            sub = props.get(name)
            if isinstance(sub, Mapping):
                ident = escape(name)
                if ident is not None:
                    out[ident] = to_cel(item, sub)
            elif schema.get("x-kubernetes-preserve-unknown-fields"):
                out[name] = item
    elif isinstance(extra, Mapping):
        out = {k: to_cel(v, extra) for k, v in value.items() if v is not None}
    else:
        out = {k: v for k, v in value.items() if v is not None}
    if typed_meta:
        for key in ("apiVersion", "kind"):
            if isinstance(value.get(key), str):
                out[key] = value[key]
        meta = value.get("metadata")
        if isinstance(meta, dict):
            out["metadata"] = {k: meta[k] for k in ("name", "generateName") if isinstance(meta.get(k), str)}
    return out
