"""The RE2 engine behind ``matches``, ``find`` and ``findAll`` behaves as Go's regexp.

Every case here was checked against Go (tests/oracle's ``re2-*`` vectors do the same for
random patterns through CEL on every oracle run).
"""

from __future__ import annotations

import re

import pytest
from modelplane.domain.dra import _regex


@pytest.mark.parametrize(
    ("pattern", "text", "search", "find", "find_all"),
    [
        pytest.param("a$", "a\nb\na", True, "a", ["a"], id="dollar-is-end-of-text"),
        pytest.param("(?m)a$", "a\nb\na", True, "a", ["a", "a"], id="multiline-dollar"),
        pytest.param(r"^\w+$", "héllo", False, "", [], id="ascii-word"),
        pytest.param(r"^\pL+$", "héllo", True, "héllo", ["héllo"], id="unicode-letters"),
        pytest.param(r"\p{Greek}+", "abc Ωμέγα", True, "Ωμέγα", ["Ωμέγα"], id="script"),
        pytest.param("(?i)k", "K", True, "K", ["K"], id="kelvin-sign-folds-to-k"),
        pytest.param("(?i)[^k]", "K", False, "", [], id="negated-class-folds-first"),
        pytest.param(r"\bfoo\b", "a foo b", True, "foo", ["foo"], id="word-boundary"),
        pytest.param("a*", "baaac", True, "", ["", "aaa", ""], id="no-empty-match-after-a-match"),
        pytest.param("a*?", "aaa", True, "", ["", "", "", ""], id="lazy"),
        pytest.param("(?U)a+", "aaa", True, "a", ["a", "a", "a"], id="ungreedy-flag"),
        pytest.param("a{,2}", "a{,2}", True, "a{,2}", ["a{,2}"], id="brace-is-literal"),
        pytest.param(r"\Qa.b\E+", "a.bbb", True, "a.bbb", ["a.bbb"], id="quoted-literal"),
        pytest.param("x|xy", "xy", True, "x", ["x"], id="leftmost-first-not-longest"),
        pytest.param("[[:^alpha:]]+", "ab12cd", True, "12", ["12"], id="posix-negated"),
        pytest.param(r"\x{41}\101\x41", "AAA", True, "AAA", ["AAA"], id="escapes"),
    ],
)
def test_matches_as_go(
    pattern: str, text: str, search: bool, find: str, find_all: list[str]
) -> None:
    regex = _regex.compile_regex(pattern)
    assert regex.search(text) is search
    assert regex.find(text) == find
    assert regex.find_all(text, -1) == find_all


@pytest.mark.parametrize(
    ("pattern", "code"),
    [
        pytest.param(r"(a)\1", "invalid escape sequence", id="backreference"),
        pytest.param("a(?=b)", "invalid or unsupported Perl syntax", id="lookahead"),
        pytest.param("(?<=a)b", "invalid named capture", id="lookbehind"),
        pytest.param(r"\Z", "invalid escape sequence", id="python-end-anchor"),
        pytest.param("a**", "invalid nested repetition operator", id="double-star"),
        pytest.param("a++", "invalid nested repetition operator", id="possessive"),
        pytest.param("a{1001}", "invalid repeat count", id="repeat-limit"),
        pytest.param("(a{100}){100}", "invalid repeat count", id="nested-repeat-limit"),
        pytest.param("[z-a]", "invalid character class range", id="reversed-range"),
        pytest.param("[[:foo:]]", "invalid character class range", id="posix-name"),
        pytest.param(r"\p{Foo}", "invalid character class range", id="unicode-name"),
        pytest.param("(a", "missing closing )", id="open-group"),
        pytest.param("a)", "unexpected )", id="close-group"),
        pytest.param("[a", "missing closing ]", id="open-class"),
        pytest.param("*a", "missing argument to repetition operator", id="leading-star"),
        pytest.param("a\\", "trailing backslash", id="trailing-backslash"),
        pytest.param("(" * 1001 + ")" * 1001, "expression nests too deeply", id="depth"),
    ],
)
def test_rejects_what_go_rejects(pattern: str, code: str) -> None:
    with pytest.raises(_regex.RegexError, match=re.escape(code)):
        _regex.compile_regex(pattern)


def test_find_all_limit() -> None:
    regex = _regex.compile_regex("[0-9]+")
    assert regex.find_all("a1b22c333", 2) == ["1", "22"]
    assert regex.find_all("a1b22c333", 0) == []


@pytest.mark.parametrize("length", [1000, 5000])
def test_matching_is_linear_time(length: int) -> None:
    """Backtracking engines take exponential time here; RE2's automaton does not.

    Counted in the engine's steps: one per character, plus building the automaton's
    states once (cached); without the cache every character would cost a closure.
    """
    regex = _regex.compile_regex("(a|a)*b")
    before = regex.steps
    assert regex.search("a" * length) is False
    assert length < regex.steps - before <= length + 100


def test_find_all_steps_stop_at_the_budget() -> None:
    """Go's leftmost-first find is quadratic here; this engine stops at its budget."""
    regex = _regex.compile_regex("a*a*a*a*b|a")
    before = regex.steps
    with pytest.raises(_regex.RegexBudgetError):
        regex.find_all("a" * 4000, -1)
    assert _regex.FIND_BUDGET < regex.steps - before <= _regex.FIND_BUDGET + 1000
