"""Write tests/oracle/vectors.jsonl: the cases both the Go oracle and Modelplane answer.

Run ``.venv/bin/python -m tests.oracle.make_vectors`` after changing the cases (the random
RE2 cases assert Modelplane's own answers, so it needs the package), then regenerate the
verdicts with the oracle (``bin/dra-oracle < vectors.jsonl > verdicts.jsonl``).
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

from tests.oracle import edge_vectors, kubernetes_vectors, library_vectors
from tests.oracle.library_vectors import ENABLED
from tests.oracle.selector_vectors import (
    ATTR,
    DEVICES,
    DOC_SELECTORS,
    MEM,
    NV,
    PROD,
    SELECTORS_ON_H100,
)

HERE = Path(__file__).parent

# The extension libraries, in the order their vectors are written (ids number within a
# group: the order keeps every line of vectors.jsonl where it was).
EXTENSIONS: dict[str, list[str]] = {**library_vectors.EXTENSIONS, **kubernetes_vectors.EXTENSIONS}

_REGEX_ATOMS = [
    "a", "b", ".", "\\d", "\\w", "\\s", "\\b", "^", "$", "[ab]", "[^a]", "(?i)", "(?m)",
    "(?s)", "(?U)", "\\pL", "[[:digit:]]", "k", "(", ")", "|", "*", "+", "?", "{2}", "{1,3}",
    "*?", "(?:", "\\A", "\\z", "x", " ", "{", "\\Q.\\E", "\\n",
]  # fmt: skip
_REGEX_TEXT = "abK kx\n1 2.-é"


def regex_fuzz(count: int) -> list[str]:
    """Random RE2 patterns on random texts, each asserting Modelplane's own answer: the
    oracle's verdict then says whether Go's regexp agrees (match) or not (no_match)."""
    from modelplane.domain.dra import _regex  # noqa: PLC0415 - only this generator needs it

    rng = random.Random(20260101)
    out: list[str] = []
    while len(out) < count:
        pattern = "".join(rng.choice(_REGEX_ATOMS) for _ in range(rng.randint(1, 7)))
        text = "".join(rng.choice(_REGEX_TEXT) for _ in range(rng.randint(0, 9)))
        p, t = json.dumps(pattern), json.dumps(text)
        try:
            regex = _regex.compile_regex(pattern)
        except _regex.RegexError:
            out.append(f"{t}.matches({p})")
            continue
        found = json.dumps(regex.find(text))
        everything = "[" + ", ".join(json.dumps(m) for m in regex.find_all(text, -1)) + "]"
        out.append(f"{t}.matches({p}) == {str(regex.search(text)).lower()}")
        out.append(f"{t}.find({p}) == {found} && {t}.findAll({p}) == {everything}")
    return out


COST_BOMBS = [
    # Nested comprehensions over the device's own maps: the static estimate rejects them.
    "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
    "device.attributes.all(d, a == d))))",
    'device.attributes["a"].all(k, device.attributes["b"].all(j, device.attributes["c"].all('
    'l, device.attributes["d"].all(m, k == j))))',
    f"{ATTR}.all(a, {ATTR}.all(b, {ATTR}.all(c, {ATTR}.all(d, {ATTR}.all(e, a == e))))))",
    f'{ATTR}.all(a, {ATTR}.all(b, {ATTR}.all(c, a + b + c != "x"))))',
    f"{ATTR}.all(a, {ATTR}.all(b, a != b || a == b))",
    "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
    "device.attributes[e].all(j, k != j))))",
    # Literal ranges: the estimate is exact for literals.
    "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, "
    "[1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a + b + c + d + e > 0)))))",
    "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, "
    "[1,2,3,4,5,6,7,8,9,10].all(d, a + b + c + d > 0)))))",
    "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, "
    "a + b + c > 0))))",
    "[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, "
    "[1,2,3,4,5,6,7,8,9,10].map(d, [a, b, c, d])))).size() > 0",
    "[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [a, b])).size() == 10",
    f"{ATTR}.architecture.contains({ATTR}.productName)",
    f'{ATTR}.architecture + {ATTR}.productName == "x"',
    f'{ATTR}.architecture.split("").size() > 0',
    f'{ATTR}.architecture.replace("", "xx").size() > 0',
    'cel.bind(s, "aaaaaaaaaa", cel.bind(t, s + s + s + s, t + t + t + t)).size() > 0',
    "cel.bind(l, [1,2,3,4,5,6,7,8,9,10], l.all(a, l.all(b, l.all(c, l.all(d, l.all(e, "
    "l.all(f, a < f))))))))",
    '"' + "x" * 10200 + '" == "y"',
    '"' + "x" * 10300 + '" == "y"',
    # Bombs through the extension libraries.
    f"{ATTR}.all(a, b, {ATTR}.all(c, d, {ATTR}.all(e, f, {ATTR}.all(g, h, a == g))))",
    "device.attributes.all(d, m, m.all(k, v, device.attributes.all(e, n, n.all(j, w, k != j))))",
    f"{ATTR}.transformMap(k, v, {ATTR}.transformList(j, w, {ATTR}.transformMap(i, u, i)))"
    ".size() > 0",
    "lists.range(1000000).size() > 0",
    "lists.range(999980).size() > 0",
    f"lists.range({ATTR}.count).size() > 0",
    "lists.range(1000).map(i, lists.range(1000).map(j, i * j)).size() > 0",
    "[" + ", ".join(str(i) for i in range(800)) + "].sort().size() > 0",
    "[" + ", ".join(str(i) for i in range(600)) + "].sort().size() > 0",
    "[" + ", ".join(str(i) for i in range(800)) + "].distinct().size() > 0",
    "sets.contains(["
    + ", ".join(str(i) for i in range(1200))
    + "], ["
    + ", ".join(str(i) for i in range(900))
    + "])",
    f'{PROD}.matches("' + "(a|b)" * 400 + '")',
    f'{PROD}.findAll("' + "[a-z]" * 600 + '").size() > 0',
    f"{ATTR}.map(k, {ATTR}.map(j, k + j)).flatten().size() > 0",
    f"{ATTR}.map(k, k).sort().size() > 0",
    f'{ATTR}.map(k, k).indexOf("count") >= 0',
    f'{ATTR}.map(k, string({ATTR}[k])).join(",").size() > 0',
    f'"%s".format([{ATTR}]).size() > 0',
    f'url("https://" + {PROD}).getHost() != ""',
    f'{ATTR}.all(k, {ATTR}.all(j, "%s%s".format([k, j]).matches("^[a-z]+$")))',
    '"' + "ab" * 2000 + '".findAll("a|b").size() > 0',
    '"' + "a" * 4000 + '".matches("^(a|a)*b$")',
    "[" + ", ".join(f'duration("{i}s")' for i in range(300)) + '].sum() > duration("0s")',
    "optional.of(["
    + ", ".join(str(i) for i in range(2000))
    + "]).optMap(l, l.all(x, l.all(y, x >= 0))).orValue(false)",
    "true && " * 1000 + "true",
    "[" + ", ".join(str(i) for i in range(1500)) + "].all(x, x >= 0)",
    "["
    + ", ".join(str(i) for i in range(1500))
    + "].all(x, ["
    + ", ".join(str(i) for i in range(700))
    + "].all(y, x >= y))",
]

QUANTITIES = [
    "0", "1", "-1", "+1", "1n", "1u", "1m", "1k", "1M", "1G", "1T", "1P", "1E",
    "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei", "1K", "1Kb", "1B", "1kb", "1mi", "1Gib",
    "1e3", "1E3", "1e-3", "1e+3", "1.5e3", "1e", "1e0", "1e18", "1e19", "1e-9", "1e-10",
    "1.5", "1.5Gi", "0.5Gi", "0.5", ".5", "5.", ".", "+", "-", "+.", "1..5", "1.5.5",
    "0.1Ki", "1.0Ki", "1024", "1023", "1025", "1536Mi", "1024Mi", "80Gi", "81559Mi",
    "23034Mi", "20Gi", "40960Mi", "35Gi", "40Gi", "46068Mi", "24564Mi", "81920Mi",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "99999999999999999999", "8Ei", "7Ei", "16Ei",
    "100000000000000000000Ei", "-100000000000000000000Ei", "9223372036854775807Ki",
    "0.000000001", "0.0000000001", "0.0000000015", "-0.0000000015", "1.0000000001",
    "123456789012345678", "1234567890123456789", "12345678901234567890",
    "100m", "1000m", "1500m", "0.1", "0.001", "1.000", "001", "00.5", "-0", "+0", "-0.0",
    "1 ", " 1", "1 Gi", "1gi", "1GI", "Gi", "", "abc", "1a", "1e3Gi", "1Gie3", "0x10",
    "1_000", "١", "1e-", "1e+", "1e--3", "1e3.5", "12e-3", "100M", "3.14159", "2.5T",  # noqa: RUF001 - a non-ASCII digit Go rejects
    "1e308", "1e-308", "5e2", "1.5e-7", "1.23456789e5", "1Pi", "0.5Ki", "2048Ki",
    "1048576", "1073741824", "1099511627776Ki",
]  # fmt: skip

QUANTITY_PAIRS = [
    ("81559Mi", "80Gi"), ("23034Mi", "20Gi"), ("40960Mi", "35Gi"), ("40960Mi", "40Gi"),
    ("46068Mi", "40Gi"), ("24564Mi", "35Gi"), ("81920Mi", "70Gi"), ("81559Mi", "70Gi"),
    ("81920Mi", "80Gi"), ("1Gi", "1024Mi"), ("1G", "1Gi"), ("1k", "1000"), ("1Ki", "1k"),
    ("1m", "0.001"), ("1n", "0.000000001"), ("1.5Gi", "1536Mi"), ("-1", "1"), ("0", "-0"),
    ("100000000000000000000Ei", "8Ei"), ("1e3", "1k"), ("0.0000000001", "1n"),
]  # fmt: skip

VERSIONS = [
    "1.2.3", "0.0.0", "1.2.3-alpha", "1.2.3-alpha.1", "1.2.3-0", "1.2.3-01", "1.2.3+build",
    "1.2.3+build.1", "1.2.3-rc.1+b.2", "1.2", "1", "v1.2.3", "01.2.3", "1.02.3", "1.2.03",
    "1.2.3.4", "1.2.3-", "1.2.3+", "1.2.3-a..b", "1.2.3+a..b", "1.2.3-a_b", "1.2.3+a_b",
    "", " 1.2.3", "1.2.3 ", "a.b.c", "1.2.x", "-1.2.3", "18446744073709551615.0.0",
    "18446744073709551616.0.0", "1.2.3-alpha-beta", "1.2.3+b-c", "1.2.3+b-c-", "1..3",
    "9.0.0", "8.9.0", "10.0.0", "1.2.3-DEV", "1.2.3-dev", "1.2.3----", "1.2.3-0a",
    "1.2.3-00a", "1.2.3+001", "１.2.3",  # noqa: RUF001 - a non-ASCII digit Go rejects
]  # fmt: skip

VERSION_PAIRS = [
    ("9.0.0", "8.9.0"), ("8.9.0", "8.9.0"), ("10.0.0", "9.0.0"), ("1.2.3-alpha", "1.2.3"),
    ("1.2.3-alpha", "1.2.3-alpha.1"), ("1.2.3-alpha.1", "1.2.3-alpha.beta"),
    ("1.2.3-alpha.beta", "1.2.3-beta"), ("1.2.3-beta.2", "1.2.3-beta.11"),
    ("1.2.3-beta.11", "1.2.3-rc.1"), ("1.2.3+a", "1.2.3+b"), ("1.2.3-1", "1.2.3-a"),
    ("1.2.3-A", "1.2.3-a"), ("2.0.0", "10.0.0"), ("1.10.0", "1.9.0"),
]  # fmt: skip

BAD_DEVICES: list[tuple[str, dict[str, Any]]] = [
    ("bad-version", {"driver": NV, "attributes": {"v": {"version": "1.2"}}}),
    ("bad-quantity", {"driver": NV, "capacity": {"memory": {"value": "12XB"}}}),
    ("empty-attribute", {"driver": NV, "attributes": {"v": {}}}),
]


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for (si, expression), (name, device) in itertools.product(
        enumerate(DOC_SELECTORS), DEVICES.items()
    ):
        out.append({"id": f"doc-{si}-{name}", "expression": expression, "device": device})
    for si, expression in enumerate(SELECTORS_ON_H100):
        out.append({"id": f"cel-{si}", "expression": expression, "device": DEVICES["h100"]})
    for si, expression in enumerate(SELECTORS_ON_H100[:120]):
        out.append({"id": f"cel-{si}-empty", "expression": expression, "device": DEVICES["empty"]})
    qualified = [
        'device.attributes["example.com"].zone == "a"',
        'device.capacity["example.com"].slots.compareTo(quantity("4")) == 0',
        f'{ATTR}.architecture == "Hopper"',
        f'{MEM} == quantity("80Gi")',
        'device.attributes["example.com"].architecture == "Hopper"',
        "size(device.attributes) == 2",
    ]
    for si, expression in enumerate(qualified):
        device = DEVICES["qualified"]
        out.append({"id": f"qualified-{si}", "expression": expression, "device": device})
    for si, expression in enumerate(ENABLED):
        out.append({"id": f"enabled-{si}", "expression": expression, "device": DEVICES["h100"]})
    for group, expressions in {**EXTENSIONS, "re2": regex_fuzz(240)}.items():
        for si, expression in enumerate(expressions):
            vid = f"{group}-{si}"
            out.append({"id": vid, "expression": expression, "device": DEVICES["h100"]})
    for si, expression in enumerate(COST_BOMBS):
        out.append({"id": f"bomb-{si}", "expression": expression, "device": DEVICES["h100"]})
    for name, device in BAD_DEVICES:
        for si, expression in enumerate(['device.driver == "gpu.nvidia.com"', "true"]):
            out.append({"id": f"{name}-{si}", "expression": expression, "device": device})
    for i, text in enumerate(QUANTITIES):
        out.append({"id": f"quantity-{i}", "quantity": text})
        out.append({"id": f"quantity-cel-{i}", "expression": f"isQuantity({json.dumps(text)})",
                    "device": DEVICES["empty"]})  # fmt: skip
    for i, (a, b) in enumerate(QUANTITY_PAIRS):
        out.append({"id": f"quantity-pair-{i}", "quantity": a, "other": b})
    for i, text in enumerate(VERSIONS):
        out.append({"id": f"semver-{i}", "semver": text})
        out.append({"id": f"semver-cel-{i}", "expression": f"isSemver({json.dumps(text)})",
                    "device": DEVICES["empty"]})  # fmt: skip
    for i, (a, b) in enumerate(VERSION_PAIRS):
        out.append({"id": f"semver-pair-{i}", "semver": a, "other": b})
    out += edge_cases()
    out += near_limit_cases()
    return out


# Admitted selectors whose actual runtime cost comes close to Kubernetes' limit: the cost
# that decides a verdict (now that no clock does) must be cel-go's to the unit. Placed
# last so that adding them left every earlier vector's line where it was.
NEAR_LIMIT = [
    "lists.range(100).all(i, lists.range(100).all(j, lists.range(13).all(k, k >= 0)))",
    "lists.range(100).all(i, lists.range(100).all(j, lists.range(13).all(k, k < 1299)))",
    "lists.range(100).exists(i, lists.range(100).exists(j, lists.range(12).exists(k, k < 0)))",
    "lists.range(1000).all(i, lists.range(100).all(j, j != i + 2000))",
    "lists.range(999).map(i, i * 2).filter(x, x % 3 == 0).size() == 333",
]


def near_limit_cases() -> list[dict[str, Any]]:
    return [
        {"id": f"near-limit-{i}", "expression": e, "device": DEVICES["h100"]}
        for i, e in enumerate(NEAR_LIMIT)
    ]


def edge_cases() -> list[dict[str, Any]]:
    """The verdict classes of tests/oracle/edge_vectors.py."""
    out: list[dict[str, Any]] = []
    for group, expressions in edge_vectors.expressions().items():
        for si, expression in enumerate(expressions):
            out.append({"id": f"{group}-{si}", "expression": expression, "device": DEVICES["h100"]})
    for si, (group, expression, device) in enumerate(edge_vectors.device_cases()):
        out.append({"id": f"{group}-{si}", "expression": expression, "device": device})
    for i, text in enumerate(edge_vectors.quantities()):
        out.append({"id": f"qbig-quantity-{i}", "quantity": text})
    for i, (a, b) in enumerate(edge_vectors.quantity_pairs()):
        out.append({"id": f"qorder-pair-{i}", "quantity": a, "other": b})
    return out


def main() -> None:
    lines = [json.dumps(case, ensure_ascii=False, sort_keys=True) for case in cases()]
    (HERE / "vectors.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} vectors")


if __name__ == "__main__":
    main()
