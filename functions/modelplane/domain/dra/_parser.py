"""A parser for the CEL grammar (cel-spec), with cel-go's macros and literal rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from modelplane.domain.dra import _ast as ast

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1

_RESERVED = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n\f]+|//[^\n]*)
  | (?P<float>(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?))
  | (?P<hex>0[xX][0-9a-fA-F]+[uU]?)
  | (?P<int>[0-9]+[uU]?)
  | (?P<string>[rR]?[bB]?[rR]?(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^\\"\n\r])*"|'(?:\\.|[^\\'\n\r])*'))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip


class ParseError(ValueError):
    """A syntax error, with cel-go's style of message."""


class _Token:
    __slots__ = ("kind", "pos", "text")

    def __init__(self, kind: str, text: str, pos: int) -> None:
        self.kind, self.text, self.pos = kind, text, pos


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            msg = f"Syntax error: token recognition error at: '{text[pos]}' (offset {pos})"
            raise ParseError(msg)
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(_Token(kind, match.group(), pos))
        pos = match.end()
    tokens.append(_Token("eof", "", len(text)))
    return tokens


class Parser:
    """Recursive descent over the token list; one instance per expression."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.index = 0
        self.next_id = 0
        self.depth = 0

    def parse(self) -> ast.Expr:
        expr = self.expr()
        if self.peek().kind != "eof":
            self.fail(f"mismatched input '{self.peek().text}'")
        return expr

    # -- tokens -------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> _Token:
        index = self.index + ahead
        tokens = self.tokens
        return tokens[index] if index < len(tokens) else tokens[-1]

    def take(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def accept(self, text: str) -> bool:
        token = self.peek()
        if token.kind in ("op", "ident") and token.text == text:
            self.index += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            self.fail(f"expected '{text}', found '{self.peek().text or '<EOF>'}'")

    def fail(self, message: str) -> None:
        msg = f"Syntax error: {message} (offset {self.peek().pos})"
        raise ParseError(msg)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    # -- grammar ------------------------------------------------------------------------
    def expr(self) -> ast.Expr:
        self.depth += 1
        if self.depth > 250:
            self.fail("expression recursion limit exceeded")
        condition = self.binary(0)
        if self.accept("?"):
            truthy = self.binary(0)
            self.expect(":")
            falsy = self.expr()
            condition = ast.Call(self.new_id(), "_?_:_", [condition, truthy, falsy])
        self.depth -= 1
        return condition

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",),
        ("&&",),
        ("==", "!=", "<", "<=", ">", ">=", "in"),
        ("+", "-"),
        ("*", "/", "%"),
    )
    _FUNCTIONS: ClassVar[dict[str, str]] = {
        "||": "_||_", "&&": "_&&_", "==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_",
        ">": "_>_", ">=": "_>=_", "in": "@in", "+": "_+_", "-": "_-_", "*": "_*_",
        "/": "_/_", "%": "_%_",
    }  # fmt: skip

    def binary(self, level: int) -> ast.Expr:
        if level == len(self._LEVELS):
            return self.unary()
        operators = self._LEVELS[level]
        first = self.binary(level + 1)
        token = self.peek()
        if token.text not in operators or token.kind not in ("op", "ident"):
            return first
        terms = [first]
        ops: list[str] = []
        while True:
            token = self.peek()
            if token.kind in ("op", "ident") and token.text in operators:
                self.take()
                ops.append(token.text)
                terms.append(self.binary(level + 1))
            else:
                break
        if level <= 1 and ops:
            return self.balanced(self._FUNCTIONS[ops[0]], terms)
        left = terms[0]
        for op, right in zip(ops, terms[1:], strict=True):
            left = ast.Call(self.new_id(), self._FUNCTIONS[op], [left, right])
        return left

    def balanced(self, function: str, terms: list[ast.Expr]) -> ast.Expr:
        """cel-go builds ``a && b && c`` as a balanced tree of calls."""
        if len(terms) == 1:
            return terms[0]
        middle = len(terms) // 2
        left = self.balanced(function, terms[:middle])
        right = self.balanced(function, terms[middle:])
        return ast.Call(self.new_id(), function, [left, right])

    def unary(self) -> ast.Expr:
        token = self.peek()
        if token.kind == "op" and token.text in "!-":
            count = 0
            while self.peek().kind == "op" and self.peek().text == token.text:
                self.take()
                count += 1
            if token.text == "-" and count == 1 and self.peek().kind in ("int", "float", "hex"):
                return self.member(negate=True)
            operand = self.member()
            if count % 2 == 0:
                return operand
            return ast.Call(self.new_id(), "!_" if token.text == "!" else "-_", [operand])
        return self.member()

    def member(self, negate: bool = False) -> ast.Expr:
        expr = self.primary(negate)
        while True:
            if self.accept("."):
                expr = self.selection(expr)
            elif self.accept("["):
                function = "_[?_]" if self.accept("?") else "_[_]"
                index = self.expr()
                self.expect("]")
                expr = ast.Call(self.new_id(), function, [expr, index])
            elif self.peek().text == "{" and self.peek().kind == "op" and _is_name(expr):
                self.fail("message construction is not supported")
            else:
                return expr

    def selection(self, operand: ast.Expr) -> ast.Expr:
        optional = self.accept("?")
        name = self.take()
        if name.kind != "ident":
            self.fail(f"no viable alternative at input '.{name.text}'")
        if name.text in _RESERVED or name.text in ("true", "false", "null", "in"):
            self.fail(f"reserved identifier: {name.text}")
        if optional:
            field = ast.Literal(self.new_id(), "string", name.text)
            return ast.Call(self.new_id(), "_?._", [operand, field])
        if self.accept("("):
            return self.call(name.text, self.arguments(")"), operand)
        return ast.Select(self.new_id(), operand, name.text)

    def arguments(self, close: str) -> list[ast.Expr]:
        args: list[ast.Expr] = []
        if self.accept(close):
            return args
        while True:
            args.append(self.expr())
            if self.accept(close):
                return args
            self.expect(",")

    def primary(self, negate: bool) -> ast.Expr:
        token = self.take()
        if token.kind in ("int", "hex", "float"):
            return self.number(token, negate)
        if token.kind == "string":
            return ast.Literal(self.new_id(), *_string_literal(token.text))
        if token.kind == "ident":
            return self.identifier(token)
        if token.text == "." and self.peek().kind == "ident":
            return self.identifier(self.take(), leading_dot=True)
        if token.text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if token.text == "[":
            return self.list_literal()
        if token.text == "{":
            return self.map_literal()
        self.index -= 1
        self.fail(f"mismatched input '{token.text or '<EOF>'}'")
        raise AssertionError  # unreachable: fail raises

    def identifier(self, token: _Token, leading_dot: bool = False) -> ast.Expr:
        name = token.text
        if name in ("true", "false"):
            return ast.Literal(self.new_id(), "bool", name == "true")
        if name == "null":
            return ast.Literal(self.new_id(), "null", None)
        if name in _RESERVED or name == "in":
            self.index -= 1
            self.fail(f"reserved identifier: {name}")
        if leading_dot:
            self.index -= 1
            self.fail("leading-dot names are not supported")
        if self.accept("("):
            return self.call(name, self.arguments(")"), None)
        return ast.Ident(self.new_id(), name)

    def list_literal(self) -> ast.Expr:
        elements: list[ast.Expr] = []
        optional: set[int] = set()
        while not self.accept("]"):
            if elements:
                self.expect(",")
                if self.accept("]"):
                    break
            if self.accept("?"):
                optional.add(len(elements))
            elements.append(self.expr())
        return ast.ListExpr(self.new_id(), elements, frozenset(optional))

    def map_literal(self) -> ast.Expr:
        entries: list[tuple[ast.Expr, ast.Expr]] = []
        optional: set[int] = set()
        while not self.accept("}"):
            if entries:
                self.expect(",")
                if self.accept("}"):
                    break
            if self.accept("?"):
                optional.add(len(entries))
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr()))
        return ast.MapExpr(self.new_id(), entries, frozenset(optional))

    def number(self, token: _Token, negate: bool) -> ast.Expr:
        text = token.text
        sign = -1 if negate else 1
        if token.kind == "float":
            return ast.Literal(self.new_id(), "double", sign * float(text))
        unsigned = text[-1] in "uU"
        digits = text[:-1] if unsigned else text
        value = int(digits, 16) if token.kind == "hex" else int(digits)
        if unsigned:
            if negate or value > UINT64_MAX:
                self.fail(f"invalid uint literal: {text}")
            return ast.Literal(self.new_id(), "uint", value)
        value *= sign
        if not INT64_MIN <= value <= INT64_MAX:
            self.fail(f"invalid int literal: {text}")
        return ast.Literal(self.new_id(), "int", value)

    # -- macros -------------------------------------------------------------------------
    def call(self, name: str, args: list[ast.Expr], target: ast.Expr | None) -> ast.Expr:
        expander = _MACROS.get((name, len(args), target is not None))
        if expander is not None:
            expanded = expander(self, target, args)
            if expanded is not None:
                return expanded
        return ast.Call(self.new_id(), name, args, target)

    def ident(self, name: str) -> ast.Ident:
        return ast.Ident(self.new_id(), name)

    def lit(self, kind: str, value: object) -> ast.Literal:
        return ast.Literal(self.new_id(), kind, value)

    def fn(self, name: str, *args: ast.Expr) -> ast.Call:
        return ast.Call(self.new_id(), name, list(args))


def _is_name(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Ident) or (isinstance(expr, ast.Select) and _is_name(expr.operand))


def _var_name(parser: Parser, expr: ast.Expr) -> str:
    if not isinstance(expr, ast.Ident):
        parser.fail("argument must be a simple name")
        raise AssertionError
    if expr.name == ast.ACCUMULATOR:
        parser.fail("iteration variable overwrites accumulator variable")
    return expr.name


def _has(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    arg = args[0]
    if not isinstance(arg, ast.Select):
        parser.fail("invalid argument to has() macro")
        raise AssertionError
    return ast.Select(parser.new_id(), arg.operand, arg.field, test_only=True)


def _fold(
    parser: Parser,
    target: ast.Expr,
    var: str,
    macro: str,
    init: ast.Expr,
    condition: ast.Expr,
    step: ast.Expr,
    result: ast.Expr,
) -> ast.Expr:
    return ast.Comprehension(
        parser.new_id(), var, target, ast.ACCUMULATOR, init, condition, step, result, macro
    )


def _all(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    assert target is not None
    var = _var_name(parser, args[0])
    acc = parser.ident
    return _fold(
        parser, target, var, "all", parser.lit("bool", True),
        parser.fn("@not_strictly_false", acc(ast.ACCUMULATOR)),
        parser.fn("_&&_", acc(ast.ACCUMULATOR), args[1]), acc(ast.ACCUMULATOR),
    )  # fmt: skip


def _exists(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    assert target is not None
    var = _var_name(parser, args[0])
    acc = parser.ident
    return _fold(
        parser, target, var, "exists", parser.lit("bool", False),
        parser.fn("@not_strictly_false", parser.fn("!_", acc(ast.ACCUMULATOR))),
        parser.fn("_||_", acc(ast.ACCUMULATOR), args[1]), acc(ast.ACCUMULATOR),
    )  # fmt: skip


def _exists_one(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    assert target is not None
    var = _var_name(parser, args[0])
    acc = parser.ident
    step = parser.fn(
        "_?_:_", args[1],
        parser.fn("_+_", acc(ast.ACCUMULATOR), parser.lit("int", 1)), acc(ast.ACCUMULATOR),
    )  # fmt: skip
    return _fold(
        parser, target, var, "exists_one", parser.lit("int", 0), parser.lit("bool", True),
        step, parser.fn("_==_", acc(ast.ACCUMULATOR), parser.lit("int", 1)),
    )  # fmt: skip


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
    if not (isinstance(target, ast.Ident) and target.name == "cel"):
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
    return ast.Comprehension(
        parser.new_id(), first, target, ast.ACCUMULATOR, init, condition, step, result, macro,
        second,
    )  # fmt: skip


def _all2(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    acc = parser.ident
    return _fold2(
        parser, target, args, "all", parser.lit("bool", True),
        parser.fn("@not_strictly_false", acc(ast.ACCUMULATOR)),
        parser.fn("_&&_", acc(ast.ACCUMULATOR), args[2]), acc(ast.ACCUMULATOR),
    )  # fmt: skip


def _exists2(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    acc = parser.ident
    return _fold2(
        parser, target, args, "exists", parser.lit("bool", False),
        parser.fn("@not_strictly_false", parser.fn("!_", acc(ast.ACCUMULATOR))),
        parser.fn("_||_", acc(ast.ACCUMULATOR), args[2]), acc(ast.ACCUMULATOR),
    )  # fmt: skip


def _exists_one2(parser: Parser, target: ast.Expr | None, args: list[ast.Expr]) -> ast.Expr:
    acc = parser.ident
    step = parser.fn(
        "_?_:_", args[2],
        parser.fn("_+_", acc(ast.ACCUMULATOR), parser.lit("int", 1)), acc(ast.ACCUMULATOR),
    )  # fmt: skip
    return _fold2(
        parser, target, args, "exists_one", parser.lit("int", 0), parser.lit("bool", True),
        step, parser.fn("_==_", acc(ast.ACCUMULATOR), parser.lit("int", 1)),
    )  # fmt: skip


def _transform(kind: str) -> _Expander:
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


def _opt_map(flat: bool) -> _Expander:
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


_Expander = Callable[[Parser, ast.Expr | None, list[ast.Expr]], ast.Expr | None]
_MACROS: dict[tuple[str, int, bool], _Expander] = {
    ("has", 1, False): _has,
    ("all", 2, True): _all,
    ("exists", 2, True): _exists,
    ("exists_one", 2, True): _exists_one,
    ("map", 2, True): _map,
    ("map", 3, True): _map,
    ("filter", 2, True): _filter,
    ("bind", 3, True): _bind,
    ("all", 3, True): _all2,
    ("exists", 3, True): _exists2,
    ("existsOne", 3, True): _exists_one2,
    ("exists_one", 3, True): _exists_one2,
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


def _string_literal(token: str) -> tuple[str, object]:
    prefix_end = 0
    while token[prefix_end] not in "'\"":
        prefix_end += 1
    prefix = token[:prefix_end].lower()
    body = token[prefix_end:]
    quote = body[:3] if body[:3] in ('"""', "'''") else body[0]
    body = body[len(quote) : -len(quote)]
    raw = "r" in prefix
    is_bytes = "b" in prefix
    if raw:
        return ("bytes", body.encode()) if is_bytes else ("string", body)
    return _unescape(body, is_bytes)


def _unescape(body: str, is_bytes: bool) -> tuple[str, object]:
    out: list[int] | list[str] = []
    chunks: list[bytes] = []
    i = 0
    text_parts: list[str] = []
    while i < len(body):
        char = body[i]
        if char != "\\":
            if is_bytes:
                chunks.append(char.encode())
            else:
                text_parts.append(char)
            i += 1
            continue
        i += 1
        if i >= len(body):
            msg = "Syntax error: invalid escape sequence"
            raise ParseError(msg)
        esc = body[i]
        if esc in _ESCAPES:
            value = _ESCAPES[esc]
            chunks.append(value.encode()) if is_bytes else text_parts.append(value)
            i += 1
        elif esc in "xX" or esc in "uU" or esc in "01234567":
            width, base, start = (
                (2, 16, i + 1) if esc in "xX" else (4, 16, i + 1) if esc == "u"
                else (8, 16, i + 1) if esc == "U" else (3, 8, i)
            )  # fmt: skip
            digits = body[start : start + width]
            if len(digits) != width or not re.fullmatch(
                "[0-9a-fA-F]+" if base == 16 else "[0-7]+", digits
            ):
                msg = "Syntax error: invalid escape sequence"
                raise ParseError(msg)
            code = int(digits, base)
            i = start + width
            if is_bytes and esc not in "uU":
                chunks.append(bytes([code]))
            elif esc in "uU" and is_bytes:
                msg = "Syntax error: unicode escape in bytes literal"
                raise ParseError(msg)
            else:
                if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                    msg = "Syntax error: invalid unicode code point"
                    raise ParseError(msg)
                text_parts.append(chr(code))
        else:
            msg = f"Syntax error: invalid escape sequence '\\{esc}'"
            raise ParseError(msg)
    del out
    if is_bytes:
        return "bytes", b"".join(chunks)
    return "string", "".join(text_parts)


def parse(text: str) -> ast.Expr:
    """Parse one CEL expression into an expanded tree.

    Raises:
        ParseError: the text is not valid CEL.
    """
    return Parser(text).parse()
