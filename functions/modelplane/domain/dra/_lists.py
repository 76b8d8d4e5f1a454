"""List functions: cel-go's lists extension (version 3) and sets extension, Kubernetes'
lists library, optional values and the two-variable comprehensions' map insert."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelplane.domain.dra import _values as v
from modelplane.domain.dra._values import NONE, EvalError, Optional

_COMPARABLE = (bool, int, float, str, bytes, v.Timestamp, v.Duration)


def _list(value: Any) -> tuple[Any, ...]:
    return v.expect(value, tuple)


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or isinstance(value, v.Uint):
        raise v.no_overload()
    return value


def loose_equal(a: Any, b: Any) -> bool:
    """``a.Equal(b) == true``: an error counts as not equal."""
    try:
        return v.equal(a, b) is True
    except EvalError:
        return False


def contains(items: tuple[Any, ...], value: Any) -> bool:
    return any(loose_equal(value, item) for item in items)


# -- cel-go lists extension -------------------------------------------------------------


def slice_list(items: Any, start: Any, end: Any) -> Any:
    items, start, end = _list(items), _int(start), _int(end)
    if start < 0 or end < 0:
        msg = f"cannot slice({start}, {end}), negative indexes not supported"
        raise EvalError(msg)
    if start > end:
        msg = f"cannot slice({start}, {end}), start index must be less than or equal to end index"
        raise EvalError(msg)
    if len(items) < end:
        msg = f"cannot slice({start}, {end}), list is length {len(items)}"
        raise EvalError(msg)
    return items[start:end]


def flatten(items: Any, depth: Any = 1) -> Any:
    items, depth = _list(items), _int(depth)
    if depth < 0:
        msg = "level must be non-negative"
        raise EvalError(msg)
    return tuple(_flatten(items, depth))


def _flatten(items: tuple[Any, ...], depth: int) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, tuple) and depth > 0:
            out.extend(_flatten(item, depth - 1))
        else:
            out.append(item)
    return out


def sort(items: Any) -> Any:
    return sort_by_keys(items, items)


def sort_by_keys(items: Any, keys: Any) -> Any:
    items, keys = _list(items), _list(keys)
    if len(items) != len(keys):
        msg = (
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys "
            f"list, but got {len(items)} and {len(keys)} elements respectively"
        )
        raise EvalError(msg)
    if not items:
        return items
    first = keys[0]
    if not isinstance(first, _COMPARABLE):
        msg = "list elements must be comparable"
        raise EvalError(msg)
    kind = v.type_name(first)
    if any(v.type_name(key) != kind for key in keys):
        msg = "list elements must have the same type"
        raise EvalError(msg)
    order = sorted(range(len(keys)), key=lambda i: _SortKey(keys[i]))
    return tuple(items[i] for i in order)


class _SortKey:
    """Orders by CEL comparison (``Compare() == -1``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _SortKey) -> bool:
        try:
            return v.compare(self.value, other.value) == -1
        except EvalError:
            return False


def lists_range(n: Any) -> Any:
    return tuple(range(max(_int(n), 0)))


def reverse(items: Any) -> Any:
    return _list(items)[::-1]


def distinct(items: Any) -> Any:
    unique: list[Any] = []
    for item in _list(items):
        if not contains(tuple(unique), item):
            unique.append(item)
    return tuple(unique)


# -- Kubernetes lists library ------------------------------------------------------------


def _comparable(value: Any) -> Any:
    if not isinstance(value, _COMPARABLE):
        raise v.no_overload()
    return value


def _cmp(a: Any, b: Any) -> int | None:
    try:
        return v.compare(a, b)
    except EvalError:
        return None


def is_sorted(items: Any) -> Any:
    previous: Any = None
    first = True
    for item in _list(items):
        _comparable(item)
        if not first and _cmp(previous, item) == 1:
            return False
        previous, first = item, False
    return True


def summer(zero: Any, add: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """``sum()`` for the overload cel-go dispatches to (its zero value fixes the type),
    adding with CEL's ``+``."""

    def run(items: Any) -> Any:
        total = zero
        for item in _list(items):
            if not isinstance(item, (int, float, v.Duration)) or isinstance(item, bool):
                raise v.no_overload()
            total = add(total, item)
        return total

    return run


def extreme(name: str) -> Callable[[Any], Any]:
    """``min()`` or ``max()``: the first element no other beats, by CEL comparison."""
    prefer = 1 if name == "min" else -1

    def run(items: Any) -> Any:
        result: Any = None
        found = False
        for item in _list(items):
            _comparable(item)
            if not found:
                result, found = item, True
            elif _cmp(result, item) == prefer:
                result = item
        if not found:
            msg = f"{name} called on empty list"
            raise EvalError(msg)
        return result

    return run


def index_of(items: tuple[Any, ...], value: Any) -> int:
    for index, item in enumerate(items):
        if loose_equal(item, value):
            return index
    return -1


def last_index_of(items: tuple[Any, ...], value: Any) -> int:
    for index in range(len(items) - 1, -1, -1):
        if loose_equal(items[index], value):
            return index
    return -1


# -- cel-go sets extension ---------------------------------------------------------------


def sets_contains(items: Any, sub: Any) -> Any:
    items, sub = _list(items), _list(sub)
    return all(contains(items, value) for value in sub)


def sets_equivalent(a: Any, b: Any) -> Any:
    return sets_contains(a, b) and sets_contains(b, a)


def sets_intersects(a: Any, b: Any) -> Any:
    a, b = _list(a), _list(b)
    return any(contains(b, value) for value in a)


# -- optional values ---------------------------------------------------------------------


def optional_of(value: Any) -> Any:
    return Optional(True, value)


def optional_of_non_zero(value: Any) -> Any:
    return NONE if is_zero(value) else Optional(True, value)


def is_zero(value: Any) -> bool:
    """cel-go's ``IsZeroValue`` for the types that define it."""
    if value is None:
        return True
    if isinstance(value, (bool, int, float, str, bytes, tuple, dict)):
        return not value
    if isinstance(value, v.Duration):
        return value.nanos == 0
    if isinstance(value, v.Timestamp):
        return value.nanos == -62135596800 * 1_000_000_000
    return False


def optional_none() -> Any:
    return NONE


def optional_value(opt: Any) -> Any:
    opt = v.expect(opt, Optional)
    if not opt.has:
        msg = "optional.none() dereference"
        raise EvalError(msg)
    return opt.value


def has_value(opt: Any) -> Any:
    return v.expect(opt, Optional).has


def first(items: Any) -> Any:
    items = _list(items)
    return Optional(True, items[0]) if items else NONE


def last(items: Any) -> Any:
    items = _list(items)
    return Optional(True, items[-1]) if items else NONE


def unwrap(items: Any) -> Any:
    out = []
    for item in _list(items):
        if not isinstance(item, Optional):
            msg = f"value {item} is not optional"
            raise EvalError(msg)
        if item.has:
            out.append(item.value)
    return tuple(out)


# -- two-variable comprehensions ---------------------------------------------------------


def map_insert(mapping: Any, *entry: Any) -> Any:
    """``cel.@mapInsert(map, key, value)`` or ``cel.@mapInsert(map, other_map)``."""
    if not isinstance(mapping, dict):
        raise v.no_overload()
    if len(entry) == 1:
        if not isinstance(entry[0], dict):
            raise v.no_overload()
        out = mapping
        for k, val in entry[0].items():
            out = map_insert(out, k, val)
        return out
    key, value = entry
    if isinstance(key, (float, tuple, dict, bytes)) or key is None:
        msg = f"unsupported key type: {v.type_name(key)}"
        raise EvalError(msg)
    found, _ = v.map_find(mapping, key)
    if found:
        msg = f"insert failed: key {key} already exists"
        raise EvalError(msg)
    return {**mapping, key: value}
