"""CEL's ``matches`` and Kubernetes' ``find``/``findAll``, run on the RE2 engine (``_regex``).

A bad pattern is an evaluation error (a literal one is a compile error: ``_validate``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelplane.domain.dra import _budget, _regex
from modelplane.domain.dra import _values as v
from modelplane.domain.dra._values import EvalError


def compile_pattern(pattern: str) -> _regex.Regex:
    """Compile an RE2 pattern; a bad one is an evaluation error."""
    try:
        return _regex.compile_regex(pattern)
    except _regex.RegexError as err:
        raise EvalError(str(err)) from None


def _text(value: Any) -> str:
    return v.expect(value, str)


def matches(text: Any, pattern: Any) -> Any:
    return _search(compile_pattern(_text(pattern)), _text(text))


def find(text: Any, pattern: Any) -> Any:
    return _find(compile_pattern(_text(pattern)), _text(text))


def find_all(text: Any, pattern: Any, limit: Any = -1) -> Any:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise v.no_overload()
    return _find_all(compile_pattern(_text(pattern)), _text(text), limit)


def with_pattern(name: str, regex: _regex.Regex) -> Callable[..., Any]:
    """``name`` with its pattern compiled in advance (cel-go's regex optimization)."""

    def run(text: Any, _pattern: Any, *rest: Any) -> Any:
        if name == "matches":
            return _search(regex, _text(text))
        if name == "find":
            return _find(regex, _text(text))
        limit = rest[0] if rest else -1
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise v.no_overload()
        return _find_all(regex, _text(text), limit)

    return run


# Automaton work is counted (``_budget.spend``) in steps that depend on the pattern and
# the text only, never on which automaton states a cache happens to hold.


def _search(regex: _regex.Regex, text: str) -> bool:
    _budget.spend(len(text) + 1)
    return regex.search(text)


def _find(regex: _regex.Regex, text: str) -> str:
    budget = [_regex.FIND_BUDGET]
    try:
        return regex.find(text, budget)
    except _regex.RegexBudgetError as err:
        raise EvalError(str(err)) from None
    finally:
        _budget.spend(_regex.FIND_BUDGET - budget[0])


def _find_all(regex: _regex.Regex, text: str, limit: int) -> tuple[str, ...]:
    budget = [_regex.FIND_BUDGET]
    try:
        return tuple(regex.find_all(text, limit, budget))
    except _regex.RegexBudgetError as err:
        raise EvalError(str(err)) from None
    finally:
        _budget.spend(_regex.FIND_BUDGET - budget[0])
