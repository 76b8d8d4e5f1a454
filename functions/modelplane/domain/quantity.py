"""Kubernetes resource quantities, ported from k8s.io/apimachinery/pkg/api/resource.

The one Quantity of the project: the fleet reader validates capacities with it, and the
DRA CEL library (``quantity()``, ``compareTo``, ``add``, ...) computes with it, checked
against Kubernetes' own Go code by tests/oracle.

A :class:`Quantity` keeps the same internal form apimachinery keeps (a small
``value x 10^scale`` when it fits in int64, else an arbitrary-precision ``inf.Dec``
rounded up to the nano unit), because observable results such as
``asApproximateFloat`` and the canonical string depend on that form, not only on the
number. :func:`parse` accepts every string ``ParseQuantity`` accepts: any exponent (Go
narrows it to int32, wrapping, and keeps a small mantissa with a huge scale as is) and
mantissas of any length; comparison is exact without building huge numbers. Exact
arithmetic whose digits would run past :data:`MAX_DIGITS` is refused with
:class:`QuantityTooLargeError` (Go builds those numbers, more slowly as they grow; with
billions of digits, as scales billions apart need, it never finishes).

>>> parse("80Gi").compare(parse("81559Mi"))
1
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

Format = Literal["DecimalExponent", "BinarySI", "DecimalSI"]

MAX_DIGITS = 1_000_000
"""The most decimal digits the exact sum or difference of two quantities may need (Go
builds such a number in about 25 ms, Python in about 200 ms)."""

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_NANO = -9
_MAX_INT64_FACTORS = 18
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
_DECIMAL_SUFFIXES |= {"P": 15, "E": 18}
_DECIMAL_NAMES = {exponent: name for name, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
_DEC_VALUE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")
_STR_DIGITS = 4000  # Python refuses int <-> str conversions past 4300 digits

FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


class QuantityTooLargeError(ArithmeticError):
    """The exact result would need more than :data:`MAX_DIGITS` digits."""


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
        return hash(_strip_zeros(self.unscaled, self.scale) if self.unscaled else 0)

    def compare(self, other: Quantity) -> int:
        """``Quantity.Cmp``: -1, 0 or 1, exactly, whatever the two scales."""
        return compare(self, other)

    def sign(self) -> int:
        """Return -1, 0 or 1."""
        return (self.unscaled > 0) - (self.unscaled < 0)

    def as_int64(self) -> int | None:
        """The exact integer value, or None (apimachinery's ``AsInt64``: int64 form only)."""
        if not self.small:
            return None
        if self.scale > _MAX_INT64_FACTORS:
            return 0 if self.unscaled == 0 else None  # Go gives up at the first overflow
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
        """Return self + other, as ``Quantity.Add`` computes it.

        Raises:
            QuantityTooLargeError: the exact sum needs more than :data:`MAX_DIGITS` digits.
        """
        return self._plus(other, 1)

    def sub(self, other: Quantity) -> Quantity:
        """Return self - other, as ``Quantity.Sub`` computes it.

        Raises:
            QuantityTooLargeError: the exact difference needs more than :data:`MAX_DIGITS`.
        """
        return self._plus(other, -1)

    def _plus(self, other: Quantity, sign: int) -> Quantity:
        _check_size(self, other)
        if self.small and other.small:
            # int64Amount.Add keeps the other's format when this one's amount is zero.
            fmt = other.format if self.unscaled == 0 else self.format
            total = _small_add(self, sign * other.unscaled, other.scale)
            if total is not None:
                return Quantity(total[0], total[1], True, fmt)
            return _dec_add(self, other, sign, fmt)
        fmt = other.format if self.sign() == 0 else self.format
        return _dec_add(self, other, sign, fmt)

    def __str__(self) -> str:
        return self.text if self.text is not None else canonical(self)


def from_int(value: int) -> Quantity:
    """``resource.NewQuantity(value, DecimalExponent)``."""
    return Quantity(value, 0, True, "DecimalExponent")


# -- parsing ---------------------------------------------------------------------------------


def parse(text: str) -> Quantity:
    """Parse a quantity exactly as ``resource.ParseQuantity`` does.

    Raises:
        QuantityError: malformed number or suffix (apimachinery's own three messages).
    """
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Quantity(0, 0, True, "DecimalSI", text)
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    fast = _int64_form(positive, num, denom, base, exponent, fmt)
    if fast is not None:
        return Quantity(*fast, text if _keeps_text(fast, num + denom, exponent) else None)
    return _inf_dec(value, base, exponent, fmt)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """apimachinery's ``parseQuantityString``: sign, number text, digits, fraction, suffix."""
    end, pos, positive = len(text), 0, True
    if text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    num, denom = text[start:pos] or "0", ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value, suffix_start = text[:pos], pos
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
    match = _EXPONENT.fullmatch(suffix)
    if match is not None and _INT64_MIN <= int(match.group(1)) <= _INT64_MAX:
        return 10, _int32(int(match.group(1))), "DecimalExponent"  # Go's int32(parsed)
    raise QuantityError(SUFFIX)


def _int64_form(
    positive: bool, num: str, denom: str, base: int, exponent: int, fmt: Format
) -> tuple[int, int, bool, Format] | None:
    """The int64 form ``(unscaled, scale, True, format)``, when the number and its
    suffix fit without loss; else None (the ``inf.Dec`` form)."""
    mantissa = 1
    if base == 10:
        scale, precision = exponent, _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        scale, mantissa = 0, 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        return None
    if precision < 0:
        return None
    scale = _int32(scale - len(denom))
    if scale < _NANO:
        return None
    number = int(num + denom)  # at most 18 digits here
    if number > _INT64_MAX:
        raise QuantityError(NUMERIC)
    result = number * mantissa
    if result > _INT64_MAX:
        return None
    return (result if positive else -result), scale, True, fmt


def _keeps_text(form: tuple[int, int, bool, Format], shifted: str, exponent: int) -> bool:
    """apimachinery keeps the input as the string form when it is already canonical."""
    unscaled, scale, _, fmt = form
    if fmt == "BinarySI":
        return exponent % 10 == 0 and (abs(unscaled) >> exponent) & 0x07 != 0
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def _inf_dec(value: str, base: int, exponent: int, fmt: Format) -> Quantity:
    """The ``inf.Dec`` form: scale by the suffix, round up to nano, saturate binary."""
    match = _DEC_VALUE.fullmatch(value)
    if match is None or not (match.group(2) or match.group(3)):
        raise QuantityError(NUMERIC)
    negative, whole, fraction = match.group(1) == "-", match.group(2), match.group(3) or ""
    unscaled = _int_of(whole + fraction)
    places = len(fraction)  # inf.Dec's scale: value = unscaled x 10^-places (an int32)
    if base == 10:
        places = _int32(places + _int32(-exponent))
    else:
        unscaled <<= exponent
    scale = -places
    if unscaled:
        # inf.Dec.Round(9, RoundUp): shift the unscaled value by an int32 amount.
        shift = _int32(-_NANO - places)
        if shift > MAX_DIGITS:
            scale = -places  # Go multiplies by 10^shift; the value is the same unmultiplied
        elif shift > 0:
            unscaled, scale = unscaled * 10**shift, _NANO
        elif shift < 0:
            unscaled, scale = _divide_up(unscaled, -shift), _NANO
        else:
            scale = _NANO
    if fmt == "BinarySI" and unscaled:
        if _compare_magnitude(unscaled, scale, _INT64_MAX, 0) > 0:
            unscaled, scale = _INT64_MAX, 0  # apimachinery caps binary quantities
        if _compare_magnitude(unscaled, scale, 1, 0) < 0:
            fmt = "DecimalSI"
    return Quantity(-unscaled if negative else unscaled, scale, False, fmt)


def _divide_up(unscaled: int, digits: int) -> int:
    """``unscaled / 10^digits`` rounded away from zero (unscaled > 0)."""
    if unscaled.bit_length() < 3.32 * digits:  # then unscaled < 2^(3.32 digits) < 10^digits
        return 1  # less than one unit of the target scale: rounds up to one
    quotient, remainder = divmod(unscaled, _power(digits))
    return quotient + (1 if remainder else 0)


# -- comparison and arithmetic ------------------------------------------------------------------


def compare(a: Quantity, b: Quantity) -> int:
    """``Quantity.Cmp``: -1, 0 or 1, exactly, whatever the two scales."""
    sign_a, sign_b = a.sign(), b.sign()
    if sign_a != sign_b or sign_a == 0:
        return (sign_a > sign_b) - (sign_a < sign_b)
    order = _compare_magnitude(abs(a.unscaled), a.scale, abs(b.unscaled), b.scale)
    return order if sign_a > 0 else -order


def _compare_magnitude(ua: int, sa: int, ub: int, sb: int) -> int:
    """Compare ``ua x 10^sa`` with ``ub x 10^sb`` (ua, ub > 0) without huge powers."""
    gap = (math.log10(ua) + sa) - (math.log10(ub) + sb)
    if abs(gap) > 0.5:  # far more than the error of the estimate
        return 1 if gap > 0 else -1
    # Within a factor of about 3: the scales differ by at most the mantissas' digits.
    if sa >= sb:
        ua *= _power(sa - sb)
    else:
        ub *= _power(sb - sa)
    return (ua > ub) - (ua < ub)


def _check_size(a: Quantity, b: Quantity) -> None:
    """Both operands are brought to the finer scale: refuse when that is too many digits."""
    if a.small and b.small and (a.unscaled == 0 or b.unscaled == 0):
        return  # int64Amount.Add returns the other operand as it is
    low = min(a.scale, b.scale)
    top = max(_digits(a.unscaled) + a.scale, _digits(b.unscaled) + b.scale)
    if top - low > MAX_DIGITS:
        msg = f"quantity arithmetic would need more than {MAX_DIGITS} digits"
        raise QuantityTooLargeError(msg)


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
    if by > _MAX_INT64_FACTORS:
        return None  # a non-zero value times 10^19 or more is past int64
    result = value * 10**by
    return result if _INT64_MIN <= result <= _INT64_MAX else None


def _dec_add(q: Quantity, other: Quantity, sign: int, fmt: Format) -> Quantity:
    """inf.Dec addition: the result takes the larger number of decimal places."""
    places = max(-q.scale, -other.scale)
    total = q.unscaled * 10 ** (places + q.scale) + sign * other.unscaled * 10 ** (
        places + other.scale
    )
    return Quantity(total, -places, False, fmt)


# -- the canonical string -----------------------------------------------------------------------


def canonical(q: Quantity) -> str:
    """The canonical string apimachinery prints (``Quantity.String``), for values of any
    size."""
    if q.text is not None:
        return q.text
    if q.unscaled == 0:
        return "0"
    if q.format == "BinarySI":
        binary = _binary_string(q)
        if binary is not None:
            return binary
    unscaled, scale = _strip_zeros(q.unscaled, q.scale)
    while scale % 3:
        unscaled, scale = unscaled * 10, scale - 1
    if q.format == "DecimalExponent":
        tail = f"e{scale}" if scale else ""
    else:
        tail = _DECIMAL_NAMES.get(scale, "")
    return _decimal_string(unscaled) + tail


def _binary_string(q: Quantity) -> str | None:
    """A whole number of at least 1024 in binary units, or None (then apimachinery prints
    it as DecimalSI). Binary quantities are capped at the int64 maximum when parsed."""
    numerator, denominator = _fraction(q)
    if -1024 < numerator / denominator < 1024 or denominator != 1:
        return None
    whole, times = _remove_factors(numerator, 1024)
    suffix = {1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}.get(times, "")
    return f"{whole}{suffix}"


def _fraction(q: Quantity) -> tuple[int, int]:
    """The value as a reduced (numerator, denominator)."""
    if q.scale >= 0:
        return q.unscaled * 10**q.scale, 1
    denominator = 10 ** (-q.scale)
    divisor = math.gcd(q.unscaled, denominator)
    return q.unscaled // divisor, denominator // divisor


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    magnitude, times = abs(value), 0
    while magnitude >= base and magnitude % base == 0:
        magnitude //= base
        times += 1
    return (magnitude if value > 0 else -magnitude), times


def _strip_zeros(unscaled: int, scale: int) -> tuple[int, int]:
    """Move the trailing decimal zeros of unscaled into the scale (in O(log) divisions)."""
    step = 1
    while step and unscaled:
        quotient, remainder = divmod(unscaled, 10**step)
        if remainder:
            step //= 2
            continue
        unscaled, scale = quotient, scale + step
        step *= 2
    return unscaled, scale


# -- numbers of any size --------------------------------------------------------------------------


def _power(exponent: int) -> int:
    """``10 ** exponent`` for exponent >= 0, typed."""
    return int(10**exponent)


def _int32(value: int) -> int:
    """Go's conversion to int32: wrap around."""
    return (value + 2**31) % 2**32 - 2**31


def _digits(value: int) -> int:
    """About how many decimal digits value has (one more at most; 0 has none)."""
    return int(abs(value).bit_length() * 0.30103) + 1 if value else 0


def _int_of(digits: str) -> int:
    """``int(digits)`` for any length (Python refuses past 4300 digits)."""
    if len(digits) <= _STR_DIGITS:
        return int(digits or "0")
    middle = len(digits) // 2
    return _int_of(digits[:middle]) * _power(len(digits) - middle) + _int_of(digits[middle:])


def _decimal_string(value: int) -> str:
    """``str(value)`` for any size."""
    if abs(value).bit_length() <= 13_000:  # under 3,914 digits
        return str(value)
    if value < 0:
        return "-" + _decimal_string(-value)
    half = _digits(value) // 2
    high, low = divmod(value, 10**half)
    return _decimal_string(high) + _decimal_string(low).rjust(half, "0")


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
