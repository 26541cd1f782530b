"""``resource.Quantity`` as kube-apiserver decodes and re-encodes it (apimachinery ``pkg/api/resource``).

:func:`parse_quantity` reads a quantity string exactly as upstream's ``ParseQuantity`` does and
returns a :class:`Quantity`: its exact value, its format (``DecimalSI``, ``BinarySI`` or
``DecimalExponent``, chosen by the suffix) and ``text``, what upstream's ``MarshalJSON`` writes back.
:func:`canonical_text` is that round trip for one JSON value (a string, a number or ``null``, as
``UnmarshalJSON`` accepts them); :class:`QuantityError` carries upstream's error text.

Upstream's rules, all kept here (sources: ``quantity.go``, ``amount.go``, ``suffix.go``, and the
tables of ``quantity_test.go`` that ``tests/api/test_quantity.py`` checks):

- Values are exact decimals: an unscaled integer times a power of ten (``inf.Dec``); never a float.
  A value finer than 1n is rounded up, away from zero, to the next nano (``0.1n`` is ``1n``); a
  ``BinarySI`` value above 2^63-1 is capped there; a ``BinarySI`` value strictly between 0 and 1
  becomes ``DecimalSI``.
- The canonical form keeps the format but writes the largest exponent that loses nothing: trailing
  zeros move into an exponent that is a multiple of 3 (``1000m`` is ``1``, ``1.5`` is ``1500m``,
  ``1000M`` is ``1G``); ``BinarySI`` takes the largest power of 1024 (``1024Mi`` is ``1Gi``), unless
  the value is below 1024 in magnitude or not an integer, which is written ``DecimalSI``
  (``0.1Gi`` is ``107374182400m``). A ``DecimalSI`` exponent past ``E`` or below ``n`` is written
  in exponent form (``1000E`` is ``1e21``: newer upstream, which fixed ``1000E`` reading back as ``1``).
- ``ParseQuantity`` keeps the string it parsed, and ``MarshalJSON`` writes it back unchanged, when a
  fast-path test says it is already canonical: a decimal whose digits (leading zeros dropped) end
  in no ``000`` at an exponent that is a multiple of 3, or a binary integer not divisible by 8.
  So ``+1``, ``01``, ``1.500`` and ``1E3`` read back as sent, as on a real cluster.
- Exponents beyond an int32 are refused (newer upstream; 1.32 wrapped them into unrelated values).

Not modelled: a JSON number reaches :func:`canonical_text` as the value Python's JSON decoder made
of it, not its text, so ``1e3`` sent as a bare number reads back ``1k`` (upstream keeps ``1e3``).
Pure functions; :func:`canonical_text` memoises short spellings (a bounded table), as a few fill most manifests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "Quantity",
    "QuantityError",
    "canonical_text",
    "parse_quantity",
    "quantity_key",
    "resource_list_text",
]

DECIMAL_EXPONENT = "DecimalExponent"
BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"

# ErrFormatWrong, ErrNumeric, ErrSuffix (quantity.go), word for word.
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_NAMES = {e // 10: s for s, e in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_MAX_INT64 = 2**63 - 1
_MAX_INT32 = 2**31 - 1
_NANO = -9
# Python refuses int <-> str conversions past this many digits; longer numbers go through Decimal.
_INT_DIGITS = 4000
_INT_LIMIT = 10 ** (_INT_DIGITS - 1)


class QuantityError(ValueError):
    """A string ``ParseQuantity`` refuses; ``str()`` is upstream's error text."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """A parsed quantity: ``unscaled * 10**exponent`` exactly, its format, and the text upstream emits."""

    unscaled: int
    exponent: int
    format: str
    text: str

    @property
    def value(self) -> Fraction:
        """The exact value (beware: ``1e2000000000`` has two billion digits; :func:`quantity_key` does not)."""
        if self.exponent >= 0:
            return Fraction(self.unscaled * 10**self.exponent)
        return Fraction(self.unscaled, 10**-self.exponent)

    def approximate(self) -> float:
        """``AsApproximateFloat64``: the nearest float; infinite past the float range."""
        if self.unscaled == 0:
            return 0.0
        magnitude = len(_str_of(abs(self.unscaled))) + self.exponent
        if magnitude > 310:
            return math.copysign(math.inf, self.unscaled)
        if magnitude < -330:
            return 0.0
        return float(self.value)

    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1, as upstream's ``Cmp``; exact, without building huge powers of ten."""
        return _compare(self.unscaled, self.exponent, other.unscaled, other.exponent)


def parse_quantity(text: str) -> Quantity:
    """``ParseQuantity``: the quantity ``text`` spells, or :class:`QuantityError` with upstream's text."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Quantity(0, 0, DECIMAL_SI, "0")
    positive, value, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    keeps_text = _fast_path_keeps_text(num, denom, exponent, fmt)
    if not any("0" <= c <= "9" for c in value) and _slow_path(num, denom, exponent, fmt):
        raise QuantityError(NUMERIC)  # inf.Dec's SetString needs a digit (".e-10")
    digits = (num + denom).lstrip("0")
    unscaled = _int_of(digits) if digits else 0
    if base == 10:
        scale = exponent - len(denom)
    else:
        unscaled <<= exponent
        scale = -len(denom)
    if not positive:
        unscaled = -unscaled
    unscaled, scale = _round_up_to_nano(unscaled, scale)
    if fmt == BINARY_SI:
        if _compare(abs(unscaled), scale, _MAX_INT64, 0) > 0:
            unscaled, scale = (_MAX_INT64 if unscaled > 0 else -_MAX_INT64), 0
        if unscaled and _compare(abs(unscaled), scale, 1, 0) < 0:
            fmt = DECIMAL_SI
    canonical = text if keeps_text else _canonical(unscaled, scale, fmt)
    return Quantity(unscaled, scale, fmt, canonical)


# Short spellings already seen, and what they read back as (cleared when full: a bounded cache).
_SEEN: dict[str, str] = {}
_SEEN_LIMIT = 4096
_CACHED_LENGTH = 64


def canonical_text(value: Any) -> str:
    """What ``UnmarshalJSON`` then ``MarshalJSON`` make of a decoded JSON value (``null`` is ``"0"``).

    A string is trimmed of surrounding whitespace first, as upstream does; a number is read from its
    shortest decimal spelling; anything else (``true``, an object, a list) is refused with
    upstream's format error.
    """
    if type(value) is str:
        seen = _SEEN.get(value)
        if seen is not None:
            return seen
        text = parse_quantity(value.strip()).text
        if len(value) <= _CACHED_LENGTH:
            if len(_SEEN) >= _SEEN_LIMIT:
                _SEEN.clear()
            _SEEN[value] = text
        return text
    if value is None:
        return "0"
    if isinstance(value, str):
        return canonical_text(str(value))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuantityError(FORMAT_WRONG)
    return canonical_text(_number_text(value))


# The same for resource_list_text.
_SEEN_LISTED: dict[str, str] = {}
_MILLI = -3


def resource_list_text(value: Any) -> str:
    """:func:`canonical_text` of a ResourceList value, which defaulting (core v1
    ``SetDefaults_ResourceList``) then rounds up, away from zero, to a whole milli (``Quantity.RoundUp(-3)``):
    ``100u`` is ``1m``, ``1.0001m`` is ``2m``. A value parsed at milli scale or coarser is left as
    it is, kept spelling included (``1e-3``, ``+1``); a finer one is written anew in its format
    (``1e-5`` is ``1e-3``)."""
    if type(value) is str:
        seen = _SEEN_LISTED.get(value)
        if seen is not None:
            return seen
        text = _round_up_to_milli(parse_quantity(value.strip()))
        if len(value) <= _CACHED_LENGTH:
            if len(_SEEN_LISTED) >= _SEEN_LIMIT:
                _SEEN_LISTED.clear()
            _SEEN_LISTED[value] = text
        return text
    if value is None:
        return "0"
    if isinstance(value, str):
        return resource_list_text(str(value))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuantityError(FORMAT_WRONG)
    return resource_list_text(_number_text(value))


def _round_up_to_milli(quantity: Quantity) -> str:
    """RoundUp(Milli): int64Amount.AsScale (or inf.Dec Round with RoundUp) when the scale is finer."""
    if quantity.exponent >= _MILLI:
        return quantity.text
    magnitude = abs(quantity.unscaled)
    quotient, remainder = divmod(magnitude, 10 ** (_MILLI - quantity.exponent))
    rounded = quotient + (1 if remainder else 0)
    return _canonical(rounded if quantity.unscaled > 0 else -rounded, _MILLI, quantity.format)


def quantity_key(value: Any) -> Any:
    """A key equal for two quantity values exactly when upstream's ``Cmp`` says they are equal.

    The value's canonical ``DecimalSI`` spelling (``1Gi`` and ``1073741824`` share one, ``1`` and
    ``1000m`` another), so it reads well in a diff; a value that does not parse is its own key (no
    canonical spelling equals it, as every canonical spelling parses).
    """
    try:
        if isinstance(value, str):
            quantity = parse_quantity(value.strip())
        elif value is None:
            return "0"
        elif isinstance(value, int | float) and not isinstance(value, bool):
            quantity = parse_quantity(_number_text(value))
        else:
            return value
    except QuantityError:
        return value
    return _canonical(quantity.unscaled, quantity.exponent, DECIMAL_SI)


# -- parsing ----------------------------------------------------------------------------------------


def _scan(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, num, denom, suffix), or the format error."""
    positive = True
    pos, end = 0, len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] == "+"
        pos += 1
    while True:  # leading zeros
        if pos >= end:
            return positive, "0", "0", "", ""
        if s[pos] != "0":
            break
        pos += 1
    i = pos
    while i < end and "0" <= s[i] <= "9":
        i += 1
    num = s[pos:i]
    if i >= end:
        return positive, s, num, "", ""
    pos = i
    if not num:
        num = "0"
    denom = ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and "0" <= s[i] <= "9":
            i += 1
        denom = s[pos:i]
        if i >= end:
            return positive, s, num, denom, ""
        pos = i
    value = s[:pos]
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, s[suffix_start:]
    if s[pos] in "+-":
        pos += 1
    while pos < end and "0" <= s[pos] <= "9":
        pos += 1
    if pos >= end:
        return positive, value, num, denom, s[suffix_start:]
    raise QuantityError(FORMAT_WRONG)


def _interpret(suffix: str) -> tuple[int, int, str]:
    """suffixHandler.interpret: (base, exponent, format), or the suffix error."""
    exponent = _DECIMAL_SUFFIXES.get(suffix)
    if exponent is not None:
        return 10, exponent, DECIMAL_SI
    exponent = _BINARY_SUFFIXES.get(suffix)
    if exponent is not None:
        return 2, exponent, BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        digits = rest[1:] if rest[0] in "+-" else rest
        # strconv.ParseInt(rest, 10, 64), then the int32 bound of newer upstream (TestInterpretExponentInt32Bounds).
        if digits and all("0" <= c <= "9" for c in digits) and len(digits) <= 20:
            parsed = int(rest)
            if -_MAX_INT32 <= parsed <= _MAX_INT32:
                return 10, parsed, DECIMAL_EXPONENT
    raise QuantityError(SUFFIX)


def _fast_path_keeps_text(num: str, denom: str, exponent: int, fmt: str) -> bool:
    """Whether ParseQuantity's int64 fast path takes the string as already canonical (``s: str``)."""
    if fmt == BINARY_SI:
        if denom:
            return False
        # 1Mi (2^20) has about 6 decimal digits: float32(exponent)*3/10, truncated.
        precision = 15 - len(num) - (exponent * 3 // 10) - 1
        if precision < 0:
            return False
        value = int(num)
        if value * (1 << exponent) > _MAX_INT64:  # int64Multiply overflows: the slow path
            return False
        return exponent % 10 == 0 and value & 0x07 != 0
    if 18 - (len(num) + len(denom)) < 0:  # maxInt64Factors
        return False
    scale = exponent - len(denom)
    if scale < _NANO:
        return False
    shifted = num + denom
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def _slow_path(num: str, denom: str, exponent: int, fmt: str) -> bool:
    """Whether ParseQuantity reaches its inf.Dec path (which re-reads the number and can fail)."""
    if fmt == BINARY_SI:
        if denom or 15 - len(num) - (exponent * 3 // 10) - 1 < 0:
            return True
        return int(num) * (1 << exponent) > _MAX_INT64
    return 18 - (len(num) + len(denom)) < 0 or exponent - len(denom) < _NANO


def _round_up_to_nano(unscaled: int, scale: int) -> tuple[int, int]:
    """inf.Dec Round(Nano, RoundUp) of a non-zero value: away from zero, to a multiple of 1n."""
    if scale >= _NANO or unscaled == 0:
        return unscaled, scale
    shift = _NANO - scale
    magnitude = abs(unscaled)
    if shift > len(_str_of(magnitude)):  # less than 1n: one nano
        rounded = 1
    else:
        quotient, remainder = divmod(magnitude, 10**shift)
        rounded = quotient + (1 if remainder else 0)
    return (rounded if unscaled > 0 else -rounded), _NANO


# -- canonical form ---------------------------------------------------------------------------------


def _canonical(unscaled: int, scale: int, fmt: str) -> str:
    """CanonicalizeBytes: mantissa and suffix of the canonical spelling."""
    if unscaled == 0:
        return "0"
    if fmt == BINARY_SI:
        # Only binary suffixes make BinarySI values: capped at 2^63-1 and at least 1n, so small.
        value = Fraction(unscaled * 10**scale) if scale >= 0 else Fraction(unscaled, 10**-scale)
        if -1024 < value < 1024 or value.denominator != 1:
            fmt = DECIMAL_SI  # "this avoids rounding and hopefully confusion, too"
        else:
            mantissa, power = int(value), 0
            while mantissa % 1024 == 0:
                mantissa //= 1024
                power += 1
            if power in _BINARY_NAMES:
                return f"{mantissa}{_BINARY_NAMES[power]}"
            if power == 0:
                return str(mantissa)
            fmt = DECIMAL_EXPONENT  # past Ei: an exact decimal (newer upstream)
    mantissa, exponent = _normalised(unscaled, scale)
    shift = exponent % 3  # down to a multiple of 3, so the mantissa stays an integer
    if shift:
        mantissa *= 10**shift
        exponent -= shift
    text = _str_of(mantissa)
    if fmt == DECIMAL_SI and exponent in _DECIMAL_NAMES:
        return text + _DECIMAL_NAMES[exponent]
    return text if exponent == 0 else f"{text}e{exponent}"


def _normalised(unscaled: int, scale: int) -> tuple[int, int]:
    """The same value with every factor of ten of ``unscaled`` moved into the exponent."""
    if unscaled == 0:
        return 0, 0
    digits = _str_of(abs(unscaled))
    zeros = len(digits) - len(digits.rstrip("0"))
    if not zeros:
        return unscaled, scale
    mantissa = _int_of(digits[:-zeros])
    return (mantissa if unscaled > 0 else -mantissa), scale + zeros


def _compare(a: int, a_scale: int, b: int, b_scale: int) -> int:
    sign_a, sign_b = (a > 0) - (a < 0), (b > 0) - (b < 0)
    if sign_a != sign_b or sign_a == 0:
        return (sign_a > sign_b) - (sign_a < sign_b)
    a, a_scale = _normalised(abs(a), a_scale)
    b, b_scale = _normalised(abs(b), b_scale)
    magnitude_a, magnitude_b = len(_str_of(a)) + a_scale, len(_str_of(b)) + b_scale
    if magnitude_a != magnitude_b:
        result = 1 if magnitude_a > magnitude_b else -1
    else:  # the same number of integer digits: the scales differ by less than either length
        low = min(a_scale, b_scale)
        a, b = a * 10 ** (a_scale - low), b * 10 ** (b_scale - low)
        result = (a > b) - (a < b)
    return result * sign_a


def _number_text(value: int | float) -> str:
    if isinstance(value, int):
        return _str_of(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise QuantityError(FORMAT_WRONG)
    return repr(value)  # the shortest spelling that reads back as this float: "0.5", "1e-05"


def _int_of(digits: str) -> int:
    return int(digits) if len(digits) < _INT_DIGITS else int(Decimal(digits))


def _str_of(number: int) -> str:
    return str(number) if -_INT_LIMIT < number < _INT_LIMIT else str(Decimal(number))
