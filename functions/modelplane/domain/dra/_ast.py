"""The CEL syntax tree our parser builds, macros already expanded (as cel-go does)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ACCUMULATOR = "__result__"


@dataclass(eq=False)
class Expr:
    """A node. ``id`` is unique in one tree; the checker keys types by it."""

    id: int


@dataclass(eq=False)
class Literal(Expr):
    """A constant: int, uint, double, string, bytes, bool or null."""

    kind: str
    value: Any


@dataclass(eq=False)
class Ident(Expr):
    """A variable (``device``, a comprehension variable) or a qualified-name prefix."""

    name: str


@dataclass(eq=False)
class Select(Expr):
    """``operand.field``; ``test_only`` for ``has(operand.field)``."""

    operand: Expr
    field: str
    test_only: bool = False


@dataclass(eq=False)
class Call(Expr):
    """A function or operator call; ``target`` is set for ``target.function(args)``."""

    function: str
    args: list[Expr]
    target: Expr | None = None


@dataclass(eq=False)
class ListExpr(Expr):
    """``[a, b]``; ``optional`` holds the indexes of ``?a`` elements."""

    elements: list[Expr]
    optional: frozenset[int] = frozenset()


@dataclass(eq=False)
class MapExpr(Expr):
    """``{k: v}``; ``optional`` holds the indexes of ``?k: v`` entries."""

    entries: list[tuple[Expr, Expr]]
    optional: frozenset[int] = frozenset()


@dataclass(eq=False)
class Comprehension(Expr):
    """The fold every macro expands to (``all``, ``exists``, ``map``, ``cel.bind``...).

    ``iter_var2`` is set for two-variable comprehensions (index or key, then value).
    """

    iter_var: str
    iter_range: Expr
    accu_var: str
    accu_init: Expr
    condition: Expr
    step: Expr
    result: Expr
    macro: str = field(default="")
    iter_var2: str = field(default="")


HANDLERS: dict[type[Expr], str] = {
    Literal: "literal",
    Ident: "ident",
    Select: "select",
    Call: "call",
    ListExpr: "list_literal",
    MapExpr: "map_literal",
    Comprehension: "comprehension",
}
"""The method a walker of the tree (the checker, the cost estimator, the planner) has for
each kind of node: :func:`handler` finds it."""


def handler(walker: object, expr: Expr) -> Callable[..., Any]:
    """The walker's method for the node's kind (see :data:`HANDLERS`)."""
    return getattr(walker, HANDLERS[type(expr)])  # type: ignore[no-any-return]
