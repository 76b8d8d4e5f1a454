"""Vectors for the verdict classes we once got wrong (issue 12), one group each.

``make_vectors.py`` adds these to ``vectors.jsonl``; the oracle's verdicts say what
Kubernetes v1.35 does. Each group is broad on purpose (every reserved word, fractions in
every comparison, nesting on both sides of cel-go's limit, ...), so a regression in any
class shows up in the comparison.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

NV = "gpu.nvidia.com"
ATTR = f'device.attributes["{NV}"]'
CAP = f'device.capacity["{NV}"]'

# -- 1. ordering of quantities with fractions ---------------------------------------------
FRACTIONS = [
    "750m", "2", "1.5", "0.5", "-0.5", "1", "0", "3n", "1u", "2.5Gi", "0.1Ki", "999m",
    "1001m", "-1.5Gi",
]  # fmt: skip
SUMS = ["750m", "1.5", "-0.5", "1", "3n", "0.1Ki"]


def quantity_order() -> list[str]:
    out = []
    for a, b in itertools.product(FRACTIONS, repeat=2):
        qa, qb = f'quantity("{a}")', f'quantity("{b}")'
        out.append(f"{qa}.compareTo({qb}) == -1")
        out.append(f"{qa}.isGreaterThan({qb})")
    for a, b in itertools.product(SUMS, repeat=2):
        qa, qb = f'quantity("{a}")', f'quantity("{b}")'
        out.append(f'{qa}.add({qb}).isLessThan(quantity("1.25"))')
        out.append(f'{qa}.sub({qb}).isGreaterThan(quantity("-0.25"))')
        out.append(f'quantity("1.25").compareTo({qa}.add({qb})) == 1')
    for a in SUMS:
        out.append(f'quantity("{a}").add(1).compareTo(quantity("1.5")) == -1')
        out.append(f'quantity("{a}").sub(1).isLessThan(quantity("-0.4"))')
    return out


FRACTIONAL_DEVICE = {
    "driver": NV,
    "attributes": {},
    "capacity": {
        "half": {"value": "0.5"},
        "milli": {"value": "750m"},
        "binary": {"value": "1.5Gi"},
        "nano": {"value": "3n"},
        "negative": {"value": "-0.25"},
        "decimal": {"value": "2.5"},
    },
}
FRACTIONAL_CAPACITY = [
    f'{CAP}.milli.isLessThan(quantity("1"))',
    f'{CAP}.milli.isGreaterThan(quantity("2"))',
    f'{CAP}.milli.compareTo(quantity("0.75")) == 0',
    f"{CAP}.milli.compareTo({CAP}.half) == 1",
    f"{CAP}.half.isLessThan({CAP}.milli)",
    f'{CAP}.binary.isGreaterThan(quantity("1Gi"))',
    f'{CAP}.binary.isLessThan(quantity("2Gi"))',
    f'{CAP}.nano.isGreaterThan(quantity("0"))',
    f'{CAP}.nano.isLessThan(quantity("1u"))',
    f'{CAP}.negative.isLessThan(quantity("0"))',
    f"{CAP}.negative.compareTo({CAP}.nano) == -1",
    f'{CAP}.decimal.isGreaterThan(quantity("2"))',
    f'{CAP}.decimal.compareTo(quantity("3")) == -1',
    f'{CAP}.half.add({CAP}.milli).isGreaterThan(quantity("1.2"))',
    f'{CAP}.decimal.sub({CAP}.half).compareTo(quantity("2")) == 0',
    f"{CAP}.half == {CAP}.half",
    f'{CAP}.half == quantity("500m")',
]
QUANTITY_ORDER_PAIRS = [(a, b) for a in FRACTIONS[:8] for b in FRACTIONS[:8] if a != b]

# Kubernetes' library mutates the quantity a CEL value points to (see _quantity.py).
QUANTITY_ALIASING = [
    'cel.bind(a, quantity("1"), a.compareTo(quantity("12345678901234567890")) == -1'
    " && a.isInteger())",
    'cel.bind(a, quantity("1"), a.isInteger()'
    ' && a.compareTo(quantity("12345678901234567890")) == -1)',
    'cel.bind(a, quantity("1"), [a.compareTo(quantity("12345678901234567890")),'
    " a.isInteger() ? 1 : 0] == [-1, 1])",
    'cel.bind(a, quantity("12345678901234567890"), a.add(quantity("1")).compareTo(a) == 0)',
    'cel.bind(a, quantity("12345678901234567890"), a.add(quantity("1")) == a)',
    'cel.bind(a, quantity("1.5"), a.compareTo(quantity("1")) == 1 && a.isInteger())',
    f'{CAP}.memory.compareTo(quantity("12345678901234567890")) == -1 && {CAP}.memory.isInteger()',
    f'{CAP}.memory.isInteger() && {CAP}.memory.compareTo(quantity("0.5")) == 1'
    f" && !{CAP}.memory.isInteger()",
    'cel.bind(a, quantity("1.5Gi"), a.add(1).add(1) == quantity("1.5Gi").add(2)'
    ' && a == quantity("1.5Gi").add(2))',
    'cel.bind(a, quantity("1.5Gi"), cel.bind(b, a.sub(quantity("1Gi")), b.add(1) == a))',
    'cel.bind(a, quantity("1.5Gi"), [a.add(1), a.add(1)][0].compareTo(a) == 0)',
    'cel.bind(a, quantity("1"), a.compareTo(quantity("0.5")) == 1 && a.add(1).isInteger())',
    'cel.bind(a, quantity("0.5"), a.compareTo(quantity("1")) == -1'
    " && a.sub(a).sign() == 0 && a.sign() == 0)",
    'cel.bind(a, quantity("0.5"), a.add(a).compareTo(quantity("1")) == 0'
    ' && a.compareTo(quantity("1")) == 0)',
    'cel.bind(a, quantity("9223372036854775807"), a.add(1).compareTo(a) == 1)',
    'cel.bind(a, quantity("9223372036854775807"), cel.bind(b, a.add(1),'
    " b.add(1).compareTo(b) == 0))",
    'quantity("1").compareTo(quantity("0.5")) == 1 && quantity("1").isInteger()',
    'cel.bind(l, [quantity("1"), quantity("2")], l.all(q, q.compareTo(quantity("1.5")) != 0)'
    " && l.all(q, !q.isInteger()))",
    'cel.bind(a, quantity("1"), quantity("0.5").compareTo(a) == -1 && a.isInteger())',
    'cel.bind(a, quantity("1"), a == quantity("0.5").add(quantity("0.5")) && a.isInteger())',
    'cel.bind(a, quantity("1e-3"), a.add(quantity("1")).asApproximateFloat() == 1.001'
    " && a.asApproximateFloat() == 1.001)",
    'cel.bind(a, quantity("1"), a.isGreaterThan(quantity("1.5Gi")) || a.asInteger() == 1)',
]

# -- 2. reserved words name fields and methods --------------------------------------------
RESERVED = [
    "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
    "loop", "package", "namespace", "return", "var", "void", "while",
]  # fmt: skip
KEYWORDS = ["in", "true", "false", "null"]


def reserved_words() -> list[str]:
    out = []
    for word in RESERVED + KEYWORDS:
        out += [
            f'{ATTR}.{word} == "x"',
            f"has({ATTR}.{word})",
            f'{ATTR}.?{word}.orValue("x") == "x"',
            f'{{"{word}": 1}}.{word} == 1',
            f'"a".{word}() == "a"',
            f"{word} == 1",
            f"{word}(1) == 1",
            f"[1].all({word}, true)",
            f"cel.bind({word}, 1, true)",
            f"device.{word} == 1",
            f'{ATTR}["{word}"] == "x"',
        ]
    return out


RESERVED_DEVICE = {
    "driver": NV,
    "attributes": {word: {"string": f"is-{word}"} for word in RESERVED + KEYWORDS},
    "capacity": {"namespace": {"value": "1"}},
}
RESERVED_ON_DEVICE = [
    *(f'{ATTR}.{word} == "is-{word}"' for word in RESERVED),
    *(f'{ATTR}["{word}"] == "is-{word}"' for word in KEYWORDS),
    f'{CAP}.namespace.compareTo(quantity("1")) == 0',
    f"{ATTR}.namespace.startsWith({ATTR}.package.substring(0, 3))",
    f'cel.bind(d, {ATTR}, d.if + d.else == "is-ifis-else")',
]

# -- 3. feature-gated fields: the API server compiles new selectors with 1.35's gates ------
FEATURE_GATED = [
    "device.allowMultipleAllocations",
    "device.allowMultipleAllocations == false",
    "!device.allowMultipleAllocations",
    "device.allowMultipleAllocations || true",
    "has(device.allowMultipleAllocations)",
    "device.?allowMultipleAllocations.orValue(false) == false",
    "cel.bind(d, device, d.allowMultipleAllocations == false)",
    "[device].all(d, d.allowMultipleAllocations == false)",
    "dyn(device).allowMultipleAllocations == false",
    # fields of other gates are not in the selector's device at all
    "device.consumesCounters.size() == 0",
    "device.taints.size() == 0",
    "device.bindingConditions.size() == 0",
    "device.nodeName == ''",
    "device.name == ''",
    "device.basic.size() == 0",
    # the fields every version has
    "has(device.driver)",
    "has(device.attributes)",
    "has(device.capacity)",
]


# -- 4. nesting up to cel-go's limit (250 per ANTLR rule, 250 counted visitor levels) ------
def _nest(opening: str, inner: str, closing: str, times: int) -> str:
    return opening * times + inner + closing * times


NESTING: dict[str, tuple[Any, int]] = {
    # shape -> (builder, the first depth cel-go refuses)
    "parens": (lambda n: _nest("(", "1", ")", n) + " == 1", 250),
    "calls": (lambda n: _nest("int(", "1", ")", n) + " == 1", 250),
    "lists": (lambda n: "size(" + _nest("[", "1", "]", n) + ") == 1", 249),
    "index": (lambda n: _nest("[0][", "0", "]", n) + " == 0", 250),
    "select": (lambda n: "dyn({})" + ".a" * n + " == 1", 250),
    "optional_select": (lambda n: "dyn({})" + ".?a" * n + " != optional.of(1)", 250),
    "calc": (lambda n: "1" + " + 1" * n + " > 0", 250),
    "relation": (lambda n: "true" + " == true" * n, 251),
    "relation_nested": (lambda n: _nest("(true == ", "true", ")", n), 125),
    "methods": (lambda n: '"a"' + ".lowerAscii()" * n + ' == "a"', 250),
    "negate": (lambda n: _nest("-(", "1", ")", n) + " != 7", 250),
    "not": (lambda n: _nest("!(", "true", ")", n), 250),
    "sums": (lambda n: _nest("(1 + ", "1", ")", n) + " > 0", 125),
    "products": (lambda n: _nest("(1 + 2 * ", "1", ")", n) + " > 0", 84),
    "product_sums": (lambda n: _nest("(1 * 2 + ", "1", ")", n) + " > 0", 125),
    "ternary_chain": (lambda n: "true ? true : " * n + "true", 250),
    "ternary_condition": (lambda n: _nest("(", "true", " ? true : false)", n), 249),
    "ternary_branch": (lambda n: "true ? (" * n + "true" + ") : false" * n, 250),
    "list_of_select": (lambda n: _nest("[", "dyn({}).a", "]", n) + " != []", 249),
    "index_of_select": (lambda n: "dyn({})" + _nest("[dyn({}).a", "", "]", n) + " == 1", 249),
    "call_of_select": (lambda n: _nest("dyn(", "dyn({}).a", ")", n) + " == 1", 249),
    "not_of_select": (lambda n: _nest("!(", "dyn({}).a", ")", n), 249),
    "negated_sums": (lambda n: _nest("-(1 - ", "1", ")", n) + " != 7", 125),
    "comprehensions": (lambda n: _nest("[1].all(x, ", "true", ")", n), 250),
    "macro_chain": (lambda n: "[1]" + ".map(x, x)" * n + " == [1]", 250),
    "binds": (lambda n: _nest("cel.bind(x, 1, ", "x", ")", n) + " == 1", 250),
    "select_sums": (lambda n: _nest("(dyn({}).a + ", "1", ")", n) + " > 0", 125),
    "maps": (lambda n: "size(" + _nest("{1: ", "1", "}", n) + ") == 1", 249),
}


def nesting() -> list[str]:
    out = []
    for name, (build, refused) in NESTING.items():
        depths: tuple[int, ...] = (refused - 2, refused - 1, refused, refused + 1)
        # cel-go takes seconds to type-check literals nested 200 deep (parsing stops
        # at the limit first): those go only as deep as 100.
        if name == "maps":
            depths = (1, 60)
        elif name in ("lists", "list_of_select"):
            depths = (100, refused, refused + 1)
        out += [build(n) for n in depths]
    return out


# -- 5. integer edge cases -----------------------------------------------------------------
INTS = ["-9223372036854775808", "-9223372036854775807", "-1", "0", "1", "9223372036854775807"]
UINTS = ["0u", "1u", "9223372036854775808u", "18446744073709551615u"]
DOUBLES_TO_INT = [
    "-9223372036854775808.0", "-9223372036854774784.0", "9223372036854775807.0",
    "9223372036854774784.0", "18446744073709551616.0", "18446744073709549568.0", "-0.5",
    "-0.0", "-1.0", "0.5", "-0.9999", "1e300", "-1e300", 'double("nan")', 'double("inf")',
    'double("-inf")',
]  # fmt: skip


def integers() -> list[str]:
    out = []
    for a, b in itertools.product(INTS, repeat=2):
        out += [f"({a} {op} {b}) != 7" for op in "+-*/%"]
    for a, b in itertools.product(UINTS, repeat=2):
        out += [f"({a} {op} {b}) != 7u" for op in "+-*/%"]
    for a in INTS:
        out += [f"-({a}) != 7", f"uint({a}) != 7u", f"double({a}) != 7.0"]
        out += [f'int("{a}") == {a}', f"cel.bind(x, {a}, -x != 7)"]
    for a in UINTS:
        out += [f"int({a}) != 7", f"double({a}) != 7.0", f'uint("{a[:-1]}") == {a}']
    for d in DOUBLES_TO_INT:
        out += [f"int({d}) != 7", f"uint({d}) != 7u", f"cel.bind(d, {d}, int(d) != 7)"]
    out += [
        "[9223372036854775807, 1].sum() != 7",
        "[-9223372036854775808, -1].sum() != 7",
        "[18446744073709551615u, 1u].sum() != 7u",
        'int("9223372036854775808") != 7',
        'int("-9223372036854775809") != 7',
        'uint("18446744073709551616") != 7u',
        'uint("-1") != 7u',
        'int("+5") == 5',
        'int("0x10") == 16',
        'int("1_000") == 1000',
    ]
    return out


# -- 6. double() parses as Go's strconv.ParseFloat ----------------------------------------
FLOAT_STRINGS = [
    "1", "1.5", "-1.5", "+1.5", "1_000", "1__000", "_1", "1_", "1_.5", "1._5", "1.5_",
    "1e1_0", "1e_10", "1_e10", "0x1p4", "0X1p4", "0x1P4", "0x1.8p1", "0x.8p1", "0x1", "0x",
    "0x_1p0", "0x1_0p0", "0x_p1", "0x1p-1074", "0x1p-1075", "0x1p-1076", "0x1.8p-1074",
    "0x1p1023", "0x1p1024", "0x1.fffffffffffffp1023", "0x1.fffffffffffff8p1023",
    "0x1.fffffffffffff7ffp1023", "-0x1p4", "0x1p+4", "0xp4", "0x.p4", "0x1.8_0p1",
    "1e400", "-1e400", "1e-400", "1e308", "1.7976931348623157e308", "1.7976931348623158e308",
    "1.7976931348623159e308", "4.9e-324", "2.4e-324", "2.5e-324",
    "2.4703282292062327e-324", "2.4703282292062328e-324", "inf", "Inf", "INF", "+inf",
    "-inf", "infinity", "-Infinity", "infinit", "infx", "nan", "NaN", "NAN", "+nan", "-nan",
    "nanx", " 1", "1 ", "", ".", ".5", "5.", "-.5", "+", "-", "e5", "1e", "1e+", "1e-",
    "1.5.5", "1..5", "\uff11", "1e10000", "1e99999", "0e99999", "0.0e-99999", "-0", "-0.0", "00.5",
    "0x1e", "1E5", "1e05", "1.e5", "0.000000000000000000000000000001e30",
    "123456789012345678901234567890", "9007199254740993", "9007199254740993.0000000001",
    "0x1.00000000000008p0", "0x1.000000000000080000000001p0", "0b101", "0o17", "1_0.0_1e1_0",
    "0." + "0" * 9990 + "1e10005", "1" + "0" * 900 + "e-880",
]  # fmt: skip


def float_parsing() -> list[str]:
    """Each string through ``double()``, folded as a constant and at run time, asserting
    Modelplane's own value: the oracle's verdict says whether Go agrees."""
    import math  # noqa: PLC0415

    from modelplane.domain.dra import _strconv  # noqa: PLC0415 - only this group needs it

    out = []
    for text in FLOAT_STRINGS:
        quoted = json.dumps(text, ensure_ascii=False)
        try:
            value = _strconv.parse_float(text)
        except _strconv.ParseFloatError:
            check = "== 0.0"
        else:
            check = "!= 0.0" if math.isnan(value) else f'== double("{value!r}")'
        out.append(f"double({quoted}) {check}")
        out.append(f"cel.bind(s, {quoted}, double(s) {check})")
    return out


# -- 7. numeric literals as cel-go lexes them ---------------------------------------------
LITERALS = [
    "0x10 == 16", "0X10 == 16", "0x1F == 31", "0x1f == 31", "0xfu == 15u", "0xFU == 15u",
    "0XFu == 15u", "0x == 0", "0xg == 0", "1u == 1U", "1U == 1u", "01 == 1", "00 == 0",
    "0x0 == 0", "1e400 > 0.0", "-1e400 < 0.0", "1e-400 == 0.0", "1E400 > 0.0",
    "1.7976931348623157e308 > 0.0", "1.7976931348623158e308 > 0.0",
    "1.7976931348623159e308 > 0.0", "2.4703282292062328e-324 > 0.0",
    "2.4703282292062327e-324 == 0.0", "9223372036854775807 > 0", "9223372036854775808 > 0",
    "-9223372036854775808 < 0", "-9223372036854775809 < 0", "- 9223372036854775808 < 0",
    "--9223372036854775808 < 0", "18446744073709551615u > 0u", "18446744073709551616u > 0u",
    "0x7fffffffffffffff > 0", "0x8000000000000000 > 0", "-0x8000000000000000 < 0",
    "-0x8000000000000001 < 0", "0xffffffffffffffffu > 0u", "0x10000000000000000u > 0u",
    "1E5 == 100000.0", "1e+5 == 100000.0", "1e-5 == 0.00001", ".5 == 0.5", "5. == 5.0",
    "1.e5 == 100000.0", "1_000 == 1000", "1.5u == 1.5", "-1u == 1u", "--1 == 1",
    "---1 == -1", "-(-9223372036854775808) != 7", "- 1 == -1", "-1.5e3 == -1500.0",
    "1e3 == 1000", "0.1 + 0.2 == 0.30000000000000004", "1e0 == 1.0", "0e0 == 0.0",
    "00.5 == 0.5", "0x1.8p1 == 3.0", "1.5e3.5 == 0.0",
]  # fmt: skip

# -- 8. quantities with very large exponents (and very long mantissas) --------------------
BIG_QUANTITIES = [
    "1e10001", "1e-10001", "1e100000", "1e-100000", "1.5e10001", "0e100000", "-1e100000",
    "1e4294967296", "1e4294967297", "1e9223372036854775807", "1e9223372036854775808",
    "123456789012345678901e10001", "123456789012345678901e-10001", "-.5e-100000",
    ".e-100000", "e100000", "e-100000", "0.e-100000", "1E100000", "1e+100000", "1" * 5000,
    "1" * 5000 + "Gi", "1." + "1" * 5000, "0." + "0" * 5000 + "1", "1" * 5000 + "e-5000",
    "1" * 3000 + "e20000", "1.5e99999", "9e99999", "1e99998", "999999999999999999e10001",
    "1e10000", "1e-10000", "1234567890123456789012e20000", "1e999999",
]  # fmt: skip
# Go answers these only when asked for no more than parsing: comparing or adding them
# needs numbers with billions of digits, which Go builds for ever.
HUGE_QUANTITIES = ["1e2147483647", "1.5e2147483648", "1.5e-2147483648"]


def big_quantities() -> list[str]:
    out = []
    for text in BIG_QUANTITIES + HUGE_QUANTITIES:
        q = f"quantity({json.dumps(text)})"
        out += [f"isQuantity({json.dumps(text)})", f"{q}.sign() == 1"]
        out.append(f"{q}.asApproximateFloat() > 0.0")
        if text in HUGE_QUANTITIES:
            continue
        out += [
            f"{q}.isInteger()",
            f'{q}.compareTo(quantity("1")) == 1',
            f'{q}.compareTo(quantity("1e100001")) == 1',
            f'{q}.isGreaterThan(quantity("1e-100001"))',
            f"{q} == {q}",
            f'{q}.add(quantity("1")).isGreaterThan(quantity("1"))',
            f"{q}.sub({q}).sign() == 0",
        ]
    return out


BIG_QUANTITY_PAIRS = [(text, "1") for text in BIG_QUANTITIES] + [
    ("1e100000", "1e99999"), ("1e-100000", "1n"), ("1e10001", "9e10000"), ("1e10001", "1e10001"),
]  # fmt: skip

# -- NaN cannot be ordered (cel-go v0.26) ----------------------------------------------------
NAN_ORDERING = [
    'double("nan") > 0.0', 'double("nan") < 1.0', 'double("nan") <= 1', 'double("nan") >= 1u',
    '1 < double("nan")', '1u > double("nan")', "0.0 / 0.0 > 1.0", 'double("nan") == double("nan")',
    'double("nan") != 1.0', '[double("nan"), 1.0].max() == 1.0', '[1.0, double("nan")].min() == 1.0',
    '[double("nan"), 1.0].isSorted()', '[1.0, double("nan"), 0.5].sort().size() == 3',
    'quantity("0e100000").asApproximateFloat() > 0.0',
]  # fmt: skip

# -- syntax: leading dots, trailing commas --------------------------------------------------
SYNTAX = [
    '.device.driver == "gpu.nvidia.com"', ".size([1]) == 1", '.quantity("1").isInteger()',
    "[1].all(x, .x == 1)", "cel.bind(v, 1, .v == 1)", ".cel.bind(v, 1, v == 1)",
    ".has(device.driver)", "has(.device.driver)", f"{ATTR.replace('device', '.device')}.count == 8",
    '.int("1") == 1', ".dyn(1) == 1", ".sets.contains([1], [1])", ".lists.range(2).size() == 2",
    "[1].all(.x, true)", "[1].all(.x, .x == 1)", "cel.bind(.v, 1, true)", ".true", ".null == null",
    ".in", ". device.driver == ''", "{,}.size() == 0", "[,].size() == 0", "[1,].size() == 1",
    "{1: 2,}.size() == 1", "[?optional.none(),].size() == 0", "f(,)", "size([1,],) == 1",
    "[,1] == [1]", "[1,,] == [1]", "{,1: 2} == {}", "size(1,) == 1", "[1, 2,][1] == 2",
]  # fmt: skip


def expressions() -> dict[str, list[str]]:
    """The groups evaluated on the usual H100 device, by vector id prefix."""
    return {
        "qorder": quantity_order(),
        "qalias": QUANTITY_ALIASING,
        "reserved": reserved_words(),
        "gated": FEATURE_GATED,
        "nesting": nesting(),
        "int": integers(),
        "double": float_parsing(),
        "literal": LITERALS,
        "qbig": big_quantities(),
        "nan": NAN_ORDERING,
        "syntax": SYNTAX,
    }


def device_cases() -> list[tuple[str, str, dict[str, Any]]]:
    """(id prefix, expression, device) for the groups that need their own device."""
    out = [("qcapacity", e, FRACTIONAL_DEVICE) for e in FRACTIONAL_CAPACITY]
    out += [("reserved-device", e, RESERVED_DEVICE) for e in RESERVED_ON_DEVICE]
    big = {"driver": NV, "attributes": {}, "capacity": {"huge": {"value": "1e100000"}}}
    out += [
        ("qbig-capacity", f'{CAP}.huge.compareTo(quantity("1")) == 1', big),
        ("qbig-capacity", f"{CAP}.huge.isInteger()", big),
        ("qbig-capacity", f'{CAP}.huge.add(quantity("1.5")).isGreaterThan({CAP}.huge)', big),
    ]
    return out


def quantity_pairs() -> list[tuple[str, str]]:
    return QUANTITY_ORDER_PAIRS + BIG_QUANTITY_PAIRS


def quantities() -> list[str]:
    return BIG_QUANTITIES + HUGE_QUANTITIES
