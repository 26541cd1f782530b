"""CronJob schedules parsed and stepped as robfig/cron v3 (v3.0.1, vendored by Kubernetes 1.32) does.

Upstream: robfig/cron ``parser.go`` (``ParseStandard``, ``getRange``, ``parseDescriptor``) and ``spec.go``
(``SpecSchedule.Next``, ``dayMatches``); Go's ``time.ParseDuration`` for ``@every``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubeloop.api._cron_schedule import CronSyntaxError, go_parse_duration, load_location, parse_standard


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def text(unix: int | None, zone: str = "UTC") -> str | None:
    return None if unix is None else datetime.fromtimestamp(unix, load_location(zone)).isoformat()


def nexts(spec: str, start: str, count: int = 3) -> list[str | None]:
    schedule = parse_standard(spec)
    out: list[str | None] = []
    t: float = at(start)
    for _ in range(count):
        following = schedule.next(t)
        out.append(text(following))
        if following is None:
            break
        t = following
    return out


def test_every_minute_starts_at_the_next_whole_minute() -> None:
    assert nexts("*/1 * * * *", "2026-11-30T21:19:43+00:00") == [
        "2026-11-30T21:20:00+00:00", "2026-11-30T21:21:00+00:00", "2026-11-30T21:22:00+00:00"]
    # A time exactly on the schedule is not its own next.
    assert nexts("0 * * * *", "2026-11-30T21:00:00+00:00", 1) == ["2026-11-30T22:00:00+00:00"]


def test_day_of_month_or_day_of_week_when_neither_is_a_star() -> None:
    # 1st and 15th, OR Mondays (dayMatches: both restricted -> either matches).
    assert nexts("0 0 1,15 * mon", "2026-11-30T01:00:00+00:00", 4) == [
        "2026-12-01T00:00:00+00:00", "2026-12-07T00:00:00+00:00", "2026-12-14T00:00:00+00:00",
        "2026-12-15T00:00:00+00:00"]
    # A step above 1 clears the star bit: */2 in the day of month is restricted, so the OR rule holds.
    assert nexts("0 0 */10 * sun", "2026-12-01T12:00:00+00:00", 3) == [
        "2026-12-06T00:00:00+00:00", "2026-12-11T00:00:00+00:00", "2026-12-13T00:00:00+00:00"]
    # With a star (or ?) in one of them, both must match: Sundays only.
    assert nexts("0 0 ? * 0", "2026-12-01T12:00:00+00:00", 2) == [
        "2026-12-06T00:00:00+00:00", "2026-12-13T00:00:00+00:00"]


def test_ranges_steps_names_and_descriptors() -> None:
    assert nexts("30 6-16/4 * * 1-5", "2026-12-04T15:00:00+00:00", 3) == [  # Friday afternoon
        "2026-12-07T06:30:00+00:00", "2026-12-07T10:30:00+00:00", "2026-12-07T14:30:00+00:00"]
    assert nexts("0 12 1 jan,JUL *", "2026-12-01T00:00:00+00:00", 2) == [
        "2027-01-01T12:00:00+00:00", "2027-07-01T12:00:00+00:00"]
    assert nexts("5/20 * * * *", "2026-12-01T00:00:00+00:00", 3) == [  # N/step is N-max/step
        "2026-12-01T00:05:00+00:00", "2026-12-01T00:25:00+00:00", "2026-12-01T00:45:00+00:00"]
    assert nexts("@weekly", "2026-12-01T00:00:00+00:00", 1) == ["2026-12-06T00:00:00+00:00"]
    assert nexts("@yearly", "2026-12-01T00:00:00+00:00", 1) == ["2027-01-01T00:00:00+00:00"]
    assert nexts("@every 1h30m", "2026-12-01T00:00:10.5+00:00", 2) == [
        "2026-12-01T01:30:10+00:00", "2026-12-01T03:00:10+00:00"]


def test_a_date_that_never_comes_gives_no_time_within_five_years() -> None:
    assert nexts("0 0 31 2 *", "2026-12-01T00:00:00+00:00") == [None]
    assert nexts("0 0 29 2 *", "2026-12-01T00:00:00+00:00", 2) == [
        "2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"]


def test_time_zones_follow_go_across_daylight_saving_changes() -> None:
    zone = "America/New_York"
    daily = parse_standard(f"TZ={zone} 30 2 * * *")
    # 02:30 does not exist on 2026-03-08 in New York: robfig's hour search steps over it to the next day.
    assert text(daily.next(at("2026-03-07T12:00:00+00:00")), zone) == "2026-03-09T02:30:00-04:00"
    early = parse_standard(f"CRON_TZ={zone} 30 1 * * *")
    # 01:30 happens twice on 2026-11-01: first in EDT, then (minutes counted on) again in EST.
    assert text(early.next(at("2026-10-31T12:00:00+00:00")), zone) == "2026-11-01T01:30:00-04:00"
    assert text(early.next(at("2026-11-01T05:31:00+00:00")), zone) == "2026-11-01T01:30:00-05:00"
    # A schedule without a zone runs in the caller's.
    plain = parse_standard("0 9 * * *")
    assert text(plain.next(at("2026-11-30T23:00:00+00:00"), local_zone=load_location("Asia/Tokyo"))) == \
        "2026-12-01T00:00:00+00:00"


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty spec string"),
    ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ("99999999999999999999 * * * *", 'failed to parse int from 99999999999999999999: strconv.Atoi: parsing '
                                     '"99999999999999999999": value out of range'),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * * 0 *", "beginning of range (0) below minimum (1): 0"),
    ("* * * * L", 'failed to parse int from L: strconv.Atoi: parsing "L": invalid syntax'),
    ("@every -", 'failed to parse duration @every -: time: invalid duration "-"'),
    ("@every 1d", 'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'),
    ("TZ=Nowhere/Land * * * * *", "provided bad location Nowhere/Land: unknown time zone Nowhere/Land"),
])
def test_refused_specs_carry_the_library_message(spec: str, message: str) -> None:
    with pytest.raises(CronSyntaxError) as err:
        parse_standard(spec)
    assert str(err.value) == message


def test_go_durations() -> None:
    assert go_parse_duration("1h30m") == 5400 * 10**9
    assert go_parse_duration("1.5s") == 1_500_000_000
    assert go_parse_duration("-2m") == -120 * 10**9
    assert go_parse_duration("0") == 0
    assert go_parse_duration("300ms") == 300_000_000
    # A delay under a second is a second (robfig's Every).
    assert parse_standard("@every 300ms").next(10.0) == 11
    assert UTC is load_location("UTC") is load_location("")


def _brute_next(spec: str, t: float) -> int | None:
    """The first whole minute after ``t`` whose UTC fields match ``spec`` field by field (robfig's dayMatches:
    day of month AND day of week when either starts with a star of step 1, else OR), within two years."""
    fields = spec.split()
    bounds = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]

    def values(field: str, low: int, high: int) -> tuple[set[int], bool]:
        out: set[int] = set()
        star = False
        for part in field.split(","):
            rng, _, step_text = part.partition("/")
            step = int(step_text) if step_text else 1
            if rng in ("*", "?"):
                start, end = low, high
                star = star or step == 1
            elif "-" in rng:
                start, end = (int(x) for x in rng.split("-"))
            else:
                start = int(rng)
                end = high if step_text else start
            out.update(range(start, end + 1, step))
        return out, star

    parsed = [values(f, *b) for f, b in zip(fields, bounds, strict=True)]
    first_day = int(t // 86400) * 86400
    for day in range(first_day, first_day + 2 * 366 * 86400, 86400):
        d = datetime.fromtimestamp(day, UTC)
        dom, dow = d.day in parsed[2][0], (d.weekday() + 1) % 7 in parsed[4][0]
        if d.month not in parsed[3][0] or not ((dom and dow) if (parsed[2][1] or parsed[4][1]) else (dom or dow)):
            continue
        for hour in sorted(parsed[1][0]):
            for minute in sorted(parsed[0][0]):
                candidate = day + hour * 3600 + minute * 60
                if candidate > t:
                    return candidate
    return None


def test_next_agrees_with_a_minute_by_minute_search_on_random_specs() -> None:
    import random

    rng = random.Random(20261130)
    bounds = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]

    def field(low: int, high: int) -> str:
        kind = rng.randrange(6)
        if kind == 0:
            return "*"
        if kind == 1:
            return f"*/{rng.randint(1, 7)}"
        a = rng.randint(low, high)
        if kind == 2:
            return str(a)
        b = rng.randint(a, high)
        if kind == 3:
            return f"{a}-{b}"
        if kind == 4:
            return f"{a}-{b}/{rng.randint(1, 5)}"
        return ",".join(str(rng.randint(low, high)) for _ in range(rng.randint(2, 3)))

    for _ in range(100):
        spec = " ".join(field(*b) for b in bounds)
        start = 1_700_000_000 + rng.randrange(0, 400 * 86400) + rng.random()
        expected = _brute_next(spec, start)
        got = parse_standard(spec).next(start)
        assert got == expected, (spec, start, got, expected)
