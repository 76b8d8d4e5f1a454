"""Character sets of Go's regexp: Perl and POSIX classes, Unicode categories and scripts
(as Go's tables know them), and simple case folding orbits."""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache

from modelplane.domain.dra import _unicode_scripts

Predicate = Callable[[str], bool]


def ranges(pairs: list[tuple[int, int]]) -> Predicate:
    lows = [lo for lo, _ in pairs]
    highs = [hi for _, hi in pairs]

    def member(char: str) -> bool:
        code = ord(char)
        index = bisect.bisect_right(lows, code) - 1
        return index >= 0 and code <= highs[index]

    return member


PERL = {
    "d": [(0x30, 0x39)],
    "s": [(0x9, 0xA), (0xC, 0xD), (0x20, 0x20)],
    "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
}
POSIX = {
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
    return ranges(pairs)


_SCRIPT_NAMES = {_canonical(name): name for name in _unicode_scripts.SCRIPTS}


def unicode_table(name: str) -> tuple[Predicate, bool] | None:
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
class Part:
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

    def __init__(self, parts: list[Part], negated: bool = False) -> None:
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


def any_char(char: str) -> bool:
    return True


def not_newline(char: str) -> bool:
    return char != "\n"


def literal_set(char: str, fold: bool) -> CharSet:
    members = frozenset(orbit(char)) if fold else frozenset(char)
    return CharSet([Part(members.__contains__)])
