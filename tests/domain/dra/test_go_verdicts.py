"""What Kubernetes v1.35 answers for the selectors we once got wrong (issue 12).

Every expected verdict here was read off the Go oracle (``bin/dra-oracle``: kube-apiserver's
ResourceClaim validation, then the scheduler's CEL cache and device matching), one class
of past disagreement per section; ``tests/oracle/edge_vectors.py`` covers each class
broadly, and the oracle comparison checks all of it against Go.
"""

from __future__ import annotations

import math
import threading

import pytest
from modelplane.domain import dra as cel
from modelplane.domain import quantity
from modelplane.domain.dra import Attribute, Device, _strconv
from modelplane.dra import protocol

NV = "gpu.nvidia.com"
A = f'device.attributes["{NV}"]'
C = f'device.capacity["{NV}"]'
DEVICE = Device.build(
    NV,
    {
        "architecture": Attribute("string", "Hopper"),
        "namespace": Attribute("string", "prod"),
        "if": Attribute("int", 1),
    },
    {"memory": "81559Mi", "milli": "750m", "half": "0.5", "huge": "1e100000"},
)


def verdict(expression: str, device: Device = DEVICE) -> str:
    """The oracle's verdict class for a selector on a device."""
    try:
        result = cel.matches(expression, device)
    except cel.SelectorError:
        return "compile_error"
    if result.error is not None:
        return "runtime_error"
    return "match" if result.matched else "no_match"


def check(cases: list[tuple[str, str]]) -> None:
    got = [(expression, verdict(expression)) for expression, _ in cases]
    assert got == cases


# -- 1. ordering of quantities with fractions ---------------------------------------------
def test_fractional_quantities_order_by_value() -> None:
    check([
        ('quantity("750m").isLessThan(quantity("2"))', "match"),
        ('quantity("750m").compareTo(quantity("2")) == -1', "match"),
        ('quantity("2").isGreaterThan(quantity("750m"))', "match"),
        ('quantity("1.5").isGreaterThan(quantity("1"))', "match"),
        ('quantity("-0.5").isLessThan(quantity("0.25"))', "match"),
        ('quantity("999m").isLessThan(quantity("1"))', "match"),
        ('quantity("1001m").isGreaterThan(quantity("1"))', "match"),
        ('quantity("3n").isLessThan(quantity("1u"))', "match"),
        ('quantity("2.5Gi").isGreaterThan(quantity("2Gi"))', "match"),
        ('quantity("0.5").add(quantity("0.25")).isLessThan(quantity("0.8"))', "match"),
        ('quantity("1.5").sub(quantity("2")).isLessThan(quantity("-0.4"))', "match"),
    ])  # fmt: skip


def test_fractional_capacities_order_by_value() -> None:
    check([
        (f'{C}.milli.isLessThan(quantity("1"))', "match"),
        (f"{C}.milli.compareTo({C}.half) == 1", "match"),
    ])  # fmt: skip


def test_protocol_compares_fractions() -> None:
    answer = protocol.answer({"id": "q", "quantity": "750m", "other": "2"})
    assert (answer["canonical"], answer["float"], answer["compare"]) == ("750m", 0.75, -1)


@pytest.mark.parametrize(
    ("a", "b"),
    [("750m", "2"), ("1.5", "1"), ("-0.5", "0.25"), ("3n", "1u"), ("1e100000", "1e99999"),
     ("1e-100000", "1n"), ("123456789012345678901e10001", "1e10021")],
)  # fmt: skip
def test_compare_is_an_exact_total_order(a: str, b: str) -> None:
    x, y = quantity.parse(a), quantity.parse(b)
    assert x.compare(y) == -y.compare(x)
    assert x.compare(x) == 0


# -- 1b. Kubernetes' quantity library mutates the quantities it is given ---------------------
def test_comparing_with_an_inf_dec_quantity_converts_the_receiver() -> None:
    check([
        ('cel.bind(a, quantity("1"), a.compareTo(quantity("12345678901234567890")) == -1'
         " && a.isInteger())", "no_match"),
        ('cel.bind(a, quantity("1"), a.isInteger()'
         ' && a.compareTo(quantity("12345678901234567890")) == -1)', "match"),
        (f'{C}.memory.compareTo(quantity("0.5")) == 1 && {C}.memory.isInteger()', "match"),
    ])  # fmt: skip


def test_adding_to_an_inf_dec_quantity_changes_it_too() -> None:
    check([
        ('cel.bind(a, quantity("12345678901234567890"), a.add(quantity("1")).compareTo(a) == 0)',
         "match"),
        ('cel.bind(a, quantity("1.5Gi"), cel.bind(b, a.sub(quantity("1Gi")), b.add(1) == a))',
         "match"),
    ])  # fmt: skip


# -- 2. reserved words name fields and methods --------------------------------------------
def test_reserved_words_select_attributes() -> None:
    check([
        (f'{A}.namespace == "prod"', "match"),
        (f"has({A}.if)", "match"),
        (f"has({A}.else)", "no_match"),
        (f'{A}.?package.orValue("none") == "none"', "match"),
        (f"{A}.while == 1", "runtime_error"),
        ('{"for": 1}.for == 1', "match"),
        ('"a".as() == "a"', "compile_error"),
    ])  # fmt: skip


def test_reserved_words_are_no_variables_and_keywords_no_fields() -> None:
    check([
        ("namespace == 1", "compile_error"),
        ("[1].all(if, true)", "compile_error"),
        ("cel.bind(var, 1, true)", "compile_error"),
        (f"{A}.in == 1", "compile_error"),
    ])  # fmt: skip


# -- 3. the API server's environment: Kubernetes 1.35, default feature gates ----------------
def test_target_is_kubernetes_1_35_with_its_default_gates() -> None:
    assert cel.KUBERNETES_VERSION == (1, 35)
    assert cel.FEATURE_GATES == {"DRAConsumableCapacity": False}


def test_feature_gated_fields_are_undefined() -> None:
    check([
        ("device.allowMultipleAllocations == false", "compile_error"),
        ("has(device.allowMultipleAllocations)", "compile_error"),
        ("device.?allowMultipleAllocations.orValue(false)", "compile_error"),
        ("device.taints.size() == 0", "compile_error"),
        ('device.driver == "gpu.nvidia.com"', "match"),
    ])  # fmt: skip


# -- 4. nesting up to cel-go's limits ------------------------------------------------------
@pytest.mark.parametrize(
    ("build", "accepted"),
    [
        (lambda n: "(" * n + "1" + ")" * n + " == 1", 249),
        (lambda n: "int(" * n + "1" + ")" * n + " == 1", 249),
        (lambda n: "size(" + "[" * n + "1" + "]" * n + ") == 1", 248),
        (lambda n: "dyn({})" + ".a" * n + " == 1", 249),
        (lambda n: "true" + " == true" * n, 250),
        (lambda n: "(1 + 2 * " * n + "1" + ")" * n + " > 0", 83),
        (lambda n: "[1].all(x, " * n + "true" + ")" * n, 249),
    ],
    ids=["parentheses", "calls", "lists", "selections", "relations", "products", "macros"],
)
def test_nesting_limits(build: object, accepted: int) -> None:
    assert callable(build)
    assert verdict(build(accepted)) != "compile_error"
    assert verdict(build(accepted + 1)) == "compile_error"


def test_deep_selectors_work_in_a_thread() -> None:
    """gRPC serves requests on threads; the deepest selectors must work there too."""
    cel.clear_caches()
    expression = "cel.bind(x, 1, " * 249 + "x" + ")" * 249 + " == 1"
    seen: list[str] = []
    worker = threading.Thread(target=lambda: seen.append(verdict(expression)))
    worker.start()
    worker.join()
    assert seen == ["match"]


# -- 5. integer edge cases -----------------------------------------------------------------
def test_integer_overflow_and_range_errors() -> None:
    check([
        ("-9223372036854775808 % -1 == 0", "runtime_error"),
        ("-9223372036854775808 / -1 == 0", "runtime_error"),
        ("-9223372036854775807 % -1 == 0", "match"),
        ("uint(-0.5) == 0u", "compile_error"),
        ("cel.bind(d, -0.5, uint(d) == 0u)", "runtime_error"),
        ("uint(-0.0) == 0u", "match"),
        ("int(-9223372036854775808.0) == 0", "compile_error"),
    ])  # fmt: skip


# -- 6. double() parses as Go's strconv.ParseFloat ----------------------------------------
def test_double_parses_go_syntax() -> None:
    check([
        ('double("1_000") == 1000.0', "match"),
        ('double("0x1p4") == 16.0', "match"),
        ('double("-Inf") < 0.0', "match"),
        ('double("infinity") > 0.0', "match"),
        ('double("1e-400") == 0.0', "match"),
        ('double("1e400") > 0.0', "compile_error"),
        ('cel.bind(s, "1e400", double(s) > 0.0)', "runtime_error"),
        ('double("1__000") == 1000.0', "compile_error"),
        ('double("+nan") != 0.0', "compile_error"),
        ('double(" 1") == 1.0', "compile_error"),
        ('double("0x1.8") == 1.5', "compile_error"),
        ('double("\\uff11") == 1.0', "compile_error"),
        ('double("1.7976931348623159e308") > 0.0', "compile_error"),
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value"),
    [("0x1p-1074", 5e-324), ("2.4703282292062328e-324", 5e-324), ("0x1.8p1", 3.0),
     ("1_0.0_1e1_0", 100100000000.0), ("1.7976931348623158e308", 1.7976931348623157e308),
     ("-0", -0.0)],
)  # fmt: skip
def test_parse_float_values(text: str, value: float) -> None:
    parsed = _strconv.parse_float(text)
    assert parsed == value
    assert math.copysign(1, parsed) == math.copysign(1, value)


# -- 7. numeric literals as cel-go lexes them ---------------------------------------------
def test_numeric_literals() -> None:
    check([
        ("0X10 == 16", "compile_error"),
        ("0XFu == 15u", "compile_error"),
        ("0x1F == 31", "match"),
        ("0xFU == 15u", "match"),
        ("1e400 > 0.0", "compile_error"),
        ("1.7976931348623159e308 > 0.0", "compile_error"),
        ("1.7976931348623158e308 > 0.0", "match"),
        ("1e-400 == 0.0", "match"),
        ("-9223372036854775808 < 0", "match"),
        ("--9223372036854775808 < 0", "compile_error"),
        ("1_000 == 1000", "compile_error"),
        (".5 == 0.5", "match"),
        ("5. == 5.0", "compile_error"),
    ])  # fmt: skip


# -- 8. quantities with very large exponents -----------------------------------------------
def test_large_exponents_are_quantities() -> None:
    check([
        ('isQuantity("1e10001")', "match"),
        ('quantity("1e100000").compareTo(quantity("1")) == 1', "match"),
        ('quantity("1e-100000") == quantity("1n")', "match"),
        ('quantity("1e100000").add(quantity("1")).isGreaterThan(quantity("1e100000"))', "match"),
        ('quantity("0e100000").isInteger()', "match"),
        (f'{C}.huge.isGreaterThan(quantity("1e99999"))', "match"),
        (f'isQuantity("{"1" * 5000}")', "match"),
        ('isQuantity("1e9223372036854775808")', "no_match"),
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("1e100000", "10e99999"), ("1e2147483647", "10e2147483646"),
     ("1.5e-2147483648", "150e2147483646"), ("1e4294967297", "10"), ("e100000", "0"),
     ("1e-100000", "1e-9"), ("1" * 50 + "e-40", "1111111111111111112e-9")],
)  # fmt: skip
def test_large_exponents_parse_as_apimachinery_does(text: str, canonical: str) -> None:
    """Go narrows the exponent to int32 (wrapping) and rounds up to the nano unit."""
    assert protocol.answer({"id": "q", "quantity": text})["canonical"] == canonical


def test_numeric_part_without_digits_is_refused() -> None:
    assert protocol.answer({"id": "q", "quantity": ".e-100000"})["verdict"] == "error"


def test_arithmetic_past_our_digit_limit_is_an_evaluation_error() -> None:
    """Ours, not Go's: Go builds the 10-million-digit sum (and slows down as it grows)."""
    result = cel.matches('quantity("1e10000000").add(quantity("1")).isInteger()', DEVICE)
    assert result.error is not None
    assert "digits" in result.error


# -- more classes found on the way: NaN ordering, leading dots, trailing commas -------------
def test_nan_cannot_be_ordered() -> None:
    check([
        ('double("nan") > 0.0', "runtime_error"),
        ('1 < double("nan")', "runtime_error"),
        ('double("nan") == double("nan")', "no_match"),
        ('[double("nan"), 1.0].max() == 1.0', "no_match"),
    ])  # fmt: skip


def test_leading_dots_resolve_from_the_root() -> None:
    check([
        ('.device.driver == "gpu.nvidia.com"', "match"),
        (".sets.contains([1], [1])", "match"),
        ("[1].all(.x, true)", "match"),
        ("[1].all(.x, .x == 1)", "compile_error"),
        (".has(device.driver)", "compile_error"),
        (".cel.bind(v, 1, v == 1)", "compile_error"),
        ("cel.bind(.v, 1, true)", "compile_error"),
    ])  # fmt: skip


def test_trailing_commas_in_literals() -> None:
    check([
        ("[,].size() == 0", "match"),
        ("{,}.size() == 0", "match"),
        ("[1,].size() == 1", "match"),
        ("size(1,) == 1", "compile_error"),
        ("[,1] == [1]", "compile_error"),
    ])  # fmt: skip


def test_failed_literals_and_keys_still_cost() -> None:
    """cel-go charges a list (10), map (30) or index step (1) even when an element failed."""
    costs = {
        expression: cel.matches(expression, DEVICE).cost
        for expression in ("[[dyn({}).a]] != []", "{1: {1: dyn({}).a}}.size() == 1",
                           "[1][dyn({}).a] == 1")
    }  # fmt: skip
    assert costs == {
        "[[dyn({}).a]] != []": 22,
        "{1: {1: dyn({}).a}}.size() == 1": 64,
        "[1][dyn({}).a] == 1": 4,
    }
