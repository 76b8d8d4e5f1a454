"""Go's ``regexp/syntax``: parse an RE2 pattern into a tree, with Go's flags, limits and
error messages."""

from __future__ import annotations

from dataclasses import dataclass, field

from modelplane.domain.dra._regex_charsets import (
    PERL,
    POSIX,
    CharSet,
    Part,
    any_char,
    literal_set,
    not_newline,
    ranges,
    unicode_table,
)

FOLD, MULTILINE, DOTNL, NONGREEDY = 1, 2, 4, 8
_MAX_REPEAT = 1000
MAX_HEIGHT = 1000
MAX_SIZE = (128 << 20) // 40
# Go's regexp/syntax error codes.
_BAD_CLASS_RANGE = "invalid character class range"
_BAD_ESCAPE = "invalid escape sequence"
_BAD_NAMED_CAPTURE = "invalid named capture"
_BAD_PERL = "invalid or unsupported Perl syntax"
_BAD_REPEAT_OP = "invalid nested repetition operator"
_BAD_REPEAT_SIZE = "invalid repeat count"
_MISSING_BRACKET = "missing closing ]"
_MISSING_PAREN = "missing closing )"
_MISSING_REPEAT_ARGUMENT = "missing argument to repetition operator"
_TRAILING_BACKSLASH = "trailing backslash at end of expression"
_UNEXPECTED_PAREN = "unexpected )"
NESTING_DEPTH = "expression nests too deeply"
TOO_LARGE = "expression too large"
WORD = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")


class RegexError(ValueError):
    """A pattern Go's regexp rejects; the message follows Go's."""

    def __init__(self, code: str, expr: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")


@dataclass(eq=False)
class Node:
    """A parsed regexp: ``op`` is one of char, assert, empty, concat, alt, capture, star,
    plus, quest, repeat."""

    op: str
    subs: list[Node] = field(default_factory=list)
    chars: CharSet | None = None
    runes: int = 0
    assertion: str = ""
    min: int = 0
    max: int = 0
    greedy: bool = True


def _char(chars: CharSet, runes: int = 1) -> Node:
    return Node("char", chars=chars, runes=runes)


@dataclass
class _Frame:
    flags: int
    capture: bool
    alternatives: list[list[Node]] = field(default_factory=lambda: [[]])


class Parser:
    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.i = 0
        self.flags = 0
        self.frames = [_Frame(0, False)]

    def error(self, code: str, start: int, end: int | None = None) -> RegexError:
        return RegexError(code, self.s[start : self.i if end is None else end])

    @property
    def current(self) -> list[Node]:
        return self.frames[-1].alternatives[-1]

    def parse(self) -> Node:
        last_repeat = False
        while self.i < len(self.s):
            char = self.s[self.i]
            repeat = False
            if char == "(":
                self.open_group()
            elif char == "|":
                self.frames[-1].alternatives.append([])
                self.i += 1
            elif char == ")":
                self.close_group()
            elif char in "^$":
                self.i += 1
                self.anchor(char)
            elif char == ".":
                self.i += 1
                test = any_char if self.flags & DOTNL else not_newline
                self.current.append(_char(CharSet([Part(test)])))
            elif char == "[":
                self.current.append(_char(self.char_class()))
            elif char in "*+?":
                self.i += 1
                op = {"*": "star", "+": "plus", "?": "quest"}[char]
                self.repetition(op, 0, 0, self.i - 1, last_repeat)
                repeat = True
            elif char == "{":
                repeat = self.braces(last_repeat)
            elif char == "\\":
                self.escape()
            else:
                self.i += 1
                self.literal(char)
            last_repeat = repeat
        if len(self.frames) != 1:
            raise RegexError(_MISSING_PAREN, self.s)
        return _alternation(self.frames[0].alternatives)

    def literal(self, char: str) -> None:
        self.current.append(_char(literal_set(char, bool(self.flags & FOLD))))

    def anchor(self, char: str) -> None:
        multiline = self.flags & MULTILINE
        if char == "^":
            self.current.append(Node("assert", assertion="bol" if multiline else "bot"))
        else:
            self.current.append(Node("assert", assertion="eol" if multiline else "eot"))

    # -- groups and flags --
    def open_group(self) -> None:
        if not self.s.startswith("(?", self.i):
            self.frames.append(_Frame(self.flags, True))
            self.i += 1
            return
        rest = self.s[self.i :]
        named = (len(rest) > 4 and rest[2] == "P" and rest[3] == "<") or (
            len(rest) > 3 and rest[2] == "<"
        )
        if named:
            self.named_group(rest)
            return
        self.perl_flags()

    def named_group(self, rest: str) -> None:
        start = 4 if rest[2] == "P" else 3
        end = rest.find(">")
        if end < 0:
            raise RegexError(_BAD_NAMED_CAPTURE, rest)
        name = rest[start:end]
        if not name or any(c not in WORD for c in name):
            raise RegexError(_BAD_NAMED_CAPTURE, rest[: end + 1])
        self.frames.append(_Frame(self.flags, True))
        self.i += end + 1

    def perl_flags(self) -> None:
        start = self.i
        self.i += 2
        flags = self.flags
        negative = False
        saw_flag = False
        while self.i < len(self.s):
            char = self.s[self.i]
            self.i += 1
            bit = {"i": FOLD, "m": MULTILINE, "s": DOTNL, "U": NONGREEDY}.get(char)
            if bit is not None:
                flags = flags & ~bit if negative else flags | bit
                saw_flag = True
            elif char == "-":
                if negative:
                    break
                negative, saw_flag = True, False
            elif char in ":)":
                if negative and not saw_flag:
                    break
                if char == ":":
                    self.frames.append(_Frame(self.flags, False))
                self.flags = flags
                return
            else:
                break
        raise self.error(_BAD_PERL, start)

    def close_group(self) -> None:
        if len(self.frames) < 2:
            raise RegexError(_UNEXPECTED_PAREN, self.s)
        frame = self.frames.pop()
        self.i += 1
        node = _alternation(frame.alternatives)
        if frame.capture:
            node = Node("capture", [node])
        self.flags = frame.flags
        self.current.append(node)

    # -- repetition --
    def braces(self, last_repeat: bool) -> bool:
        start = self.i
        parsed = _parse_repeat(self.s, self.i)
        if parsed is None:
            self.i += 1
            self.literal("{")
            return False
        low, high, end = parsed
        self.i = end
        if low < 0 or low > _MAX_REPEAT or high > _MAX_REPEAT or (high >= 0 and low > high):
            raise self.error(_BAD_REPEAT_SIZE, start)
        self.repetition("repeat", low, high, start, last_repeat)
        return True

    def repetition(self, op: str, low: int, high: int, start: int, last_repeat: bool) -> None:
        flags = self.flags
        if self.i < len(self.s) and self.s[self.i] == "?":
            self.i += 1
            flags ^= NONGREEDY
        if last_repeat:
            raise self.error(_BAD_REPEAT_OP, start - 1)
        if not self.current:
            raise self.error(_MISSING_REPEAT_ARGUMENT, start)
        node = Node(op, [self.current[-1]], min=low, max=high, greedy=not flags & NONGREEDY)
        self.current[-1] = node
        if op == "repeat" and (low >= 2 or high >= 2) and not _repeat_valid(node, _MAX_REPEAT):
            raise self.error(_BAD_REPEAT_SIZE, start)

    # -- escapes --
    def escape(self) -> None:
        s, i = self.s, self.i
        if i + 1 < len(s):
            kind = s[i + 1]
            simple = {"A": "bot", "b": "wordb", "B": "nwordb", "z": "eot"}.get(kind)
            if simple is not None:
                self.i += 2
                self.current.append(Node("assert", assertion=simple))
                return
            if kind == "C":
                raise RegexError(_BAD_ESCAPE, s[i : i + 2])
            if kind == "Q":
                end = s.find("\\E", i + 2)
                text = s[i + 2 :] if end < 0 else s[i + 2 : end]
                self.i = len(s) if end < 0 else end + 2
                for char in text:
                    self.literal(char)
                return
        part = self.class_escape()
        if part is not None:
            self.current.append(_char(CharSet([part])))
            return
        self.literal(self.single_escape())

    def class_escape(self) -> Part | None:
        """``\\pN``, ``\\p{Name}``, ``\\d`` and friends at the cursor, or None."""
        s, i = self.s, self.i
        if i + 1 >= len(s) or s[i] != "\\":
            return None
        kind = s[i + 1]
        fold = bool(self.flags & FOLD)
        if kind.lower() in PERL:
            self.i += 2
            return Part(ranges(PERL[kind.lower()]), kind.isupper(), fold)
        if kind not in "pP":
            return None
        negated = kind == "P"
        if i + 2 >= len(s):
            raise RegexError(_BAD_CLASS_RANGE, s[i:])
        if s[i + 2] == "{":
            end = s.find("}", i)
            if end < 0:
                raise RegexError(_BAD_CLASS_RANGE, s[i:])
            name, seq, self.i = s[i + 3 : end], s[i : end + 1], end + 1
        else:
            name, seq, self.i = s[i + 2], s[i : i + 3], i + 3
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        table = unicode_table(name)
        if table is None:
            raise RegexError(_BAD_CLASS_RANGE, seq)
        test, inverted = table
        return Part(test, negated != inverted, fold)

    def single_escape(self) -> str:
        s, start = self.s, self.i
        if start + 1 >= len(s):
            raise RegexError(_TRAILING_BACKSLASH, "")
        char = s[start + 1]
        self.i = start + 2
        if char < "\x80" and not char.isalnum():
            return char
        if char in "1234567" and (self.i >= len(s) or s[self.i] not in _OCTAL):
            raise self.error(_BAD_ESCAPE, start)
        if char in _OCTAL:
            value = int(char)
            for _ in range(2):
                if self.i >= len(s) or s[self.i] not in _OCTAL:
                    break
                value = value * 8 + int(s[self.i])
                self.i += 1
            return chr(value)
        if char == "x":
            return self.hex_escape(start)
        control = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}.get(char)
        if control is None:
            raise self.error(_BAD_ESCAPE, start)
        return control

    def hex_escape(self, start: int) -> str:
        s = self.s
        if self.i >= len(s):
            raise self.error(_BAD_ESCAPE, start)
        if s[self.i] == "{":
            end = s.find("}", self.i)
            digits = s[self.i + 1 : end] if end >= 0 else ""
            if end < 0 or not digits or any(c not in _HEX for c in digits):
                self.i = len(s) if end < 0 else end + 1
                raise self.error(_BAD_ESCAPE, start)
            self.i = end + 1
            value = int(digits, 16)
            if value > 0x10FFFF:
                raise self.error(_BAD_ESCAPE, start)
            return chr(value)
        digits = s[self.i : self.i + 2]
        self.i += 2
        if len(digits) != 2 or any(c not in _HEX for c in digits):
            raise self.error(_BAD_ESCAPE, start)
        return chr(int(digits, 16))

    # -- classes --
    def char_class(self) -> CharSet:
        s, start = self.s, self.i
        self.i += 1
        negated = self.i < len(s) and s[self.i] == "^"
        if negated:
            self.i += 1
        fold = bool(self.flags & FOLD)
        parts: list[Part] = []
        first = True
        while self.i >= len(s) or s[self.i] != "]" or first:
            first = False
            part = self.named_class(fold)
            if part is None:
                part = self.class_escape()
            if part is None:
                low = self.class_char(start)
                high = low
                if self.i + 1 < len(s) and s[self.i] == "-" and s[self.i + 1] != "]":
                    range_start = self.i - 1
                    self.i += 1
                    high = self.class_char(start)
                    if high < low:
                        raise self.error(_BAD_CLASS_RANGE, range_start)
                pair = [(ord(low), ord(high))]
                part = Part(ranges(pair), False, fold)
            parts.append(part)
        self.i += 1
        return CharSet(parts, negated)

    def named_class(self, fold: bool) -> Part | None:
        s, i = self.s, self.i
        if not (len(s) - i > 2 and s[i] == "[" and s[i + 1] == ":"):
            return None
        end = s.find(":]", i + 2)
        if end < 0:
            return None
        name = s[i : end + 2]
        self.i = end + 2
        inner = name[2:-2]
        negated = inner.startswith("^")
        pairs = POSIX.get(inner[1:] if negated else inner)
        if pairs is None:
            raise RegexError(_BAD_CLASS_RANGE, name)
        return Part(ranges(pairs), negated, fold)

    def class_char(self, class_start: int) -> str:
        if self.i >= len(self.s):
            raise RegexError(_MISSING_BRACKET, self.s[class_start:])
        if self.s[self.i] == "\\":
            return self.single_escape()
        self.i += 1
        return self.s[self.i - 1]


def _alternation(alternatives: list[list[Node]]) -> Node:
    branches = [concat(items) for items in alternatives]
    return branches[0] if len(branches) == 1 else Node("alt", branches)


def concat(items: list[Node]) -> Node:
    if not items:
        return Node("empty")
    return items[0] if len(items) == 1 else Node("concat", items)


def _parse_repeat(s: str, i: int) -> tuple[int, int, int] | None:
    """Go's ``parseRepeat`` at ``s[i] == '{'``: (min, max or -1, end) or None if literal."""
    i += 1
    low, i = _parse_int(s, i)
    if low is None or i >= len(s):
        return None
    if s[i] != ",":
        high = low
    else:
        i += 1
        if i >= len(s):
            return None
        if s[i] == "}":
            high = -1
        else:
            parsed, i = _parse_int(s, i)
            if parsed is None:
                return None
            high = parsed
            if high < 0:
                low = -1
    if i >= len(s) or s[i] != "}":
        return None
    return low, high, i + 1


def _parse_int(s: str, i: int) -> tuple[int | None, int]:
    if i >= len(s) or not "0" <= s[i] <= "9":
        return None, i
    if s[i] == "0" and i + 1 < len(s) and "0" <= s[i + 1] <= "9":
        return None, i
    start = i
    while i < len(s) and "0" <= s[i] <= "9":
        i += 1
    digits = s[start:i]
    return (int(digits) if len(digits) <= 8 else -1), i


def _repeat_valid(node: Node, n: int) -> bool:
    if node.op == "repeat":
        m = node.max
        if m == 0:
            return True
        if m < 0:
            m = node.min
        if m > n:
            return False
        if m > 0:
            n //= m
    return all(_repeat_valid(sub, n) for sub in node.subs)


def measure(root: Node) -> tuple[int, int]:
    """Go's ``calcHeight`` and ``calcSize`` of the whole tree, without recursion."""
    order: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.subs)
    height: dict[int, int] = {}
    size: dict[int, int] = {}
    for node in reversed(order):
        subs = node.subs
        height[id(node)] = 1 + max((height[id(s)] for s in subs), default=0)
        size[id(node)] = max(1, _node_size(node, [size[id(s)] for s in subs]))
    return height[id(root)], size[id(root)]


def _node_size(node: Node, subs: list[int]) -> int:
    if node.op == "char":
        return node.runes
    if node.op in ("capture", "star"):
        return 2 + subs[0]
    if node.op in ("plus", "quest"):
        return 1 + subs[0]
    if node.op == "concat":
        return sum(subs)
    if node.op == "alt":
        return sum(subs) + len(subs) - 1
    if node.op == "repeat":
        if node.max == -1:
            return 2 + subs[0] if node.min == 0 else 1 + node.min * subs[0]
        return node.max * subs[0] + node.max - node.min
    return 0
