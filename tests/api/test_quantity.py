"""``resource.Quantity`` parsing and canonical form, checked against the tables of apimachinery's
``pkg/api/resource/quantity_test.go`` (each test names the table it takes its rows from), then by
properties: the canonical form is a fixed point, keeps the value (after upstream's rounding), and
orders as the exact values do."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api._quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    FORMAT_WRONG,
    NUMERIC,
    SUFFIX,
    QuantityError,
    canonical_text,
    parse_quantity,
    quantity_key,
)

D = Fraction


# TestQuantityParse: (input, value, format).
@pytest.mark.parametrize(("text", "value", "fmt"), [
    ("0", D(0), DECIMAL_SI), ("0n", D(0), DECIMAL_SI), ("0Ki", D(0), BINARY_SI), ("0T", D(0), DECIMAL_SI),
    ("1", D(1), DECIMAL_SI),
    ("1Ki", D(1024), BINARY_SI), ("7Mi", D(7 * 2**20), BINARY_SI), ("5Ti", D(5 * 2**40), BINARY_SI),
    ("3Ei", D(3 * 2**60), BINARY_SI), ("100Ti", D(100 * 2**40), BINARY_SI),
    ("5n", D(5, 10**9), DECIMAL_SI), ("4u", D(4, 10**6), DECIMAL_SI), ("3m", D(3, 1000), DECIMAL_SI),
    ("50k", D(50000), DECIMAL_SI), ("300T", D(3 * 10**14), DECIMAL_SI), ("1E", D(10**18), DECIMAL_SI),
    ("1E-3", D(1, 1000), DECIMAL_EXPONENT), ("1e3", D(1000), DECIMAL_EXPONENT), ("1E18", D(10**18), DECIMAL_EXPONENT),
    ("1e13", D(10**13), DECIMAL_EXPONENT), ("100.035k", D(100035), DECIMAL_SI),
    ("0.001", D(1, 1000), DECIMAL_SI), ("0.0005k", D(1, 2), DECIMAL_SI), ("0.00500", D(5, 1000), DECIMAL_SI),
    ("0.5e-1", D(5, 100), DECIMAL_EXPONENT), ("10.035M", D(10035000), DECIMAL_SI),
    ("1.2e3", D(1200), DECIMAL_EXPONENT), ("1.3E+6", D(1300000), DECIMAL_EXPONENT),
    ("1.7E18", D(17 * 10**17), DECIMAL_EXPONENT), ("6.987654321G", D(6987654321), DECIMAL_SI),
    ("1.01E", D(101 * 10**16), DECIMAL_SI),
    # Things that saturate/round
    ("3.001n", D(4, 10**9), DECIMAL_SI), ("1.1E-9", D(2, 10**9), DECIMAL_EXPONENT),
    ("0.0000000001", D(1, 10**9), DECIMAL_SI), ("0.5e-9", D(1, 10**9), DECIMAL_EXPONENT),
    ("0.00000012345", D(124, 10**9), DECIMAL_SI),
    ("9Ei", D(2**63 - 1), BINARY_SI), ("9223372036854775807Ki", D(2**63 - 1), BINARY_SI),
    ("12E", D(12 * 10**18), DECIMAL_SI),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", D(10243584, 100), BINARY_SI), ("0.5Mi", D(2**19), BINARY_SI),
    ("0.025Ti", D(274877906944, 10), BINARY_SI),
    # Things written by trolls
    ("0.000000000001Ki", D(2, 10**9), DECIMAL_SI), (".001", D(1, 1000), DECIMAL_SI), ("1.", D(1), DECIMAL_SI),
    ("1.G", D(10**9), DECIMAL_SI),
])
def test_parse_reads_upstream_values_and_formats(text: str, value: Fraction, fmt: str) -> None:
    for sign in ("", "-", "+"):  # the table is run negated and with an explicit "+" too
        quantity = parse_quantity(sign + text)
        assert quantity.value == (-value if sign == "-" else value)
        assert quantity.format == fmt


# TestQuantityParse's invalid list; the error is the one ParseQuantity returns.
@pytest.mark.parametrize(("text", "error"), [
    ("1.1.M", FORMAT_WRONG), ("1+1.0M", FORMAT_WRONG), ("0.1mi", SUFFIX), ("0.1am", FORMAT_WRONG),
    ("aoeu", FORMAT_WRONG), (".5i", SUFFIX), ("1i", SUFFIX), ("-3.01i", SUFFIX), ("-3.01e-", SUFFIX),
    ("1e4294967297", SUFFIX), (" 1", FORMAT_WRONG), ("1 ", FORMAT_WRONG), ("", FORMAT_WRONG),
    ("abc", FORMAT_WRONG), (".e-10", NUMERIC),
])
def test_parse_refuses_upstream_invalid_strings(text: str, error: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert str(caught.value) == error


def test_format_error_names_upstream_regular_expression() -> None:
    assert FORMAT_WRONG == ("quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


# TestQuantityString (expect, alternate): the alternate spelling re-emits as expect; expect as itself.
@pytest.mark.parametrize(("canonical", "alternate"), [
    ("1Gi", "1024Mi"), ("300Mi", "307200Ki"), ("1001Gi", "1025024Mi"), ("1Ti", "1024Gi"), ("5", "5000m"),
    ("500m", "0.5"), ("1G", "1000M"), ("1G", "0.001T"), ("1m", "1000u"), ("1080m", "1.08"),
    ("1080m", "1080000000n"), ("1e21", "1000E"), ("5e21", "5000E"), ("1e24", "1000000E"),
    ("1e9", ".001e12"), ("1e-3", "0.001e0"), ("1e-9", "1000e-12"), ("0", "00"),
    ("6Ki", None), ("80m", None), ("300M", None), ("1T", None), ("1234567M", None), ("3k", None), ("1025", None),
    ("80e-3", None), ("300e6", None), ("1e12", None), ("3e3", None), ("1n", None), ("1080n", None), ("80u", None),
])
def test_canonical_strings_are_upstream_ones(canonical: str, alternate: str | None) -> None:
    assert parse_quantity(canonical).text == canonical
    if alternate is not None:
        assert parse_quantity(alternate).text == canonical


# TestQuantityParseEmit, and its negated run.
@pytest.mark.parametrize(("text", "emitted"), [
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"),
    (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
])
def test_parse_emit(text: str, emitted: str) -> None:
    assert parse_quantity(text).text == emitted
    assert parse_quantity("-" + text).text == "-" + emitted


# TestParseQuantity (min/max rows): input, and what it reserializes to when it is not itself.
@pytest.mark.parametrize(("text", "canonical"), [
    ("-999999999999999999", None), ("999999999999999999.0", "999999999999999999"),
    ("999999999999999999.1", "999999999999999999100m"), ("9999999999999999999", None),
    ("1000000000000000000", "1E"), ("-1000000000000000000.0", "-1E"), ("9999999999999999999000m", "9999999999999999999"),
    ("1.0000000000000000001E", "1000000000000000000100m"), ("1.000000000000000001E", "1000000000000000001"),
    ("10000000000000000000", "10E"), ("-10000000000000000000000m", "-10E"), ("9223372036854775807", None),
    ("-9223372036854775808.1", "-9223372036854775808100m"), ("9223372036854775808000m", "9223372036854775808"),
])
def test_large_values_reserialize_as_upstream(text: str, canonical: str | None) -> None:
    assert parse_quantity(text).text == (canonical or text)


def test_the_brief_examples() -> None:
    assert canonical_text("1000m") == "1"
    assert canonical_text(0.5) == "500m"
    assert canonical_text("1024Mi") == "1Gi"
    assert canonical_text("0.1Gi") == "107374182400m"


def test_parsed_text_that_looks_canonical_is_kept_as_sent() -> None:
    """ParseQuantity keeps ``s: str`` on its int64 fast path when the digits look canonical, and
    MarshalJSON writes ``s`` back: these spellings survive a round trip through a real apiserver."""
    for text in ("+1", "01", "1.500", "1E3", "1e+3", "1.", "1.G", "+9Ki", "1030Ki"):
        assert parse_quantity(text).text == text
    # ...but not when the digits end in 000, start with 0, or sit at an exponent that is no multiple of 3.
    assert parse_quantity("1.000").text == "1"
    assert parse_quantity("0.500").text == "500m"
    assert parse_quantity("1.5").text == "1500m"
    assert parse_quantity("2048Ki").text == "2Mi"


def test_json_values_decode_as_unmarshal_json_does() -> None:
    """UnmarshalJSON: a number is read like its text, null is the zero Quantity, whitespace is trimmed
    (TestJSONWhitespace); anything else is the format error."""
    assert canonical_text(1) == "1"
    assert canonical_text(-1) == "-1"
    assert canonical_text(1000) == "1k"
    assert canonical_text(1.5) == "1500m"
    assert canonical_text(None) == "0"
    assert canonical_text(" 1") == "1"
    assert canonical_text("1 ") == "1"
    for bad in (True, {}, [], "", float("nan")):
        with pytest.raises(QuantityError, match="regular expression"):
            canonical_text(bad)


def test_huge_exponents_stay_cheap() -> None:
    assert parse_quantity("1e2147483647").text == "10e2147483646"
    assert parse_quantity("1e-2147483647").text == "1e-9"
    assert parse_quantity("1e999999").compare(parse_quantity("2e999998")) == 1
    assert parse_quantity("-1e999999").compare(parse_quantity("2e999998")) == -1


def test_long_numbers_are_exact() -> None:
    digits = "7" * 5000
    assert parse_quantity(digits).text == digits
    assert parse_quantity(digits + "000").text == digits + "k"


def test_quantity_key_equates_values_not_spellings() -> None:
    assert quantity_key("1") == quantity_key("1000m") == quantity_key(1) == quantity_key("1e0")
    assert quantity_key("1Gi") == quantity_key("1073741824")
    assert quantity_key("1") != quantity_key("1001m")
    assert quantity_key("1Gi") == "1073741824"
    assert quantity_key("abc") == "abc"
    assert quantity_key(None) == quantity_key("0")


# -- properties -------------------------------------------------------------------------------------

suffixes = st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
                            "e3", "E-3", "e0", "e+6", "e-12", "e21", "E7"])
quantity_texts = st.builds(
    lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
    st.sampled_from(["", "-", "+"]),
    st.text(alphabet="0123456789", max_size=20),
    st.sampled_from(["", "."]) | st.text(alphabet="0123456789", min_size=1, max_size=12).map(lambda d: "." + d),
    suffixes,
).filter(lambda t: any(c.isdigit() for c in t.split("e")[0].split("E")[0]))


@settings(max_examples=200, deadline=None)
@given(text=quantity_texts)
def test_canonical_form_is_a_fixed_point(text: str) -> None:
    once = parse_quantity(text)
    twice = parse_quantity(once.text)
    assert twice.text == once.text
    assert twice.value == once.value


@settings(max_examples=200, deadline=None)
@given(text=quantity_texts)
def test_value_is_kept_as_upstream_rounds(text: str) -> None:
    """The parsed value is the exact value, rounded up (away from zero) to a whole nano, capped at
    2^63-1 for BinarySI; the emitted text reads back to that same value."""
    quantity = parse_quantity(text)
    exact = _exact(text)
    magnitude = abs(exact)
    nano = Fraction(1, 10**9)
    rounded = -(-magnitude // nano) * nano
    if quantity.format == BINARY_SI or text.endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")):
        rounded = min(rounded, Fraction(2**63 - 1))
    assert quantity.value == (rounded if exact >= 0 else -rounded)
    assert parse_quantity(quantity.text).value == quantity.value


@settings(max_examples=300, deadline=None)
@given(a=quantity_texts, b=quantity_texts)
def test_comparison_orders_by_value(a: str, b: str) -> None:
    qa, qb = parse_quantity(a), parse_quantity(b)
    expected = (qa.value > qb.value) - (qa.value < qb.value)
    assert qa.compare(qb) == expected
    assert (quantity_key(a) == quantity_key(b)) == (expected == 0)


def _exact(text: str) -> Fraction:
    """The value ``text`` spells, with no rounding: the reference the properties compare with."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    for suffix, factor in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40), ("Pi", 2**50), ("Ei", 2**60)):
        if body.endswith(suffix):
            return sign * _number(body[:-2]) * factor
    for letter in "eE":
        head, sep, tail = body.partition(letter)
        if sep and tail and (tail[0] in "+-" or tail[0].isdigit()):
            return sign * _number(head) * Fraction(10) ** int(tail)
    decimal = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
    if body and body[-1] in decimal:
        return sign * _number(body[:-1]) * Fraction(10) ** decimal[body[-1]]
    return sign * _number(body)


def _number(text: str) -> Fraction:
    whole, _, frac = text.partition(".")
    return Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
