"""The error Go's ``encoding/base64`` ``StdEncoding`` gives decoding a string, as ``encoding/json`` decodes a
``[]byte`` field (a Secret's ``data``, a ConfigMap's ``binaryData``, a webhook's ``caBundle``).

Upstream decodes a ``[]byte`` from a JSON string with ``base64.StdEncoding.Decode`` (``encoding/json``
``decode.go`` ``literalStore``; ``sigs.k8s.io/json`` keeps it). The standard alphabet only, with its ``=``
padding required; ``\\r`` and ``\\n`` are skipped wherever they stand. Trailing bits that are not zero are
accepted (the encoding is not ``Strict()``). A bad string is a ``CorruptInputError``:
``illegal base64 data at input byte N``, ``N`` a byte offset into the string's UTF-8 as
``decodeQuantum`` computes it (``encoding/base64/base64.go``), including its quirks (a string cut short
is reported at the start of its last quantum, counting the characters of that quantum but not the line
breaks between them).

:func:`base64_error` answers that text, or ``None`` when the string decodes. Well-formed strings (almost all)
are settled by binascii's strict decoder in C (about 2 ms a megabyte, where a regular expression took 140);
only the others walk the decoder's steps.
"""

from __future__ import annotations

import binascii

__all__ = ["base64_error"]

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = frozenset(b"\r\n")
_PAD = ord("=")


def base64_error(text: str) -> str | None:
    """``illegal base64 data at input byte N`` for a string ``StdEncoding`` refuses, else ``None``."""
    if _well_formed(text.replace("\r", "").replace("\n", "") if "\n" in text or "\r" in text else text):
        return None
    at = _corrupt_at(text.encode("utf-8", "surrogatepass"))
    return None if at is None else f"illegal base64 data at input byte {at}"


def _well_formed(text: str) -> bool:
    """Whether ``text`` (no line breaks: Go skips them anywhere, so they never decide) is whole quanta of
    the standard alphabet, the last one padded with one or two ``=``: binascii's strict mode checks the
    alphabet and the padding's shape in C, but takes surplus ``=`` after a full quantum, which the length
    and the place of the first ``=`` rule out (tests/api/test_go_base64.py compares it with the walk)."""
    if len(text) % 4 or text.find("=", 0, len(text) - 2) != -1:
        return False
    try:
        binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):  # ValueError: a character that is not ASCII
        return False
    return True


def _corrupt_at(src: bytes) -> int | None:
    """Where ``Encoding.Decode`` stops, quantum by quantum (its 8- and 4-byte fast paths fall back to
    ``decodeQuantum`` from the same offset, so they never change the answer)."""
    size = len(src)
    si = 0
    while si < size:
        j = 0  # characters of the alphabet in this quantum
        while j < 4:
            if si == size:
                return None if j == 0 else si - j  # padding is required: a short quantum is corrupt
            c = src[si]
            si += 1
            if c in _ALPHABET:
                j += 1
                continue
            if c in _NEWLINES:
                continue
            if c != _PAD or j < 2:
                return si - 1
            if j == 2:  # "==" expected, the first one read
                while si < size and src[si] in _NEWLINES:
                    si += 1
                if si == size:
                    return size
                if src[si] != _PAD:
                    return si - 1
                si += 1
            while si < size and src[si] in _NEWLINES:
                si += 1
            return si if si < size else None  # anything after the padding is corrupt
    return None
