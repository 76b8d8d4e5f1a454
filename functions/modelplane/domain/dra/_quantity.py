"""Kubernetes quantities as a DRA selector sees them (apimachinery's resource.Quantity).

Values are :class:`modelplane.domain.quantity.Quantity` (apimachinery's two internal forms:
int64 ``value x 10^scale``, or an ``inf.Dec``). What this module adds is what the CEL
library needs exactly as Go behaves, for every string ``ParseQuantity`` accepts:

- :func:`parse`: ``ParseQuantity`` with any exponent (Go narrows it to int32, wrapping,
  and keeps a small mantissa with a huge scale as is) and mantissas of any length.
- :func:`compare`: exact ordering (``Quantity.Cmp``) without building huge numbers.
- :func:`as_int64`, :func:`add`, :func:`sub`: ``AsInt64``, ``Add``, ``Sub``.
- :class:`QuantityValue`: the CEL value, a pointer to a Quantity that Kubernetes' library
  mutates: ``compareTo``/``isGreaterThan``/``isLessThan`` turn their receiver into the
  ``inf.Dec`` form when either side has it (``Quantity.AsDec`` converts in place, after
  which ``isInteger`` is false), and ``add``/``sub`` copy the receiver by value, so a
  receiver in the ``inf.Dec`` form shares its ``inf.Dec`` with the result, and the
  addition changes both.

Exact arithmetic on values whose digits would run past :data:`MAX_DIGITS` is refused with
:class:`QuantityTooLargeError` instead (Go builds those numbers, more slowly as they grow;
with billions of digits, as scales billions apart need, it never finishes).
"""

from __future__ import annotations

import math
import re

from modelplane.domain import quantity as qty

MAX_DIGITS = 1_000_000
"""The most decimal digits the exact sum or difference of two quantities may need (Go
builds such a number in about 25 ms, Python in about 200 ms)."""

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_NANO = -9
_MAX_INT64_FACTORS = 18
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_DECIMAL |= {"E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES = {exponent: name for name, exponent in _DECIMAL.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
_DEC_VALUE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")
_STR_DIGITS = 4000  # Python refuses int <-> str conversions past 4300 digits


class QuantityTooLargeError(ArithmeticError):
    """The exact result would need more than :data:`MAX_DIGITS` digits."""


class _Dec:
    """An ``*inf.Dec``: a quantity's value in that form, shared by the copies of a Quantity."""

    __slots__ = ("value",)

    def __init__(self, value: qty.Quantity) -> None:
        self.value = value


class QuantityValue:
    """A CEL ``kubernetes.Quantity``: cel-go holds a pointer to an apimachinery Quantity.

    Identity matters (see the module documentation): every reference to one CEL value is
    the same object, and a value in the ``inf.Dec`` form holds a :class:`_Dec` that the
    results of its ``add``/``sub`` share. ``boxed`` marks those results, which cel-go
    holds by pointer: Kubernetes' equality only accepts the unboxed form on the
    right-hand side, and we keep that quirk.
    """

    __slots__ = ("_dec", "_small", "boxed")

    def __init__(self, quantity: qty.Quantity, boxed: bool = False) -> None:
        self._small: qty.Quantity | None = quantity if quantity.small else None
        self._dec: _Dec | None = None if quantity.small else _Dec(quantity)
        self.boxed = boxed

    @property
    def quantity(self) -> qty.Quantity:
        """The current value, in its current form."""
        if self._dec is not None:
            return self._dec.value
        assert self._small is not None
        return self._small

    def _as_dec(self) -> _Dec:
        """``Quantity.AsDec``/``ToDec``: switch to the ``inf.Dec`` form, in place."""
        if self._dec is None:
            small = self.quantity
            self._dec = _Dec(qty.Quantity(small.unscaled, small.scale, False, small.format))
            self._small = None
        return self._dec

    def compare(self, other: QuantityValue) -> int:
        """``q.Cmp(*other)``, as ``compareTo``, ``isGreaterThan`` and ``isLessThan`` call it."""
        if self._dec is not None or other._dec is not None:
            self._as_dec()
        return compare(self.quantity, other.quantity)

    def plus(self, other: qty.Quantity, sign: int) -> QuantityValue:
        """``copy := *q; copy.Add(other)`` (or ``Sub``), as ``add`` and ``sub`` do.

        Raises:
            QuantityTooLargeError: the exact result needs more than :data:`MAX_DIGITS`.
        """
        result = add(self.quantity, other) if sign > 0 else sub(self.quantity, other)
        copy = QuantityValue(result, boxed=True)
        if not result.small:
            # Go's copy still points at our inf.Dec (if we have one) and adds into it.
            shared = self._dec if self._dec is not None else _Dec(result)
            shared.value = result
            copy._dec = shared
        return copy


def parse(text: str) -> qty.Quantity:
    """``resource.ParseQuantity``.

    Raises:
        modelplane.domain.quantity.QuantityError: apimachinery's own three errors.
    """
    if not text:
        raise qty.QuantityError(qty.FORMAT_WRONG)
    if text == "0":
        return qty.Quantity(0, 0, True, "DecimalSI", text)
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    if base == 10:
        scale, precision, mantissa = exponent, _MAX_INT64_FACTORS - (len(num) + len(denom)), 1
    elif exponent >= 0 and not denom:
        scale, mantissa = 0, 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        scale, precision, mantissa = 0, -1, 1
    if precision >= 0:
        scale = _int32(scale - len(denom))
        if scale >= _NANO:
            shifted = num + denom
            number = int(shifted)  # at most 18 digits here
            if number > _INT64_MAX:
                raise qty.QuantityError(qty.NUMERIC)
            result = number * mantissa
            if result <= _INT64_MAX:
                keep = (
                    exponent % 10 == 0 and number & 0x07 != 0
                    if fmt == "BinarySI"
                    else scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                )
                return qty.Quantity(
                    result if positive else -result, scale, True, fmt, text if keep else None
                )
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
        raise qty.QuantityError(qty.FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, qty.Format]:
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], "DecimalSI"
    if suffix in _BINARY:
        return 2, _BINARY[suffix], "BinarySI"
    match = _EXPONENT.fullmatch(suffix)
    if match is not None and _INT64_MIN <= int(match.group(1)) <= _INT64_MAX:
        return 10, _int32(int(match.group(1))), "DecimalExponent"  # Go's int32(parsed)
    raise qty.QuantityError(qty.SUFFIX)


def _inf_dec(value: str, base: int, exponent: int, fmt: qty.Format) -> qty.Quantity:
    """The ``inf.Dec`` form: scale by the suffix, round up to nano, saturate binary."""
    match = _DEC_VALUE.fullmatch(value)
    if match is None or not (match.group(2) or match.group(3)):
        raise qty.QuantityError(qty.NUMERIC)
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
    return qty.Quantity(-unscaled if negative else unscaled, scale, False, fmt)


def _divide_up(unscaled: int, digits: int) -> int:
    """``unscaled / 10^digits`` rounded away from zero (unscaled > 0)."""
    if unscaled.bit_length() < 3.32 * digits:  # then unscaled < 2^(3.32 digits) < 10^digits
        return 1  # less than one unit of the target scale: rounds up to one
    quotient, remainder = divmod(unscaled, _power(digits))
    return quotient + (1 if remainder else 0)


def compare(a: qty.Quantity, b: qty.Quantity) -> int:
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


def as_int64(q: qty.Quantity) -> int | None:
    """``Quantity.AsInt64``: the value when it is held as an exact int64, else None."""
    if q.small and q.scale > _MAX_INT64_FACTORS:
        return 0 if q.unscaled == 0 else None  # Go gives up at the first overflow
    return q.as_int64()


def add(a: qty.Quantity, b: qty.Quantity) -> qty.Quantity:
    """``Quantity.Add``.

    Raises:
        QuantityTooLargeError: the exact sum needs more than :data:`MAX_DIGITS` digits.
    """
    _check_size(a, b)
    return a.add(b)


def sub(a: qty.Quantity, b: qty.Quantity) -> qty.Quantity:
    """``Quantity.Sub``.

    Raises:
        QuantityTooLargeError: the exact difference needs more than :data:`MAX_DIGITS` digits.
    """
    _check_size(a, b)
    return a.sub(b)


def _check_size(a: qty.Quantity, b: qty.Quantity) -> None:
    """Both operands are brought to the finer scale: refuse when that is too many digits."""
    if a.small and b.small and (a.unscaled == 0 or b.unscaled == 0):
        return  # int64Amount.Add returns the other operand as it is
    low = min(a.scale, b.scale)
    top = max(_digits(a.unscaled) + a.scale, _digits(b.unscaled) + b.scale)
    if top - low > MAX_DIGITS:
        msg = f"quantity arithmetic would need more than {MAX_DIGITS} digits"
        raise QuantityTooLargeError(msg)


def canonical(q: qty.Quantity) -> str:
    """``Quantity.String``, for values of any size."""
    if q.text is not None or q.unscaled == 0 or q.format == "BinarySI":
        return str(q)  # binary quantities are capped at the int64 maximum when parsed
    unscaled, scale = _strip_zeros(q.unscaled, q.scale)
    while scale % 3:
        unscaled, scale = unscaled * 10, scale - 1
    if q.format == "DecimalExponent":
        tail = f"e{scale}" if scale else ""
    else:
        tail = _DECIMAL_NAMES.get(scale, "")
    return _decimal_string(unscaled) + tail


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
