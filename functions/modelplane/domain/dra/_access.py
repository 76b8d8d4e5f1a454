"""Field selection, indexing and map keys, as cel-go's interpreter does them: what a
missing key, an out-of-range index or an optional step yields, and what each step costs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from modelplane.domain import semver
from modelplane.domain.dra import _values as v
from modelplane.domain.dra._values import NONE, EvalError, Optional

if TYPE_CHECKING:
    from modelplane.domain.dra._eval import Frame


def build_map(keys: list[Any], values: list[Any]) -> dict[Any, Any]:
    """A map literal as cel-go builds it: a Go map, so a repeated key keeps the last value,
    and a key Go cannot hash (bytes, a semver, a format) fails."""
    out: dict[Any, Any] = {}
    for key, value in zip(keys, values, strict=True):
        out[map_key(key)] = value
    return out


class _Identity:
    """A map key Go hashes by identity (a list or map value) but Python cannot hash."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value


def map_key(key: Any) -> Any:
    if isinstance(key, (bytes, semver.Version, v.NamedFormat)):
        msg = f"runtime error: hash of unhashable type {v.type_name(key)}"
        raise v.PanicError(msg)
    try:
        hash(key)
    except TypeError:
        return _Identity(key)
    return key


def has_field(value: Any, name: str) -> bool:
    if isinstance(value, v.DefaultMap):
        return True
    if isinstance(value, dict):
        return name in value
    raise v.no_overload()


def charged(frame: Frame, value: Any, key: Any, optional: bool, field: bool) -> Any:
    """One qualification step, charged 1 unless an optional step finds nothing."""
    if not optional and type(value) is not Optional:
        frame.cost += 1
        return _lookup(value, key, field)
    optional_step = True
    try:
        result = _qualify(value, key, optional, field)
    except EvalError:
        if not optional_step:
            frame.cost += 1
        raise
    if result is not NONE or not optional_step:
        frame.cost += 1
    return result


def _qualify(value: Any, key: Any, optional: bool, field: bool) -> Any:
    """A field or index step; optional steps (and steps on optional values) yield
    ``optional.none()`` where a plain step would fail for a missing key or index."""
    if isinstance(value, Optional):
        if not value.has:
            return NONE
        value, optional = value.value, True
    if not optional:
        return _lookup(value, key, field)
    present, result = _lookup_if_present(value, key)
    return Optional(True, result) if present else NONE


def _lookup(container: Any, key: Any, field: bool) -> Any:
    if isinstance(container, v.DefaultMap):
        if not isinstance(key, str):
            raise v.no_overload()
        return container.lookup(key)
    if isinstance(container, dict):
        found, value = v.map_find(container, key)
        if not found:
            msg = f"no such key: {key}"
            raise EvalError(msg)
        return value
    if isinstance(container, tuple) and not field:
        index = _list_index(key)
        if not 0 <= index < len(container):
            msg = f"index out of bounds: {key}"
            raise EvalError(msg)
        return container[index]
    if field:
        raise v.no_overload()
    raise v.no_overload()


def _lookup_if_present(container: Any, key: Any) -> tuple[bool, Any]:
    if isinstance(container, v.DefaultMap):
        return isinstance(key, str), container.lookup(key) if isinstance(key, str) else None
    if isinstance(container, dict):
        return v.map_find(container, key)
    if isinstance(container, tuple):
        index = _list_index(key)
        if 0 <= index < len(container):
            return True, container[index]
        return False, None
    return False, None


def _list_index(key: Any) -> int:
    """cel-go's ``IndexOrError``: an int, a uint, or a double with an integral value."""
    if isinstance(key, float):
        if not math.isfinite(key) or key != int(key):
            msg = f"unsupported index value {key} in list"
            raise EvalError(msg)
        return int(key)
    if isinstance(key, bool) or not isinstance(key, int):
        raise v.no_overload()
    return int(key)
