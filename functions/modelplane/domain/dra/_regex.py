"""RE2 regular expressions exactly as Go's ``regexp`` package parses and runs them.

CEL's ``matches`` and Kubernetes' ``find``/``findAll`` use Go's RE2 dialect: no
backreferences or lookaround, ASCII ``\\d \\w \\s \\b``, ``$`` only at the end of the
text, flags ``i m s U``, ``\\pN``/``\\p{Greek}``, POSIX classes, ``\\Q...\\E``. Python's
``re`` differs in all of these and backtracks (exponential on ``(a|a)*b``), so this
module parses the pattern the way ``regexp/syntax`` does and runs it as an automaton:
a lazily built DFA answers ``matches`` in linear time, and a Pike VM finds Go's
leftmost-first matches for ``find``/``findAll``.
"""

from __future__ import annotations

import bisect
import itertools
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache

from modelplane.domain.dra import _unicode_scripts

FOLD, MULTILINE, DOTNL, NONGREEDY = 1, 2, 4, 8
_MAX_REPEAT = 1000
_MAX_HEIGHT = 1000
_MAX_SIZE = (128 << 20) // 40
_MAX_PROGRAM = 250_000
"""Our own limit: a program this large would take seconds to build in Python."""
FIND_BUDGET = 60_000
"""Our own limit on Pike VM thread steps per ``find``/``findAll`` (a fraction of a second):
Go's native VM is quadratic on some pattern and text pairs too, but far faster."""
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
_NESTING_DEPTH = "expression nests too deeply"
_TOO_LARGE = "expression too large"
_WORD = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")


class RegexError(ValueError):
    """A pattern Go's regexp rejects; the message follows Go's."""

    def __init__(self, code: str, expr: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")


class RegexBudgetError(ValueError):
    """A search that would take this engine too long (see ``FIND_BUDGET``)."""


# -- character sets -------------------------------------------------------------------------

Predicate = Callable[[str], bool]


def _ranges(pairs: list[tuple[int, int]]) -> Predicate:
    lows = [lo for lo, _ in pairs]
    highs = [hi for _, hi in pairs]

    def member(char: str) -> bool:
        code = ord(char)
        index = bisect.bisect_right(lows, code) - 1
        return index >= 0 and code <= highs[index]

    return member


_PERL = {
    "d": [(0x30, 0x39)],
    "s": [(0x9, 0xA), (0xC, 0xD), (0x20, 0x20)],
    "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
}
_POSIX = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x0, 0x7F)],
    "blank": [(0x9, 0x9), (0x20, 0x20)],
    "cntrl": [(0x0, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x9, 0xD), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_CATEGORY_ALIASES = {
    "CasedLetter": "LC", "ClosePunctuation": "Pe", "CombiningMark": "M",
    "ConnectorPunctuation": "Pc", "Control": "Cc", "CurrencySymbol": "Sc",
    "DashPunctuation": "Pd", "DecimalNumber": "Nd", "EnclosingMark": "Me",
    "FinalPunctuation": "Pf", "Format": "Cf", "InitialPunctuation": "Pi", "Letter": "L",
    "LetterNumber": "Nl", "LineSeparator": "Zl", "LowercaseLetter": "Ll", "Mark": "M",
    "MathSymbol": "Sm", "ModifierLetter": "Lm", "ModifierSymbol": "Sk",
    "NonspacingMark": "Mn", "Number": "N", "OpenPunctuation": "Ps", "Other": "C",
    "OtherLetter": "Lo", "OtherNumber": "No", "OtherPunctuation": "Po", "OtherSymbol": "So",
    "ParagraphSeparator": "Zp", "PrivateUse": "Co", "Punctuation": "P", "Separator": "Z",
    "SpaceSeparator": "Zs", "SpacingMark": "Mc", "Surrogate": "Cs", "Symbol": "S",
    "TitlecaseLetter": "Lt", "Unassigned": "Cn", "UppercaseLetter": "Lu", "Cntrl": "Cc",
    "Digit": "Nd", "Punct": "P",
}  # fmt: skip
_CATEGORIES = frozenset(
    ["C", "Cc", "Cf", "Cn", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me",
     "Mn", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc",
     "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs"]
)  # fmt: skip


def _canonical(name: str) -> str:
    """Go's ``canonicalName``: drop ``_ - space``, first letter upper, the rest lower."""
    out: list[str] = []
    for char in name:
        if char in "_- ":
            continue
        out.append(char.upper() if not out else char.lower())
    return "".join(out)


def _category(name: str) -> Predicate:
    if name == "LC":
        return lambda c: unicodedata.category(c) in ("Lu", "Ll", "Lt")
    if len(name) == 1:
        return lambda c: unicodedata.category(c)[0] == name
    return lambda c: unicodedata.category(c) == name


@cache
def _script(name: str) -> Predicate:
    pairs: list[tuple[int, int]] = []
    for part in _unicode_scripts.SCRIPTS[name].split():
        lo, _, hi = part.partition("-")
        pairs.append((int(lo, 16), int(hi or lo, 16)))
    return _ranges(pairs)


_SCRIPT_NAMES = {_canonical(name): name for name in _unicode_scripts.SCRIPTS}


def _unicode_table(name: str) -> tuple[Predicate, bool] | None:
    """Go's ``unicodeTable``: the predicate and whether it is inverted."""
    canonical = _canonical(name)
    if canonical == "Any":
        return (lambda c: True), False
    if canonical == "Assigned":
        return _category("Cn"), True
    if canonical == "Ascii":
        return (lambda c: c < "\x80"), False
    if canonical == "Lc":
        return _category("LC"), False
    if name in _CATEGORIES and canonical == name:
        return _category(name), False
    if canonical in _SCRIPT_NAMES:
        return _script(_SCRIPT_NAMES[canonical]), False
    alias = _CATEGORY_ALIASES.get(canonical)
    if alias is not None:
        return _category(alias), False
    return None


def _fold_key(char: str) -> str:
    folded = char.casefold()
    if len(folded) == 1:
        return folded
    lowered = char.lower()
    return lowered if len(lowered) == 1 else char


@lru_cache(maxsize=1)
def _fold_classes() -> dict[str, tuple[str, ...]]:
    classes: dict[str, list[str]] = {}
    for code in range(0x1F000):
        char = chr(code)
        key = _fold_key(char)
        if key != char or char.lower() != char or char.upper() != char:
            classes.setdefault(key, []).append(char)
    return {key: tuple(members) for key, members in classes.items() if len(members) > 1}


def orbit(char: str) -> tuple[str, ...]:
    """The characters Go's simple case folding makes equal to ``char`` (``char`` included)."""
    members = _fold_classes().get(_fold_key(char))
    if members is None or char not in members:
        return (char,)
    return members


@dataclass
class _Part:
    """One item of a character class: a predicate, maybe folded, maybe negated."""

    test: Predicate
    negated: bool = False
    folded: bool = False

    def __call__(self, char: str) -> bool:
        hit = any(self.test(c) for c in orbit(char)) if self.folded else self.test(char)
        return hit != self.negated


class CharSet:
    """A character class (or a single literal); membership is memoized per character."""

    __slots__ = ("_cache", "negated", "parts")

    def __init__(self, parts: list[_Part], negated: bool = False) -> None:
        self.parts = parts
        self.negated = negated
        self._cache: dict[str, bool] = {}

    def __call__(self, char: str) -> bool:
        hit = self._cache.get(char)
        if hit is None:
            hit = any(part(char) for part in self.parts) != self.negated
            if len(self._cache) < 4096:
                self._cache[char] = hit
        return hit


def _any_char(char: str) -> bool:
    return True


def _not_newline(char: str) -> bool:
    return char != "\n"


def _literal_set(char: str, fold: bool) -> CharSet:
    members = frozenset(orbit(char)) if fold else frozenset(char)
    return CharSet([_Part(members.__contains__)])


# -- syntax tree ----------------------------------------------------------------------------


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


class _Parser:
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
                test = _any_char if self.flags & DOTNL else _not_newline
                self.current.append(_char(CharSet([_Part(test)])))
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
        self.current.append(_char(_literal_set(char, bool(self.flags & FOLD))))

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
        if not name or any(c not in _WORD for c in name):
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

    def class_escape(self) -> _Part | None:
        """``\\pN``, ``\\p{Name}``, ``\\d`` and friends at the cursor, or None."""
        s, i = self.s, self.i
        if i + 1 >= len(s) or s[i] != "\\":
            return None
        kind = s[i + 1]
        fold = bool(self.flags & FOLD)
        if kind.lower() in _PERL:
            self.i += 2
            return _Part(_ranges(_PERL[kind.lower()]), kind.isupper(), fold)
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
        table = _unicode_table(name)
        if table is None:
            raise RegexError(_BAD_CLASS_RANGE, seq)
        test, inverted = table
        return _Part(test, negated != inverted, fold)

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
        parts: list[_Part] = []
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
                part = _Part(_ranges(pair), False, fold)
            parts.append(part)
        self.i += 1
        return CharSet(parts, negated)

    def named_class(self, fold: bool) -> _Part | None:
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
        pairs = _POSIX.get(inner[1:] if negated else inner)
        if pairs is None:
            raise RegexError(_BAD_CLASS_RANGE, name)
        return _Part(_ranges(pairs), negated, fold)

    def class_char(self, class_start: int) -> str:
        if self.i >= len(self.s):
            raise RegexError(_MISSING_BRACKET, self.s[class_start:])
        if self.s[self.i] == "\\":
            return self.single_escape()
        self.i += 1
        return self.s[self.i - 1]


def _alternation(alternatives: list[list[Node]]) -> Node:
    branches = [_concat(items) for items in alternatives]
    return branches[0] if len(branches) == 1 else Node("alt", branches)


def _concat(items: list[Node]) -> Node:
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


def _measure(root: Node) -> tuple[int, int]:
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


# -- program --------------------------------------------------------------------------------

_CHAR, _SPLIT, _JMP, _ASSERT, _MATCH, _NOP = range(6)


class _Program:
    """Thompson NFA: parallel lists of op, out, out1 (for split) and argument."""

    def __init__(self) -> None:
        self.op: list[int] = []
        self.out: list[int] = []
        self.out1: list[int] = []
        self.arg: list[object] = []

    def add(self, op: int, arg: object = None) -> int:
        if len(self.op) >= _MAX_PROGRAM:
            raise RegexError(_TOO_LARGE, "")
        self.op.append(op)
        self.out.append(-1)
        self.out1.append(-1)
        self.arg.append(arg)
        return len(self.op) - 1


Hole = tuple[int, int]
Fragment = tuple[int, list[Hole]]


def _expand(node: Node) -> Node:
    """Go's simplification of ``x{n,m}`` into copies, ``?`` and ``*``/``+``."""
    sub = node.subs[0]
    low, high = node.min, node.max
    if high == -1:
        if low == 0:
            return Node("star", [sub], greedy=node.greedy)
        tail = Node("plus", [sub], greedy=node.greedy)
        return Node("concat", [*([sub] * (low - 1)), tail]) if low > 1 else tail
    if high == 0:
        return Node("empty")
    prefix = [sub] * low
    optional: Node | None = None
    for _ in range(high - low):
        inner = [sub] if optional is None else [sub, optional]
        optional = Node("quest", [_concat(inner)], greedy=node.greedy)
    items = prefix + ([optional] if optional is not None else [])
    return _concat(items)


def _compile(root: Node) -> tuple[_Program, int]:
    prog = _Program()
    tasks: list[tuple[Node, bool]] = [(root, False)]
    values: list[Fragment] = []
    while tasks:
        node, built = tasks.pop()
        if node.op == "repeat":
            tasks.append((_expand(node), False))
            continue
        if not built:
            tasks.append((node, True))
            tasks.extend((sub, False) for sub in reversed(node.subs))
            continue
        parts = [values.pop() for _ in node.subs][::-1]
        values.append(_fragment(prog, node, parts))
    start, holes = values.pop()
    match = prog.add(_MATCH)
    _patch(prog, holes, match)
    return prog, start


def _patch(prog: _Program, holes: list[Hole], target: int) -> None:
    for pc, slot in holes:
        if slot == 0:
            prog.out[pc] = target
        else:
            prog.out1[pc] = target


def _fragment(prog: _Program, node: Node, parts: list[Fragment]) -> Fragment:
    op = node.op
    if op == "char":
        pc = prog.add(_CHAR, node.chars)
        return pc, [(pc, 0)]
    if op == "assert":
        pc = prog.add(_ASSERT, node.assertion)
        return pc, [(pc, 0)]
    if op in ("empty", "capture") and not parts:
        pc = prog.add(_NOP)
        return pc, [(pc, 0)]
    if op == "capture":
        return parts[0]
    if op == "concat":
        for (_, holes), (start, _) in itertools.pairwise(parts):
            _patch(prog, holes, start)
        return parts[0][0], parts[-1][1]
    if op == "alt":
        start, holes = parts[-1]
        for sub_start, sub_holes in reversed(parts[:-1]):
            split = prog.add(_SPLIT)
            prog.out[split], prog.out1[split] = sub_start, start
            start, holes = split, sub_holes + holes
        return start, holes
    sub_start, sub_holes = parts[0]
    split = prog.add(_SPLIT)
    body, exit_slot = (0, 1) if node.greedy else (1, 0)
    if body == 0:
        prog.out[split] = sub_start
    else:
        prog.out1[split] = sub_start
    if op == "star":
        _patch(prog, sub_holes, split)
        return split, [(split, exit_slot)]
    if op == "plus":
        _patch(prog, sub_holes, split)
        return sub_start, [(split, exit_slot)]
    return split, [*sub_holes, (split, exit_slot)]


# -- matching -------------------------------------------------------------------------------

_START, _NEWLINE, _WORDCHAR, _OTHER = range(4)


def _kind(char: str | None) -> int:
    if char is None:
        return _START
    if char == "\n":
        return _NEWLINE
    return _WORDCHAR if char in _WORD else _OTHER


def _after_class(after: str | None) -> str | None:
    """A representative of the next character, as far as the assertions can tell."""
    if after is None or after == "\n":
        return after
    return "a" if after in _WORD else " "


def _holds(assertion: object, before: int, after: str | None) -> bool:
    if assertion == "bot":
        return before == _START
    if assertion == "eot":
        return after is None
    if assertion == "bol":
        return before in (_START, _NEWLINE)
    if assertion == "eol":
        return after is None or after == "\n"
    boundary = (before == _WORDCHAR) != (after is not None and after in _WORD)
    return boundary if assertion == "wordb" else not boundary


class Regex:
    """A compiled pattern: ``search`` (Go's MatchString), ``find``, ``find_all``."""

    def __init__(self, pattern: str, prog: _Program, start: int) -> None:
        self.pattern = pattern
        self._prog = prog
        self._start = start
        self._states: dict[tuple[int, ...], int] = {}
        self._kernels: list[tuple[int, ...]] = []
        self._steps: dict[tuple[int, int, str | None], tuple[int, bool]] = {}
        self._follows: dict[tuple[int, int, str | None], tuple[int, ...]] = {}
        self.steps = 0
        """The work this pattern has done, counted in steps rather than time: one per
        character ``search`` consumes, one per instruction visited while building an
        automaton state (once, then cached), and the thread steps of ``find`` and
        ``find_all`` (what ``FIND_BUDGET`` bounds). It only grows; it is not
        synchronized across threads."""

    def _closure(
        self, seeds: list[tuple[int, int]], before: int, after: str | None
    ) -> list[tuple[int, int]]:
        """Follow empty transitions in priority order; keep char and match instructions."""
        prog = self._prog
        seen: set[int] = set()
        out: list[tuple[int, int]] = []
        stack = list(reversed(seeds))
        visited = 0
        while stack:
            visited += 1
            pc, origin = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = prog.op[pc]
            if op in (_CHAR, _MATCH):
                out.append((pc, origin))
            elif op == _SPLIT:
                stack.append((prog.out1[pc], origin))
                stack.append((prog.out[pc], origin))
            elif op == _ASSERT:
                if _holds(prog.arg[pc], before, after):
                    stack.append((prog.out[pc], origin))
            else:
                stack.append((prog.out[pc], origin))
        self.steps += visited
        return out

    def _intern(self, kernel: tuple[int, ...]) -> int:
        state = self._states.get(kernel)
        if state is None:
            state = len(self._kernels)
            self._states[kernel] = state
            self._kernels.append(kernel)
        return state

    def _step(self, state: int, before: int, char: str | None) -> tuple[int, bool]:
        key = (state, before, char)
        cached = self._steps.get(key)
        if cached is not None:
            return cached
        seeds = [(pc, 0) for pc in self._kernels[state]] + [(self._start, 0)]
        threads = self._closure(seeds, before, char)
        prog = self._prog
        matched = any(prog.op[pc] == _MATCH for pc, _ in threads)
        following: list[int] = []
        if char is not None:
            for pc, _ in threads:
                if prog.op[pc] == _CHAR and prog.arg[pc](char):  # type: ignore[operator]
                    following.append(prog.out[pc])
        result = (self._intern(tuple(sorted(set(following)))), matched)
        if len(self._steps) > 50_000:
            self._steps.clear()
        self._steps[key] = result
        return result

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (Go's ``MatchString``)."""
        state = self._intern(())
        before = _START
        step = self._step
        for index, char in enumerate(text):
            state, matched = step(state, before, char)
            if matched:
                self.steps += index + 1
                return True
            before = _NEWLINE if char == "\n" else _WORDCHAR if char in _WORD else _OTHER
        self.steps += len(text) + 1
        return step(state, before, None)[1]

    def _follow(self, pc: int, before: int, after: str | None) -> tuple[int, ...]:
        """The char and match instructions reachable from ``pc`` without input, in
        priority order (cached per position context)."""
        key = (pc, before, _after_class(after))
        found = self._follows.get(key)
        if found is None:
            found = tuple(p for p, _ in self._closure([(pc, 0)], before, key[2]))
            self._follows[key] = found
        return found

    def match_at(self, text: str, pos: int, budget: list[int]) -> tuple[int, int] | None:
        """Go's leftmost-first match starting the search at ``pos`` (a Pike VM).

        ``budget`` holds the thread steps left; running out raises RegexBudgetError.
        """
        left = budget[0]
        try:
            return self._match_at(text, pos, budget)
        finally:
            self.steps += left - budget[0]

    def _match_at(self, text: str, pos: int, budget: list[int]) -> tuple[int, int] | None:
        prog = self._prog
        runq: list[tuple[int, int]] = []
        present: set[int] = set()
        matched: tuple[int, int] | None = None
        before = _kind(text[pos - 1]) if pos > 0 else _START
        while True:
            char = text[pos] if pos < len(text) else None
            if not runq and matched is not None:
                break
            if matched is None:
                for pc in self._follow(self._start, before, char):
                    if pc not in present:
                        present.add(pc)
                        runq.append((pc, pos))
            budget[0] -= len(runq) + 1
            if budget[0] < 0:
                msg = "regular expression search too long for this engine"
                raise RegexBudgetError(msg)
            if char is None:
                matched = next(((o, pos) for pc, o in runq if prog.op[pc] == _MATCH), matched)
                break
            pos += 1
            after = text[pos] if pos < len(text) else None
            following = _kind(char)
            nextq: list[tuple[int, int]] = []
            present = set()
            for pc, origin in runq:
                if prog.op[pc] == _MATCH:
                    matched = (origin, pos - 1)
                    break
                if prog.arg[pc](char):  # type: ignore[operator]
                    for q in self._follow(prog.out[pc], following, after):
                        if q not in present:
                            present.add(q)
                            nextq.append((q, origin))
            runq = nextq
            before = following
        return matched

    def find(self, text: str, budget: list[int] | None = None) -> str:
        """The leftmost match, or "" (Go's ``FindString``); ``budget``: thread steps left."""
        found = self.match_at(text, 0, budget if budget is not None else [FIND_BUDGET])
        return text[found[0] : found[1]] if found is not None else ""

    def find_all(self, text: str, limit: int, budget: list[int] | None = None) -> list[str]:
        """Go's ``FindAllString``: successive non-overlapping matches, at most ``limit``;
        ``budget`` holds the thread steps left."""
        if limit < 0:
            limit = len(text.encode()) + 1
        out: list[str] = []
        if budget is None:
            budget = [FIND_BUDGET]
        pos, previous_end = 0, -1
        while len(out) < limit and pos <= len(text):
            found = self.match_at(text, pos, budget)
            if found is None:
                break
            start, end = found
            accept = True
            if end == pos:
                if start == previous_end:
                    accept = False
                pos += 1
            else:
                pos = end
            previous_end = end
            if accept:
                out.append(text[start:end])
        return out


@lru_cache(maxsize=512)
def compile_regex(pattern: str) -> Regex:
    """Parse and compile a pattern as Go's ``regexp.Compile``.

    Raises:
        RegexError: Go rejects the pattern (or it is too large for this engine).
    """
    root = _Parser(pattern).parse()
    height, size = _measure(root)
    if height > _MAX_HEIGHT:
        raise RegexError(_NESTING_DEPTH, pattern)
    if size > _MAX_SIZE:
        raise RegexError(_TOO_LARGE, pattern)
    prog, start = _compile(root)
    return Regex(pattern, prog, start)
