"""Differential fuzzing: random selectors through the Go oracle and Modelplane, compared.

    .venv/bin/python -m tests.oracle.fuzz [SEED] [COUNT] [DEPTH]

Random expressions mix every library the DRA environment has; most do not type-check,
which exercises the checker as much as evaluation. Every difference in verdict class or
static estimate is printed (runtime costs are left to ``compare.py``). Needs
``bin/dra-oracle`` (``bash tests/oracle/build.sh``).
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
]  # fmt: skip
BINARY = [
    "{} == {}", "{} != {}", "{} < {}", "{} + {}", "{} - {}", "{} * {}", "{} && {}",
    "{} || {}", "{} in {}", "{} ? {} : {}", "[{}, {}]", "{{{}: {}}}", "{}.compareTo({})",
    "sets.intersects({}, {})", "{}.isGreaterThan({})", "{}.or({})", "{}.orValue({})",
    "{}.add({})",
]  # fmt: skip
DEVICE = {
    "driver": "gpu.nvidia.com",
    "attributes": {
        "architecture": {"string": "Hopper"},
        "count": {"int": 8},
        "cudaComputeCapability": {"version": "9.0.0"},
        "mig": {"bool": False},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}


def expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(ATOMS)
    if rng.random() < 0.6:
        return rng.choice(UNARY).format(expression(rng, depth - 1))
    template = rng.choice(BINARY)
    return template.format(*(expression(rng, depth - 1) for _ in range(template.count("{}"))))


def cases(seed: int, count: int, depth: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = expression(rng, depth)
        if rng.random() < 0.5:
            text = f"({text}) == ({expression(rng, max(depth - 1, 0))})"
        out.append({"id": f"fuzz-{seed}-{i}", "expression": text, "device": DEVICE})
    return out


def main() -> None:
    seed, count, depth = (int(a) for a in [*sys.argv[1:], "1", "2000", "3"][:3])
    vectors = cases(seed, count, depth)
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
