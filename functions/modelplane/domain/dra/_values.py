"""Runtime values of the CEL evaluator and the operations cel-go defines on them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeVar

from modelplane.domain import semver
from modelplane.domain.dra._quantity import QuantityValue

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1


class EvalError(Exception):
    """A CEL evaluation error (a value in CEL; an exception here)."""


class CostExceededError(EvalError):
    """The runtime cost budget ran out."""


class PanicError(EvalError):
    """Where Go panics mid-evaluation (cel-go recovers it as an error): nothing after
    the panic, such as the cost of the enclosing literal, is charged."""


class Uint(int):
    """A CEL ``uint`` (Python's int stays CEL's ``int``)."""

    __slots__ = ()


@dataclass(frozen=True)
class TypeValue:
    """A CEL type value, as ``type(x)`` returns."""

    name: str


@dataclass(frozen=True)
class Optional:
    """CEL's ``optional_type``: ``optional.of(value)`` or ``optional.none()``."""

    has: bool
    value: Any = None


NONE = Optional(False)


@dataclass(frozen=True)
class Timestamp:
    """``google.protobuf.Timestamp``: nanoseconds since the Unix epoch, with the UTC offset
    (seconds east) it was written in, which Go keeps for formatting."""

    nanos: int
    offset: int = 0


@dataclass(frozen=True)
class Duration:
    """``google.protobuf.Duration``: a signed number of nanoseconds (Go's time.Duration)."""

    nanos: int


@dataclass(frozen=True)
class IP:
    """Kubernetes' ``net.IP``: an address as 4 or 16 bytes."""

    packed: bytes

    @property
    def v4(self) -> bool:
        return len(self.packed) == 4


@dataclass(frozen=True)
class CIDR:
    """Kubernetes' ``net.CIDR``: an address (kept unmasked, as Go's netip.Prefix) and bits."""

    ip: IP
    bits: int


@dataclass(frozen=True)
class URL:
    """Kubernetes' ``kubernetes.URL``: the parts of a Go ``url.URL`` the library reads."""

    scheme: str
    opaque: str
    user: str
    host: str
    path: str
    raw_path: str
    raw_query: str
    fragment: str
    text: str


@dataclass(frozen=True)
class NamedFormat:
    """Kubernetes' ``kubernetes.NamedFormat`` (``format.dns1123Label()`` and friends)."""

    name: str
    max_regex_size: int


class DefaultMap(dict[str, Any]):
    """The DRA device's attribute and capacity maps: looking up an unknown domain finds an
    empty map (Kubernetes wraps them so that ``Find`` always succeeds; ``in`` does not)."""

    def lookup(self, key: str) -> Any:
        return self.get(key, {})


def no_overload() -> EvalError:
    return EvalError("no such overload")


_T = TypeVar("_T")


def expect(value: Any, kind: type[_T]) -> _T:
    """The argument as the type an overload takes, or cel-go's "no such overload" (a
    ``dyn`` argument the checker let through can hold any type at run time)."""
    if not isinstance(value, kind):
        raise no_overload()
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null_type"
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return _OTHER_NAMES.get(type(value), type(value).__name__)


_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "bool"),  # before int, which bool is
    (Uint, "uint"),  # before int, which Uint is
    (int, "int"),
    (float, "double"),
    (str, "string"),
    (bytes, "bytes"),
    (tuple, "list"),
    (dict, "map"),
    (QuantityValue, "kubernetes.Quantity"),
    (semver.Version, "kubernetes.Semver"),
    (TypeValue, "type"),
)
"""CEL type names by Python type, first match wins (subclasses precede their bases)."""

_OTHER_NAMES: dict[type, str] = {
    Optional: "optional_type",
    Timestamp: "google.protobuf.Timestamp",
    Duration: "google.protobuf.Duration",
    IP: "net.IP",
    CIDR: "net.CIDR",
    URL: "kubernetes.URL",
    NamedFormat: "kubernetes.NamedFormat",
}


def size(value: Any) -> int:
    """cel-go's ``actualSize``: length of sized values, 1 otherwise."""
    if isinstance(value, (str, bytes, tuple, dict)):
        return len(value)
    if isinstance(value, Optional) and value.has:
        return size(value.value)
    return 1


def k8s_size(value: Any) -> int:
    """Kubernetes' ``actualSize``: like cel-go's, and IP/CIDR sizes in bytes."""
    if isinstance(value, (str, bytes, tuple, dict)):
        return len(value)
    if isinstance(value, IP):
        return len(value.packed)
    if isinstance(value, CIDR):
        return -(-value.bits // 8)
    return 1


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def equal(left: Any, right: Any) -> Any:
    """``types.Equal``: heterogeneous equality; Kubernetes' own types error on a mismatch."""
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, QuantityValue):
        if not isinstance(right, QuantityValue) or right.boxed:
            raise no_overload()
        return left.quantity.compare(right.quantity) == 0
    if isinstance(left, semver.Version):
        if not isinstance(right, semver.Version):
            raise no_overload()
        return left.compare(right) == 0
    if isinstance(left, (IP, CIDR, URL, NamedFormat)):
        if type(right) is not type(left):
            raise no_overload()
        return _opaque_equal(left, right)
    if isinstance(left, Optional):
        return _optional_equal(left, right)
    if isinstance(left, Timestamp):
        return isinstance(right, Timestamp) and left.nanos == right.nanos
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if is_number(left):
        return is_number(right) and _numeric_equal(left, right)
    if isinstance(left, tuple):
        return _list_equal(left, right)
    if isinstance(left, dict):
        return _map_equal(left, right)
    return type(left) is type(right) and left == right


def _opaque_equal(left: Any, right: Any) -> bool:
    if isinstance(left, URL):
        return bool(left.text == right.text)
    if isinstance(left, NamedFormat):
        return bool(left.name == right.name)
    return bool(left == right)


def _optional_equal(left: Optional, right: Any) -> Any:
    if not isinstance(right, Optional):
        return False
    if not left.has or not right.has:
        return left.has == right.has
    return equal(left.value, right.value)


def _numeric_equal(left: float, right: float) -> bool:
    if isinstance(left, float) and isinstance(right, float):
        return left == right
    if isinstance(left, float) or isinstance(right, float):
        if math.isnan(float(left)) or math.isnan(float(right)):
            return False
        return _mixed_compare(left, right) == 0
    return int(left) == int(right)


def _list_equal(left: tuple[Any, ...], right: Any) -> bool:
    if not isinstance(right, tuple) or len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        try:
            if equal(a, b) is False:
                return False
        except EvalError:
            continue  # cel-go only stops on an explicit False
    return True


def _map_equal(left: dict[Any, Any], right: Any) -> bool:
    if not isinstance(right, dict) or len(left) != len(right):
        return False
    for key, value in left.items():
        found, other = map_find(right, key)
        if not found:
            return False
        try:
            if equal(value, other) is False:
                return False
        except EvalError:
            continue
    return True


def map_find(mapping: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    """Look a key up with CEL's rules: numeric keys match across int, uint and double, and
    the device's maps find an empty map for any key they lack."""
    if isinstance(mapping, DefaultMap):
        try:
            found, value = map_contains(mapping, key)
        except EvalError:
            found, value = False, None
        return (True, value) if found else (True, {})
    return map_contains(mapping, key)


def map_contains(mapping: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    """Whether the map holds the key (``in``), and its value."""
    if isinstance(key, bool):
        for k, v in mapping.items():
            if isinstance(k, bool) and k == key:
                return True, v
        return False, None
    if isinstance(key, float):
        if not math.isfinite(key) or key != int(key):
            return _exact(mapping, key)
        key = int(key)
    if isinstance(key, int):
        for k, v in mapping.items():
            if not isinstance(k, bool) and isinstance(k, int) and k == key:
                return True, v
        return False, None
    if isinstance(key, (tuple, dict, bytes)):
        raise no_overload()
    return _exact(mapping, key)


def _exact(mapping: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    """Go's map lookup by the key itself (same type, equal value)."""
    for k, value in mapping.items():
        if type(k) is type(key) and k == key:
            return True, value
    return False, None


def compare(left: Any, right: Any) -> int:
    """Ordering for ``<``, ``<=``, ``>``, ``>=`` (cross-type numeric allowed)."""
    if is_number(left) and is_number(right):
        if isinstance(left, float) or isinstance(right, float):
            lf, rf = float(left), float(right)
            if math.isnan(lf) or math.isnan(rf):
                msg = "NaN values cannot be ordered"  # as cel-go's Compare says
                raise EvalError(msg)
            if isinstance(left, float) and isinstance(right, float):
                return (lf > rf) - (lf < rf)
            return _mixed_compare(left, right)
        return int((left > right) - (left < right))
    for kind in (str, bytes, bool):
        if isinstance(left, kind) and isinstance(right, kind):
            return int((left > right) - (left < right))  # type: ignore[operator]
    if type(left) is type(right) and isinstance(left, (Timestamp, Duration)):
        mine, theirs = left.nanos, int(right.nanos)
        return (mine > theirs) - (mine < theirs)
    raise no_overload()


def _mixed_compare(left: float, right: float) -> int:
    """int/uint against double, as cel-go compares them (via float64 inside the range)."""
    if isinstance(left, float):
        return -_mixed_compare(right, left)
    low = 0.0 if isinstance(left, Uint) else -(2.0**63)
    high = 2.0**64 if isinstance(left, Uint) else 2.0**63
    if right < low:
        return 1
    if right > high:
        return -1
    lf = float(left)
    return (lf > right) - (lf < right)


def check_int(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        msg = "integer overflow"
        raise EvalError(msg)
    return value


def check_uint(value: int) -> Uint:
    if not 0 <= value <= UINT64_MAX:
        msg = "unsigned integer overflow"
        raise EvalError(msg)
    return Uint(value)


def format_double(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)``, as cel-go's ``string(double)``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    text = repr(value)
    sign = "-" if text.startswith("-") else ""
    text = text.lstrip("-")
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = (
        len(whole) + exponent if whole != "0" else exponent - (len(frac) - len(frac.lstrip("0")))
    )
    digits = digits.rstrip("0") or "0"
    exp = point - 1
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"
