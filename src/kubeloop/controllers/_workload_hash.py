"""Pod template hashing and comparison shared by the Deployment and StatefulSet controllers.

:func:`compute_hash` is upstream's ``controller.ComputeHash`` in shape (k/k
``pkg/controller/controller_utils.go``): FNV-32a over a deterministic encoding of the pod template,
then the collision count as 8 little-endian bytes when it is set, rendered as the decimal value
through :func:`safe_encode_string` (apimachinery ``util/rand.SafeEncodeString``, an alphabet
without vowels so hashes never spell words). Upstream encodes the Go struct with spew; here the
encoding is the template's JSON with sorted keys after :func:`normalize`, so the value is stable
across processes and releases but not byte-equal to upstream's (nothing relies on that).

:func:`normalize` drops ``null`` values and empty maps/lists recursively, which is what
``apiequality.Semantic.DeepEqual`` treats as equal (nil and empty); :func:`equal_ignore_hash`
(``EqualIgnoreHash``) compares two templates ignoring the ``pod-template-hash`` label.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "POD_TEMPLATE_HASH_LABEL",
    "compute_hash",
    "equal_ignore_hash",
    "fnv32a",
    "normalize",
    "safe_encode_string",
]

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
# apimachinery util/rand: consonants and digits that cannot form bad words (no vowels, 0, 1, 3).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes, seed: int = _FNV32_OFFSET) -> int:
    h = seed
    for byte in data:
        h ^= byte
        h = (h * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode_string(s: str) -> str:
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in s.encode())


def normalize(value: Any) -> Any:
    """``value`` without nulls and empty maps/lists (recursively): Semantic.DeepEqual's view."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            n = normalize(v)
            if n is None or (isinstance(n, dict | list) and not n):
                continue
            out[k] = n
        return out
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def compute_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    data = orjson.dumps(normalize(template), option=orjson.OPT_SORT_KEYS)
    h = fnv32a(data)
    if collision_count is not None:
        h = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\x00" * 4, seed=h)
    return safe_encode_string(str(h))


def _without_hash(template: Mapping[str, Any]) -> Any:
    normalized = normalize(template)
    labels = (normalized.get("metadata") or {}).get("labels")
    if isinstance(labels, dict) and POD_TEMPLATE_HASH_LABEL in labels:
        del labels[POD_TEMPLATE_HASH_LABEL]
        if not labels:
            del normalized["metadata"]["labels"]
            if not normalized["metadata"]:
                del normalized["metadata"]
    return normalized


def equal_ignore_hash(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two pod templates are equal once the ``pod-template-hash`` label is ignored."""
    return bool(_without_hash(a or {}) == _without_hash(b or {}))
