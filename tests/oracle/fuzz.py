"""Differential fuzzing: random selectors through the Go oracle and Modelplane, compared.

    .venv/bin/python -m tests.oracle.fuzz [SEED] [COUNT] [DEPTH] [NESTED]

Random expressions mix every library the DRA environment has; most do not type-check,
which exercises the checker as much as evaluation. The atoms include the edge cases of
issue 12: quantities with fractions, reserved words as fields, ``double()`` of Go-syntax
strings, numeric literal forms, integer limits, NaN. A share NESTED (default 0.1) of the
expressions is an atom wrapped in 40 to 250 random value-preserving layers (parentheses, calls,
literals, selections, indexes, macros), around cel-go's nesting limits. Every
difference in verdict class or static estimate is printed (runtime costs are left to
``compare.py``). Needs ``bin/dra-oracle`` (``bash tests/oracle/build.sh``).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from modelplane.dra import protocol

from tests.oracle import compare

ROOT = Path(__file__).parents[2]
A = 'device.attributes["gpu.nvidia.com"]'
ATOMS = [
    "1", "2u", "1.5", '"a"', '"abc"', "true", "null", 'b"x"', "[1, 2]", '["a", "b"]',
    '{"a": 1}', "[]", "{}", f"{A}.architecture", f"{A}.count", f"{A}.cudaComputeCapability",
    f"{A}.mig", "device.driver", 'device.capacity["gpu.nvidia.com"].memory', 'duration("1s")',
    'timestamp("2024-01-01T00:00:00Z")', "optional.of(1)", "optional.none()",
    'ip("10.0.0.1")', 'cidr("10.0.0.0/8")', 'url("https://x.io/p?q=1")', 'quantity("1Gi")',
    'semver("1.2.3")', "dyn(1)", 'dyn("a")', "dyn([1])", "format.dns1123Label()", A,
    "device.attributes", "lists.range(3)",
    # issue 12's classes
    'quantity("750m")', 'quantity("1.5Gi")', 'quantity("-0.5")', 'quantity("3n")',
    'quantity("12345678901234567890")', 'quantity("1e10001")', 'quantity("1e-10001")',
    'device.capacity["gpu.nvidia.com"].half', 'device.capacity["gpu.nvidia.com"].milli',
    f"{A}.namespace", f"{A}.if", f'{A}.?package.orValue("")', '{"var": 1}.var',
    'double("1_000")', 'double("0x1p-2")', 'double("1e400")', 'double("nan")',
    'double("-Inf")', "0x1F", "0x10u", "1e-5", "1.7976931348623157e308",
    "-9223372036854775808", "9223372036854775807", "18446744073709551615u", "-1", "0.5",
    ".device.driver", "[,]", "{,}",
]  # fmt: skip
UNARY = [
    "size({})", "!{}", "-{}", "string({})", "int({})", "double({})", "type({})", "dyn({})",
    "{}.size()", "{}.lowerAscii()", "{}.sort()", "{}.sum()", "{}.max()", "{}.reverse()",
    "{}.distinct()", "{}.first()", "{}.hasValue()", "{}.value()", "{}.orValue(1)",
    "{}.isSorted()", "{}.getHours()", "{}.family()", "{}.prefixLength()", "{}.getHost()",
    "{}.trim()", '{}.split(",")', "{}.join()", "strings.quote({})", "{}.isInteger()",
    "{}.major()", "isIP({})", "isCIDR({})", "isURL({})", "duration({})", "timestamp({})",
    "{}.?a", "{}[?0]", "{}[0]", '{}["a"]', "{}.all(x, true)", "{}.exists(k, v, true)",
    "{}.map(x, x)", "{}.transformList(i, v, v)", "{}.filter(x, true)", "optional.of({})",
    "[?{}]", '{}.matches("a")', '{}.find("[a-z]+")', '{}.findAll("a")', '"%s".format([{}])',
    "sets.contains({}, [1])", '{}.validate("a")', '{}.indexOf("a")', "{}.flatten()",
    "{}.slice(0, 1)", "cel.bind(z, {}, z)", "{}.optMap(x, x)", "{}.sortBy(x, x)",
    "{}.charAt(0)", '{}.containsIP("10.1.1.1")', "{}.getQuery()",
    '{}.isLessThan(quantity("1.5"))', '{}.sub(quantity("0.5"))', "{}.asInteger()",
    "uint({})", "{} % -1", "{}.asApproximateFloat()", "{}.sign()", "{}.namespace",
    "{}.?if",
]  # fmt: skip
BINARY = [
    "{} == {}", "{} != {}", "{} < {}", "{} + {}", "{} - {}", "{} * {}", "{} && {}",
    "{} || {}", "{} in {}", "{} ? {} : {}", "[{}, {}]", "{{{}: {}}}", "{}.compareTo({})",
    "sets.intersects({}, {})", "{}.isGreaterThan({})", "{}.or({})", "{}.orValue({})",
    "{}.add({})", "{} % {}", "{} / {}", "{}.isLessThan({})", "{}.sub({})", "{} > {}",
]  # fmt: skip
LAYERS = [
    "({})", "dyn({})", "[{}][0]", '{{"k": {}}}.k', '{{"k": {}}}["k"]', "cel.bind(v, {}, v)",
    "optional.of({}).value()", "[{}].map(x, x)[0]", '{{"k": {}}}.?k.value()',
    "(true ? dyn({}) : dyn(0))",
]  # fmt: skip
DEVICE: dict[str, Any] = {
    "driver": "gpu.nvidia.com",
    "attributes": {
        "architecture": {"string": "Hopper"},
        "count": {"int": 8},
        "cudaComputeCapability": {"version": "9.0.0"},
        "mig": {"bool": False},
        "namespace": {"string": "prod"},
    },
    "capacity": {
        "memory": {"value": "80Gi"},
        "half": {"value": "0.5"},
        "milli": {"value": "750m"},
    },
}


def expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(ATOMS)
    if rng.random() < 0.6:
        return rng.choice(UNARY).format(expression(rng, depth - 1))
    template = rng.choice(BINARY)
    return template.format(*(expression(rng, depth - 1) for _ in range(template.count("{}"))))


def nested(rng: random.Random, text: str) -> str:
    """Wrap text in 40 to 250 random layers that keep its value."""
    for _ in range(rng.randint(40, 250)):
        text = rng.choice(LAYERS).format(text)
    return text


def cases(seed: int, count: int, depth: int, share_nested: float = 0.1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = expression(rng, depth)
        if rng.random() < 0.5:
            text = f"({text}) == ({expression(rng, max(depth - 1, 0))})"
        if rng.random() < share_nested:
            atom = rng.choice(ATOMS)
            text = f"{nested(rng, atom)} == {atom}"
        out.append({"id": f"fuzz-{seed}-{i}", "expression": text, "device": DEVICE})
    return out


def main() -> None:
    given = sys.argv[1:4]
    seed, count, depth = (int(a) for a in [*given, *["1", "2000", "3"][len(given) :]])
    share_nested = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
    vectors = cases(seed, count, depth, share_nested)
    lines = "".join(json.dumps(v) + "\n" for v in vectors)
    oracle = str(ROOT / "bin" / "dra-oracle")
    output = subprocess.run([oracle], input=lines, capture_output=True, text=True, check=True)
    differ = 0
    for vector, line in zip(vectors, output.stdout.splitlines(), strict=True):
        want, got = json.loads(line), protocol.answer(vector)
        if compare.difference(want, got) or compare.estimate_difference(want, got):
            differ += 1
            print(f"{vector['expression']}\n    go: {want}\n    py: {got}")
    print(f"{count} expressions, {differ} differ")


if __name__ == "__main__":
    main()
