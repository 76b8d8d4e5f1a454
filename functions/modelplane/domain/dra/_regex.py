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

import itertools
from functools import lru_cache

from modelplane.domain.dra._regex_syntax import (
    MAX_HEIGHT,
    MAX_SIZE,
    NESTING_DEPTH,
    TOO_LARGE,
    WORD,
    Node,
    Parser,
    RegexError,
    concat,
    measure,
)

__all__ = ["FIND_BUDGET", "Regex", "RegexBudgetError", "RegexError", "compile_regex"]

_MAX_PROGRAM = 250_000
"""Our own limit: a program this large would take seconds to build in Python."""
FIND_BUDGET = 60_000
"""Our own limit on Pike VM thread steps per ``find``/``findAll`` (a fraction of a second):
Go's native VM is quadratic on some pattern and text pairs too, but far faster."""


class RegexBudgetError(ValueError):
    """A search that would take this engine too long (see ``FIND_BUDGET``)."""


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
            raise RegexError(TOO_LARGE, "")
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
        optional = Node("quest", [concat(inner)], greedy=node.greedy)
    items = prefix + ([optional] if optional is not None else [])
    return concat(items)


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
    return _WORDCHAR if char in WORD else _OTHER


def _after_class(after: str | None) -> str | None:
    """A representative of the next character, as far as the assertions can tell."""
    if after is None or after == "\n":
        return after
    return "a" if after in WORD else " "


def _holds(assertion: object, before: int, after: str | None) -> bool:
    if assertion == "bot":
        return before == _START
    if assertion == "eot":
        return after is None
    if assertion == "bol":
        return before in (_START, _NEWLINE)
    if assertion == "eol":
        return after is None or after == "\n"
    boundary = (before == _WORDCHAR) != (after is not None and after in WORD)
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
            before = _NEWLINE if char == "\n" else _WORDCHAR if char in WORD else _OTHER
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
    root = Parser(pattern).parse()
    height, size = measure(root)
    if height > MAX_HEIGHT:
        raise RegexError(NESTING_DEPTH, pattern)
    if size > MAX_SIZE:
        raise RegexError(TOO_LARGE, pattern)
    prog, start = _compile(root)
    return Regex(pattern, prog, start)
