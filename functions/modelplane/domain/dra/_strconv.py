"""Go's ``strconv.ParseFloat(s, 64)``, which cel-go's ``double(string)`` calls.

Go's syntax is not Python's: underscores may separate digits (only between digits, or
after a ``0x`` prefix), hexadecimal mantissas need a ``p`` exponent, ``inf``/``infinity``
take a sign but ``nan`` does not, no whitespace, ASCII digits only. A value that rounds
past the largest double is a range error in Go (Python's ``float`` returns infinity).
Go rounds correctly, as Python does, so the value itself comes from Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class ParseFloatError(ValueError):
    """``strconv.ErrSyntax`` or ``strconv.ErrRange``."""


def parse_float(text: str) -> float:
    """Parse ``text`` exactly as ``strconv.ParseFloat(text, 64)`` does.

    Raises:
        ParseFloatError: Go's syntax or range error.
    """
    special = _special(text)
    if special is not None:
        return special
    number = _read_float(text)
    if number is None:
        msg = f"invalid syntax: {text!r}"
        raise ParseFloatError(msg)
    value = number.value()
    if math.isinf(value):
        msg = f"value out of range: {text!r}"
        raise ParseFloatError(msg)
    return value


def _special(text: str) -> float | None:
    """Go's ``special``: [+-]inf, [+-]infinity, nan, any case, and nothing after them."""
    body, sign = text, 1.0
    if body[:1] in ("+", "-"):
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    elif body[:1] in ("n", "N"):
        return math.nan if body.lower() == "nan" else None
    if body.lower() in ("inf", "infinity"):
        return sign * math.inf
    return None


@dataclass(frozen=True)
class _Number:
    negative: bool
    hexadecimal: bool
    digits: str
    """The significant digits, leading zeros dropped."""
    point: int
    """Where the point sits, in digits from the first significant one (Go's ``dp``)."""
    exponent: int
    """The written exponent (a power of 10, or of 2 for hexadecimal), capped as Go caps it."""

    def value(self) -> float:
        if not self.digits:
            return -0.0 if self.negative else 0.0
        sign = "-" if self.negative else ""
        if not self.hexadecimal:
            # Python's float() rounds any decimal string correctly, as Go does.
            return float(f"{sign}0.{self.digits}e{self.point + self.exponent}")
        power = 4 * (self.point - len(self.digits)) + self.exponent
        mantissa = int(self.digits, 16)
        try:
            # Integer true division rounds correctly (to even), subnormals included.
            magnitude = mantissa * 2**power if power >= 0 else mantissa / 2**-power
            result = float(magnitude)
        except OverflowError:
            result = math.inf
        return -result if self.negative else result


def _read_float(text: str) -> _Number | None:
    """Go's ``readFloat``, requiring (as ``ParseFloat`` does) that it reads all of text."""
    i, end = 0, len(text)
    underscores = False
    negative = False
    if i < end and text[i] in "+-":
        negative = text[i] == "-"
        i += 1
    hexadecimal = i + 2 < end and text[i] == "0" and text[i + 1] in "xX"
    if hexadecimal:
        i += 2
    digits: list[str] = []
    saw_dot = saw_digits = False
    point = 0
    while i < end:
        char = text[i]
        if char == "_":
            underscores = True
        elif char == ".":
            if saw_dot:
                break
            saw_dot = True
            point = len(digits)
        elif "0" <= char <= "9" or (hexadecimal and char.lower() in "abcdef"):
            saw_digits = True
            if char == "0" and not digits:
                point -= 1  # a leading zero moves the point, not the digits
            else:
                digits.append(char)
        else:
            break
        i += 1
    if not saw_digits:
        return None
    if not saw_dot:
        point = len(digits)
    exponent = 0
    if i < end and text[i].lower() == ("p" if hexadecimal else "e"):
        read = _read_exponent(text, i + 1)
        if read is None:
            return None
        exponent, i, in_exponent = read
        underscores = underscores or in_exponent
    elif hexadecimal:
        return None  # a hexadecimal mantissa needs a 'p' exponent
    if i != end or (underscores and not _underscores_ok(text[:i])):
        return None
    return _Number(negative, hexadecimal, "".join(digits), point, exponent)


def _read_exponent(text: str, i: int) -> tuple[int, int, bool] | None:
    """The exponent after ``e``/``p`` at i: its value (capped as Go caps it), where it
    ends, and whether it had underscores; None when there are no digits."""
    end, sign, underscores, exponent = len(text), 1, False, 0
    if i < end and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        i += 1
    if i >= end or not "0" <= text[i] <= "9":
        return None
    while i < end and ("0" <= text[i] <= "9" or text[i] == "_"):
        if text[i] == "_":
            underscores = True
        elif exponent < 10_000:  # Go stops counting there ("it doesn't matter")
            exponent = exponent * 10 + int(text[i])
        i += 1
    return sign * exponent, i, underscores


def _underscores_ok(text: str) -> bool:
    """Go's ``underscoreOK``: an underscore only between digits (a base prefix counts)."""
    if text[:1] in ("+", "-"):
        text = text[1:]
    saw, i = "^", 0
    hexadecimal = False
    if len(text) >= 2 and text[0] == "0" and text[1].lower() in "box":
        i, saw, hexadecimal = 2, "0", text[1].lower() == "x"
    for char in text[i:]:
        if "0" <= char <= "9" or (hexadecimal and char.lower() in "abcdef"):
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"
