"""CEL timestamps and durations with Go's semantics (cel-go on Go's ``time`` package).

A timestamp is nanoseconds since the Unix epoch plus the UTC offset it was written with
(Go keeps the location, and ``string()`` prints it); a duration is an int64 of
nanoseconds. Parsing follows ``time.Parse(time.RFC3339, ...)`` and
``time.ParseDuration``; accessors default to UTC and take an IANA zone or ``±hh:mm``.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from modelplane.domain.dra import _values as v
from modelplane.domain.dra._values import Duration, EvalError, Timestamp

SECOND = 1_000_000_000
MIN_UNIX = -62135596800
MAX_UNIX = 253402300799
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": SECOND,
    "m": 60 * SECOND,
    "h": 3600 * SECOND,
}
_DIGITS = frozenset("0123456789")
_ATOI = re.compile(r"[+-]?[0-9]+")


def _overflow() -> EvalError:
    return EvalError("timestamp overflow")


_STRING, _INT = "string", "int"
_TIMESTAMP, _DURATION = "google.protobuf.Timestamp", "google.protobuf.Duration"


def _conversion_error(source: str, target: str) -> EvalError:
    return EvalError(f"type conversion error from '{source}' to '{target}'")


# -- parsing -------------------------------------------------------------------------------


def parse_timestamp(text: str) -> Timestamp:
    """``time.Parse(time.RFC3339, text)`` with cel-go's range check."""
    parsed = _rfc3339(text)
    if parsed is None:
        raise _conversion_error(_STRING, _TIMESTAMP)
    seconds, nanos, offset = parsed
    if not MIN_UNIX <= seconds <= MAX_UNIX:
        raise _overflow()
    return Timestamp(seconds * SECOND + nanos, offset)


def _rfc3339(text: str) -> tuple[int, int, int] | None:
    """Go's RFC 3339 parse (fast path, and the fallbacks its general parser accepts)."""
    hour_width = 1 if len(text) > 12 and text[12] == ":" else 2
    date, rest = text[:10], text[10:]
    if len(date) != 10 or date[4] != "-" or date[7] != "-" or not rest or rest[0] != "T":
        return None
    clock = rest[1 : 1 + hour_width + 6]
    rest = rest[1 + hour_width + 6 :]
    fields = [date[0:4], date[5:7], date[8:10], *clock.split(":")]
    if len(fields) != 6 or not all(f and set(f) <= _DIGITS for f in fields):
        return None
    year, month, day, hour, minute, second = (int(f) for f in fields)
    if len(fields[4]) != 2 or len(fields[5]) != 2:
        return None
    if not (1 <= month <= 12 and 1 <= day <= days_in(month, year)):
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    nanos = 0
    if len(rest) >= 2 and rest[0] in ".," and rest[1] in _DIGITS:
        end = 1
        while end < len(rest) and rest[end] in _DIGITS:
            end += 1
        nanos = int(rest[1:end][:9].ljust(9, "0"))
        rest = rest[end:]
    offset = _zone(rest)
    if offset is None:
        return None
    days = _days_from_civil(year, month, day)
    seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset
    return seconds, nanos, offset


def _zone(text: str) -> int | None:
    if text == "Z":
        return 0
    if len(text) != 6 or text[0] not in "+-" or text[3] != ":":
        return None
    hours, minutes = text[1:3], text[4:6]
    if not (set(hours) <= _DIGITS and set(minutes) <= _DIGITS):
        return None
    # Go's general parser (the fallback after its RFC 3339 fast path) allows 24:60.
    if int(hours) > 24 or int(minutes) > 60:
        return None
    offset = (int(hours) * 60 + int(minutes)) * 60
    return -offset if text[0] == "-" else offset


def parse_duration(text: str) -> Duration:
    """Go's ``time.ParseDuration``."""
    nanos = _go_duration(text)
    if nanos is None:
        raise _conversion_error(_STRING, _DURATION)
    return Duration(nanos)


def _go_duration(text: str) -> int | None:
    s = text
    negative = False
    if s and s[0] in "+-":
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        return None
    total = 0
    while s:
        if not (s[0] == "." or s[0] in _DIGITS):
            return None
        whole, s, ok = _leading_int(s)
        if not ok:
            return None
        pre = whole is not None
        fraction, scale, post = 0, 1.0, False
        if s and s[0] == ".":
            fraction, scale, s, post = _leading_fraction(s[1:])
        if not pre and not post:
            return None
        end = 0
        while end < len(s) and not (s[end] == "." or s[end] in _DIGITS):
            end += 1
        unit = _UNITS.get(s[:end]) if end else None
        if unit is None:
            return None
        s = s[end:]
        value = whole or 0
        if value > (1 << 63) // unit:
            return None
        value *= unit
        if fraction > 0:
            value += int(float(fraction) * (float(unit) / scale))
            if value > 1 << 63:
                return None
        total += value
        if total > 1 << 63:
            return None
    if negative:
        return -total
    return None if total > _INT64_MAX else total


def _leading_int(s: str) -> tuple[int | None, str, bool]:
    i = 0
    x = 0
    while i < len(s) and s[i] in _DIGITS:
        if x > (1 << 63) // 10:
            return None, s, False
        x = x * 10 + int(s[i])
        if x > 1 << 63:
            return None, s, False
        i += 1
    return (x if i else None), s[i:], True


def _leading_fraction(s: str) -> tuple[int, float, str, bool]:
    i = 0
    x = 0
    scale = 1.0
    overflow = False
    while i < len(s) and s[i] in _DIGITS:
        if not overflow:
            if x > _INT64_MAX // 10:
                overflow = True
            else:
                y = x * 10 + int(s[i])
                if y > 1 << 63:
                    overflow = True
                else:
                    x = y
                    scale *= 10
        i += 1
    return x, scale, s[i:], i > 0


# -- formatting ----------------------------------------------------------------------------


def timestamp_string(ts: Timestamp) -> str:
    """Go's ``Format(time.RFC3339Nano)`` in the timestamp's own offset."""
    seconds, nanos = divmod(ts.nanos, SECOND)
    year, month, day, hour, minute, second = _civil(seconds + ts.offset)
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    if nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    if ts.offset == 0:
        return text + "Z"
    sign = "-" if ts.offset < 0 else "+"
    minutes = abs(ts.offset) // 60
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def duration_string(d: Duration) -> str:
    """``strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"``."""
    return format_float_f(_seconds_float(d.nanos)) + "s"


def format_float_f(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'f', -1, 64)``: shortest digits, fixed notation."""
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _seconds_float(nanos: int) -> float:
    whole, rest = _trunc_divmod(nanos, SECOND)
    return float(whole) + float(rest) / 1e9


def _trunc_divmod(a: int, b: int) -> tuple[int, int]:
    quotient = abs(a) // b * (1 if a >= 0 else -1)
    return quotient, a - quotient * b


# -- calendar ------------------------------------------------------------------------------


def days_in(month: int, year: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 (proleptic Gregorian; any year)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil(local_seconds: int) -> tuple[int, int, int, int, int, int]:
    days, secs = divmod(local_seconds, 86400)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    return year, month, day, secs // 3600, secs % 3600 // 60, secs % 60


# -- functions -----------------------------------------------------------------------------


def to_timestamp(a: Any) -> Any:
    return _convert(a, Timestamp, parse_timestamp, _timestamp_of_unix)


def to_duration(a: Any) -> Any:
    return _convert(a, Duration, parse_duration, _duration_of_int)


def _convert(a: Any, kind: type, parse: Callable[[str], Any], of_int: Callable[[int], Any]) -> Any:
    """``timestamp(x)`` and ``duration(x)``: the value itself, a parsed string or an int
    (a CEL ``uint``, like a bool, has no overload)."""
    if isinstance(a, kind):
        return a
    if isinstance(a, str):
        return parse(a)
    if isinstance(a, int) and not isinstance(a, (bool, v.Uint)):
        return of_int(a)
    raise v.no_overload()


def _timestamp_of_unix(seconds: int) -> Timestamp:
    if not MIN_UNIX <= seconds <= MAX_UNIX:
        raise _overflow()
    return Timestamp(seconds * SECOND)


def _duration_of_int(_: int) -> Duration:
    # cel-go converts no int to a duration: it answers with a conversion error.
    raise _conversion_error(_INT, _DURATION)


def check_duration(nanos: int) -> Duration:
    if not _INT64_MIN <= nanos <= _INT64_MAX:
        msg = "integer overflow"
        raise EvalError(msg)
    return Duration(nanos)


def add_to_timestamp(ts: Timestamp, nanos: int) -> Timestamp:
    total = ts.nanos + nanos
    if not MIN_UNIX <= total // SECOND <= MAX_UNIX:
        raise _overflow()
    return Timestamp(total, ts.offset)


def subtract(a: Any, b: Any) -> Any:
    if isinstance(a, Timestamp) and isinstance(b, Timestamp):
        return check_duration(a.nanos - b.nanos)
    if isinstance(a, Timestamp) and isinstance(b, Duration):
        if b.nanos == _INT64_MIN:
            msg = "integer overflow"
            raise EvalError(msg)
        return add_to_timestamp(a, -b.nanos)
    if isinstance(a, Duration) and isinstance(b, Duration):
        return check_duration(a.nanos - b.nanos)
    raise v.no_overload()


def add(a: Any, b: Any) -> Any:
    if isinstance(a, Duration) and isinstance(b, Duration):
        return check_duration(a.nanos + b.nanos)
    if isinstance(a, Timestamp) and isinstance(b, Duration):
        return add_to_timestamp(a, b.nanos)
    if isinstance(a, Duration) and isinstance(b, Timestamp):
        return add_to_timestamp(b, a.nanos)
    raise v.no_overload()


def _zone_offset(ts: Timestamp, tz: Any) -> int:
    if not isinstance(tz, str):
        raise v.no_overload()
    if ":" not in tz:
        return _iana_offset(tz, ts.nanos // SECOND)
    hours, _, minutes = tz.partition(":")
    if not (_ATOI.fullmatch(hours) and _ATOI.fullmatch(minutes)):
        msg = f'strconv.Atoi: parsing "{hours}": invalid syntax'
        raise EvalError(msg)
    hr, mn = int(hours), int(minutes)
    offset = hr * 60 - mn if tz[0] == "-" else hr * 60 + mn
    return offset * 60


def _iana_offset(name: str, seconds: int) -> int:
    zone = _load_zone(name)
    if zone is None:
        return 0
    clamped = min(max(seconds, MIN_UNIX + 86400), MAX_UNIX - 86400)
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=clamped)
    offset = instant.astimezone(zone).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


@lru_cache(maxsize=64)
def _load_zone(name: str) -> zoneinfo.ZoneInfo | None:
    if name in ("", "UTC", "Local"):
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        msg = f"unknown time zone {name}"
        raise EvalError(msg) from None


def _fields(ts: Timestamp, tz: Any) -> tuple[int, int, int, int, int, int, int, int]:
    offset = 0 if tz is None else _zone_offset(ts, tz)
    local = ts.nanos // SECOND + offset
    year, month, day, hour, minute, second = _civil(local)
    weekday = (local // 86400 + 4) % 7
    yday = local // 86400 - _days_from_civil(year, 1, 1)
    return year, month, day, hour, minute, second, weekday, yday


def _millis(ts: Timestamp) -> int:
    return ts.nanos % SECOND // 1_000_000


def getter(name: str) -> Any:
    """The implementation of one ``getX()`` accessor (timestamp, or duration for time parts)."""

    def run(value: Any, tz: Any = None) -> Any:
        if isinstance(value, Duration) and tz is None and name in _DURATION_PARTS:
            return _DURATION_PARTS[name](value.nanos)
        if not isinstance(value, Timestamp):
            raise v.no_overload()
        if name == "getMilliseconds":
            if tz is not None:
                _zone_offset(value, tz)
            return _millis(value)
        year, month, day, hour, minute, second, weekday, yday = _fields(value, tz)
        return {
            "getFullYear": year,
            "getMonth": month - 1,
            "getDayOfYear": yday,
            "getDayOfMonth": day - 1,
            "getDate": day,
            "getDayOfWeek": weekday,
            "getHours": hour,
            "getMinutes": minute,
            "getSeconds": second,
        }[name]

    return run


def _float_part(nanos: int, unit: int) -> int:
    whole, rest = _trunc_divmod(nanos, unit)
    return int(float(whole) + float(rest) / float(unit))


_DURATION_PARTS = {
    "getHours": lambda n: _float_part(n, 3600 * SECOND),
    "getMinutes": lambda n: _float_part(n, 60 * SECOND),
    "getSeconds": lambda n: _float_part(n, SECOND),
    "getMilliseconds": lambda n: _trunc_divmod(n, 1_000_000)[0],
}
