"""The documented selectors, the public API's contract, and cost bombs."""

from __future__ import annotations

import pytest
from modelplane.domain import dra as cel
from modelplane.domain.dra import Attribute, Device, _eval, _regex, _values

MEM = 'device.capacity["gpu.nvidia.com"].memory'


def gpu(memory: str, arch: str = "Hopper", cc: str = "9.0.0") -> Device:
    return Device.build(
        "gpu.nvidia.com",
        attributes={"architecture": Attribute("string", arch), "cc": Attribute("version", cc)},
        capacity={"memory": memory},
    )


@pytest.mark.parametrize(
    ("memory", "at_least", "want"),
    [
        pytest.param("23034Mi", "20Gi", True, id="l4-20Gi"),
        pytest.param("46068Mi", "40Gi", True, id="l40s-40Gi"),
        pytest.param("23034Mi", "40Gi", False, id="l4-not-40Gi"),
        pytest.param("40960Mi", "35Gi", True, id="a100-40-35Gi"),
        pytest.param("24564Mi", "35Gi", False, id="a10-not-35Gi"),
        pytest.param("81920Mi", "35Gi", True, id="a100-80-35Gi"),
        pytest.param("81559Mi", "60Gi", True, id="h100-60Gi"),
        pytest.param("46068Mi", "60Gi", False, id="l40s-not-60Gi"),
        pytest.param("81920Mi", "70Gi", True, id="a100-80-70Gi"),
        pytest.param("81559Mi", "70Gi", True, id="h100-70Gi"),
        pytest.param("81559Mi", "80Gi", False, id="h100-never-80Gi"),
        pytest.param("80Gi", "80Gi", True, id="declared-80Gi"),
    ],
)
def test_documented_memory_expectations(memory: str, at_least: str, want: bool) -> None:
    selector = f'{MEM}.compareTo(quantity("{at_least}")) >= 0'
    assert cel.matches(selector, gpu(memory)) == cel.Verdict(want, None, 7)


@pytest.mark.parametrize(
    ("expression", "device", "want"),
    [
        pytest.param('device.driver == "gpu.nvidia.com"', gpu("1Gi"), True, id="driver"),
        pytest.param('"gpu.nvidia.com" in device.attributes', gpu("1Gi"), True, id="presence"),
        pytest.param('"nic.nvidia.com" in device.attributes', gpu("1Gi"), False, id="absence"),
        pytest.param(
            'device.attributes["gpu.nvidia.com"].cc.isGreaterThan(semver("8.9.0"))',
            gpu("1Gi"), True, id="version",
        ),
        pytest.param(
            'device.attributes["gpu.nvidia.com"].architecture == "Hopper" &&\n'
            f'{MEM}.compareTo(quantity("80Gi")) >= 0\n',
            gpu("81559Mi"), False, id="hopper-80Gi-two-lines",
        ),
        pytest.param(
            'cel.bind(g, device.attributes["gpu.nvidia.com"], g.architecture == "Hopper")',
            gpu("1Gi"), True, id="bind",
        ),
        pytest.param(
            'device.attributes["nic.nvidia.com"].size() == 0', gpu("1Gi"), True,
            id="unknown-domain-is-empty",
        ),
    ],
)  # fmt: skip
def test_documented_selectors(expression: str, device: Device, want: bool) -> None:
    verdict = cel.matches(expression, device)
    assert verdict.error is None
    assert verdict.matched is want


def test_unknown_attribute_is_a_reported_runtime_error() -> None:
    verdict = cel.matches('device.attributes["gpu.nvidia.com"].missing == "x"', gpu("1Gi"))
    assert verdict.matched is False
    assert verdict.error == "no such key: missing"


def test_bad_device_is_a_verdict_not_an_exception() -> None:
    device = Device.build("gpu.nvidia.com", capacity={"memory": "12XB"})
    verdict = cel.matches("true", device)
    assert verdict.matched is False
    assert verdict.error is not None
    assert "capacity gpu.nvidia.com/memory" in verdict.error


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        pytest.param("device.driver ==", "Syntax error", id="syntax"),
        pytest.param("frobnicate(1)", "undeclared reference to 'frobnicate'", id="unknown"),
        pytest.param("device.driver == 1", "no matching overload", id="types"),
        pytest.param("device.driver", "must evaluate to bool", id="not-boolean"),
        pytest.param('"aa".matches("(a)\\\\1")', "invalid matches argument", id="backreference"),
        pytest.param('"ab".matches("a(?=b)")', "invalid matches argument", id="lookahead"),
        pytest.param('"a".find("(") == ""', "error parsing regexp", id="find-pattern"),
        pytest.param(
            'timestamp("2024-13-01T00:00:00Z") < timestamp(0)', "invalid timestamp", id="month"
        ),
        pytest.param('duration("1d") > duration("0s")', "invalid duration", id="day-unit"),
        pytest.param('"%d".format(["a"]) == "a"', "decimal clause", id="format-clause"),
        pytest.param('"%s %s".format(["a"]) == "a"', "index 1 out of range", id="format-args"),
        pytest.param("optional.of(1).orValue(true)", "no matching overload", id="optional"),
        pytest.param('"' + "x" * 10300 + '" == "y"', "longer than 10240 bytes", id="too-long"),
    ],
)
def test_compile_errors_name_expression_and_reason(expression: str, reason: str) -> None:
    with pytest.raises(cel.SelectorError) as caught:
        cel.compile_selector(expression)
    assert reason in caught.value.reason
    assert caught.value.expression == expression
    assert "\n" not in str(caught.value)


BOMBS = [
    "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
    "device.attributes.all(d, a == d))))",
    "device.attributes.all(d, m, m.all(k, v, device.attributes.all(e, n, n.all(j, w, k != j))))",
    "[" + ", ".join(str(i) for i in range(800)) + "].sort().size() > 0",
    "lists.range(1000).map(i, lists.range(1000).map(j, i * j)).size() > 0",
    "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all("
    "c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a + b + c + d + e > 0)))))",
    "[" + ", ".join(str(i) for i in range(600)) + "].all(x, [" + ", ".join(
        str(i) for i in range(600)) + "].all(y, x >= y))",
]  # fmt: skip


@pytest.mark.parametrize(
    "expression",
    BOMBS,
    ids=["device-maps", "two-variable", "sort", "range", "literal-lists", "wide"],
)
def test_cost_bombs_are_rejected_by_the_static_estimate(expression: str) -> None:
    """Rejected before anything runs: the estimate, not an evaluation, is over the limit."""
    cel.clear_caches()
    with pytest.raises(cel.SelectorError, match="too complex") as rejected:
        cel.compile_selector(expression)
    assert rejected.value.cost is not None
    assert rejected.value.cost > cel.COST_LIMIT


@pytest.mark.parametrize(
    ("expression", "pattern", "want", "most_steps"),
    [
        pytest.param(
            '"' + "a" * 4000 + '".matches("^(a|a)*b$")',
            "^(a|a)*b$",
            False,
            # One step per character, plus building the automaton's few states once.
            4000 + 100,
            id="re2-no-backtracking",
        ),
        pytest.param(
            '"' + "ab" * 2000 + '".findAll("a|b").size() == 4000',
            "a|b",
            True,
            # A handful of thread steps per character.
            8 * 4000,
            id="many",
        ),
        pytest.param(
            '"' + "a" * 4000 + '".findAll("a*a*a*a*b|a").size() == 4000',
            "a*a*a*a*b|a",
            "too long for this engine",
            # Quadratic (~8 million steps) without the budget: it stops just past it.
            _regex.FIND_BUDGET + 1000,
            id="quadratic-find-all-is-refused",
        ),
    ],
)
def test_pathological_regexes_end_within_a_step_bound(
    expression: str, pattern: str, want: bool | str, most_steps: int
) -> None:
    """RE2 never backtracks; a find whose work is quadratic (as in Go) stops with an error
    rather than stall the reconcile. The work is counted in the regex engine's steps."""
    cel.clear_caches()
    regex = _regex.compile_regex(pattern)  # the cached program the selector runs
    before = regex.steps
    verdict = cel.matches(expression, gpu("1Gi"))
    steps = regex.steps - before
    assert 4000 <= steps <= most_steps
    if isinstance(want, str):
        assert verdict.error is not None
        assert want in verdict.error
        assert steps > _regex.FIND_BUDGET
    else:
        assert verdict.error is None
        assert verdict.matched is want


def test_runtime_cost_budget_stops_evaluation() -> None:
    program = cel.compile_selector("[1,2,3].all(x, [1,2,3].all(y, x > 0))")
    assert program.evaluate(gpu("1Gi")).cost == 58
    frame = _eval.Frame({"device": {}}, limit=20)
    with pytest.raises(_values.CostExceededError):
        program._program(frame)


def test_results_are_memoized_per_device_content() -> None:
    selector = cel.compile_selector(f'{MEM}.compareTo(quantity("40Gi")) >= 0')
    first = selector.evaluate(gpu("46068Mi"))
    assert selector.evaluate(gpu("46068Mi")) is first
    assert cel.compile_selector(f'{MEM}.compareTo(quantity("40Gi")) >= 0') is selector
