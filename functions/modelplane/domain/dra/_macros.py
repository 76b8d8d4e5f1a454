"""cel-go's macros: the calls the parser expands into comprehensions as it reads them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from modelplane.domain.dra import _ast as ast

if TYPE_CHECKING:
    from modelplane.domain.dra._parser import Parser


def is_name(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Ident) or (isinstance(expr, ast.Select) and is_name(expr.operand))


def _var_name(parser: Parser, expr: ast.Expr) -> str:
    if not isinstance(expr, ast.Ident):
        parser.fail("argument must be a simple name")
        raise AssertionError
    if expr.name == ast.ACCUMULATOR:
        parser.fail("iteration variable overwrites accumulator variable")
    # cel-go names the variable '.x' when written so; no reference can resolve to it.
    return "." + expr.name if expr.id in parser.dotted else expr.name


def _has(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    arg = args[0]
    if not isinstance(arg, ast.Select):
        parser.fail("invalid argument to has() macro")
        raise AssertionError
    return ast.Select(parser.new_id(), arg.operand, arg.field, test_only=True)


def _quantifier(macro: str, two_vars: bool) -> Expander:
    """``all``, ``exists`` and ``exists_one`` over one variable (``x``) or two (``i, x``):
    the same fold, with the predicate as the last argument."""

    def expand(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
        assert target is not None
        first, second = _iter_vars(parser, args) if two_vars else (_var_name(parser, args[0]), "")
        init, condition, step, result = _QUANTIFIER_PARTS[macro](parser, args[-1])
        return _fold(parser, target, first, macro, init, condition, step, result, second)

    return expand


_Parts = tuple[ast.Expr, ast.Expr, ast.Expr, ast.Expr]


def _all_parts(parser: Parser, predicate: ast.Expr) -> _Parts:
    acc = parser.ident
    return (
        parser.lit("bool", True),
        parser.fn("@not_strictly_false", acc(ast.ACCUMULATOR)),
        parser.fn("_&&_", acc(ast.ACCUMULATOR), predicate),
        acc(ast.ACCUMULATOR),
    )


def _exists_parts(parser: Parser, predicate: ast.Expr) -> _Parts:
    acc = parser.ident
    return (
        parser.lit("bool", False),
        parser.fn("@not_strictly_false", parser.fn("!_", acc(ast.ACCUMULATOR))),
        parser.fn("_||_", acc(ast.ACCUMULATOR), predicate),
        acc(ast.ACCUMULATOR),
    )


def _exists_one_parts(parser: Parser, predicate: ast.Expr) -> _Parts:
    acc = parser.ident
    step = parser.fn(
        "_?_:_", predicate,
        parser.fn("_+_", acc(ast.ACCUMULATOR), parser.lit("int", 1)), acc(ast.ACCUMULATOR),
    )  # fmt: skip
    init, condition = parser.lit("int", 0), parser.lit("bool", True)
    return init, condition, step, parser.fn("_==_", acc(ast.ACCUMULATOR), parser.lit("int", 1))


_QUANTIFIER_PARTS: dict[str, Callable[[Parser, ast.Expr], _Parts]] = {
    "all": _all_parts,
    "exists": _exists_parts,
    "exists_one": _exists_one_parts,
}


def _fold(
    parser: Parser,
    target: ast.Expr,
    var: str,
    macro: str,
    init: ast.Expr,
    condition: ast.Expr,
    step: ast.Expr,
    result: ast.Expr,
    var2: str = "",
) -> ast.Expr:
    return ast.Comprehension(
        parser.new_id(), var, target, ast.ACCUMULATOR, init, condition, step, result, macro, var2
    )


def _map(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    assert target is not None
    var = _var_name(parser, args[0])
    acc = parser.ident
    transform = args[-1]
    step: ast.Expr = parser.fn(
        "_+_", acc(ast.ACCUMULATOR), ast.ListExpr(parser.new_id(), [transform])
    )
    if len(args) == 3:
        step = parser.fn("_?_:_", args[1], step, acc(ast.ACCUMULATOR))
    return _fold(
        parser, target, var, "map", ast.ListExpr(parser.new_id(), []),
        parser.lit("bool", True), step, acc(ast.ACCUMULATOR),
    )  # fmt: skip


def _filter(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    assert target is not None
    var = _var_name(parser, args[0])
    acc = parser.ident
    step = parser.fn(
        "_?_:_", args[1],
        parser.fn("_+_", acc(ast.ACCUMULATOR), ast.ListExpr(parser.new_id(), [parser.ident(var)])),
        acc(ast.ACCUMULATOR),
    )  # fmt: skip
    return _fold(
        parser, target, var, "filter", ast.ListExpr(parser.new_id(), []),
        parser.lit("bool", True), step, acc(ast.ACCUMULATOR),
    )  # fmt: skip


def _bind(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr | None:
    if not (isinstance(target, ast.Ident) and target.name == "cel") or target.id in parser.dotted:
        return None
    if not isinstance(args[0], ast.Ident):
        parser.fail("cel.bind() variable names must be simple identifiers")
    name = _var_name(parser, args[0])
    return ast.Comprehension(
        parser.new_id(), "#unused", ast.ListExpr(parser.new_id(), []), name, args[1],
        parser.lit("bool", False), parser.ident(name), args[2], "bind",
    )  # fmt: skip


def _iter_vars(parser: Parser, args: list[ast.Expr]) -> tuple[str, str]:
    first, second = _var_name(parser, args[0]), _var_name(parser, args[1])
    if first == second:
        parser.fail(f"duplicate variable name: {first}")
    return first, second


def _fold2(
    parser: Parser,
    target: ast.Expr | None,
    args: list[ast.Expr],
    macro: str,
    init: ast.Expr,
    condition: ast.Expr,
    step: ast.Expr,
    result: ast.Expr,
) -> ast.Expr:
    assert target is not None
    first, second = _iter_vars(parser, args)
    return _fold(parser, target, first, macro, init, condition, step, result, second)


def _transform(kind: str) -> Expander:
    def expand(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
        acc = parser.ident
        transform = args[-1]
        step: ast.Expr
        init: ast.Expr
        if kind == "list":
            init = ast.ListExpr(parser.new_id(), [])
            step = parser.fn(
                "_+_", acc(ast.ACCUMULATOR), ast.ListExpr(parser.new_id(), [transform])
            )
        else:
            init = ast.MapExpr(parser.new_id(), [])
            inserted = [acc(ast.ACCUMULATOR), transform]
            if kind == "map":
                key = args[0].name if isinstance(args[0], ast.Ident) else ""
                inserted.insert(1, acc(key))
            step = parser.fn("cel.@mapInsert", *inserted)
        if len(args) == 4:
            step = parser.fn("_?_:_", args[2], step, acc(ast.ACCUMULATOR))
        return _fold2(
            parser, target, args, f"transform_{kind}", init, parser.lit("bool", True), step,
            acc(ast.ACCUMULATOR),
        )  # fmt: skip

    return expand


def _bind_like(
    parser: Parser, name: str, init: ast.Expr, result: ast.Expr, macro: str = "bind"
) -> ast.Comprehension:
    return ast.Comprehension(
        parser.new_id(), "#unused", ast.ListExpr(parser.new_id(), []), name, init,
        parser.lit("bool", False), parser.ident(name), result, macro,
    )  # fmt: skip


_SORT_BY_VAR = "@__sortBy_input__"


def _sort_by(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    assert target is not None
    if not isinstance(target, (ast.ListExpr, ast.Select, ast.Ident, ast.Comprehension, ast.Call)):
        parser.fail(
            "sortBy can only be applied to a list, identifier, comprehension, call or select "
            "expression"
        )
    keys = _map(parser, parser.ident(_SORT_BY_VAR), args)
    call = ast.Call(parser.new_id(), "@sortByAssociatedKeys", [keys], parser.ident(_SORT_BY_VAR))
    return _bind_like(parser, _SORT_BY_VAR, target, call)


def _opt_map(flat: bool) -> Expander:
    def expand(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
        assert target is not None
        if not isinstance(args[0], ast.Ident):
            macro = "optFlatMap" if flat else "optMap"
            parser.fail(f"{macro}() variable name must be a simple identifier")
            raise AssertionError
        value = ast.Call(parser.new_id(), "value", [], target)
        mapped: ast.Expr = _bind_like(parser, args[0].name, value, args[1])
        if not flat:
            mapped = parser.fn("optional.of", mapped)
        has_value = ast.Call(parser.new_id(), "hasValue", [], target)
        return parser.fn("_?_:_", has_value, mapped, parser.fn("optional.none"))

    return expand


Expander = Callable[["Parser", ast.Expr | None, list[ast.Expr]], ast.Expr | None]
MACROS: dict[tuple[str, int, bool], Expander] = {
    ("has", 1, False): _has,
    ("all", 2, True): _quantifier("all", two_vars=False),
    ("exists", 2, True): _quantifier("exists", two_vars=False),
    ("exists_one", 2, True): _quantifier("exists_one", two_vars=False),
    ("map", 2, True): _map,
    ("map", 3, True): _map,
    ("filter", 2, True): _filter,
    ("bind", 3, True): _bind,
    ("all", 3, True): _quantifier("all", two_vars=True),
    ("exists", 3, True): _quantifier("exists", two_vars=True),
    ("existsOne", 3, True): _quantifier("exists_one", two_vars=True),
    ("exists_one", 3, True): _quantifier("exists_one", two_vars=True),
    ("transformList", 3, True): _transform("list"),
    ("transformList", 4, True): _transform("list"),
    ("transformMap", 3, True): _transform("map"),
    ("transformMap", 4, True): _transform("map"),
    ("transformMapEntry", 3, True): _transform("entry"),
    ("transformMapEntry", 4, True): _transform("entry"),
    ("sortBy", 2, True): _sort_by,
    ("optMap", 2, True): _opt_map(flat=False),
    ("optFlatMap", 2, True): _opt_map(flat=True),
}
