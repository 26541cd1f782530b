"""A CronJob's schedule, parsed and stepped as robfig/cron v3 (v3.0.1, the version Kubernetes 1.32 vendors) does.

Upstream's validation (``validateScheduleFormat``) and CronJob controller (``cron.ParseStandard``, then
``Schedule.Next``) both use that library, so its grammar, its error messages and its stepping are the
contract, and no Python cron library matches them: croniter and cronsim accept ``L``, ``W``, ``#`` and a
day-of-week of 7, treat ``*/2`` in a day field as a star (robfig: a star only when the step is 1), have
no ``@every <Go duration>``, and word their errors differently. So this module does it:

- :func:`parse_standard` is ``ParseStandard``: an optional ``TZ=<zone> `` / ``CRON_TZ=<zone> `` prefix, a
  descriptor (``@yearly``, ``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``, ``@hourly``,
  ``@every <duration>`` in Go's ``time.ParseDuration`` syntax), or exactly five fields (minute, hour,
  day of month, month, day of week) of comma-separated ranges ``*``/``?``/``N``/``N-M`` with an optional
  ``/step`` (``N/step`` means ``N-max/step``), month and weekday names case-insensitively. Errors are
  :class:`CronSyntaxError` with the library's message (``end of range (61) above maximum (59): 61``).
- :meth:`SpecSchedule.next` is ``SpecSchedule.Next``: the first whole second after ``t`` that matches,
  searched field by field in the schedule's zone with Go's calendar arithmetic (``time.Date``
  normalisation and zone-offset choice in a daylight-saving gap), the day matching the day of month AND
  the day of week when either field has a star, OR otherwise; ``None`` (Go's zero time) when nothing
  matches within five years. :meth:`EverySchedule.next` adds the constant delay (at least one second).

Times are Unix seconds. A schedule without a zone runs in the caller's (``local_zone``; Go's
``time.Local``). :func:`local_location` is Go's ``time.Local`` for this process (``TZ``, else
``/etc/localtime``, else UTC); it reads the environment and the zone file, everything else is pure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache

__all__ = [
    "CronSchedule",
    "CronSyntaxError",
    "EverySchedule",
    "SpecSchedule",
    "load_location",
    "local_location",
    "parse_standard",
]


class CronSyntaxError(ValueError):
    """A schedule robfig/cron refuses; ``str()`` is the library's message."""


_STAR = 1 << 63
_MONTH_NAMES = {n: i + 1 for i, n in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                                 "oct", "nov", "dec"))}
_DOW_NAMES = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (min, max, names) of minute, hour, day of month, month, day of week (spec.go's bounds).
_BOUNDS: tuple[tuple[int, int, dict[str, int] | None], ...] = (
    (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTH_NAMES), (0, 6, _DOW_NAMES))
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1


def load_location(name: str) -> tzinfo:
    """Go's ``time.LoadLocation`` for a zone name ("" and "UTC" are UTC); ``ValueError("unknown time zone X")``."""
    if name in ("", "UTC"):
        return UTC
    return _zone(name)


@lru_cache(maxsize=64)
def _zone(name: str) -> tzinfo:
    if ".." in name or name.startswith(("/", "\\")):
        raise ValueError("time: invalid location name")
    from zoneinfo import ZoneInfo  # when a zone is first loaded: not by importing kubeloop.api (start-up)

    try:
        return ZoneInfo(name)
    except Exception:  # ZoneInfoNotFoundError, or a file that is not a zone (ValueError, OSError)
        raise ValueError(f"unknown time zone {name}") from None


def local_location(environ: Mapping[str, str] | None = None) -> tzinfo:
    """Go's ``time.Local`` (``initLocal``, zoneinfo_unix.go): ``TZ`` unset: ``/etc/localtime``; ``TZ=""`` or
    ``TZ=UTC``: UTC; ``TZ=[:]/path``: that zone file; ``TZ=[:]Name``: the zone ``Name``; anything that does
    not load: UTC (as Go falls back)."""
    env = os.environ if environ is None else environ
    tz = env.get("TZ")
    try:
        if tz is None:
            return _zone_file("/etc/localtime")
        tz = tz.removeprefix(":")
        if tz.startswith("/"):
            return _zone_file(tz)
        if tz and tz != "UTC":
            return _zone(tz)
    except (OSError, ValueError):
        pass
    return UTC


def _zone_file(path: str) -> tzinfo:
    from zoneinfo import ZoneInfo  # see _zone

    with open(path, "rb") as f:
        return ZoneInfo.from_file(f, key=path)


# -- Go's calendar arithmetic on Unix seconds ---------------------------------------------------------


def _offset(unix: int, zone: tzinfo) -> int:
    if zone is UTC:
        return 0
    delta = datetime.fromtimestamp(unix, zone).utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def _fields(unix: int, zone: tzinfo) -> tuple[int, int, int, int, int, int, int]:
    """(year, month, day, hour, minute, second, weekday with Sunday 0) of ``unix`` in ``zone``."""
    local = unix + _offset(unix, zone)
    days, rest = divmod(local, 86400)
    day = date(1970, 1, 1) + timedelta(days=days)
    return day.year, day.month, day.day, rest // 3600, rest // 60 % 60, rest % 60, (day.weekday() + 1) % 7


def _date(year: int, month: int, day: int, hour: int, minute: int, second: int, zone: tzinfo) -> int:
    """``time.Date``: fields out of range carry over; in a gap or overlap the offset is the one Go picks
    (the zone's offset at ``local - offset(local)``)."""
    carry, month0 = divmod(month - 1, 12)
    days = (date(year + carry, month0 + 1, 1) - date(1970, 1, 1)).days + day - 1
    local = days * 86400 + hour * 3600 + minute * 60 + second
    return local - _offset(local - _offset(local, zone), zone)


# -- schedules ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpecSchedule:
    """Bit sets of the matching minutes, hours, days, months and weekdays (bit 63: the field had a star)."""

    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    zone: tzinfo | None = None  # None: the time's own zone (Go's time.Local)

    def _day_matches(self, day: int, weekday: int) -> bool:
        dom, dow = bool(1 << day & self.dom), bool(1 << weekday & self.dow)
        if self.dom & _STAR or self.dow & _STAR:
            return dom and dow
        return dom or dow

    def next(self, t: float, *, local_zone: tzinfo = UTC) -> int | None:
        zone = self.zone or local_zone
        u = int(t // 1) + 1  # the upcoming whole second
        added = False
        limit = _fields(u, zone)[0] + 5
        while True:  # WRAP
            y, mo, d, h, mi, s, wd = _fields(u, zone)
            if y > limit:
                return None
            wrapped = False
            while not (1 << mo & self.month):
                if not added:
                    added = True
                    u = _date(y, mo, 1, 0, 0, 0, zone)
                    y, mo, d, h, mi, s, wd = _fields(u, zone)
                u = _date(y, mo + 1, d, h, mi, s, zone)
                y, mo, d, h, mi, s, wd = _fields(u, zone)
                if mo == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(d, wd):
                if not added:
                    added = True
                    u = _date(y, mo, d, 0, 0, 0, zone)
                    y, mo, d, h, mi, s, wd = _fields(u, zone)
                u = _date(y, mo, d + 1, h, mi, s, zone)
                y, mo, d, h, mi, s, wd = _fields(u, zone)
                if h != 0:  # midnight skipped or doubled by a daylight-saving change
                    u += (24 - h) * 3600 if h > 12 else -h * 3600
                    y, mo, d, h, mi, s, wd = _fields(u, zone)
                if d == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << h & self.hour):
                if not added:
                    added = True
                    u = _date(y, mo, d, h, 0, 0, zone)
                u += 3600
                y, mo, d, h, mi, s, wd = _fields(u, zone)
                if h == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << mi & self.minute):
                if not added:
                    added = True
                    u -= u % 60
                u += 60
                y, mo, d, h, mi, s, wd = _fields(u, zone)
                if mi == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while s != 0:  # the seconds field is always 0 in a standard spec
                added = True
                u += 1
                y, mo, d, h, mi, s, wd = _fields(u, zone)
                if s == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return u


@dataclass(frozen=True, slots=True)
class EverySchedule:
    """``@every <duration>`` (``ConstantDelaySchedule``): whole seconds, at least one."""

    delay: int

    def next(self, t: float, *, local_zone: tzinfo = UTC) -> int | None:
        return int(t // 1) + self.delay


CronSchedule = SpecSchedule | EverySchedule


def _parse_int(text: str) -> int:
    """``mustParseInt``: ``strconv.Atoi``, then not negative."""
    if not _GO_INT.fullmatch(text):
        raise CronSyntaxError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    number = int(text)
    if number > _INT64_MAX or number < -_INT64_MAX - 1:
        raise CronSyntaxError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    if number < 0:
        raise CronSyntaxError(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, names: dict[str, int] | None) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return _parse_int(text)


def _range_bits(expr: str, low: int, high: int, names: dict[str, int] | None) -> int:
    """``getRange``: ``number | number "-" number [ "/" number ]`` (or ``*``/``?``)."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = low, high, _STAR
    else:
        start = _int_or_name(low_high[0], names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], names)
        else:
            raise CronSyntaxError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _parse_int(range_and_step[1])
        if len(low_high) == 1:
            end = high
        if step > 1:
            extra = 0
    else:
        raise CronSyntaxError(f"too many slashes: {expr}")
    if start < low:
        raise CronSyntaxError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronSyntaxError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronSyntaxError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronSyntaxError(f"step of range should be a positive number: {expr}")
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | extra


def _field_bits(field: str, bounds: tuple[int, int, dict[str, int] | None]) -> int:
    bits = 0
    for expr in (part for part in field.split(",") if part):  # strings.FieldsFunc drops empty parts
        bits |= _range_bits(expr, *bounds)
    return bits


def _all(index: int) -> int:
    low, high, _ = _BOUNDS[index]
    return _range_bits("*", low, high, None)


def _descriptor(spec: str, zone: tzinfo | None) -> CronSchedule:
    first = {"minute": 1, "hour": 1, "dom": 1 << 1, "month": 1 << 1, "dow": 1}
    star = {"minute": _all(0), "hour": _all(1), "dom": _all(2), "month": _all(3), "dow": _all(4)}
    shapes = {
        "@yearly": ("minute", "hour", "dom", "month"), "@annually": ("minute", "hour", "dom", "month"),
        "@monthly": ("minute", "hour", "dom"), "@weekly": ("minute", "hour", "dow"),
        "@daily": ("minute", "hour"), "@midnight": ("minute", "hour"), "@hourly": ("minute",),
    }
    if spec in shapes:
        fixed = shapes[spec]
        parts = {k: first[k] if k in fixed else star[k] for k in first}
        return SpecSchedule(parts["minute"], parts["hour"], parts["dom"], parts["month"], parts["dow"], zone)
    if spec.startswith("@every "):
        try:
            nanos = go_parse_duration(spec[len("@every "):])
        except ValueError as err:
            raise CronSyntaxError(f"failed to parse duration {spec}: {err}") from None
        return EverySchedule(max(nanos, 10**9) // 10**9)
    raise CronSyntaxError(f"unrecognized descriptor: {spec}")


def parse_standard(spec: str) -> CronSchedule:
    """``cron.ParseStandard(spec)``; :class:`CronSyntaxError` with the library's message."""
    if not spec:
        raise CronSyntaxError("empty spec string")
    zone: tzinfo | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, equals = spec.find(" "), spec.find("=")
        name = spec[equals + 1:space] if space > equals else spec[equals + 1:]
        try:
            zone = load_location(name)
        except ValueError as err:
            raise CronSyntaxError(f"provided bad location {name}: {err}") from None
        spec = spec[space:].strip() if space > equals else ""
    if spec.startswith("@"):
        return _descriptor(spec, zone)
    fields = spec.split()
    if len(fields) != 5:
        raise CronSyntaxError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    bits = [_field_bits(field, bounds) for field, bounds in zip(fields, _BOUNDS, strict=True)]
    return SpecSchedule(bits[0], bits[1], bits[2], bits[3], bits[4], zone)


# -- Go's time.ParseDuration ------------------------------------------------------------------------------

_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
          "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def _go_quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def go_parse_duration(text: str) -> int:
    """``time.ParseDuration`` in nanoseconds; ``ValueError`` with Go's message."""
    invalid = ValueError(f"time: invalid duration {_go_quoted(text)}")
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if not (rest[0] == "." or (rest[0].isascii() and rest[0].isdigit())):
            raise invalid
        match = _DURATION_PART.match(rest)
        assert match is not None
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise invalid
        if not unit:
            raise ValueError(f"time: missing unit in duration {_go_quoted(text)}")
        if unit not in _UNITS:
            raise ValueError(f"time: unknown unit {_go_quoted(unit)} in duration {_go_quoted(text)}")
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if fraction:
            value += int(fraction) * scale // 10 ** len(fraction)
        total += value
        if total > 2**63 - (0 if negative else 1):
            raise invalid
        rest = rest[match.end():]
    return -total if negative else total
