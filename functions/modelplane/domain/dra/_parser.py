"""A parser for the CEL grammar (cel-spec), with cel-go's macros and literal rules."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from modelplane.domain.dra import _ast as ast
from modelplane.domain.dra import _macros

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
_KEYWORDS = frozenset(["true", "false", "null", "in"])
"""The words CEL's lexer makes tokens of their own (every other reserved word lexes as an
identifier, which cel-go refuses only where it names a variable or a function)."""
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n\f]+|//[^\n]*)
  | (?P<float>(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?))
  | (?P<hex>0x[0-9a-fA-F]+[uU]?)
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


# cel-go's limit on nesting, which it enforces twice: on each rule of the ANTLR grammar
# while parsing (how deep rules of one kind nest), then on the parse tree's operators,
# selections, calls on a target and indexes (how many of them enclose each other).
NESTING_LIMIT = 250
_RULES = (
    "start", "expr", "conditionalOr", "conditionalAnd", "relation", "calc", "unary",
    "member", "primary", "exprList", "listInit", "mapInitializerList", "escapeIdent",
    "optExpr", "literal",
)  # fmt: skip
(_START, _EXPR, _OR, _AND, _RELATION, _CALC, _UNARY, _MEMBER, _PRIMARY, _EXPR_LIST,
 _LIST_INIT, _MAP_INIT, _ESCAPE_IDENT, _OPT_EXPR, _LITERAL) = range(len(_RULES))  # fmt: skip
_RELATIONS = {
    "==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "in": "@in",
}  # fmt: skip
_PRODUCTS = {"*": "_*_", "/": "_/_", "%": "_%_"}
_SUMS = {"+": "_+_", "-": "_-_"}


class Parser:
    """Recursive descent over the token list, one method per rule of cel-go's grammar
    (CEL.g4), so that rule nesting is counted as cel-go's parser counts it; one instance
    per expression."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.index = 0
        self.next_id = 0
        self.rule_depth = [0] * len(_RULES)
        self.height: dict[int, int] = {}
        """Per node id: how many counted nodes (operators, selections, member calls,
        indexes, conditionals) nest on the deepest path from it, itself included."""
        self.dotted: set[int] = set()
        """Identifiers written with a leading dot (``.device``)."""

    def parse(self) -> ast.Expr:
        self.enter(_START)
        expr = self.expr()
        if self.peek().kind != "eof":
            self.fail(f"mismatched input '{self.peek().text}' expecting <EOF>")
        self.leave(_START)
        if self.height.get(expr.id, 0) > NESTING_LIMIT:
            msg = "max recursion depth exceeded"
            raise ParseError(msg)
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

    def at(self, text: str) -> bool:
        token = self.peek()
        return token.kind in ("op", "ident") and token.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
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

    # -- nesting ------------------------------------------------------------------------
    def enter(self, rule: int) -> None:
        """ANTLR entered a rule: cel-go's listener refuses the 251st of one kind."""
        depth = self.rule_depth[rule] + 1
        if depth > NESTING_LIMIT:
            msg = f"expression recursion limit exceeded: {NESTING_LIMIT}"
            raise ParseError(msg)
        self.rule_depth[rule] = depth

    def leave(self, rule: int) -> None:
        self.rule_depth[rule] -= 1

    def nested(self, node: ast.Expr, *children: ast.Expr | None, counted: bool = True) -> ast.Expr:
        """Record the height of a new node above its children."""
        below = max((self.height.get(c.id, 0) for c in children if c is not None), default=0)
        height = below + 1 if counted else below
        if height:
            self.height[node.id] = height
        return node

    # -- grammar ------------------------------------------------------------------------
    def expr(self) -> ast.Expr:
        """expr : conditionalOr ('?' conditionalOr ':' expr)?"""
        self.enter(_EXPR)
        condition = self.conditional_or()
        if self.accept("?"):
            truthy = self.conditional_or()
            self.expect(":")
            falsy = self.expr()
            call = ast.Call(self.new_id(), "_?_:_", [condition, truthy, falsy])
            condition = self.nested(call, condition, truthy, falsy)
        self.leave(_EXPR)
        return condition

    def conditional_or(self) -> ast.Expr:
        """conditionalOr : conditionalAnd ('||' conditionalAnd)*"""
        self.enter(_OR)
        terms = [self.conditional_and()]
        while self.accept("||"):
            terms.append(self.conditional_and())
        self.leave(_OR)
        return self.balanced("_||_", terms)

    def conditional_and(self) -> ast.Expr:
        """conditionalAnd : relation ('&&' relation)*"""
        self.enter(_AND)
        terms = [self.relation(0)]
        while self.accept("&&"):
            terms.append(self.relation(0))
        self.leave(_AND)
        return self.balanced("_&&_", terms)

    def balanced(self, function: str, terms: list[ast.Expr]) -> ast.Expr:
        """cel-go builds ``a && b && c`` as a balanced tree of calls."""
        if len(terms) == 1:
            return terms[0]
        middle = len(terms) // 2
        left = self.balanced(function, terms[:middle])
        right = self.balanced(function, terms[middle:])
        call = ast.Call(self.new_id(), function, [left, right])
        return self.nested(call, left, right, counted=False)

    def relation(self, precedence: int) -> ast.Expr:
        """relation : calc | relation op relation (left-recursive: ANTLR loops)."""
        self.enter(_RELATION)
        left = self.calc(0)
        while precedence <= 1:
            token = self.peek()
            if token.kind not in ("op", "ident") or token.text not in _RELATIONS:
                break
            self.take()
            right = self.relation(2)
            call = ast.Call(self.new_id(), _RELATIONS[token.text], [left, right])
            left = self.nested(call, left, right)
        self.leave(_RELATION)
        return left

    def calc(self, precedence: int) -> ast.Expr:
        """calc : unary | calc ('*'|'/'|'%') calc | calc ('+'|'-') calc."""
        self.enter(_CALC)
        left = self.unary()
        while True:
            token = self.peek()
            if token.kind == "op" and token.text in _PRODUCTS and precedence <= 2:
                function, right_precedence = _PRODUCTS[token.text], 3
            elif token.kind == "op" and token.text in _SUMS and precedence <= 1:
                function, right_precedence = _SUMS[token.text], 2
            else:
                break
            self.take()
            right = self.calc(right_precedence)
            left = self.nested(ast.Call(self.new_id(), function, [left, right]), left, right)
        self.leave(_CALC)
        return left

    def unary(self) -> ast.Expr:
        """unary : member | '!'+ member | '-'+ member."""
        self.enter(_UNARY)
        token = self.peek()
        if token.kind == "op" and token.text in "!-":
            count = 0
            while self.peek().kind == "op" and self.peek().text == token.text:
                self.take()
                count += 1
            if token.text == "-" and count == 1 and self.peek().kind in ("int", "float", "hex"):
                # ANTLR prefers the first alternative: a literal with its sign.
                result = self.member(negate=True)
            else:
                operand = self.member()
                result = operand
                if count % 2:
                    call = ast.Call(self.new_id(), "!_" if token.text == "!" else "-_", [operand])
                    result = self.nested(call, operand, counted=False)
        else:
            result = self.member()
        self.leave(_UNARY)
        return result

    def member(self, negate: bool = False) -> ast.Expr:
        """member : primary | member '.' '?'? IDENT | member '.' IDENT '(' exprList? ')'
        | member '[' '?'? expr ']'."""
        self.enter(_MEMBER)
        expr = self.primary(negate)
        while True:
            if self.accept("."):
                expr = self.selection(expr)
            elif self.accept("["):
                function = "_[?_]" if self.accept("?") else "_[_]"
                index = self.expr()
                self.expect("]")
                call = ast.Call(self.new_id(), function, [expr, index])
                expr = self.nested(call, expr, index)
            elif self.at("{") and self.peek().kind == "op" and _macros.is_name(expr):
                self.fail("message construction is not supported")
            else:
                break
        self.leave(_MEMBER)
        return expr

    def selection(self, operand: ast.Expr) -> ast.Expr:
        optional = self.accept("?")
        name = self.peek()
        if name.kind != "ident" or name.text in _KEYWORDS:
            # Words CEL reserves are still identifiers to its lexer, so they name fields
            # and methods; only the lexer's own keywords cannot follow a dot.
            self.fail(f"no viable alternative at input '.{name.text}'")
        if not optional and self.peek(1).text == "(" and self.peek(1).kind == "op":
            self.take()
            self.take()
            args = self.expr_list(")")
            return self.call(name.text, args, operand)
        self.enter(_ESCAPE_IDENT)
        self.take()
        self.leave(_ESCAPE_IDENT)
        if optional:
            field = ast.Literal(self.new_id(), "string", name.text)
            return self.nested(ast.Call(self.new_id(), "_?._", [operand, field]), operand)
        return self.nested(ast.Select(self.new_id(), operand, name.text), operand)

    def expr_list(self, close: str) -> list[ast.Expr]:
        """'(' exprList? ')' after the '(': exprList : expr (',' expr)*."""
        args: list[ast.Expr] = []
        if self.accept(close):
            return args
        self.enter(_EXPR_LIST)
        args.append(self.expr())
        while self.accept(","):
            args.append(self.expr())
        self.leave(_EXPR_LIST)
        self.expect(close)
        return args

    def primary(self, negate: bool) -> ast.Expr:
        """primary : '.'? IDENT | '.'? IDENT '(' exprList? ')' | '(' expr ')'
        | '[' listInit? ','? ']' | '{' mapInitializerList? ','? '}' | literal."""
        self.enter(_PRIMARY)
        token = self.take()
        result: ast.Expr
        if token.kind in ("int", "hex", "float", "string") or (
            token.kind == "ident" and token.text in ("true", "false", "null")
        ):
            self.enter(_LITERAL)
            result = self.literal(token, negate)
            self.leave(_LITERAL)
        elif token.kind == "ident" and token.text != "in":
            result = self.identifier(token)
        elif (
            token.text == "." and self.peek().kind == "ident" and self.peek().text not in _KEYWORDS
        ):
            result = self.identifier(self.take(), leading_dot=True)
        elif token.text == "(":
            result = self.expr()
            self.expect(")")
        elif token.text == "[":
            result = self.list_literal()
        elif token.text == "{":
            result = self.map_literal()
        else:
            self.index -= 1
            self.fail(f"mismatched input '{token.text or '<EOF>'}'")
            raise AssertionError  # unreachable: fail raises
        self.leave(_PRIMARY)
        return result

    def literal(self, token: _Token, negate: bool) -> ast.Expr:
        if token.kind in ("int", "hex", "float"):
            return self.number(token, negate)
        if token.kind == "string":
            return ast.Literal(self.new_id(), *_string_literal(token.text))
        if token.text == "null":
            return ast.Literal(self.new_id(), "null", None)
        return ast.Literal(self.new_id(), "bool", token.text == "true")

    def identifier(self, token: _Token, leading_dot: bool = False) -> ast.Expr:
        name = token.text
        if name in _RESERVED:
            self.index -= 1
            self.fail(f"reserved identifier: {name}")
        if self.accept("("):
            args = self.expr_list(")")
            if leading_dot:  # '.f(x)' names the function from the root: never a macro
                call = ast.Call(self.new_id(), name, args)
                return self.nested(call, *args, counted=False)
            return self.call(name, args, None)
        ident = ast.Ident(self.new_id(), name)
        if leading_dot:
            self.dotted.add(ident.id)
        return ident

    def list_literal(self) -> ast.Expr:
        """'[' listInit? ','? ']' after the '[': listInit : optExpr (',' optExpr)*."""
        elements: list[ast.Expr] = []
        optional: set[int] = set()
        self.initializers("]", _LIST_INIT, lambda: self.opt_expr(elements, optional))
        node = ast.ListExpr(self.new_id(), elements, frozenset(optional))
        return self.nested(node, *elements, counted=False)

    def initializers(self, close: str, rule: int, entry: Callable[[], None]) -> None:
        """The entries of a list or map literal, comma-separated, up to ``close`` (a trailing
        comma allowed): ``rule`` is the grammar rule they nest in (listInit, mapInit)."""
        if not self.accept(close):
            if not self.at(","):
                self.enter(rule)
                while True:
                    entry()
                    if not self.at(",") or self.peek(1).text == close:
                        break
                    self.take()
                self.leave(rule)
            self.accept(",")
            self.expect(close)

    def opt_expr(self, into: list[ast.Expr], optional: set[int]) -> None:
        """optExpr : '?'? expr"""
        self.enter(_OPT_EXPR)
        if self.accept("?"):
            optional.add(len(into))
        into.append(self.expr())
        self.leave(_OPT_EXPR)

    def map_literal(self) -> ast.Expr:
        """'{' mapInitializerList? ','? '}' after the '{':
        mapInitializerList : optExpr ':' expr (',' optExpr ':' expr)*."""
        keys: list[ast.Expr] = []
        values: list[ast.Expr] = []
        optional: set[int] = set()

        def entry() -> None:
            self.opt_expr(keys, optional)
            self.expect(":")
            values.append(self.expr())

        self.initializers("}", _MAP_INIT, entry)
        node = ast.MapExpr(self.new_id(), list(zip(keys, values, strict=True)), frozenset(optional))
        return self.nested(node, *keys, *values, counted=False)

    def number(self, token: _Token, negate: bool) -> ast.Expr:
        text = token.text
        sign = -1 if negate else 1
        if token.kind == "float":
            value = sign * float(text)
            if math.isinf(value):  # Go's ParseFloat refuses what rounds past the largest double
                self.fail("invalid double literal")
            return ast.Literal(self.new_id(), "double", value)
        unsigned = text[-1] in "uU"
        digits = text[:-1] if unsigned else text
        value_int = int(digits, 16) if token.kind == "hex" else int(digits)
        if unsigned:
            if negate or value_int > UINT64_MAX:
                self.fail(f"invalid uint literal: {text}")
            return ast.Literal(self.new_id(), "uint", value_int)
        value_int *= sign
        if not INT64_MIN <= value_int <= INT64_MAX:
            self.fail(f"invalid int literal: {text}")
        return ast.Literal(self.new_id(), "int", value_int)

    # -- macros -------------------------------------------------------------------------
    def call(self, name: str, args: list[ast.Expr], target: ast.Expr | None) -> ast.Expr:
        """A call, or the expansion of the macro it names; a call on a target counts."""
        node: ast.Expr | None = None
        expander = _macros.MACROS.get((name, len(args), target is not None))
        if expander is not None:
            node = expander(self, target, args)
        if node is None:
            node = ast.Call(self.new_id(), name, args, target)
        return self.nested(node, target, *args, counted=target is not None)

    def ident(self, name: str) -> ast.Ident:
        return ast.Ident(self.new_id(), name)

    def lit(self, kind: str, value: object) -> ast.Literal:
        return ast.Literal(self.new_id(), kind, value)

    def fn(self, name: str, *args: ast.Expr) -> ast.Call:
        return ast.Call(self.new_id(), name, list(args))


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
