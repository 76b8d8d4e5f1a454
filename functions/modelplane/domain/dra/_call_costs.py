"""Runtime costs of the DRA CEL environment's calls, as cel-go's cost tracker counts them.

The lists and sets extensions' trackers first, then Kubernetes' ``CallCost`` (by
function name), then cel-go's defaults (by the overload the checker resolved).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from modelplane.domain import semver
from modelplane.domain.dra import _values as v
from modelplane.domain.dra._quantity import QuantityValue

Coster = Callable[[list[Any], Any], int]


def _ceil_tenth(n: float) -> int:
    return math.ceil(n * 0.1)


def _unit_cost(args: list[Any], result: Any) -> int:
    return 1


def _k8s_size(value: Any) -> int:
    return v.k8s_size(value)


def _traversal(value: Any) -> int:
    """Kubernetes' ``traversalCost``: a walk over the value as a data tree."""
    if isinstance(value, (str, bytes)):
        return int(len(value) * 0.1)
    if isinstance(value, tuple):
        return sum(_traversal(item) for item in value)
    if isinstance(value, dict):
        return sum(_traversal(k) + _traversal(val) for k, val in value.items())
    return 1


_KUBERNETES_OPAQUE = (QuantityValue, semver.Version, v.IP, v.CIDR, v.URL, v.NamedFormat)


def _equality_cost(args: list[Any], result: Any) -> int:
    if isinstance(args[0], _KUBERNETES_OPAQUE):
        return 1
    return _ceil_tenth(min(v.size(args[0]), v.size(args[1])))


def _relation_cost(args: list[Any], result: Any) -> int:
    if isinstance(args[0], (str, bytes)) and isinstance(args[1], (str, bytes)):
        return _ceil_tenth(min(len(args[0]), len(args[1])))
    return 1


def _add_cost(args: list[Any], result: Any) -> int:
    if isinstance(args[0], (str, bytes)) and isinstance(args[1], (str, bytes)):
        return _ceil_tenth(len(args[0]) + len(args[1]))
    return 1


def _first_size_cost(args: list[Any], result: Any) -> int:
    return _ceil_tenth(_k8s_size(args[0]))


def _celgo_first_size_cost(args: list[Any], result: Any) -> int:
    return _ceil_tenth(v.size(args[0]))


def _double_size_cost(args: list[Any], result: Any) -> int:
    return math.ceil(_k8s_size(args[0]) * 2 * 0.1)


def _contains_cost(args: list[Any], result: Any) -> int:
    return _ceil_tenth(v.size(args[0])) * _ceil_tenth(v.size(args[1]))


def _traversal_cost(args: list[Any], result: Any) -> int:
    return _traversal(args[0])


def _regex_cost(text_size: int, pattern_size: int) -> int:
    return _ceil_tenth(1 + text_size) * math.ceil(pattern_size * 0.25)


def _find_cost(args: list[Any], result: Any) -> int:
    return _regex_cost(_k8s_size(args[0]), _k8s_size(args[1]))


def _in_cost(args: list[Any], result: Any) -> int:
    return v.size(args[1]) if isinstance(args[1], tuple) else 1


def _ip_cost(args: list[Any], result: Any) -> int:
    return 1 if isinstance(args[0], v.CIDR) else _ceil_tenth(_k8s_size(args[0]))


def _contains_ip_cost(args: list[Any], result: Any, string_form: bool) -> int:
    cidr = _k8s_size(args[0])
    cost = _ceil_tenth(cidr + cidr)
    if string_form:
        cost += _ceil_tenth(_k8s_size(args[1]))
    return cost


def _contains_cidr_cost(args: list[Any], result: Any, string_form: bool) -> int:
    cidr = _k8s_size(args[0])
    cost = _ceil_tenth(cidr + cidr) + _ceil_tenth(cidr) + 1
    if string_form:
        cost += _ceil_tenth(_k8s_size(args[1]))
    return cost


def _validate_cost(args: list[Any], result: Any) -> int:
    if isinstance(args[0], v.NamedFormat):
        return _regex_cost(_k8s_size(args[1]), args[0].max_regex_size)
    return 1


def _allocating(factor: float, size: int) -> int:
    return int(size * factor) + 1 + 10


def _output_size_cost(args: list[Any], result: Any) -> int:
    return _allocating(1, v.size(result))


def _flatten_cost(args: list[Any], result: Any) -> int:
    depth = float(args[1]) if len(args) == 2 and isinstance(args[1], int) else 1.0
    return _allocating(depth, v.size(args[0]))


def _self_compare(items: Any) -> int:
    size = v.size(items)
    factor = 2.0
    if size and isinstance(items, tuple) and isinstance(items[0], (str, bytes)):
        factor += 0.1
    return _allocating(factor, size * size) if size else _allocating(factor, 0)


def _sets_cost(factor: float) -> Coster:
    return lambda args, result: 1 + int(v.size(args[0]) * v.size(args[1]) * factor)


def _selector_cost(args: list[Any], result: Any) -> int:
    length = _k8s_size(args[1]) if len(args) >= 2 else 0
    requirements = math.ceil(length * 0.5)
    return 10 + _ceil_tenth(length) + math.ceil(requirements * 50)


_K8S_COSTS: dict[str, Coster] = {
    "find": _find_cost,
    "findAll": _find_cost,
    "quantity": _first_size_cost,
    "isQuantity": _first_size_cost,
    "semver": _first_size_cost,
    "isSemver": _first_size_cost,
    "url": _first_size_cost,
    "lowerAscii": _first_size_cost,
    "upperAscii": _first_size_cost,
    "substring": _first_size_cost,
    "trim": _first_size_cost,
    "replace": _double_size_cost,
    "split": _double_size_cost,
    "join": lambda args, result: math.ceil(_k8s_size(result) * 2 * 0.1),
    "isSorted": _traversal_cost,
    "sum": _traversal_cost,
    "max": _traversal_cost,
    "min": _traversal_cost,
    "indexOf": _traversal_cost,
    "lastIndexOf": _traversal_cost,
    "cidr": _first_size_cost,
    "isIP": _first_size_cost,
    "isCIDR": _first_size_cost,
    "ip": _ip_cost,
    "ip.isCanonical": _double_size_cost,
    "validate": _validate_cost,
    "check": lambda args, result: 350_000,
    "fieldSelector": _selector_cost,
    "labelSelector": _selector_cost,
}
"""Kubernetes' ``CallCost``, by function name (its nominal-cost functions are the default)."""

_SIZED_COMPARISONS = [
    f"{op}_{kind}"
    for op in ("less", "greater", "less_equals", "greater_equals")
    for kind in ("string", "bytes")
]
_OVERLOAD_COSTS: dict[str, Coster] = {
    # the lists and sets extensions' trackers
    "list_slice": _output_size_cost,
    "lists_range": _output_size_cost,
    "list_reverse": _output_size_cost,
    "list_flatten": _flatten_cost,
    "list_flatten_int": _flatten_cost,
    "list_distinct": lambda args, result: _self_compare(args[0]),
    **{
        f"list_{kind}_sort": (lambda args, result: _self_compare(args[0]))
        for kind in ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
    },
    **{
        f"list_{kind}_sortByAssociatedKeys": (lambda args, result: _self_compare(args[1]))
        for kind in ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
    },
    "list_sets_contains_list": _sets_cost(1.0),
    "list_sets_intersects_list": _sets_cost(1.0),
    "list_sets_equivalent_list": _sets_cost(2.0),
    # cel-go's own defaults
    "starts_with_string": _celgo_first_size_cost,
    "ends_with_string": _celgo_first_size_cost,
    "string_to_bytes": _celgo_first_size_cost,
    "bytes_to_string": _celgo_first_size_cost,
    "strings_quote": _celgo_first_size_cost,
    "string_format": _celgo_first_size_cost,
    "in_list": _in_cost,
    **dict.fromkeys(_SIZED_COMPARISONS, _relation_cost),
    "equals": _equality_cost,
    "not_equals": _equality_cost,
    "add_string": _add_cost,
    "add_bytes": _add_cost,
    "matches_string": lambda args, result: _regex_cost(v.size(args[0]), v.size(args[1])),
    "contains_string": _contains_cost,
}
"""cel-go's cost trackers and defaults, by the overload the checker resolved."""


def call_cost(name: str, overload: str) -> Coster:
    """The runtime cost function of one call; ``overload`` is the overload the checker
    resolved, or "" when several matched (cel-go then dispatches without an id)."""
    tracker = _OVERLOAD_COSTS.get(overload) if overload.startswith(("list", "lists")) else None
    if tracker is not None:
        return tracker
    if name in ("containsIP", "containsCIDR"):
        string_form = overload.endswith("_string")
        base = _contains_ip_cost if name == "containsIP" else _contains_cidr_cost
        return lambda args, result: base(args, result, string_form)
    kubernetes = _K8S_COSTS.get(name)
    if kubernetes is not None:
        return kubernetes
    if name == "_==_":
        return _equality_cost  # Kubernetes' own types first, then cel-go's size rule
    return _OVERLOAD_COSTS.get(overload, _unit_cost)
