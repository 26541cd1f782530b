"""A DaemonSet's ``deprecated.daemonset.template.generation`` annotation, as the apps/v1 conversion reads it.

Upstream (release 1.32): k/k ``pkg/apis/apps/v1/conversion.go`` ``Convert_v1_DaemonSet_To_apps_DaemonSet``
reads the annotation into the internal ``spec.templateGeneration`` with ``strconv.ParseInt(value, 10,
64)`` and returns that function's error when it is no integer, so no write of a DaemonSet can carry a
value that is not one. Where the conversion runs decides how the error is answered:

- a create or update body (``handlers/rest.go`` ``transformDecodeError``): 400 BadRequest
  ``DaemonSet in version "v1" cannot be handled as a DaemonSet: <error>``;
- a JSON or merge patch's result, decoded into the internal type (``handlers/patch.go``
  ``jsonPatcher``): 422 on field ``patch``, its value the patched JSON;
- a strategic merge patch's result, converted to the internal version (``smpPatcher``), and a
  server-side apply's (``structuredmerge.go``: ``failed to convert to unversioned (<ns>/<name>;
  apps/v1, Kind=DaemonSet): <error>``): the error is no API status, so 500 with reason Unknown.

:func:`template_generation_error` is that ParseInt error's text (``strconv.ParseInt: parsing "x":
invalid syntax``, or ``value out of range`` past int64), ``None`` for any other kind or a good value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeloop.api import ResourceInfo

__all__ = ["TEMPLATE_GENERATION_ANNOTATION", "go_quote", "template_generation_error"]

TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"  # apps/v1 DeprecatedTemplateGeneration
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63
_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            "\\": "\\\\", '"': '\\"'}  # fmt: skip


def go_quote(text: str) -> str:
    """``strconv.Quote``: printable characters as they are, the others escaped."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def template_generation_error(info: ResourceInfo, obj: Mapping[str, Any]) -> str | None:
    if info.kind != "DaemonSet" or info.group != "apps" or info.custom:
        return None
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping) or TEMPLATE_GENERATION_ANNOTATION not in annotations:
        return None
    value = annotations[TEMPLATE_GENERATION_ANNOTATION]
    if not isinstance(value, str):
        return None  # the typed decode refuses it first (annotations are strings)
    if not _INTEGER.fullmatch(value):
        return f"strconv.ParseInt: parsing {go_quote(value)}: invalid syntax"
    if not -_INT64 <= int(value) < _INT64:
        return f"strconv.ParseInt: parsing {go_quote(value)}: value out of range"
    return None
