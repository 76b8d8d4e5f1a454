"""What the cost estimator measures with: size ranges and their saturating arithmetic,
the declared maximum sizes of a DRA device (Kubernetes' sizeEstimator), and attribute
paths with Go's slice semantics (cel-go's estimate depends on them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MAX = 2**64 - 1
Range = tuple[int, int]
UNKNOWN: Range = (0, MAX)


def add(a: Range, b: Range) -> Range:
    return (min(a[0] + b[0], MAX), min(a[1] + b[1], MAX))


def mul(a: Range, b: Range) -> Range:
    return (min(a[0] * b[0], MAX), min(a[1] * b[1], MAX))


def factor(a: Range, by: float) -> Range:
    return (scale(a[0], by), scale(a[1], by))


def scale(x: int, by: float) -> int:
    if x > 0 and by > 0 and float(x) > MAX / by:
        return MAX
    value = math.ceil(float(x) * by)
    return MAX if value >= 2.0**64 else value


def union(a: Range, b: Range) -> Range:
    return (min(a[0], b[0]), max(a[1], b[1]))


@dataclass
class _Decl:
    """A node of Kubernetes' declared device type, for size estimates."""

    max_elements: int
    fields: dict[str, _Decl] = field(default_factory=dict)
    key: _Decl | None = None
    elem: _Decl | None = None


_ATTRIBUTE = _Decl(64)
_ID = _Decl(32)
_DOMAIN = _Decl(63)
_INNER_ATTRIBUTES = _Decl(32, key=_ID, elem=_ATTRIBUTE)
_INNER_CAPACITY = _Decl(32, key=_ID, elem=_Decl(0))
# Kubernetes estimates with its newest device type whatever the feature gates say.
_DEVICE = _Decl(
    0,
    fields={
        "driver": _Decl(63),
        "allowMultipleAllocations": _Decl(1),
        "attributes": _Decl(32, key=_DOMAIN, elem=_INNER_ATTRIBUTES),
        "capacity": _Decl(32, key=_DOMAIN, elem=_INNER_CAPACITY),
    },
)


def device_size(path: list[str] | None) -> Range | None:
    """Kubernetes DRA's sizeEstimator: the declared maximum along a path from ``device``."""
    if not path or path[0] != "device":
        return None
    node = _DEVICE
    for name in path[1:]:
        if name in ("@items", "@values"):
            if node.elem is None:
                return None
            node = node.elem
        elif name == "@keys":
            if node.key is None:
                return None
            node = node.key
        elif name in node.fields:
            node = node.fields[name]
        elif node.elem is _ATTRIBUTE:
            node = _ATTRIBUTE
        else:
            return None
    return (0, node.max_elements)


class GoPath:
    """A Go ``[]string`` path: appends share the backing array while it has room.

    cel-go builds attribute paths with ``append`` on shared slices, so appending two
    suffixes to one path (a two-variable comprehension's key and value) can overwrite
    the first; the estimate depends on it, so we keep Go's slice semantics.
    """

    __slots__ = ("array", "length")

    def __init__(self, array: list[str], length: int) -> None:
        self.array = array
        self.length = length

    @classmethod
    def of(cls, name: str) -> GoPath:
        return cls([name], 1)

    def append(self, item: str) -> GoPath:
        if self.length < len(self.array):
            self.array[self.length] = item
            return GoPath(self.array, self.length + 1)
        needed = self.length + 1
        capacity = needed if needed > 2 * len(self.array) else 2 * len(self.array)
        array = self.array[: self.length] + [item] + [""] * (capacity - needed)
        return GoPath(array, needed)

    def items(self) -> list[str]:
        return self.array[: self.length]


def append(path: GoPath | None, item: str) -> GoPath:
    return path.append(item) if path is not None else GoPath.of(item)
