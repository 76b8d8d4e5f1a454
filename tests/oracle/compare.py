"""Compare two verdict files (the oracle's and ours) the way the tests do."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
UNSUPPORTED_PREFIX = "not supported:"
SELECTOR_VERDICTS = ("compile_error", "match", "no_match", "runtime_error")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def difference(want: dict[str, Any], got: dict[str, Any]) -> str | None:
    """What differs between the oracle's verdict and ours, or None when they agree."""
    if want["verdict"] != got["verdict"]:
        return f"verdict: oracle {want['verdict']}, ours {got['verdict']} ({got.get('error')})"
    if want["verdict"] in SELECTOR_VERDICTS:
        return None
    for key in ("canonical", "sign", "integer", "major", "minor", "patch", "compare"):
        if want.get(key) != got.get(key):
            return f"{key}: oracle {want.get(key)!r}, ours {got.get(key)!r}"
    a, b = want.get("float"), got.get("float")
    if a is None or b is None:
        return None if a is b else f"float: oracle {a!r}, ours {b!r}"
    if float(a) != float(b):  # Go prints large floats as integers
        return f"float: oracle {a!r}, ours {b!r}"
    return None


def cost_difference(want: dict[str, Any], got: dict[str, Any]) -> bool:
    return want["verdict"] in SELECTOR_VERDICTS[1:] and want.get("cost") != got.get("cost")


def estimate(verdict: dict[str, Any]) -> int | None:
    """The static cost estimate a verdict reports (a too-complex error reports it as cost)."""
    if verdict["verdict"] == "compile_error":
        return verdict.get("cost")
    return verdict.get("estimate")


def estimate_difference(want: dict[str, Any], got: dict[str, Any]) -> bool:
    return want["verdict"] in SELECTOR_VERDICTS and estimate(want) != estimate(got)


def main() -> None:
    want = load(Path(sys.argv[1]))
    got = load(Path(sys.argv[2]))
    vectors = {v["id"]: v for v in load(HERE / "vectors.jsonl")}
    bad = costs = estimates = 0
    for w, g in zip(want, got, strict=True):
        problem = difference(w, g)
        expression = vectors.get(w["id"], {}).get("expression")
        if problem:
            bad += 1
            case = vectors.get(w["id"], {})
            shown = case.get("expression", case.get("quantity", case.get("semver")))
            print(f"{w['id']}: {problem}\n    {shown!r}"[:400])
            continue
        if estimate_difference(w, g):
            estimates += 1
            print(
                f"{w['id']}: estimate oracle {estimate(w)} ours {estimate(g)}: {expression!r}"[:300]
            )
        if cost_difference(w, g):
            costs += 1
            print(
                f"{w['id']}: cost oracle {w.get('cost')} ours {g.get('cost')}: {expression!r}"[:300]
            )
    print(
        f"{len(want)} vectors, {bad} verdicts differ, {estimates} estimates differ, "
        f"{costs} costs differ"
    )


if __name__ == "__main__":
    main()
