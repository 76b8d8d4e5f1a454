"""cel-go's strings extension at version 2 (Kubernetes' setting), with Go's semantics.

Indexes count code points (Go runes); ``format`` follows cel-go's version-1 formatter with
the ``en_US`` locale Kubernetes leaves in place (grouped fixed-point numbers, and exponents
as a multiplication sign, 10 and superscript digits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from modelplane.domain.dra import _time
from modelplane.domain.dra import _values as v
from modelplane.domain.dra._values import EvalError

_SPACES = (
    " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
DEFAULT_PRECISION = 6


def _out_of_range(index: int) -> EvalError:
    return EvalError(f"index out of range: {index}")


def char_at(s: str, index: int) -> str:
    if not 0 <= index <= len(s):
        raise _out_of_range(index)
    return s[index : index + 1]


def _offset_answer(s: str, sub: str, offset: int) -> int | None:
    """cel-go's answer for an empty substring or an offset out of the string, else None.

    Raises:
        EvalError: a negative offset.
    """
    if sub == "":
        return offset
    if offset < 0:
        raise _out_of_range(offset)
    return -1 if offset >= len(s) else None


def index_of(s: str, sub: str, offset: int = 0) -> int:
    answer = _offset_answer(s, sub, offset)
    return s.find(sub, offset) if answer is None else answer


def last_index_of(s: str, sub: str, offset: int | None = None) -> int:
    if offset is None:
        if sub == "":
            return len(s)
        if len(s.encode()) < len(sub.encode()):
            return -1
        offset = len(s) - 1
    answer = _offset_answer(s, sub, offset)
    if answer is not None:
        return answer
    start = min(offset, len(s) - len(sub))
    if start < 0:
        return -1
    return s.rfind(sub, 0, start + len(sub))


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def lower_ascii(s: str) -> str:
    return s.translate(_LOWER)


def upper_ascii(s: str) -> str:
    return s.translate(_UPPER)


def replace(s: str, old: str, new: str, count: int = -1) -> str:
    return s.replace(old, new, count)


def split(s: str, sep: str, count: int = -1) -> tuple[str, ...]:
    if count == 0:
        return ()
    if sep == "":
        chars = list(s)
        if 0 < count < len(chars):
            chars = [*chars[: count - 1], "".join(chars[count - 1 :])]
        return tuple(chars)
    return tuple(s.split(sep, count - 1 if count > 0 else -1))


def substring(s: str, start: int, end: int | None = None) -> str:
    if end is None:
        if not 0 <= start <= len(s):
            raise _out_of_range(start)
        return s[start:]
    if start > end:
        msg = f"invalid substring range. start: {start}, end: {end}"
        raise EvalError(msg)
    for index in (start, end):
        if not 0 <= index <= len(s):
            raise _out_of_range(index)
    return s[start:end]


def trim(s: str) -> str:
    return s.strip(_SPACES)


def join(items: Any, sep: Any = "") -> Any:
    if not isinstance(items, tuple) or not isinstance(sep, str):
        raise v.no_overload()
    for item in items:
        if not isinstance(item, str):
            msg = f"join: invalid input: {item}"
            raise EvalError(msg)
    return sep.join(items)


def quote(s: Any) -> Any:
    if not isinstance(s, str):
        raise v.no_overload()
    return '"' + "".join(_QUOTE_ESCAPES.get(c, c) for c in s) + '"'


_QUOTE_ESCAPES = {
    "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
    "\v": "\\v", "\\": "\\\\", '"': '\\"',
}  # fmt: skip


def go_quote(s: str) -> str:
    """Go's ``%q`` (strconv.Quote) for a valid UTF-8 string."""
    out = ['"']
    for char in s:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif _go_printable(char):
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def _go_printable(char: str) -> bool:
    if char < "\x7f":
        return char >= " "
    return char.isprintable()


# -- string.format ------------------------------------------------------------------------


def format_string(template: Any, args: Any) -> Any:
    """``<string>.format(<list>)``."""
    if not isinstance(template, str) or not isinstance(args, tuple):
        raise v.no_overload()
    try:
        return _format(template, _RuntimeClauses(), args)[0]
    except FormatError as err:
        raise EvalError(str(err)) from None


class FormatError(Exception):
    """A bad format string or argument; raised by :class:`Clauses` methods."""


class Clauses:
    """What each formatting clause does with its argument (values at run time, types when
    the format is checked at compile time)."""

    def string(self, arg: Any) -> str:
        return _format_value(arg)

    def decimal(self, arg: Any) -> str:
        return _decimal(arg)

    def fixed(self, precision: int | None) -> Callable[[Any], str]:
        return lambda arg: _fixed(arg, DEFAULT_PRECISION if precision is None else precision)

    def scientific(self, precision: int | None) -> Callable[[Any], str]:
        return lambda arg: _scientific(arg, DEFAULT_PRECISION if precision is None else precision)

    def binary(self, arg: Any) -> str:
        return _binary(arg)

    def hex(self, upper: bool) -> Callable[[Any], str]:
        return lambda arg: _hex(arg, upper)

    def octal(self, arg: Any) -> str:
        return _octal(arg)


class _RuntimeClauses(Clauses):
    """The clauses applied to values."""


def parse_format(template: str, clauses: Clauses, args: tuple[Any, ...] | list[Any]) -> int:
    """Run cel-go's format-string parser with the given clauses; return how many
    arguments the clauses used.

    Raises:
        ValueError: the format string or an argument is invalid.
    """
    try:
        return _format(template, clauses, args)[1]
    except FormatError as err:
        raise ValueError(str(err)) from None


def _format(template: str, clauses: Clauses, args: tuple[Any, ...] | list[Any]) -> tuple[str, int]:
    out: list[str] = []
    i = 0
    arg_index = 0
    while i < len(template):
        char = template[i]
        if char != "%":
            out.append(char)
            i += 1
            continue
        if i + 1 < len(template) and template[i + 1] == "%":
            out.append("%")
            i += 2
            continue
        if arg_index >= len(args):
            msg = f"index {arg_index} out of range"
            raise FormatError(msg)
        if i + 1 >= len(template):
            msg = "unexpected end of string"
            raise FormatError(msg)
        read, text = _clause(template[i + 1 :], args[arg_index], clauses)
        out.append(text)
        i += 1 + read
        arg_index += 1
    return "".join(out), arg_index


def _clause(rest: str, arg: Any, clauses: Clauses) -> tuple[int, str]:
    i = 0
    precision: int | None = None
    if rest[0] == ".":
        i = 1
        digits = ""
        while True:
            if i >= len(rest):
                msg = "could not parse formatting clause: error while parsing precision: could not find end of precision specifier"
                raise FormatError(msg)
            if not ("0" <= rest[i] <= "9"):
                break
            digits += rest[i]
            i += 1
        if not digits:
            msg = "could not parse formatting clause: error while parsing precision: error while converting precision to integer"
            raise FormatError(msg)
        precision = int(digits)
    verb = rest[i]
    i += 1
    formatter = _formatter(verb, precision, clauses)
    try:
        return i, formatter(arg)
    except FormatError as err:
        msg = f"error during formatting: {err}"
        raise FormatError(msg) from None


def _formatter(verb: str, precision: int | None, clauses: Clauses) -> Callable[[Any], str]:
    if verb == "s":
        return clauses.string
    if verb == "d":
        return clauses.decimal
    if verb == "f":
        return clauses.fixed(precision)
    if verb == "e":
        return clauses.scientific(precision)
    if verb == "b":
        return clauses.binary
    if verb in ("x", "X"):
        return clauses.hex(verb == "X")
    if verb == "o":
        return clauses.octal
    msg = f'could not parse formatting clause: unrecognized formatting clause "{verb}"'
    raise FormatError(msg)


def _kind(value: Any) -> str:
    return v.type_name(value)


def _format_value(arg: Any) -> str:
    """cel-go's ``FormatString`` (the ``%s`` clause)."""
    if isinstance(arg, tuple):
        return _format_list(arg)
    if isinstance(arg, dict):
        return _format_map(arg)
    if arg is None:
        return "null"
    if isinstance(arg, (bool, int, float, str, bytes, v.Timestamp, v.Duration, v.TypeValue)):
        return _to_string(arg)
    msg = (
        "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
        f"types, durations, and timestamps, was given {_kind(arg)}"
    )
    raise FormatError(msg)


def scalar_string(value: Any) -> str | None:
    """``string(x)`` of a bool, int, uint, double, string, bytes, timestamp or duration, as
    cel-go writes it; None for other kinds.

    Raises:
        UnicodeDecodeError: bytes that are not UTF-8 (each caller has cel-go's message).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return v.format_double(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, v.Timestamp):
        return _time.timestamp_string(value)
    if isinstance(value, v.Duration):
        return _time.duration_string(value)
    return None


def _to_string(arg: Any) -> str:
    try:
        text = scalar_string(arg)
    except UnicodeDecodeError:
        msg = "could not convert argument to string: invalid UTF-8 in bytes"
        raise FormatError(msg) from None
    if text is not None:
        return text
    if isinstance(arg, v.TypeValue):
        return arg.name
    return str(arg)


def _element(arg: Any) -> str:
    """A list element or map value: formatted by its type, then quoted for CEL."""
    if isinstance(arg, bool) or arg is None or isinstance(arg, (str, bytes, v.TypeValue)):
        text = _format_value(arg)
    elif isinstance(arg, int):
        text = _decimal(arg)
    elif isinstance(arg, (v.Timestamp, v.Duration)):
        name = "timestamp" if isinstance(arg, v.Timestamp) else "duration"
        return f"{name}({go_quote(_to_string(arg))})"
    elif isinstance(arg, tuple):
        return _format_list(arg)
    elif isinstance(arg, dict):
        return _format_map(arg)
    elif isinstance(arg, float):
        text = _plain_fixed(arg, DEFAULT_PRECISION)
        return go_quote(text) if not math.isfinite(arg) else text
    else:
        msg = f"no formatting function for {_kind(arg)}"
        raise FormatError(msg)
    if isinstance(arg, str):
        return go_quote(text)
    if isinstance(arg, bytes):
        return "b" + go_quote(text)
    return text


def _format_list(items: tuple[Any, ...]) -> str:
    return "[" + ", ".join(_element(item) for item in items) + "]"


def _format_map(mapping: dict[Any, Any]) -> str:
    pairs: list[tuple[str, str]] = []
    for key, value in mapping.items():
        if isinstance(key, (bool, str)):
            key_text = _format_value(key)
            if isinstance(key, str):
                key_text = go_quote(key_text)
        elif isinstance(key, int):
            key_text = _decimal(key)
        else:
            msg = f"no formatting function for map key of type {_kind(key)}"
            raise FormatError(msg)
        pairs.append((key_text, _element(value)))
    pairs.sort(key=lambda pair: pair[0].encode())
    return "{" + ", ".join(f"{k}:{val}" for k, val in pairs) + "}"


def _decimal(arg: Any) -> str:
    if isinstance(arg, int) and not isinstance(arg, bool):
        return str(int(arg))
    msg = f"decimal clause can only be used on integers, was given {_kind(arg)}"
    raise FormatError(msg)


def _float_arg(arg: Any, clause: str) -> float:
    if isinstance(arg, float):
        return arg
    if isinstance(arg, str) and arg in ("NaN", "Infinity", "-Infinity"):
        return float(arg.replace("Infinity", "inf"))
    msg = f"{clause} clause can only be used on doubles, was given {_kind(arg)}"
    raise FormatError(msg)


def _plain_fixed(value: float, precision: int) -> str:
    """Go's ``fmt.Sprintf("%.Nf")``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:.{precision}f}"


def _fixed(arg: Any, precision: int) -> str:
    """x/text's ``%.Nf`` for en_US: grouped thousands, no negative zero."""
    value = _float_arg(arg, "fixed-point")
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value == 0:
        value = 0.0
    text = f"{value:.{precision}f}"
    sign = "-" if text.startswith("-") else ""
    whole, dot, frac = text.lstrip("-").partition(".")
    return sign + _group(whole) + dot + frac


def _group(digits: str) -> str:
    head = len(digits) % 3 or 3
    groups = [digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)]
    return ",".join(groups)


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scientific(arg: Any, width: int) -> str:
    """x/text's ``%<width>e`` (cel-go passes the precision as a width): 6 digits."""
    value = _float_arg(arg, "scientific")
    if math.isnan(value):
        return "NaN".rjust(width)
    if math.isinf(value):
        return ("∞" if value > 0 else "-∞").rjust(width)
    if value == 0:
        value = 0.0
    mantissa, _, exponent = f"{value:.{DEFAULT_PRECISION}e}".partition("e")
    exp = int(exponent)
    exponent_text = ("-" if exp < 0 else "") + f"{abs(exp):02d}"
    times = "\u00d7"  # the multiplication sign x/text prints
    return f"{mantissa}{times}10{exponent_text.translate(_SUPERSCRIPT)}".rjust(width)


def _binary(arg: Any) -> str:
    if isinstance(arg, bool):
        return "1" if arg else "0"
    if isinstance(arg, int):
        return format(int(arg), "b")
    msg = f"only integers and bools can be formatted as binary, was given {_kind(arg)}"
    raise FormatError(msg)


def _hex(arg: Any, upper: bool) -> str:
    if isinstance(arg, str):
        text = arg.encode().hex()
    elif isinstance(arg, bytes):
        text = arg.hex()
    elif isinstance(arg, int) and not isinstance(arg, bool):
        text = format(int(arg), "x")
    else:
        msg = (
            "only integers, byte buffers, and strings can be formatted as hex, was given "
            f"{_kind(arg)}"
        )
        raise FormatError(msg)
    return text.upper() if upper else text


def _octal(arg: Any) -> str:
    if isinstance(arg, int) and not isinstance(arg, bool):
        return format(int(arg), "o")
    msg = f"octal clause can only be used on integers, was given {_kind(arg)}"
    raise FormatError(msg)
