"""Type checking, as cel-go's checker does it for the Kubernetes DRA environment.

After types, the AST validators Kubernetes enables run: homogeneous aggregate literals,
literal regexes, durations and timestamps, and cel-go's ``string.format`` check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from modelplane.domain.dra import _ast as ast
from modelplane.domain.dra import _types as t

_DYNAMIC = ("dyn", "google.protobuf.Any", "error")
FREE = t.Type("dyn", name="free")
"""The element type of an empty literal: cel-go's fresh type variable."""
_TYPE_NAMES = {
    "int": t.INT,
    "uint": t.UINT,
    "double": t.DOUBLE,
    "string": t.STRING,
    "bool": t.BOOL,
    "bytes": t.BYTES,
    "list": t.Type("list"),
    "map": t.Type("map"),
    "null_type": t.NULL,
    "type": t.Type("type"),
    "dyn": t.DYN,
    "google.protobuf.Timestamp": t.TIMESTAMP,
    "google.protobuf.Duration": t.DURATION,
    "optional_type": t.Type("optional_type"),
}


class CheckError(ValueError):
    """A type error, or an expression a validator rejects."""


@dataclass
class Checked:
    """The checker's results: a type per node and the matching overloads per call."""

    root: ast.Expr
    types: dict[int, t.Type] = field(default_factory=dict)
    overloads: dict[int, list[t.Overload]] = field(default_factory=dict)
    functions: dict[int, str] = field(default_factory=dict)
    validated: list[ast.Call] = field(default_factory=list)
    """Calls the validators look at (regexes, durations, timestamps, formats)."""


def check(root: ast.Expr, validators: list[Callable[[Checked], None]] | None = None) -> Checked:
    """Type-check an expression tree, then run the validators on the result.

    Raises:
        CheckError: a type error, or a literal a validator rejects.
    """
    checked = Checked(root)
    _Checker(checked).visit(root, {})
    for validate in validators or ():
        validate(checked)
    return checked


def is_dyn(tp: t.Type) -> bool:
    return tp.kind in _DYNAMIC or tp.kind == "param"


def _assign(subs: dict[str, t.Type], target: t.Type, source: t.Type) -> bool:
    """Whether a value of type source may be passed where target is declared."""
    if source.kind == "error":
        return True
    if target.kind == "param":
        bound = subs.get(target.name)
        if bound is None or bound is FREE:
            subs[target.name] = source
            return True
        if not _assign(subs, bound, source):
            return False
        if equivalent(bound, source):
            # An empty literal's or optional.none()'s type variable is bound by the other
            # type, as cel-go binds fresh type variables (optional(T) and optional(bool)
            # make optional(bool)).
            bound, source = _specific(bound, source), _specific(source, bound)
        # cel-go keeps the more general of the two types (so int then dyn gives dyn).
        subs[target.name] = _most_general(source, bound)
        return True
    if is_dyn(target) or is_dyn(source):
        return True
    if source.kind == "null_type" or target.kind == "null_type":
        other = target if source.kind == "null_type" else source
        return other.kind in _NULLABLE
    if target.kind != source.kind or target.name != source.name:
        return False
    if len(target.params) != len(source.params):
        return len(target.params) == 0 or len(source.params) == 0
    return all(_assign(subs, a, b) for a, b in zip(target.params, source.params, strict=True))


def _general(tp: t.Type) -> bool:
    return tp.kind in ("dyn", "google.protobuf.Any", "param")


def _less_specific(first: t.Type, second: t.Type) -> bool:
    """cel-go's ``isEqualOrLessSpecific``."""
    if _general(first):
        return True
    if _general(second) or first.kind != second.kind or first.name != second.name:
        return False
    if len(first.params) != len(second.params):
        return False
    return all(_less_specific(a, b) for a, b in zip(first.params, second.params, strict=True))


def _most_general(first: t.Type, second: t.Type) -> t.Type:
    return first if _less_specific(first, second) else second


def _substitute(subs: dict[str, t.Type], tp: t.Type) -> t.Type:
    if tp.kind == "param":
        return subs.get(tp.name, FREE)
    if tp.params:
        return t.Type(tp.kind, tuple(_substitute(subs, p) for p in tp.params), tp.name)
    return tp


def qualified_name(expr: ast.Expr | None) -> str | None:
    """``a.b.c`` written as selects on an identifier, or None."""
    if isinstance(expr, ast.Ident):
        return expr.name
    if isinstance(expr, ast.Select) and not expr.test_only:
        prefix = qualified_name(expr.operand)
        return f"{prefix}.{expr.field}" if prefix else None
    return None


_NULLABLE = frozenset(
    ["null_type", "object", "opaque", "optional_type", "google.protobuf.Timestamp",
     "google.protobuf.Duration"]
)  # fmt: skip
_OPTIONAL_SELECT = t.Overload("select_optional_field", (t.DYN, t.STRING), t.DYN)


def _has_free(tp: t.Type) -> bool:
    return tp is FREE or (bool(tp.params) and any(_has_free(p) for p in tp.params))


def _unwrap_optional(tp: t.Type) -> tuple[t.Type, bool]:
    if tp.kind == "optional_type" and tp.params:
        return tp.params[0], True
    return tp, False


def equivalent(a: t.Type, b: t.Type) -> bool:
    """cel-go's ``IsEquivalentType``; an empty literal's element type matches anything."""
    if a is FREE or b is FREE:
        return True
    if a.kind != b.kind or len(a.params) != len(b.params):
        return False
    if a.kind in ("object", "opaque") and a.name != b.name:
        return False
    return all(equivalent(x, y) for x, y in zip(a.params, b.params, strict=True))


def _specific(a: t.Type, b: t.Type) -> t.Type:
    """Of two equivalent types, the one with fewer free parts."""
    if a == FREE:
        return b
    if b == FREE or not a.params:
        return a
    params = tuple(_specific(x, y) for x, y in zip(a.params, b.params, strict=True))
    return t.Type(a.kind, params, a.name)


class _Checker:
    def __init__(self, checked: Checked) -> None:
        self.checked = checked
        self.exempt = 0

    def visit(self, expr: ast.Expr, scope: dict[str, t.Type]) -> t.Type:
        tp = self._visit(expr, scope)
        self.checked.types[expr.id] = tp
        return tp

    def _visit(self, expr: ast.Expr, scope: dict[str, t.Type]) -> t.Type:
        tp: t.Type = ast.handler(self, expr)(expr, scope)
        return tp

    def literal(self, expr: ast.Literal, _: dict[str, t.Type]) -> t.Type:
        return _LITERAL_TYPES[expr.kind]

    def ident(self, expr: ast.Ident, scope: dict[str, t.Type]) -> t.Type:
        # A name written '.x' is resolved from the root as 'x' (the parser drops the dot
        # of identifiers, but cel.bind(.x, ...) reads back its variable '.x' this way).
        name = expr.name.removeprefix(".")
        if name in scope:
            return scope[name]
        if name in t.VARIABLES:
            return t.VARIABLES[name]
        if name in _TYPE_NAMES:
            return t.type_of(_TYPE_NAMES[name])
        msg = f"undeclared reference to '{name}' (in container '')"
        raise CheckError(msg)

    def select(self, expr: ast.Select, scope: dict[str, t.Type]) -> t.Type:
        name = qualified_name(expr)
        if name is not None and name in _TYPE_NAMES and name.split(".")[0] not in scope:
            return t.type_of(_TYPE_NAMES[name])
        operand = self.visit(expr.operand, scope)
        result = self.field_type(operand, expr.field)
        return t.BOOL if expr.test_only else result

    def field_type(self, operand: t.Type, name: str) -> t.Type:
        target, optional = _unwrap_optional(operand)
        result = self._field(target, name)
        return t.optional_of(result) if optional else result

    def _field(self, operand: t.Type, name: str) -> t.Type:
        if operand == t.DEVICE:
            if name not in t.DEVICE_FIELDS:
                msg = f"undefined field '{name}'"
                raise CheckError(msg)
            return t.DEVICE_FIELDS[name]
        if operand.kind == "map":
            return operand.params[1]
        if is_dyn(operand):
            return t.DYN
        msg = f"type '{operand}' does not support field selection"
        raise CheckError(msg)

    def call(self, expr: ast.Call, scope: dict[str, t.Type]) -> t.Type:
        name = expr.function
        if name == "_?._":
            return self.optional_select(expr, scope)
        target = expr.target
        qualified = qualified_name(target)
        if qualified is not None and qualified.split(".")[0] not in scope:
            full = f"{qualified}.{name}"
            if full in t.FUNCTIONS:
                name, target = full, None
        if name not in t.FUNCTIONS:
            msg = f"undeclared reference to '{name}' (in container '')"
            raise CheckError(msg)
        self.exempt += name == "format"
        args = [self.visit(a, scope) for a in expr.args]
        if target is not None:
            args.insert(0, self.visit(target, scope))
        self.exempt -= name == "format"
        self.checked.functions[expr.id] = name
        if name in _VALIDATED:
            self.checked.validated.append(expr)
        return self.resolve(expr, name, args, member=target is not None)

    def optional_select(self, expr: ast.Call, scope: dict[str, t.Type]) -> t.Type:
        operand, field_name = expr.args
        assert isinstance(field_name, ast.Literal)
        self.checked.types[field_name.id] = t.STRING
        self.checked.functions[expr.id] = "_?._"
        self.checked.overloads[expr.id] = [_OPTIONAL_SELECT]
        target, _ = _unwrap_optional(self.visit(operand, scope))
        return t.optional_of(self._field(target, str(field_name.value)))

    def resolve(self, expr: ast.Call, name: str, args: list[t.Type], member: bool) -> t.Type:
        matches: list[t.Overload] = []
        results: list[t.Type] = []
        # An empty literal's type variable is bound by the first overload that fits, so
        # cel-go resolves later overloads against that binding: in effect, only one.
        free = any(_has_free(a) for a in args)
        for overload in t.FUNCTIONS[name]:
            if overload.member != member or len(overload.params) != len(args):
                continue
            subs: dict[str, t.Type] = {}
            if all(_assign(subs, p, a) for p, a in zip(overload.params, args, strict=True)):
                matches.append(overload)
                results.append(_substitute(subs, overload.result))
                if free:
                    break
        if not matches:
            if member:
                shown = f"{args[0]}.({', '.join(str(a) for a in args[1:])})"
            else:
                shown = f"({', '.join(str(a) for a in args)})"
            msg = f"found no matching overload for '{name}' applied to '{shown}'"
            raise CheckError(msg)
        self.checked.overloads[expr.id] = matches
        # Each overload gets fresh type variables, so two results that still hold one
        # are different types to cel-go, which then types the call as dyn.
        if len(results) > 1 and any(_has_free(r) for r in results):
            return t.DYN
        if free and len(matches) == 1:
            self.bind_free(expr, args, matches[0], member)
        return results[0] if all(r == results[0] for r in results) else t.DYN

    def bind_free(
        self, expr: ast.Call, args: list[t.Type], overload: t.Overload, member: bool
    ) -> None:
        """cel-go substitutes the final binding of every type variable into every node's
        type when it is done, so ``optional.none()`` in ``c ? optional.of(true) :
        optional.none()`` is an ``optional(bool)`` (its size estimate depends on that)."""
        nodes = [expr.target, *expr.args] if member else list(expr.args)
        subs: dict[str, t.Type] = {}
        for param, arg in zip(overload.params, args, strict=True):
            _assign(subs, param, arg)
        for node, arg, param in zip(nodes, args, overload.params, strict=True):
            bound = _substitute(subs, param)
            if node is not None and _has_free(arg) and equivalent(arg, bound):
                self.checked.types[node.id] = _specific(arg, bound)

    def elements(self, types: list[t.Type], optional: frozenset[int]) -> list[t.Type]:
        out = []
        for index, declared in enumerate(types):
            tp = declared
            if index in optional:
                inner, is_optional = _unwrap_optional(tp)
                if not is_optional and not is_dyn(inner):
                    msg = f"expected type '{t.optional_of(inner)}' but found '{inner}'"
                    raise CheckError(msg)
                if not is_optional and not self.exempt:
                    # cel-go's homogeneous-literal validator panics on a dyn optional
                    # element (it reads the optional's type parameter); the API server
                    # refuses the selector.
                    msg = "optional element of type dyn cannot be validated"
                    raise CheckError(msg)
                tp = inner
            out.append(tp)
        return out

    def join(self, types: list[t.Type]) -> t.Type:
        """The element type of a literal; mixed types are an error unless exempt."""
        if not types:
            return FREE
        joined = types[0]
        for tp in types[1:]:
            if equivalent(joined, tp):
                joined = _specific(joined, tp)
            elif self.exempt:
                return t.DYN
            else:
                msg = f"expected type '{joined}' but found '{tp}'"
                raise CheckError(msg)
        return joined

    def list_literal(self, expr: ast.ListExpr, scope: dict[str, t.Type]) -> t.Type:
        types = [self.visit(e, scope) for e in expr.elements]
        joined = self.join(self.elements(types, expr.optional))
        self.bind_elements(expr.elements, types, joined, expr.optional)
        return t.list_of(joined)

    def map_literal(self, expr: ast.MapExpr, scope: dict[str, t.Type]) -> t.Type:
        keys = [self.visit(k, scope) for k, _ in expr.entries]
        values = [self.visit(v, scope) for _, v in expr.entries]
        joined = self.join(self.elements(values, expr.optional))
        self.bind_elements([v for _, v in expr.entries], values, joined, expr.optional)
        return t.map_of(self.join(keys), joined)

    def bind_elements(
        self, nodes: list[ast.Expr], types: list[t.Type], joined: t.Type, optional: frozenset[int]
    ) -> None:
        """As :meth:`bind_free`, for the elements of a literal and their joined type."""
        for index, (node, tp) in enumerate(zip(nodes, types, strict=True)):
            if index not in optional and _has_free(tp) and equivalent(tp, joined):
                self.checked.types[node.id] = _specific(tp, joined)

    def comprehension(self, expr: ast.Comprehension, scope: dict[str, t.Type]) -> t.Type:
        range_type = self.visit(expr.iter_range, scope)
        first, second = self.iteration_types(expr, range_type)
        accu_type = self.visit(expr.accu_init, scope)
        inner = {**scope, expr.accu_var: accu_type}
        if expr.macro != "bind":
            inner[expr.iter_var] = first
            if expr.iter_var2:
                inner[expr.iter_var2] = second
        if expr.macro in ("map", "filter", "transform_list", "transform_map", "transform_entry"):
            accu_type = self.accumulator(expr, inner, first)
            inner[expr.accu_var] = accu_type
        self.visit(expr.condition, inner)
        step = self.visit(expr.step, inner)
        if not _assign({}, accu_type, step):
            msg = f"comprehension step of type '{step}' does not match accumulator '{accu_type}'"
            raise CheckError(msg)
        return self.visit(expr.result, inner)

    def iteration_types(self, expr: ast.Comprehension, range_type: t.Type) -> tuple[t.Type, t.Type]:
        """The types of the iteration variables (one: element or key; two: index or key, value)."""
        if range_type.kind == "list":
            elem = range_type.params[0] if range_type.params else t.DYN
            return (t.INT, elem) if expr.iter_var2 else (elem, t.DYN)
        if range_type.kind == "map":
            key, value = range_type.params if range_type.params else (t.DYN, t.DYN)
            return key, value
        if range_type.kind in ("dyn", "param", "error"):
            return t.DYN, t.DYN
        msg = f"expression of type '{range_type}' cannot be range of a comprehension"
        raise CheckError(msg)

    def accumulator(
        self, expr: ast.Comprehension, scope: dict[str, t.Type], first: t.Type
    ) -> t.Type:
        """The type a collecting macro builds (cel-go infers it through a type variable)."""
        if expr.macro == "filter":
            return t.list_of(scope[expr.iter_var])
        step = expr.step
        if isinstance(step, ast.Call) and step.function == "_?_:_":
            step = step.args[1]
        assert isinstance(step, ast.Call)
        probe = {**scope, expr.accu_var: t.DYN}
        if expr.macro in ("map", "transform_list"):
            appended = step.args[1]
            assert isinstance(appended, ast.ListExpr)
            return t.list_of(self.visit(appended.elements[0], probe))
        value = self.visit(step.args[-1], probe)
        if expr.macro == "transform_map":
            return t.map_of(first, value)
        return value if value.kind == "map" else t.map_of(t.DYN, t.DYN)


_VALIDATED = frozenset(["matches", "duration", "timestamp", "format"])
_LITERAL_TYPES = {
    "int": t.INT,
    "uint": t.UINT,
    "double": t.DOUBLE,
    "string": t.STRING,
    "bytes": t.BYTES,
    "bool": t.BOOL,
    "null": t.NULL,
}
