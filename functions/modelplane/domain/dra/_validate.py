"""The AST validators Kubernetes turns on: literal regexes, durations and timestamps, and
cel-go's compile-time check of ``string.format`` calls (strings extension, version 2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelplane.domain.dra import _ast as ast
from modelplane.domain.dra import _functions as fn
from modelplane.domain.dra import _regex, _strings
from modelplane.domain.dra import _types as t
from modelplane.domain.dra._checker import Checked, CheckError
from modelplane.domain.dra._values import EvalError, Uint


def validate(checked: Checked) -> None:
    """Run every validator over a checked tree.

    Raises:
        CheckError: a literal argument the validators reject.
    """
    for node in checked.validated:
        name = checked.functions[node.id]
        if name == "matches":
            _regex_literal(node)
        elif name in ("duration", "timestamp"):
            _conversion_literal(node, name)
        elif name == "format" and node.target is not None:
            _format_call(checked, node)


def _regex_literal(call: ast.Call) -> None:
    # cel-go checks the first argument, which is the text for the global form.
    arg = call.args[0] if call.args else None
    if isinstance(arg, ast.Literal) and isinstance(arg.value, str):
        try:
            _regex.compile_regex(arg.value)
        except _regex.RegexError:
            msg = "invalid matches argument"
            raise CheckError(msg) from None


def _conversion_literal(call: ast.Call, name: str) -> None:
    arg = call.args[0] if call.args else None
    if isinstance(arg, ast.Literal):
        value = Uint(arg.value) if arg.kind == "uint" else arg.value
        try:
            fn.CONVERSIONS[name](value)
        except EvalError:
            msg = f"invalid {name} argument"
            raise CheckError(msg) from None


def _format_call(checked: Checked, call: ast.Call) -> None:
    overloads = [o.id for o in checked.overloads.get(call.id, [])]
    if overloads and "string_format" not in overloads:
        return
    target = call.target
    if not isinstance(target, ast.Literal) or target.kind != "string" or len(call.args) != 1:
        return
    listed = call.args[0]
    if not isinstance(listed, ast.ListExpr):
        return
    try:
        used = _strings.parse_format(str(target.value), _TypeClauses(checked), listed.elements)
    except ValueError as err:
        raise CheckError(str(err)) from None
    if len(listed.elements) > used:
        msg = (
            "too many arguments supplied to string.format "
            f"(expected {used}, got {len(listed.elements)})"
        )
        raise CheckError(msg)


_STRING_KINDS = (
    "list", "map", "int", "uint", "double", "bool", "string", "google.protobuf.Timestamp",
    "bytes", "google.protobuf.Duration", "type", "null_type",
)  # fmt: skip


class _TypeClauses(_strings.Clauses):
    """cel-go's ``stringFormatChecker``: each clause accepts some argument types."""

    def __init__(self, checked: Checked) -> None:
        self.checked = checked

    def kind(self, expr: ast.Expr) -> str:
        tp = self.checked.types.get(expr.id, t.DYN)
        return "dyn" if tp.kind == "param" else tp.kind

    def require(self, expr: Any, kinds: tuple[str, ...], message: str) -> str:
        kind = self.kind(expr)
        if kind != "dyn" and kind not in kinds:
            msg = f"{message}, was given {self.name(expr)}"
            raise _strings.FormatError(msg)
        return ""

    def name(self, expr: ast.Expr) -> str:
        return str(self.checked.types.get(expr.id, t.DYN))

    def string(self, arg: Any) -> str:
        bad = self.bad_string(arg)
        if bad is not None:
            msg = (
                "string clause can only be used on strings, bools, bytes, ints, doubles, maps, "
                f"lists, types, durations, and timestamps, was given {self.name(bad)}"
            )
            raise _strings.FormatError(msg)
        return ""

    def bad_string(self, expr: ast.Expr) -> ast.Expr | None:
        kind = self.kind(expr)
        if kind != "dyn" and kind not in _STRING_KINDS:
            return expr
        children: list[ast.Expr] = []
        if isinstance(expr, ast.ListExpr):
            children = list(expr.elements)
        elif isinstance(expr, ast.MapExpr):
            children = [part for entry in expr.entries for part in entry]
        for child in children:
            bad = self.bad_string(child)
            if bad is not None:
                return bad
        return None

    def decimal(self, arg: Any) -> str:
        return self.require(arg, ("int", "uint"), "decimal clause can only be used on integers")

    def fixed(self, precision: int | None) -> Callable[[Any], str]:
        message = "fixed-point clause can only be used on doubles"
        return lambda arg: self.require(arg, ("double", "string"), message)

    def scientific(self, precision: int | None) -> Callable[[Any], str]:
        message = "scientific clause can only be used on doubles"
        return lambda arg: self.require(arg, ("double", "string"), message)

    def binary(self, arg: Any) -> str:
        message = "only integers and bools can be formatted as binary"
        return self.require(arg, ("int", "uint", "bool"), message)

    def hex(self, upper: bool) -> Callable[[Any], str]:
        message = "only integers, byte buffers, and strings can be formatted as hex"
        return lambda arg: self.require(arg, ("int", "uint", "string", "bytes"), message)

    def octal(self, arg: Any) -> str:
        return self.require(arg, ("int", "uint"), "octal clause can only be used on integers")
