"""The functions of the DRA CEL environment (their runtime costs: ``_call_costs``).

Implementations take CEL values (see ``_values``) and return one or raise ``EvalError``;
they dispatch on the runtime types as cel-go does for ``dyn`` arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from modelplane.domain import quantity as qty
from modelplane.domain import semver
from modelplane.domain.dra import (
    _formats,
    _lists,
    _net,
    _regex_functions,
    _strconv,
    _strings,
    _time,
    _types,
)
from modelplane.domain.dra import _values as v
from modelplane.domain.dra._quantity import QuantityValue
from modelplane.domain.dra._values import EvalError, Uint


def add(a: Any, b: Any) -> Any:
    if isinstance(a, Uint) and isinstance(b, Uint):
        return v.check_uint(a + b)
    if _is_int(a) and _is_int(b):
        return v.check_int(a + b)
    if isinstance(a, float) and isinstance(b, float):
        return a + b
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    if isinstance(a, bytes) and isinstance(b, bytes):
        return a + b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a + b
    if isinstance(a, (v.Timestamp, v.Duration)):
        return _time.add(a, b)
    raise v.no_overload()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, (bool, Uint))


def _arith(op: str) -> Callable[[Any, Any], Any]:
    def run(a: Any, b: Any) -> Any:
        if isinstance(a, Uint) and isinstance(b, Uint):
            return v.check_uint(_int_op(op, a, b, unsigned=True))
        if _is_int(a) and _is_int(b):
            return v.check_int(_int_op(op, a, b, unsigned=False))
        if isinstance(a, float) and isinstance(b, float) and op != "%":
            return _float_op(op, a, b)
        if op == "-" and isinstance(a, (v.Timestamp, v.Duration)):
            return _time.subtract(a, b)
        raise v.no_overload()

    return run


def _int_op(op: str, a: int, b: int, unsigned: bool) -> int:
    if op == "-":
        result = a - b
        if unsigned and result < 0:
            msg = "unsigned integer overflow"
            raise EvalError(msg)
        return result
    if op == "*":
        return a * b
    if b == 0:
        raise EvalError("division by zero" if op == "/" else "modulus by zero")
    if not unsigned and a == v.INT64_MIN and b == -1:
        # Go's checked division and modulus both refuse the one overflowing pair.
        msg = "integer overflow"
        raise EvalError(msg)
    quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    if op == "/":
        return quotient
    return a - b * quotient


def _float_op(op: str, a: float, b: float) -> float:
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def _negate(a: Any) -> Any:
    if _is_int(a):
        return v.check_int(-a)
    if isinstance(a, float):
        return -a
    raise v.no_overload()


def _not(a: Any) -> Any:
    if isinstance(a, bool):
        return not a
    raise v.no_overload()


def _not_strictly_false(a: Any) -> Any:
    return a is not False


def _relation(test: Callable[[int], bool]) -> Callable[[Any, Any], Any]:
    def run(a: Any, b: Any) -> Any:
        return test(v.compare(a, b))

    return run


def _equals(a: Any, b: Any) -> Any:
    return v.equal(a, b)


def _not_equals(a: Any, b: Any) -> Any:
    """cel-go's ``!=`` is true unless equality is exactly true, so it never errors."""
    try:
        return v.equal(a, b) is not True
    except v.CostExceededError:
        raise
    except EvalError:
        return True


def _size(a: Any) -> Any:
    if isinstance(a, (str, bytes, tuple, dict)):
        return len(a)
    raise v.no_overload()


def _member(items: Any, value: Any) -> Any:
    """``value in list`` or ``key in map``."""
    if isinstance(items, tuple):
        return _lists.contains(items, value)
    if isinstance(items, dict):
        try:
            return v.map_contains(items, value)[0]
        except EvalError:
            return False  # Go's map lookup with a key of another kind finds nothing
    raise v.no_overload()


def _on_string(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        if not isinstance(args[0], str):
            raise v.no_overload()
        for a in args[1:]:
            if isinstance(a, bool) or not isinstance(a, (str, int)) or isinstance(a, Uint):
                raise v.no_overload()
        return fn(*args)

    return run


def _index_of(target: Any, *args: Any) -> Any:
    if isinstance(target, tuple) and len(args) == 1:
        return _lists.index_of(target, args[0])
    return _strings_index_of(target, *args)


def _last_index_of(target: Any, *args: Any) -> Any:
    if isinstance(target, tuple) and len(args) == 1:
        return _lists.last_index_of(target, args[0])
    return _strings_last_index_of(target, *args)


_strings_index_of = _on_string(_strings.index_of)
_strings_last_index_of = _on_string(_strings.last_index_of)


def _to_int(a: Any) -> Any:
    if isinstance(a, bool):
        raise v.no_overload()
    if isinstance(a, v.Duration):
        return a.nanos
    if isinstance(a, v.Timestamp):
        return a.nanos // _time.SECOND
    if isinstance(a, int):
        return v.check_int(int(a)) if isinstance(a, Uint) else a
    if isinstance(a, float):
        if math.isnan(a) or not -(2.0**63) < a < 2.0**63:
            msg = "range error"
            raise EvalError(msg)
        return int(a)
    if isinstance(a, str):
        return _parse_int(a, signed=True)
    raise v.no_overload()


def _parse_int(text: str, signed: bool) -> int:
    body = text[1:] if signed and text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        msg = f"cannot convert '{text}' to {'int' if signed else 'uint'}"
        raise EvalError(msg)
    value = int(text)
    if signed and not v.INT64_MIN <= value <= v.INT64_MAX:
        msg = "range error"
        raise EvalError(msg)
    if not signed and value > v.UINT64_MAX:
        msg = "range error"
        raise EvalError(msg)
    return value


def _to_uint(a: Any) -> Any:
    if isinstance(a, bool):
        raise v.no_overload()
    if isinstance(a, int):
        if a < 0:
            msg = "range error"
            raise EvalError(msg)
        return Uint(a)
    if isinstance(a, float):
        if math.isnan(a) or not 0 <= a < 2.0**64:  # Go refuses -0.5 too
            msg = "range error"
            raise EvalError(msg)
        return Uint(int(a))
    if isinstance(a, str):
        return Uint(_parse_int(a, signed=False))
    raise v.no_overload()


def _to_double(a: Any) -> Any:
    if isinstance(a, bool):
        raise v.no_overload()
    if isinstance(a, (int, float)):
        return float(a)
    if isinstance(a, str):
        try:
            return _strconv.parse_float(a)
        except _strconv.ParseFloatError:
            msg = "type conversion error from 'string' to 'double'"
            raise EvalError(msg) from None
    raise v.no_overload()


def _to_string(a: Any) -> Any:
    try:
        text = _strings.scalar_string(a)
    except UnicodeDecodeError:
        msg = "invalid UTF-8 in bytes, cannot convert to string"
        raise EvalError(msg) from None
    if text is not None:
        return text
    if isinstance(a, (v.IP, v.CIDR)):
        return _net.to_string(a)
    raise v.no_overload()


def _to_bool(a: Any) -> Any:
    if isinstance(a, bool):
        return a
    if isinstance(a, str):
        if a in ("1", "t", "T", "TRUE", "true", "True"):
            return True
        if a in ("0", "f", "F", "FALSE", "false", "False"):
            return False
        msg = "type conversion error from 'string' to 'bool'"
        raise EvalError(msg)
    raise v.no_overload()


def _to_bytes(a: Any) -> Any:
    if isinstance(a, bytes):
        return a
    if isinstance(a, str):
        return a.encode()
    raise v.no_overload()


def _type(a: Any) -> Any:
    return v.TypeValue(v.type_name(a))


def _to_quantity(a: Any) -> Any:
    text = v.expect(a, str)
    try:
        return QuantityValue(qty.parse(text))
    except qty.QuantityError as err:
        raise EvalError(str(err)) from None


def _is_quantity(a: Any) -> Any:
    text = v.expect(a, str)
    try:
        qty.parse(text)
    except qty.QuantityError:
        return False
    return True


def _as_integer(a: Any) -> Any:
    value = v.expect(a, QuantityValue).quantity.as_int64()
    if value is None:
        msg = "cannot convert value to integer"
        raise EvalError(msg)
    return value


def _quantity_math(sign: int) -> Callable[[Any, Any], Any]:
    def run(a: Any, b: Any) -> Any:
        left = v.expect(a, QuantityValue)
        if isinstance(b, QuantityValue):
            right = b.quantity
        elif _is_int(b):
            right = qty.from_int(b)
        else:
            raise v.no_overload()
        try:
            return left.plus(right, sign)
        except qty.QuantityTooLargeError as err:
            raise EvalError(str(err)) from None

    return run


def _ordered(test: Callable[[int], Any]) -> Callable[[Any, Any], Any]:
    def run(a: Any, b: Any) -> Any:
        if isinstance(a, QuantityValue) and isinstance(b, QuantityValue):
            return test(a.compare(b))
        if isinstance(a, semver.Version) and isinstance(b, semver.Version):
            return test(a.compare(b))
        raise v.no_overload()

    return run


def _to_semver(a: Any, normalize: Any = False) -> Any:
    if not isinstance(a, str) or not isinstance(normalize, bool):
        raise v.no_overload()
    try:
        return semver.normalize_and_parse(a) if normalize else semver.parse(a)
    except semver.SemverError as err:
        raise EvalError(str(err)) from None


def _is_semver(a: Any, normalize: Any = False) -> Any:
    try:
        _to_semver(a, normalize)
    except v.CostExceededError:
        raise
    except EvalError as err:
        if str(err) == "no such overload":
            raise
        return False
    return True


def _semver_part(index: int) -> Callable[[Any], Any]:
    def run(a: Any) -> Any:
        if not isinstance(a, semver.Version):
            raise v.no_overload()
        return (a.major, a.minor, a.patch)[index]

    return run


def _unreachable(*args: Any) -> Any:
    raise v.no_overload()


def _zero_arity(value: Callable[[], Any]) -> Callable[..., Any]:
    return lambda *args: value()


def _format_constant(key: str) -> Callable[..., Any]:
    return lambda *args: _formats.constant(key)


CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "int": _to_int,
    "uint": _to_uint,
    "double": _to_double,
    "string": _to_string,
    "bool": _to_bool,
    "bytes": _to_bytes,
    "dyn": lambda a: a,
    "type": _type,
    "duration": _time.to_duration,
    "timestamp": _time.to_timestamp,
}

FUNCTIONS: dict[str, Callable[..., Any]] = {
    **CONVERSIONS,
    "_+_": add,
    "_-_": _arith("-"),
    "_*_": _arith("*"),
    "_/_": _arith("/"),
    "_%_": _arith("%"),
    "-_": _negate,
    "!_": _not,
    "@not_strictly_false": _not_strictly_false,
    "_==_": _equals,
    "_!=_": _not_equals,
    "_<_": _relation(lambda o: o < 0),
    "_<=_": _relation(lambda o: o <= 0),
    "_>_": _relation(lambda o: o > 0),
    "_>=_": _relation(lambda o: o >= 0),
    "@in": lambda value, items: _member(items, value),
    "size": _size,
    "contains": _on_string(lambda s, sub: sub in s),
    "startsWith": _on_string(lambda s, p: s.startswith(p)),
    "endsWith": _on_string(lambda s, p: s.endswith(p)),
    "matches": _regex_functions.matches,
    "find": _regex_functions.find,
    "findAll": _regex_functions.find_all,
    # timestamps and durations
    **{name: _time.getter(name) for name in _types.TIME_GETTERS},
    # quantity and semver
    "quantity": _to_quantity,
    "isQuantity": _is_quantity,
    "sign": lambda a: v.expect(a, QuantityValue).quantity.sign(),
    "asApproximateFloat": lambda a: v.expect(a, QuantityValue).quantity.as_approximate_float(),
    "asInteger": _as_integer,
    "isInteger": lambda a: v.expect(a, QuantityValue).quantity.as_int64() is not None,
    "add": _quantity_math(1),
    "sub": _quantity_math(-1),
    "isGreaterThan": _ordered(lambda o: o == 1),
    "isLessThan": _ordered(lambda o: o == -1),
    "compareTo": _ordered(lambda o: o),
    "semver": _to_semver,
    "isSemver": _is_semver,
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
    # strings extension
    "charAt": _on_string(_strings.char_at),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _on_string(_strings.lower_ascii),
    "upperAscii": _on_string(_strings.upper_ascii),
    "replace": _on_string(_strings.replace),
    "split": _on_string(_strings.split),
    "substring": _on_string(_strings.substring),
    "trim": _on_string(_strings.trim),
    "join": _strings.join,
    "strings.quote": _strings.quote,
    "format": _strings.format_string,
    # lists and sets
    "slice": _lists.slice_list,
    "flatten": _lists.flatten,
    "sort": _lists.sort,
    "@sortByAssociatedKeys": _lists.sort_by_keys,
    "lists.range": _lists.lists_range,
    "reverse": _lists.reverse,
    "distinct": _lists.distinct,
    "isSorted": _lists.is_sorted,
    "sum": _lists.summer(0, add),
    "max": _lists.extreme("max"),
    "min": _lists.extreme("min"),
    "sets.contains": _lists.sets_contains,
    "sets.equivalent": _lists.sets_equivalent,
    "sets.intersects": _lists.sets_intersects,
    # optional values
    "optional.of": _lists.optional_of,
    "optional.ofNonZeroValue": _lists.optional_of_non_zero,
    "optional.none": _zero_arity(_lists.optional_none),
    "value": _lists.optional_value,
    "hasValue": _lists.has_value,
    "first": _lists.first,
    "last": _lists.last,
    "optional.unwrap": _lists.unwrap,
    "unwrapOpt": _lists.unwrap,
    "cel.@mapInsert": _lists.map_insert,
    # URLs, IPs and CIDRs
    "url": _net.to_url,
    "isURL": _net.is_url,
    "getScheme": _net.get_scheme,
    "getHost": _net.get_host,
    "getHostname": _net.get_hostname,
    "getPort": _net.get_port,
    "getEscapedPath": _net.get_escaped_path,
    "getQuery": _net.get_query,
    "ip": _net.to_ip,
    "isIP": _net.is_ip,
    "ip.isCanonical": _net.is_canonical,
    "family": _net.family,
    "isUnspecified": _net.is_unspecified,
    "isLoopback": _net.is_loopback,
    "isLinkLocalMulticast": _net.is_link_local_multicast,
    "isLinkLocalUnicast": _net.is_link_local_unicast,
    "isGlobalUnicast": _net.is_global_unicast,
    "cidr": _net.to_cidr,
    "isCIDR": _net.is_cidr,
    "containsIP": _net.contains_ip,
    "containsCIDR": _net.contains_cidr,
    "prefixLength": _net.prefix_length,
    "masked": _net.masked,
    # Kubernetes formats
    "validate": _formats.validate,
    "format.named": _formats.named,
    **{f"format.{key}": _format_constant(key) for key in _formats.FORMATS},
    # Kubernetes authorization (no receiver value can exist in DRA)
    **dict.fromkeys(_types.AUTHZ, _unreachable),
}

_SUM_ZEROS: dict[str, Any] = {
    "list_int_sum_int": 0,
    "list_uint_sum_uint": Uint(0),
    "list_double_sum_double": 0.0,
    "list_duration_sum_duration": v.Duration(0),
}


_SUM_ELEMENTS: dict[str, Callable[[Any], bool]] = {
    "list_int_sum_int": lambda x: isinstance(x, int) and not isinstance(x, (bool, Uint)),
    "list_uint_sum_uint": lambda x: isinstance(x, Uint),
    "list_double_sum_double": lambda x: isinstance(x, float),
    "list_duration_sum_duration": lambda x: isinstance(x, v.Duration),
}


def sum_for(overloads: list[str]) -> Callable[[Any], Any]:
    """``sum()`` as cel-go dispatches it: the checker's overload when it found exactly one;
    otherwise the first declared overload whose element type fits the list's first
    element (cel-go's runtime type guard), whose zero value then fixes the result type."""
    if len(overloads) == 1:
        return _lists.summer(_SUM_ZEROS.get(overloads[0], 0), add)
    candidates = [o for o in _SUM_ZEROS if o in overloads] or list(_SUM_ZEROS)

    def run(items: Any) -> Any:
        if not isinstance(items, tuple):
            raise v.no_overload()
        for overload in candidates:
            if not items or _SUM_ELEMENTS[overload](items[0]):
                return _lists.summer(_SUM_ZEROS[overload], add)(items)
        raise v.no_overload()

    return run
