"""Evaluation: a checked tree becomes nested closures that track cost like cel-go does.

Each closure takes the activation (:class:`Frame`) and returns a value or raises
:class:`EvalError`. Costs follow cel-go's runtime cost tracker with Kubernetes' call
cost estimator: 1 per variable, field or index step, 0 per constant, a call's cost by
its function (see ``_functions``), 10/30 to build a list/map.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelplane.domain.dra import _access as access
from modelplane.domain.dra import _ast as ast
from modelplane.domain.dra import _call_costs, _regex_functions
from modelplane.domain.dra import _functions as fn
from modelplane.domain.dra import _values as v
from modelplane.domain.dra._budget import CallBudget, OutOfTimeError
from modelplane.domain.dra._checker import Checked
from modelplane.domain.dra._values import EvalError, Optional, Uint

Eval = Callable[["Frame"], Any]


class Frame:
    """One evaluation: variables, comprehension scopes, the running cost and its limit,
    and the call it serves (whose deadline stops it; no clock decides its verdict)."""

    __slots__ = ("call", "cost", "limit", "vars")

    def __init__(
        self,
        variables: dict[str, Any],
        limit: int,
        call: CallBudget | None = None,
    ) -> None:
        self.vars = variables
        self.cost = 0
        self.limit = limit
        self.call = call or CallBudget()

    def tick(self) -> None:
        """A loop point: stop when the call this evaluation serves is over."""
        if self.call.over():
            msg = "operation cancelled: the call's deadline passed"
            raise OutOfTimeError(msg)

    def charge(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            msg = "operation cancelled: actual cost limit exceeded"
            raise v.CostExceededError(msg)


def _constructed(frame: Frame, build: Eval, cost: int) -> Any:
    """Build a list or map literal: cel-go's observer charges for the constructor after it
    ran, even when an element's error cut it short (but not past a cost panic)."""
    try:
        value = build(frame)
    except (v.CostExceededError, v.PanicError):
        raise
    except EvalError:
        frame.charge(cost)
        raise
    frame.charge(cost)
    return value


class PlanError(ValueError):
    """cel-go builds constants and regexes while planning; a failing one is a compile error."""


def plan(checked: Checked) -> Eval:
    """Build the evaluator for a checked tree.

    Raises:
        PlanError: a constant conversion or a constant regular expression is invalid.
    """
    return _Planner(checked).plan(checked.root)


_REGEX_FUNCTIONS = ("matches", "find", "findAll")


class _Planner:
    def __init__(self, checked: Checked) -> None:
        self.checked = checked

    def plan(self, expr: ast.Expr) -> Eval:
        planned: Eval = ast.handler(self, expr)(expr)
        return planned

    def literal(self, expr: ast.Literal) -> Eval:
        value = _literal(expr)
        return lambda frame: value

    def ident(self, expr: ast.Ident) -> Eval:
        return self.attribute(expr)

    def select(self, expr: ast.Select) -> Eval:
        return self.presence(expr) if expr.test_only else self.attribute(expr)

    def constant(self, expr: ast.Expr) -> tuple[bool, Any]:
        """Whether cel-go's planner treats the node as a constant, and its value."""
        if isinstance(expr, ast.Literal):
            return True, _literal(expr)
        if isinstance(expr, ast.ListExpr) and not expr.optional:
            items = [self.constant(e) for e in expr.elements]
            if all(ok for ok, _ in items):
                return True, tuple(value for _, value in items)
        if isinstance(expr, ast.MapExpr) and not expr.optional:
            keys = [self.constant(k) for k, _ in expr.entries]
            values = [self.constant(val) for _, val in expr.entries]
            if all(ok for ok, _ in keys + values):
                if any(isinstance(k, bytes) for _, k in keys):
                    # cel-go builds constant maps while planning; Go panics on the key.
                    msg = "panic: runtime error: hash of unhashable type types.Bytes"
                    raise PlanError(msg)
                try:
                    return True, access.build_map([k for _, k in keys], [val for _, val in values])
                except EvalError:
                    return False, None
        if isinstance(expr, ast.Call) and expr.target is None and len(expr.args) == 1:
            name = self.checked.functions.get(expr.id, expr.function)
            if name in fn.CONVERSIONS:
                ok, arg = self.constant(expr.args[0])
                if ok:
                    try:
                        return True, fn.CONVERSIONS[name](arg)
                    except EvalError as err:
                        msg = f"program instantiation failed: {err}"
                        raise PlanError(msg) from err
        return False, None

    # -- variables, fields and indexes (cel-go's attributes) ----------------------------
    def attribute(self, expr: ast.Expr, charge_base: bool = True) -> Eval:
        """An attribute chain: a variable or a computed value, then field and index steps.

        cel-go charges 1 for the chain's base (the variable, or the computed value it
        qualifies) and 1 per step, except that a conditional's branches are resolved
        inside the conditional's own attribute, which charges nothing for their bases.
        """
        if isinstance(expr, ast.Ident):
            return self.variable(expr.name, charge_base)
        if isinstance(expr, ast.Select) and not expr.test_only:
            operand = self.attribute(expr.operand, charge_base)
            name = expr.field
            return lambda frame: access.charged(frame, operand(frame), name, False, True)
        if isinstance(expr, ast.Call) and _is_qualifier(expr):
            function = self.checked.functions.get(expr.id, expr.function)
            return self.qualifier(expr, function, charge_base)
        if isinstance(expr, ast.Call) and self.checked.functions.get(expr.id) == "_?_:_":
            return self.conditional(expr)
        inner = self.plan(expr)
        if not charge_base:
            return inner

        def relative(frame: Frame) -> Any:
            value = inner(frame)
            frame.cost += 1
            return value

        return relative

    def variable(self, name: str, charge: bool = True) -> Eval:
        def run(frame: Frame) -> Any:
            if charge:
                frame.cost += 1
            try:
                value = frame.vars[name]
            except KeyError:
                msg = f"no such attribute: {name}"
                raise EvalError(msg) from None
            if isinstance(value, EvalError):
                raise value
            return value

        return run

    def presence(self, expr: ast.Select) -> Eval:
        operand = self.attribute(expr.operand)
        name = expr.field
        return lambda frame: access.has_field(operand(frame), name)

    def qualifier(self, expr: ast.Call, function: str, charge_base: bool) -> Eval:
        ok, constant = self.constant(expr.args[1])
        if ok and not isinstance(constant, (str, int, float)):
            # A constant key becomes a qualifier while planning: only these kinds can.
            msg = f"program instantiation failed: invalid qualifier type: {v.type_name(constant)}"
            raise PlanError(msg)
        container = self.attribute(expr.args[0], charge_base)
        # A computed key is resolved inside the qualifier: its own base costs nothing.
        key = self.attribute(expr.args[1], charge_base=False)
        optional = function != "_[_]"
        field = function == "_?._"

        def run(frame: Frame) -> Any:
            value = container(frame)
            try:
                k = key(frame)
            except (v.CostExceededError, v.PanicError):
                raise
            except EvalError:
                frame.cost += 1  # cel-go still observes (and charges) the failed step
                raise
            return access.charged(frame, value, k, optional, field)

        return run

    # -- calls --------------------------------------------------------------------------
    def call(self, expr: ast.Call) -> Eval:
        name = self.checked.functions.get(expr.id, expr.function)
        special = self.special(expr, name)
        if special is not None:
            return special
        ok, value = self.constant(expr)
        if ok:
            return lambda frame: value
        args = [self.plan(a) for a in expr.args]
        member = expr.target is not None and name == expr.function
        if member:
            assert expr.target is not None
            args.insert(0, self.plan(expr.target))
        impl = self.implementation(expr, name, member)
        return _strict_call(impl, args, _call_costs.call_cost(name, self.overload(expr)))

    def overload(self, expr: ast.Call) -> str:
        """The overload the checker resolved, or "" when several matched."""
        overloads = self.checked.overloads.get(expr.id, [])
        return overloads[0].id if len(overloads) == 1 else ""

    def special(self, expr: ast.Call, name: str) -> Eval | None:
        """Operators with their own evaluation (short circuits, qualifiers, folding)."""
        if name in ("_[_]", "_[?_]", "_?._"):
            return self.attribute(expr)
        if name in ("_&&_", "_||_"):
            return self.logical(expr, name == "_&&_")
        if name == "_?_:_":
            return self.conditional(expr)
        if name in ("or", "orValue") and expr.target is not None:
            return self.optional_or(expr, name == "orValue")
        if name == "@in":
            return self.membership(expr)
        if name == "@not_strictly_false":
            return self.not_strictly_false(expr)
        return None

    def implementation(self, expr: ast.Call, name: str, member: bool) -> Callable[..., Any]:
        if name == "sum":
            return fn.sum_for([o.id for o in self.checked.overloads.get(expr.id, [])])
        if name in _REGEX_FUNCTIONS:
            pattern = expr.args[0] if member else expr.args[1]
            ok, text = self.constant(pattern)
            if ok and isinstance(text, str):
                try:
                    return _regex_functions.with_pattern(
                        name, _regex_functions.compile_pattern(text)
                    )
                except EvalError as err:
                    msg = f"program instantiation failed: {err}"
                    raise PlanError(msg) from err
        return fn.FUNCTIONS[name]

    def not_strictly_false(self, expr: ast.Call) -> Eval:
        arg = self.plan(expr.args[0])

        def run(frame: Frame) -> Any:
            try:
                value = arg(frame)
            except v.CostExceededError:
                raise
            except EvalError:
                value = True
            frame.charge(1)
            return value is not False

        return run

    def logical(self, expr: ast.Call, is_and: bool) -> Eval:
        terms = [self.plan(a) for a in _flatten(expr, expr.function)]
        stop = not is_and

        def run(frame: Frame) -> Any:
            error: EvalError | None = None
            for term in terms:
                try:
                    value = term(frame)
                except v.CostExceededError:
                    raise
                except EvalError as err:
                    error = error or err
                    continue
                if value is stop:
                    return stop
                if not isinstance(value, bool) and error is None:
                    error = v.no_overload()
            if error is not None:
                raise error
            return not stop

        return run

    def conditional(self, expr: ast.Call) -> Eval:
        condition = self.plan(expr.args[0])
        truthy, falsy = (self.attribute(a, charge_base=False) for a in expr.args[1:])

        def run(frame: Frame) -> Any:
            chosen = condition(frame)
            if chosen is True:
                return truthy(frame)
            if chosen is False:
                return falsy(frame)
            raise v.no_overload()

        return run

    def optional_or(self, expr: ast.Call, or_value: bool) -> Eval:
        """``or``/``orValue`` short-circuit, and cel-go charges nothing for the call."""
        assert expr.target is not None
        left, right = self.plan(expr.target), self.plan(expr.args[0])

        def run(frame: Frame) -> Any:
            value = left(frame)
            if not isinstance(value, Optional):
                return value
            if value.has:
                return value.value if or_value else value
            return right(frame)

        return run

    def membership(self, expr: ast.Call) -> Eval:
        element = self.plan(expr.args[0])
        ok, constant = self.constant(expr.args[1])
        if ok and isinstance(constant, tuple) and all(_primitive(c) for c in constant):
            options = constant

            def in_set(frame: Frame) -> Any:
                value = element(frame)
                return any(_loose_equal(value, option) for option in options)

            return in_set
        container = self.plan(expr.args[1])
        cost = _call_costs.call_cost("@in", self.overload(expr))

        def run(frame: Frame) -> Any:
            value = element(frame)
            collection = container(frame)
            frame.charge(cost([value, collection], None))
            return fn.FUNCTIONS["@in"](value, collection)

        return run

    # -- literals and comprehensions ----------------------------------------------------
    def list_literal(self, expr: ast.ListExpr) -> Eval:
        ok, value = self.constant(expr)
        if ok:
            return lambda frame: value
        items = [(self.plan(e), i in expr.optional) for i, e in enumerate(expr.elements)]

        def build(frame: Frame) -> Any:
            values = []
            for item, optional in items:
                value = item(frame)
                if optional:
                    if not isinstance(value, Optional):
                        msg = f"cannot initialize optional list element from non-optional value {value}"
                        raise EvalError(msg)
                    if not value.has:
                        continue
                    value = value.value
                values.append(value)
            return tuple(values)

        def run(frame: Frame) -> Any:
            return _constructed(frame, build, 10)

        return run

    def map_literal(self, expr: ast.MapExpr) -> Eval:
        ok, value = self.constant(expr)
        if ok:
            return lambda frame: value
        pairs = [
            (self.plan(k), self.plan(val), i in expr.optional)
            for i, (k, val) in enumerate(expr.entries)
        ]

        def build(frame: Frame) -> Any:
            out: dict[Any, Any] = {}
            for key, val, optional in pairs:
                k, value = access.map_key(key(frame)), val(frame)
                if optional:
                    if not isinstance(value, Optional):
                        msg = f"cannot initialize optional entry '{k}' from non-optional value {value}"
                        raise EvalError(msg)
                    if not value.has:
                        out.pop(k, None)
                        continue
                    value = value.value
                out[k] = value
            return out

        def run(frame: Frame) -> Any:
            return _constructed(frame, build, 30)

        return run

    def comprehension(self, expr: ast.Comprehension) -> Eval:
        iter_range = self.plan(expr.iter_range)
        init = self.plan(expr.accu_init)
        condition = self.plan(expr.condition)
        step = self.plan(expr.step)
        result = self.plan(expr.result)
        accu, var, var2 = expr.accu_var, expr.iter_var, expr.iter_var2

        def run(frame: Frame) -> Any:
            collection = iter_range(frame)
            if isinstance(collection, dict):
                pairs: Any = collection.items() if var2 else ((k, None) for k in collection)
            elif isinstance(collection, tuple):
                pairs = enumerate(collection) if var2 else ((e, None) for e in collection)
            else:
                raise v.no_overload()
            saved = frame.vars
            scope = dict(saved)
            frame.vars = scope
            try:
                scope[accu] = _settle(init, frame)
                for first, second in pairs:
                    frame.tick()
                    scope[var] = first
                    if var2:
                        scope[var2] = second
                    if _settle(condition, frame) is False:
                        break
                    scope[accu] = _settle(step, frame)
                value = result(frame)
            finally:
                frame.vars = saved
            if isinstance(value, EvalError):
                raise value
            return value

        return run


def _strict_call(impl: Callable[..., Any], args: list[Eval], coster: _call_costs.Coster) -> Eval:
    """A call that evaluates every argument first (an error argument is the result)."""

    def run(frame: Frame) -> Any:
        values = [_settle(arg, frame) for arg in args]
        for value in values:
            if isinstance(value, EvalError):
                frame.charge(coster(values, None))
                raise value
        try:
            result = impl(*values)
        except v.CostExceededError:
            raise
        except EvalError:
            frame.charge(coster(values, None))
            raise
        frame.charge(coster(values, result))
        return result

    return run


def _settle(run: Eval, frame: Frame) -> Any:
    """Evaluate, keeping an error as a value (an accumulator can hold one)."""
    try:
        return run(frame)
    except v.CostExceededError:
        raise
    except EvalError as err:
        return err


def _flatten(expr: ast.Expr, function: str) -> list[ast.Expr]:
    if isinstance(expr, ast.Call) and expr.function == function and expr.target is None:
        return [t for a in expr.args for t in _flatten(a, function)]
    return [expr]


def _is_qualifier(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Call) and expr.function in ("_[_]", "_[?_]", "_?._")


def _primitive(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str)) or value is None


def _loose_equal(a: Any, b: Any) -> bool:
    try:
        return v.equal(a, b) is True
    except EvalError:
        return False


def _literal(expr: ast.Literal) -> Any:
    if expr.kind == "uint":
        return Uint(expr.value)
    return expr.value


DefaultMap = v.DefaultMap
