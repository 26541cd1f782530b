"""Go's ``base64.StdEncoding.Decode`` errors, offset for offset (``encoding/base64/base64.go`` ``decodeQuantum``)."""

from __future__ import annotations

import base64
import itertools
import random

import pytest

from kubeloop.api._go_base64 import base64_error


@pytest.mark.parametrize(("text", "at"), [
    ("", None), ("YQ==", None), ("YWI=", None), ("YWJj", None),
    ("YR==", None),            # trailing bits that are not zero: StdEncoding is not Strict()
    ("YW\nJj\r\n", None),      # line breaks are skipped anywhere
    ("YQ=\n=", None),          # even between the two "="
    ("YQ", 0),                 # a short quantum: its start (si - j)
    ("aGVsbG8", 4),
    ("YWJjZA", 4),
    ("YQ=", 3),                # one "=" of two: the input's length
    ("YQ=x", 2),               # the first "=" 's offset
    ("Y===", 1), ("=", 0), ("YWJj=", 4),
    ("YQ==YQ==", 4),           # anything after the padding: its offset
    ("YWJ=\n\nx", 6),
    ("ab-_", 2), ("abc!", 3), ("ab c", 2),
    ("é===", 0),               # offsets count bytes of UTF-8
    ("YWJjé", 4),
])
def test_errors_are_at_the_offset_go_reports(text: str, at: int | None) -> None:
    assert base64_error(text) == (None if at is None else f"illegal base64 data at input byte {at}")


def test_what_python_encodes_decodes_with_or_without_line_breaks() -> None:
    rng = random.Random(11)
    for size in range(0, 40):
        raw = rng.randbytes(size)
        encoded = base64.b64encode(raw).decode()
        assert base64_error(encoded) is None
        assert base64_error(base64.encodebytes(raw).decode()) is None  # MIME: a line break every 76 characters
        if encoded.endswith("="):
            assert base64_error(encoded.rstrip("=")) is not None, "padding is required"


def test_the_fast_check_agrees_with_the_decoders_walk_on_every_short_string() -> None:
    """Every string of up to 8 characters over a small alphabet (a letter, ``/``, ``=``, a URL-safe ``-`` and a
    line break): accepted by the fast check exactly when the walk of decodeQuantum finds no error."""
    from kubeloop.api._go_base64 import _corrupt_at, _well_formed

    for size in range(9):
        for chars in itertools.product("A/=-\n", repeat=size):
            text = "".join(chars)
            fast = _well_formed(text.replace("\n", ""))
            assert fast == (_corrupt_at(text.encode()) is None), repr(text)
