"""Static cost estimation, ported from cel-go's checker/cost.go with Kubernetes' estimator.

The worst case is computed from the declared limits of a DRA device (32 domains of 32
attributes, attribute strings of at most 64 characters, ...), exactly as the API server
does when it rejects a selector as too complex. Only the maximum matters to us.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from modelplane.domain.dra import _ast as ast
from modelplane.domain.dra import _cost_sizes as sz
from modelplane.domain.dra import _types as t
from modelplane.domain.dra._checker import FREE, Checked
from modelplane.domain.dra._cost_sizes import MAX, UNKNOWN, GoPath, Range


@dataclass
class _Entry:
    kind: str
    key: Range
    val: Range


@dataclass
class _Local:
    path: GoPath | None
    size: Range | None
    entry: _Entry | None


def estimate(checked: Checked) -> int:
    """The maximum estimated cost of a checked expression."""
    return _Coster(checked).cost(checked.root)[1]


class _Coster:
    def __init__(self, checked: Checked) -> None:
        self.checked = checked
        self.paths: dict[int, GoPath] = {}
        self.sizes: dict[int, Range] = {}
        self.entries: dict[int, _Entry] = {}
        self.locals: dict[str, list[_Local]] = {}

    # -- sizes ---------------------------------------------------------------------------
    def type_of(self, expr: ast.Expr) -> t.Type:
        return self.checked.types.get(expr.id, t.DYN)

    def path(self, expr: ast.Expr) -> GoPath | None:
        if isinstance(expr, ast.Ident) and self.locals.get(expr.name):
            return self.locals[expr.name][-1].path
        return self.paths.get(expr.id)

    def path_items(self, expr: ast.Expr) -> list[str] | None:
        path = self.path(expr)
        return path.items() if path is not None else None

    def size(self, expr: ast.Expr) -> Range | None:
        if expr.id in self.sizes:
            return self.sizes[expr.id]
        literal = _literal_size(expr)
        if literal is not None:
            return literal
        declared = sz.device_size(self.path_items(expr))
        if declared is not None:
            self.sizes[expr.id] = declared
            return declared
        if _scalar(self.type_of(expr)):
            return (1, 1)
        if isinstance(expr, ast.Ident) and self.locals.get(expr.name):
            return self.locals[expr.name][-1].size
        return None

    def size_or_unknown(self, expr: ast.Expr) -> Range:
        return self.size(expr) or UNKNOWN

    def entry(self, expr: ast.Expr) -> _Entry | None:
        if expr.id in self.entries:
            return self.entries[expr.id]
        if isinstance(expr, ast.Ident) and self.locals.get(expr.name):
            return self.locals[expr.name][-1].entry
        return None

    # -- costs ---------------------------------------------------------------------------
    def cost(self, expr: ast.Expr) -> Range:
        estimate: Range = ast.handler(self, expr)(expr)
        return estimate

    def literal(self, _: ast.Literal) -> Range:
        return (0, 0)

    def ident(self, expr: ast.Ident) -> Range:
        local = self.locals.get(expr.name)
        if local:
            if local[-1].path is not None:
                self.paths[expr.id] = local[-1].path
        else:
            self.paths[expr.id] = GoPath.of(expr.name)
        return (1, 1)

    def select(self, expr: ast.Select) -> Range:
        if expr.test_only:
            return self.cost(expr.operand)
        total = self.cost(expr.operand)
        operand = self.type_of(expr.operand)
        if operand.kind in ("map", "object", "param"):
            total = sz.add(total, (1, 1))
        self.paths[expr.id] = sz.append(self.path(expr.operand), expr.field)
        return total

    def call(self, expr: ast.Call) -> Range:
        name = self.checked.functions.get(expr.id, expr.function)
        if name == "dyn":
            arg = expr.args[0]
            unwrapped = sz.add((1, 1), self.cost(arg))
            self._copy(expr, arg)
            return unwrapped
        args = list(expr.args)
        target = expr.target if name == expr.function else None
        arg_costs = [self.cost(a) for a in args]
        total: Range = (0, 0)
        if target is not None:
            total = self.cost(target)
        fn_cost: Range | None = None
        result_size: Range | None = None
        for overload in self.checked.overloads.get(expr.id, []):
            cost, size = self.function_cost(expr, name, overload.id, target, args, arg_costs)
            fn_cost = cost if fn_cost is None else sz.union(fn_cost, cost)
            if size is not None:
                result_size = size if result_size is None else sz.union(result_size, size)
            if overload.id in ("index_list", "index_map"):
                entry = self.entry(args[0])
                result_size = entry.val if entry else None
                suffix = "@items" if overload.id == "index_list" else "@values"
                self.paths[expr.id] = sz.append(self.path(args[0]), suffix)
            if result_size is None:
                result_size = self.size(expr)
        if result_size is not None:
            self.sizes[expr.id] = result_size
        return sz.add(total, fn_cost or (0, 0))

    def function_cost(
        self,
        expr: ast.Call,
        name: str,
        overload: str,
        target: ast.Expr | None,
        args: list[ast.Expr],
        arg_costs: list[Range],
    ) -> tuple[Range, Range | None]:
        arg_sum: Range = (0, 0)
        for c in arg_costs:
            arg_sum = sz.add(arg_sum, c)
        for estimator in (self.extension_cost, self.kubernetes_cost):
            found = estimator(name, overload, target, args)
            if found is not None:
                return sz.add(found[0], arg_sum), found[1]
        return self.standard_cost(expr, overload, target, args, arg_costs, arg_sum)

    def extension_cost(
        self, name: str, overload: str, target: ast.Expr | None, args: list[ast.Expr]
    ) -> tuple[Range, Range | None] | None:
        """The lists (version 3) and sets extensions' own overload estimators."""
        if not overload.startswith("list"):
            return None
        if overload.startswith("list_sets_") and len(args) == 2:
            factor = 2.0 if overload == "list_sets_equivalent_list" else 1.0
            product = sz.mul(self.size_or_unknown(args[0]), self.size_or_unknown(args[1]))
            return sz.add(sz.factor(product, factor), (1, 1)), None
        if name == "lists.range" and target is None and len(args) == 1:
            count = _literal_int(args[0], MAX)
            return _allocating(1.0, (count, count))
        if target is None:
            return None
        size = self.size_or_unknown(target)
        if overload == "list_slice" and len(args) == 2:
            start, end = _literal_int(args[0], 0), _literal_int(args[1], size[1])
            count = (end - start) % 2**64
            return _allocating(1.0, (count, count))
        if overload == "list_reverse" and not args:
            return _allocating(1.0, size)
        if overload in ("list_flatten", "list_flatten_int") and len(args) <= 1:
            depth = _literal_int(args[0], MAX) if args else 1
            return _allocating(float(depth), size)
        if overload == "list_distinct" and not args:
            return _allocating(2.0, sz.mul(size, size))
        if overload.endswith("_sort") and not args:
            return self.sort_cost(target, overload)
        if overload.endswith("_sortByAssociatedKeys") and len(args) == 1:
            return self.sort_cost(args[0], overload)
        return None

    def sort_cost(self, keys: ast.Expr, overload: str) -> tuple[Range, Range]:
        size = self.size_or_unknown(keys)
        factor = 2.1 if overload.split("_")[1] in ("string", "bytes") else 2.0
        return _allocating(factor, sz.mul(size, size))

    def kubernetes_cost(
        self, name: str, overload: str, target: ast.Expr | None, args: list[ast.Expr]
    ) -> tuple[Range, Range | None] | None:
        """Kubernetes' ``EstimateCallCost`` (by function name)."""
        if name not in _KUBERNETES_NAMES:
            return None
        if name in _NOMINAL:
            return (1, 1), None
        if name == "check":
            return (350_000, 350_000), None
        if name in ("fieldSelector", "labelSelector") and len(args) == 1:
            return _selector_cost(self.size_or_unknown(args[0])), None
        if name in _STRING_ARGUMENT and args:
            return sz.factor(self.size_or_unknown(args[0]), 0.1), None
        if name == "ip" and (overload == "cidr_ip" or args):
            if overload == "cidr_ip":
                return (1, 1), None
            return sz.factor(self.size_or_unknown(args[0]), 0.1), None
        if name == "ip.isCanonical" and args:
            return sz.factor(self.size_or_unknown(args[0]), 0.2), None
        if name in ("containsIP", "containsCIDR") and args:
            return self.contains_cost(name, overload, args), None
        if name == "url" and len(args) == 1:
            size = self.size_or_unknown(args[0])
            return sz.factor(size, 0.1), size
        if name == "validate" and args:
            return sz.factor(sz.factor(self.size_or_unknown(args[0]), 0.1), 128 * 0.25), None
        if target is None:
            return self.kubernetes_equality(name, args)
        return self.kubernetes_member_cost(name, target, args)

    def kubernetes_member_cost(
        self, name: str, target: ast.Expr, args: list[ast.Expr]
    ) -> tuple[Range, Range | None] | None:
        size = self.size_or_unknown(target)
        if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            element = self.list_element(target)
            if element is None:
                return sz.factor(size, 0.1), None
            element_cost: Range = (1, 1)
            if element[0] in ("string", "bytes"):
                element_cost = sz.add(element_cost, sz.factor(element[1], 0.1))
            return sz.mul(size, element_cost), None
        if name in ("lowerAscii", "upperAscii", "substring", "trim"):
            return sz.factor(size, 0.1), size
        if name == "split":
            top = size[1]
            if len(args) > 1 and isinstance(args[1], ast.Literal) and args[1].kind == "int":
                top = args[1].value % 2**64
            return sz.factor(size, 0.2), (0, top)
        if name == "replace" and len(args) >= 2:
            return self.replace_cost(target, args)
        if name == "join":
            return self.join_cost(target, args)
        if name in ("find", "findAll") and args:
            text = sz.factor(sz.add(size, (1, 1)), 0.1)
            regex = sz.factor(self.size_or_unknown(args[0]), 0.25)
            return sz.mul(text, regex), (0, size[1])
        return None

    def kubernetes_equality(
        self, name: str, args: list[ast.Expr]
    ) -> tuple[Range, Range | None] | None:
        if name != "_==_" or len(args) != 2:
            return None
        left, right = self.type_of(args[0]), self.type_of(args[1])
        # A free type variable on one side is bound to the other side's type.
        left, right = (right, right) if left is FREE else (left, left if right is FREE else right)
        if left != right:
            return None
        if left in (t.QUANTITY, t.SEMVER, t.IP, t.CIDR) or left.name.startswith(
            "kubernetes.authorization."
        ):
            return (1, 1), None
        if left == t.FORMAT:
            return sz.factor((1, 64), 0.1), None
        if left == t.URL:
            size = self.size(args[1]) or (1, 1)
            return sz.factor((1, size[1]), 0.1), None
        return None

    def contains_cost(self, name: str, overload: str, args: list[ast.Expr]) -> Range:
        address: Range = (4, 16)
        cost = sz.factor(sz.add(address, address), 0.1)
        if name == "containsCIDR":
            cost = sz.add(sz.add(cost, sz.factor(address, 0.1)), (1, 1))
        if overload.endswith("_string"):
            cost = sz.add(cost, sz.factor(self.size_or_unknown(args[0]), 0.1))
        return cost

    def list_element(self, target: ast.Expr) -> tuple[str, Range] | None:
        """Kubernetes' ``listElementNode``: the element kind and size of a list target."""
        tp = self.type_of(target)
        if not tp.params:
            return None
        path = self.path_items(target)
        element = tp.params[0]
        if element.kind in (
            "bool",
            "double",
            "int",
            "uint",
            "google.protobuf.Timestamp",
            "google.protobuf.Duration",
        ):
            return element.kind, (1, 1)
        declared = sz.device_size([*path, "@items"]) if path is not None else None
        return element.kind, declared or UNKNOWN

    def replace_cost(self, target: ast.Expr, args: list[ast.Expr]) -> tuple[Range, Range]:
        size = self.size_or_unknown(target)
        old = self.size_or_unknown(args[0])
        new = self.size_or_unknown(args[1])
        count_max, retained_max = _replacements(size[1], old[0], new[1] <= old[0])
        count_min, retained_min = _replacements(size[0], old[1], old[1] <= new[0])
        result = sz.add(sz.mul((count_min, count_max), new), (retained_min, retained_max))
        return sz.factor(size, 0.2), result

    def join_cost(self, target: ast.Expr, args: list[ast.Expr]) -> tuple[Range, Range]:
        list_size = self.size_or_unknown(target)
        element = self.list_element_size(target)
        size: Range = sz.mul(list_size, element) if element is not None else (0, 0)
        if args:
            separators = (max(list_size[0] - 1, 0), max(list_size[1] - 1, 0))
            size = sz.add(size, sz.mul(self.size_or_unknown(args[0]), separators))
        return sz.factor(size, 0.1), size

    def list_element_size(self, target: ast.Expr) -> Range | None:
        element = self.list_element(target)
        return element[1] if element is not None else None

    def standard_cost(
        self,
        expr: ast.Call,
        overload: str,
        target: ast.Expr | None,
        args: list[ast.Expr],
        arg_costs: list[Range],
        arg_sum: Range,
    ) -> tuple[Range, Range | None]:
        """cel-go's own ``functionCost`` fallbacks."""
        if overload == "string_format" and target is not None:
            return sz.add(sz.factor(self.size_or_unknown(target), 0.1), arg_sum), None
        if overload in ("string_to_bytes", "bytes_to_string", "strings_quote") and args:
            size = self.size_or_unknown(args[0])
            # cel-go computes these sizes with plain uint64 arithmetic, which wraps.
            result = {
                "string_to_bytes": (size[0], size[1] * 4 % 2**64),
                "bytes_to_string": (size[0] // 4, size[1]),
                "strings_quote": ((size[0] + 2) % 2**64, (size[1] * 2 + 2) % 2**64),
            }[overload]
            return sz.add(sz.factor(size, 0.1), arg_sum), result
        if overload == "matches_string" and target is not None and len(args) == 1:
            text = sz.factor(sz.add(self.size_or_unknown(target), (1, 1)), 0.1)
            regex = sz.factor(self.size_or_unknown(args[0]), 0.25)
            return sz.add(sz.mul(text, regex), arg_sum), None
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return sz.add(sz.factor(self.size_or_unknown(args[0]), 0.1), arg_sum), None
        if overload == "in_list" and len(args) == 2:
            return sz.add(self.size_or_unknown(args[1]), arg_sum), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            first = sz.factor(self.size_or_unknown(target), 0.1)
            second = sz.factor(self.size_or_unknown(args[0]), 0.1)
            return sz.add(sz.mul(first, second), arg_sum), None
        if overload in ("logical_or", "logical_and"):
            left, right = arg_costs
            return (left[0], sz.add(left, right)[1]), None
        if overload == "conditional":
            size = sz.union(self.size_or_unknown(args[1]), self.size_or_unknown(args[2]))
            self.union_entries(expr, args[1], args[2])
            return sz.add(arg_costs[0], sz.union(arg_costs[1], arg_costs[2])), size
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = sz.add(self.size_or_unknown(args[0]), self.size_or_unknown(args[1]))
            self.union_entries(expr, args[0], args[1])
            if overload == "add_list":
                return sz.add((1, 1), arg_sum), result
            return sz.add(sz.factor(result, 0.1), arg_sum), result
        if overload in _SIZED_COMPARISONS:
            left, right = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
            smallest = min(left[1], right[1])
            return sz.add(sz.factor((1 if smallest > 0 else 0, smallest), 0.1), arg_sum), None
        return sz.add((1, 1), arg_sum), None

    def union_entries(self, expr: ast.Expr, left: ast.Expr, right: ast.Expr) -> None:
        """cel-go's ``entrySizeEstimate.union``: both sides must be known."""
        first, second = self.entry(left), self.entry(right)
        if first is not None and second is not None:
            key, val = sz.union(first.key, second.key), sz.union(first.val, second.val)
            self.entries[expr.id] = _Entry(first.kind, key, val)

    def list_literal(self, expr: ast.ListExpr) -> Range:
        total: Range = (0, 0)
        item: Range = (0, 0) if not expr.elements else (MAX, 0)
        for element in expr.elements:
            total = sz.add(total, self.cost(element))
            item = sz.union(item, self.size_or_unknown(element))
        self.entries[expr.id] = _Entry("list", (1, 1), item)
        return sz.add(total, (10, 10))

    def map_literal(self, expr: ast.MapExpr) -> Range:
        total: Range = (0, 0)
        keys: Range = (0, 0) if not expr.entries else (MAX, 0)
        vals = keys
        for key, value in expr.entries:
            total = sz.add(sz.add(total, self.cost(key)), self.cost(value))
            keys = sz.union(keys, self.size_or_unknown(key))
            vals = sz.union(vals, self.size_or_unknown(value))
        self.entries[expr.id] = _Entry("map", keys, vals)
        return sz.add(total, (30, 30))

    def comprehension(self, expr: ast.Comprehension) -> Range:
        if expr.macro == "bind":
            return self.bind(expr)
        total = sz.add(self.cost(expr.iter_range), self.cost(expr.accu_init))
        self.push(expr.accu_var, expr.accu_init)
        if expr.iter_var2:
            self.push_iter_part(expr.iter_var, expr.iter_range, key=True)
            self.push_iter_part(expr.iter_var2, expr.iter_range, key=False)
        else:
            self.push_iter(expr.iter_var, expr.iter_range)
        loop = self.cost(expr.condition)
        step = self.cost(expr.step)
        self.locals[expr.iter_var].pop()
        if expr.iter_var2:
            self.locals[expr.iter_var2].pop()
        total = sz.add(total, self.cost(expr.result))
        self.locals[expr.accu_var].pop()
        count = self.size_or_unknown(expr.iter_range)
        total = sz.add(total, sz.mul(count, sz.add(step, loop)))
        if isinstance(expr.accu_init, ast.Literal):
            literal = _literal_size(expr.accu_init)
            if literal is not None:
                self.sizes[expr.id] = literal
        elif isinstance(expr.accu_init, (ast.ListExpr, ast.MapExpr)):
            self.sizes[expr.id] = count
            step_entry = self.entry(expr.step)
            if step_entry is not None:
                self.entries[expr.id] = step_entry
        return total

    def bind(self, expr: ast.Comprehension) -> Range:
        total = sz.add(self.cost(expr.iter_range), self.cost(expr.accu_init))
        self.push(expr.accu_var, expr.accu_init)
        total = sz.add(total, self.cost(expr.result))
        self.locals[expr.accu_var].pop()
        self._copy(expr, expr.result)
        return total

    def push(self, name: str, init: ast.Expr) -> None:
        local = _Local(self.path(init), self.size(init), self.entry(init))
        self.locals.setdefault(name, []).append(local)

    def push_iter(self, name: str, iter_range: ast.Expr) -> None:
        entry = self.entry(iter_range)
        kind = entry.kind if entry is not None else self.type_of(iter_range).kind
        size = entry.key if entry is not None else None
        suffix = "@keys"
        if kind == "list":
            size = entry.val if entry is not None else None
            suffix = "@items"
        local = _Local(sz.append(self.path(iter_range), suffix), size, None)
        self.locals.setdefault(name, []).append(local)

    def push_iter_part(self, name: str, iter_range: ast.Expr, key: bool) -> None:
        """cel-go's ``pushIterKey`` / ``pushIterValue`` for two-variable comprehensions."""
        entry = self.entry(iter_range)
        kind = entry.kind if entry is not None else self.type_of(iter_range).kind
        size = (entry.key if key else entry.val) if entry is not None else None
        if kind == "list":
            suffix = "@indices" if key else "@items"
        else:
            suffix = "@keys" if key else "@values"
        local = _Local(sz.append(self.path(iter_range), suffix), size, None)
        self.locals.setdefault(name, []).append(local)

    def _copy(self, dst: ast.Expr, src: ast.Expr) -> None:
        size = self.size(src)
        if size is not None:
            self.sizes[dst.id] = size
        entry = self.entry(src)
        if entry is not None:
            self.entries[dst.id] = entry


_NOMINAL = frozenset(
    ["serviceAccount", "path", "group", "resource", "subresource", "namespace", "name",
     "allowed", "reason", "error", "errored", "masked", "prefixLength", "family",
     "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
     "isGlobalUnicast", "format.named", "sign", "asInteger", "isInteger",
     "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add", "sub", "major",
     "minor", "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath",
     "getQuery"]
)  # fmt: skip
_STRING_ARGUMENT = frozenset(
    ["cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver"]
)


_KUBERNETES_NAMES = (
    _NOMINAL
    | _STRING_ARGUMENT
    | {"check", "fieldSelector", "labelSelector", "ip", "ip.isCanonical", "containsIP"}
    | {"containsCIDR", "url", "validate", "isSorted", "sum", "max", "min", "indexOf"}
    | {"lastIndexOf", "lowerAscii", "upperAscii", "substring", "trim", "split", "replace"}
    | {"join", "find", "findAll", "_==_"}
)


def _allocating(factor: float, size: Range) -> tuple[Range, Range]:
    """cel-go's ``estimateAllocatingListCall``: per element, a call and a new list."""
    return sz.add(sz.add(sz.factor(size, factor), (1, 1)), (10, 10)), size


def _literal_int(expr: ast.Expr, default: int) -> int:
    """cel-go's ``nodeAsIntValue``: a non-negative int literal, 0 for a negative one."""
    if isinstance(expr, ast.Literal) and expr.kind == "int":
        return max(int(expr.value), 0)
    return default


def _selector_cost(length: Range) -> Range:
    parse = sz.factor(length, 0.1)
    requirements = sz.factor(sz.factor(length, 0.5), 50.0)
    return sz.add(sz.add((10, 10), parse), requirements)


_SIZED_COMPARISONS = frozenset(
    f"{op}_{kind}"
    for op in ("less", "greater", "less_equals", "greater_equals")
    for kind in ("string", "bytes")
) | {"equals", "not_equals"}


_SCALARS = frozenset(
    ["bool", "double", "int", "uint", "google.protobuf.Timestamp", "google.protobuf.Duration"]
)


def _scalar(tp: t.Type) -> bool:
    if tp.kind == "optional_type" and tp.params:
        return _scalar(tp.params[0])
    return tp.kind in _SCALARS


def _literal_size(expr: ast.Expr) -> Range | None:
    if isinstance(expr, ast.Literal):
        if expr.kind == "string":
            return (len(expr.value), len(expr.value))
        if expr.kind == "bytes":
            return (len(expr.value), len(expr.value))
        return (1, 1)
    if isinstance(expr, ast.ListExpr):
        return (len(expr.elements), len(expr.elements))
    if isinstance(expr, ast.MapExpr):
        return (len(expr.entries), len(expr.entries))
    return None


def _replacements(size: int, old: int, no_longer: bool) -> tuple[int, int]:
    """One bound of cel-go's ``replace`` estimate: how many times the old text may stand
    in a string of ``size``, and how much of the string stays as it is. ``no_longer``:
    the replacement is no longer than the text it replaces (then nothing needs counting)."""
    if old == 0:
        return (size + 1 if size < MAX else size), size
    if no_longer:
        return 0, size
    return math.ceil(size / old), 0
