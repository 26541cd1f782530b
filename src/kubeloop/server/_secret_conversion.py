"""A Secret's ``stringData``, as the core/v1 conversion folds it into ``data``.

Upstream (release 1.32): k/k ``pkg/apis/core/v1/conversion.go`` ``Convert_v1_Secret_To_core_Secret``
copies every ``stringData`` entry into ``data`` (a key in both takes ``stringData``'s value: "StringData
overwrites Data") when ``stringData`` is not empty; the internal Secret has no ``stringData``, so what is
stored and answered never holds it (``types.go``: "It is never output when reading from the API"). The
conversion runs wherever a v1 Secret becomes the internal one: a create or update body's decode
(``handlers/create.go``, ``update.go``), a patched object's decode or conversion (``handlers/patch.go``), a
server-side apply's result (``structuredmerge.go``), dry-run or not. A create's or update's managedFields
entry is computed after it (``fieldmanager.UpdateNoErrors`` runs on the decoded, internal object, made
versioned again), so it owns ``f:data`` keys, never ``f:stringData``.

:func:`fold_string_data` does it in place on a v1 Secret's JSON: ``data``'s value of a key is its bytes'
standard base64 (the UTF-8 of the string, as Go's ``[]byte(v)``), and ``data`` is re-keyed in sorted order
as Go's encoding of a map writes it.
"""

from __future__ import annotations

import base64
from typing import Any

__all__ = ["fold_string_data"]


def fold_string_data(obj: dict[str, Any]) -> bool:
    """Fold ``obj``'s ``stringData`` into ``data`` and drop it; whether it had one (else ``obj`` is unchanged).
    A null value is the empty string (``encoding/json`` decodes a null map value to the zero value)."""
    if "stringData" not in obj:
        return False
    strings = obj.pop("stringData")
    if isinstance(strings, dict) and strings:
        data = obj.get("data")
        merged: dict[str, Any] = dict(data) if isinstance(data, dict) else {}
        for key, value in strings.items():
            text = value if isinstance(value, str) else ""
            merged[key] = base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")
        obj["data"] = {key: merged[key] for key in sorted(merged)}
    return True
