"""DRA device selectors: CEL compiled and evaluated as Kubernetes does.

Selectors compile as Kubernetes v1.35's API server compiles a new selector (the
NewExpressions environment, default feature gates: see ``_environment``) and evaluate as
its scheduler matches a device. The surface is Kubernetes' DRA selector environment
(k8s.io/dynamic-resource-allocation/cel): ``device.driver``, ``device.attributes[domain].name``,
``device.capacity[domain].name``, CEL's standard operators, macros, timestamps and
durations, and every library Kubernetes enables there (quantity, semver, regex, lists,
sets, strings with ``format``, optional types, two-variable comprehensions, IP, CIDR, URL,
formats, ``cel.bind``). An unknown domain is an empty map; an unknown attribute is an
evaluation error. Costs follow cel-go: a static estimate above the budget is a compile
error, a run that exceeds it stops with an error. docs/design/cel.md has the details.

An evaluation is bounded by cost alone (:data:`COST_LIMIT` units, counted as cel-go's
runtime cost tracker counts them), never by a clock: the same selector on the same
device gets the same verdict on any machine at any load. One that runs past the limit is
a verdict with ``over_limit`` set, which the scheduler reports, not a "no match". An
evaluation stops with :class:`Cancelled` once the call it serves is over
(:func:`call_deadline`, see ``_budget``); nothing is cached then. Results are cached per
(selector, device content) in the process and, for selectors that may cost much
(:data:`SHARED_MIN_COST`), in a :class:`VerdictStore` the server may share between its
processes (:func:`share_verdicts`).

>>> device = Device.build("gpu.nvidia.com", capacity={"memory": "81559Mi"})
>>> matches('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0', device)
Verdict(matched=False, error=None, cost=7)
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Protocol

from modelplane.domain import quantity as qty
from modelplane.domain import semver
from modelplane.domain.dra import _budget, _cost, _eval, _parser, _quantity, _validate
from modelplane.domain.dra import _checker as checker
from modelplane.domain.dra import _values as values
from modelplane.domain.dra._budget import Cancelled
from modelplane.domain.dra._device import Device

MAX_EXPRESSION_BYTES = 10 * 1024
"""Kubernetes' ``CELSelectorExpressionMaxLength``."""
COST_LIMIT = 1_000_000
"""Kubernetes' ``CELSelectorExpressionMaxCost``: static estimate and runtime budget."""
SHARED_MIN_COST = 10_000
"""Selectors whose static estimate reaches this may take milliseconds or more per device:
their verdicts go to the shared store too. Cheaper ones are faster to recompute than
to look up there."""
_MEMO_LIMIT = 65_536
_RECURSION_LIMIT = 10_000
"""Python frames we allow: compiling a selector at cel-go's nesting limit (250 levels of
parentheses, calls, lists, ...) takes about 2,500, and Kubernetes accepts those."""


class SelectorError(ValueError):
    """A selector that cannot be compiled: syntax, unknown name, types, result, size, cost.

    Attributes:
        expression: the selector as written.
        reason: what is wrong, in one line.
        cost: the estimated cost, when that is what is wrong.
    """

    def __init__(self, expression: str, reason: str, cost: int | None = None) -> None:
        self.expression = expression
        self.reason = reason
        self.cost = cost
        super().__init__(f"invalid CEL selector {_short(expression)!r}: {reason}")


@dataclass(frozen=True)
class Verdict:
    """The outcome of one selector on one device.

    ``error`` is set when evaluation failed (then ``matched`` is False); ``cost`` is the
    runtime cost in CEL cost units, as Kubernetes counts it; ``over_limit`` says the
    evaluation stopped at :data:`COST_LIMIT` (cel-go's "actual cost limit exceeded"),
    which Kubernetes' scheduler reports as an error rather than a mismatch;
    ``over_work`` (with ``over_limit``) says it stopped at our own work limit instead
    (``_budget.WORK_LIMIT``: cost plus automaton steps, for selectors cel-go runs far
    faster than this interpreter). ``work`` is that count for this evaluation: like the
    cost, it depends on the selector and the device only.
    """

    matched: bool
    error: str | None = None
    cost: int | None = None
    over_limit: bool = field(default=False, repr=False)
    over_work: bool = field(default=False, repr=False)
    work: int = field(default=0, repr=False, compare=False)


class VerdictStore(Protocol):
    """Verdicts kept beyond one process (for example on disk, shared by the server's
    processes). Keys are :func:`verdict_key` digests; a store may forget anything."""

    def get(self, key: str) -> Verdict | None:
        """The verdict stored under ``key``, or None."""
        ...

    def put(self, key: str, verdict: Verdict) -> None:
        """Keep ``verdict`` under ``key`` (best effort: a store may drop it)."""
        ...


_shared: VerdictStore | None = None


def share_verdicts(store: VerdictStore | None) -> None:
    """Consult ``store`` for costly selectors from now on (None: stop sharing)."""
    global _shared  # noqa: PLW0603  # one store per process, set by the server at start
    _shared = store


def verdict_key(expression: str, device: Device) -> str:
    """A stable digest of (selector, device content), the same in every process."""
    return hashlib.sha256(repr((expression, device)).encode()).hexdigest()


class Selector:
    """A compiled selector. Results are memoized per device content."""

    def __init__(self, expression: str, program: _eval.Eval, max_cost: int) -> None:
        self.expression = expression
        self.max_cost = max_cost
        self._program = program
        self._memo: dict[Device, Verdict] = {}

    def evaluate(self, device: Device) -> Verdict:
        """Evaluate against one device; never raises for a bad device or a runtime error.

        Raises:
            Cancelled: the call this evaluation serves is over (nothing is cached then).
        """
        verdict = self._memo.get(device)
        if verdict is None:
            verdict = self._shared_run(device)
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[device] = verdict
        return verdict

    def _shared_run(self, device: Device) -> Verdict:
        store = _shared if self.max_cost >= SHARED_MIN_COST else None
        if store is None:
            return self._run(device)
        key = verdict_key(self.expression, device)
        verdict = store.get(key)
        if verdict is None:
            verdict = self._run(device)
            store.put(key, verdict)
        return verdict

    def clear(self) -> None:
        """Forget memoized results (benchmarks measure cold evaluation with this)."""
        self._memo.clear()

    def _run(self, device: Device) -> Verdict:
        _allow_deep_nesting()
        try:
            variables = {"device": _activation(device)}
        except ValueError as err:
            return Verdict(False, str(err))
        call = _budget.current()
        if call.over():
            raise Cancelled
        frame = _eval.Frame(variables, COST_LIMIT, call)
        meter = _budget.WorkMeter(frame)
        verdict = self._verdict(frame, meter)
        return replace(verdict, work=meter.work)

    def _verdict(self, frame: _eval.Frame, meter: _budget.WorkMeter) -> Verdict:
        try:
            with _budget.metered(meter):
                result = self._program(frame)
        except _budget.OutOfTimeError:
            raise Cancelled from None  # only the call's end stops an evaluation early
        except _budget.OverWorkError as err:
            return Verdict(False, str(err), frame.cost, over_limit=True, over_work=True)
        except values.CostExceededError as err:
            # cel-go's own words; the scheduler names the selector, device and request.
            return Verdict(False, str(err), frame.cost, over_limit=True)
        except values.EvalError as err:
            return Verdict(False, str(err) or "evaluation error", frame.cost)
        except RecursionError:
            return Verdict(False, "expression nested too deeply", frame.cost)
        except (TypeError, ValueError, LookupError, ArithmeticError) as err:
            # cel-go turns a panic during evaluation into an "internal error" result; a
            # bug of ours must not crash a reconcile either.
            return Verdict(False, f"internal error: {err!r}", frame.cost)
        if not isinstance(result, bool):
            message = (
                f"CEL result of type {values.type_name(result)} could not be converted to bool"
            )
            return Verdict(False, message, frame.cost)
        return Verdict(result, None, frame.cost)


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Selector:
    """Compile a selector (cached by expression).

    Raises:
        SelectorError: the selector is not valid DRA CEL, or is too long or too costly.
    """
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        reason = f"expression is longer than {MAX_EXPRESSION_BYTES} bytes"
        raise SelectorError(expression, reason)
    _allow_deep_nesting()
    try:
        tree = _parser.parse(expression)
        checked = checker.check(tree, [_validate.validate])
        _require_boolean(checked)
        program = _eval.plan(checked)
        max_cost = _cost.estimate(checked)
    except (_parser.ParseError, checker.CheckError, _eval.PlanError) as err:
        raise SelectorError(expression, _reason(err)) from None
    except RecursionError:
        raise SelectorError(expression, "expression nested too deeply") from None
    except (values.EvalError, TypeError, ValueError, LookupError, ArithmeticError) as err:
        raise SelectorError(expression, f"internal error: {err!r}") from None
    if max_cost > COST_LIMIT:
        reason = f"too complex: estimated cost {max_cost} exceeds the limit {COST_LIMIT}"
        raise SelectorError(expression, reason, max_cost)
    return Selector(expression, program, max_cost)


def matches(expression: str, device: Device) -> Verdict:
    """Compile (cached) and evaluate one selector on one device.

    Raises:
        SelectorError: the selector does not compile.
    """
    return compile_selector(expression).evaluate(device)


def clear_caches() -> None:
    """Drop compiled selectors and memoized results."""
    compile_selector.cache_clear()


def _allow_deep_nesting() -> None:
    """Raise Python's recursion limit (never lower it) to what the deepest selector
    Kubernetes accepts needs; Python-to-Python calls use no C stack from CPython 3.11."""
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)


def _require_boolean(checked: checker.Checked) -> None:
    result = checked.types[checked.root.id]
    if result.kind not in ("bool", "google.protobuf.Any"):
        msg = f"must evaluate to bool or the unknown type, not {result}"
        raise checker.CheckError(msg)


def _reason(err: Exception) -> str:
    return str(err)


def _short(expression: str) -> str:
    flat = " ".join(expression.split())
    return flat if len(flat) <= 120 else flat[:117] + "..."


def _activation(device: Device) -> dict[str, Any]:
    attributes: dict[str, dict[str, Any]] = {}
    for key, attribute in device.attributes:
        domain, _, name = key.partition("/")
        attributes.setdefault(domain, {})[name] = _attribute_value(key, attribute)
    capacity: dict[str, dict[str, Any]] = {}
    for key, text in device.capacity:
        domain, _, name = key.partition("/")
        try:
            capacity.setdefault(domain, {})[name] = _quantity.QuantityValue(qty.parse(text))
        except qty.QuantityError as err:
            msg = f"capacity {key}: {err}"
            raise ValueError(msg) from None
    return {
        "driver": device.driver,
        # The scheduler's allocator (stable and incubating) leaves it unset: false.
        "allowMultipleAllocations": False,
        "attributes": _eval.DefaultMap(attributes),
        "capacity": _eval.DefaultMap(capacity),
    }


def _attribute_value(key: str, attribute: Any) -> Any:
    convert: Callable[[Any], Any] | None = _ATTRIBUTE_KINDS.get(attribute.kind)
    if convert is None or not _kind_matches(attribute.kind, attribute.value):
        msg = f"attribute {key}: unsupported attribute value"
        raise ValueError(msg)
    try:
        return convert(attribute.value)
    except semver.SemverError as err:
        msg = f"attribute {key}: parse semantic version: {err}"
        raise ValueError(msg) from None


def _kind_matches(kind: str, value: Any) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, str)


_ATTRIBUTE_KINDS: dict[str, Callable[[Any], Any]] = {
    "string": str,
    "bool": bool,
    "int": int,
    "version": semver.parse,
}
