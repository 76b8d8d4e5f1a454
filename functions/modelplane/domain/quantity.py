"""Kubernetes resource quantities, ported from k8s.io/apimachinery/pkg/api/resource.

A :class:`Quantity` keeps the same internal form apimachinery keeps (a small
``value x 10^scale`` when it fits in int64, else an arbitrary-precision decimal rounded
up to the nano unit), because observable results such as ``asApproximateFloat`` and the
canonical string depend on that form, not only on the number.

>>> parse("80Gi").compare(parse("81559Mi"))
1
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

Format = Literal["DecimalExponent", "BinarySI", "DecimalSI"]

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_INT32 = 2**32
_NANO = -9
_MAX_INT64_FACTORS = 18
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
_DECIMAL_SUFFIXES |= {"P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
# Beyond this many decimal places the exact arithmetic apimachinery does would need
# numbers with millions of digits (Go takes minutes or runs out of memory); refuse early.
_MAX_EXPONENT = 10_000

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@dataclass(frozen=True)
class Quantity:
    """An exact quantity: ``unscaled x 10^scale``, in apimachinery's internal form.

    ``small`` is True for apimachinery's int64 form (``unscaled`` fits in int64);
    otherwise the value is an ``inf.Dec`` with ``scale`` as a power of ten.
    Equality and ordering are by value (:meth:`compare`), never by form.
    """

    unscaled: int
    scale: int
    small: bool
    format: Format
    text: str | None = None
    """The parsed text, kept when apimachinery keeps it as the canonical form."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(_fraction(self))

    def compare(self, other: Quantity) -> int:
        """Return -1, 0 or 1 as this quantity is less than, equal to or greater than other."""
        mine, theirs = _fraction(self), _fraction(other)
        return (mine > theirs) - (mine < theirs)

    def sign(self) -> int:
        """Return -1, 0 or 1."""
        return (self.unscaled > 0) - (self.unscaled < 0)

    def as_int64(self) -> int | None:
        """The exact integer value, or None (apimachinery's ``AsInt64``: int64 form only)."""
        if not self.small:
            return None
        if self.scale == 0:
            return self.unscaled
        if self.scale < 0:
            return None
        value = self.unscaled * 10**self.scale
        return value if _INT64_MIN <= value <= _INT64_MAX else None

    def as_approximate_float(self) -> float:
        """``AsApproximateFloat64``: the mantissa times a power of ten, in float64."""
        base = float(self.unscaled) if self.small else _big_to_float(self.unscaled)
        if self.scale == 0:
            return base
        return base * _pow10(self.scale)

    def add(self, other: Quantity) -> Quantity:
        """Return self + other, as ``Quantity.Add`` computes it."""
        return _add(self, other)

    def sub(self, other: Quantity) -> Quantity:
        """Return self - other, as ``Quantity.Sub`` computes it."""
        fmt = other.format if self.sign() == 0 else self.format
        if self.small and other.small:
            total = _small_add(self, other.unscaled * -1, other.scale)
            if total is not None:
                return Quantity(total[0], total[1], True, fmt)
        return _dec_add(self, other, -1, fmt)

    def __str__(self) -> str:
        return self.text if self.text is not None else canonical(self)


def from_int(value: int) -> Quantity:
    """``resource.NewQuantity(value, DecimalExponent)``."""
    return Quantity(value, 0, True, "DecimalExponent")


def parse(text: str) -> Quantity:
    """Parse a quantity exactly as ``resource.ParseQuantity`` does.

    Raises:
        QuantityError: malformed number or suffix (apimachinery's own messages).
    """
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Quantity(0, 0, True, "DecimalSI", text)
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    fast = _fast_path(positive, num, denom, base, exponent, fmt)
    if fast is not None:
        if _keeps_text(fast, num + denom, exponent):
            return Quantity(fast.unscaled, fast.scale, True, fast.format, text)
        return fast
    return _decimal_path(value, base, exponent, fmt)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """apimachinery's ``parseQuantityString``: sign, number text, digits, fraction, suffix."""
    end = len(text)
    pos = 0
    positive = True
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    num = text[start:pos] or "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, Format]:
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        parsed = int(suffix[1:])
        if _INT64_MIN <= parsed <= _INT64_MAX:
            # Go narrows the exponent to int32, wrapping around.
            wrapped = (parsed + 2**31) % _INT32 - 2**31
            if abs(wrapped) > _MAX_EXPONENT:
                raise QuantityError(SUFFIX)
            return 10, wrapped, "DecimalExponent"
    raise QuantityError(SUFFIX)


def _fast_path(
    positive: bool, num: str, denom: str, base: int, exponent: int, fmt: Format
) -> Quantity | None:
    """The int64 form, when the number and its suffix fit without loss."""
    mantissa = 1
    if base == 10:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        scale = 0
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        return None
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < _NANO:
        return None
    shifted = int(num + denom)
    if shifted > _INT64_MAX:
        raise QuantityError(NUMERIC)
    result = shifted * mantissa
    if result > _INT64_MAX:
        return None
    return Quantity(result if positive else -result, scale, True, fmt)


def _keeps_text(q: Quantity, shifted: str, exponent: int) -> bool:
    """apimachinery keeps the input as the string form when it is already canonical."""
    magnitude = abs(q.unscaled) // (1 << exponent) if q.format == "BinarySI" else 0
    if q.format == "BinarySI":
        return exponent % 10 == 0 and magnitude & 0x07 != 0
    return q.scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def _decimal_path(value: str, base: int, exponent: int, fmt: Format) -> Quantity:
    """The arbitrary-precision form: scale by the suffix, round up to nano, saturate."""
    match = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?", value)
    if match is None or not (match.group(2) or match.group(3)):
        raise QuantityError(NUMERIC)
    sign, whole, frac = match.group(1), match.group(2), match.group(3) or ""
    unscaled = int(whole + frac)
    scale = -len(frac)
    if base == 10:
        scale += exponent
    else:
        unscaled <<= exponent
    negative = sign == "-"
    if unscaled != 0:
        unscaled, scale = _round_up(unscaled, scale, _NANO), _NANO
    if fmt == "BinarySI" and _exceeds(unscaled, scale, _INT64_MAX):
        # apimachinery saturates binary quantities at the int64 maximum (scale 0).
        unscaled, scale = _INT64_MAX, 0
    if fmt == "BinarySI" and unscaled > 0 and not _at_least_one(unscaled, scale):
        fmt = "DecimalSI"
    return Quantity(-unscaled if negative else unscaled, scale, False, fmt)


def _exceeds(unscaled: int, scale: int, limit: int) -> bool:
    """Whether unscaled x 10^scale is greater than the integer limit."""
    if scale >= 0:
        return bool(unscaled * 10**scale > limit)
    return bool(unscaled > limit * 10 ** (-scale))


def _at_least_one(unscaled: int, scale: int) -> bool:
    return bool(unscaled * 10 ** max(scale, 0) >= 10 ** max(-scale, 0))


def _round_up(unscaled: int, scale: int, target: int) -> int:
    """inf.Dec Round(x, -target, RoundUp) on a non-negative magnitude."""
    if scale >= target:
        return int(unscaled * 10 ** (scale - target))
    divisor = int(10 ** (target - scale))
    quotient, remainder = divmod(unscaled, divisor)
    return quotient + (1 if remainder else 0)


def _fraction(q: Quantity) -> tuple[int, int]:
    """The value as a reduced-enough (numerator, denominator) for exact comparison."""
    if q.scale >= 0:
        return _Exact(q.unscaled * 10**q.scale, 1).key()
    return _Exact(q.unscaled, 10 ** (-q.scale)).key()


@dataclass(frozen=True)
class _Exact:
    numerator: int
    denominator: int

    def key(self) -> tuple[int, int]:
        divisor = math.gcd(self.numerator, self.denominator)
        return (self.numerator // divisor, self.denominator // divisor)


def _add(q: Quantity, other: Quantity) -> Quantity:
    if q.small and other.small:
        fmt = other.format if q.unscaled == 0 else q.format
        total = _small_add(q, other.unscaled, other.scale)
        if total is not None:
            return Quantity(total[0], total[1], True, fmt)
        return _dec_add(q, other, 1, fmt)
    fmt = other.format if q.sign() == 0 else q.format
    return _dec_add(q, other, 1, fmt)


def _small_add(q: Quantity, value: int, scale: int) -> tuple[int, int] | None:
    """int64Amount.Add: exact in int64 or None when it would overflow."""
    if value == 0:
        return q.unscaled, q.scale
    if q.unscaled == 0:
        return value, scale
    if q.scale == scale:
        total, at = q.unscaled + value, scale
    elif q.scale > scale:
        scaled = _positive_scale(q.unscaled, q.scale - scale)
        if scaled is None:
            return None
        total, at = scaled + value, scale
    else:
        scaled = _positive_scale(value, scale - q.scale)
        if scaled is None:
            return None
        total, at = q.unscaled + scaled, q.scale
    if not _INT64_MIN <= total <= _INT64_MAX:
        return None
    return total, at


def _positive_scale(value: int, by: int) -> int | None:
    result = value * 10**by
    return result if _INT64_MIN <= result <= _INT64_MAX else None


def _dec_add(q: Quantity, other: Quantity, sign: int, fmt: Format) -> Quantity:
    """inf.Dec addition: the result takes the larger number of decimal places."""
    places = max(-q.scale, -other.scale)
    total = q.unscaled * 10 ** (places + q.scale) + sign * other.unscaled * 10 ** (
        places + other.scale
    )
    return Quantity(total, -places, False, fmt)


def canonical(q: Quantity) -> str:
    """The canonical string apimachinery prints (``Quantity.String``)."""
    if q.unscaled == 0:
        return "0"
    fmt = q.format
    if fmt == "BinarySI":
        numerator, denominator = _fraction(q)
        if -1024 < numerator / denominator < 1024 or denominator != 1:
            fmt = "DecimalSI"
    if fmt == "BinarySI":
        whole, times = _remove_factors(_fraction(q)[0], 1024)
        suffix = {1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}.get(times, "")
        return f"{whole}{suffix}"
    amount, exponent = _remove_factors(q.unscaled, 10)
    exponent += q.scale
    while exponent % 3:
        amount *= 10
        exponent -= 1
    return f"{amount}{_decimal_suffix(exponent, fmt)}"


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    magnitude, times = abs(value), 0
    while magnitude >= base and magnitude % base == 0:
        magnitude //= base
        times += 1
    return (magnitude if value > 0 else -magnitude), times


def _decimal_suffix(exponent: int, fmt: Format) -> str:
    if fmt == "DecimalExponent":
        return f"e{exponent}" if exponent else ""
    names = {value: name for name, value in _DECIMAL_SUFFIXES.items()}
    return names.get(exponent, "")


_POW10 = [float(f"1e{n}") for n in range(32)]
_POW10_POS32 = [float(f"1e{n * 32}") for n in range(10)]
_POW10_NEG32 = [float(f"1e-{n * 32}") for n in range(11)]


def _pow10(n: int) -> float:
    """Go's ``math.Pow10`` (its table lookups, so rounding matches)."""
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return math.inf if n > 0 else 0.0


def _big_to_float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
