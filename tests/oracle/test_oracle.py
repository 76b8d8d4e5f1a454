"""The committed verdicts are what Kubernetes' own code says today (needs Go)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from modelplane.domain import dra as cel

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
ORACLE = ROOT / "bin" / "dra-oracle"

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Path:
    if not ORACLE.exists():
        if shutil.which("go") is None:
            pytest.skip("Go is not installed and bin/dra-oracle is missing")
        subprocess.run(["bash", str(HERE / "build.sh")], check=True, timeout=1200)
    return ORACLE


def test_committed_verdicts_match_a_fresh_oracle_run(oracle: Path) -> None:
    vectors = (HERE / "vectors.jsonl").read_text(encoding="utf-8")
    fresh = subprocess.run(
        [str(oracle)], input=vectors, capture_output=True, text=True, check=True, timeout=300
    ).stdout.splitlines()
    committed = (HERE / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(fresh) == len(committed) >= 500
    # Costs of comprehensions over maps follow Go's random map order, so they are
    # not compared; everything else must be identical.
    changed = [
        f"-{c}\n+{f}"
        for c, f in zip(committed, fresh, strict=True)
        if _without_cost(c) != _without_cost(f)
    ]
    assert not changed, "oracle verdicts changed:\n" + "\n".join(changed[:20])


def test_oracle_stands_for_the_kubernetes_our_engine_targets(oracle: Path) -> None:
    """The Go side checks its own effective version and reads its gates from Kubernetes'
    feature gate; ours are constants, which must say the same."""
    shown = subprocess.run(
        [str(oracle), "-version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    major, minor = cel.KUBERNETES_VERSION
    gate = str(cel.FEATURE_GATES["DRAConsumableCapacity"]).lower()
    want = f"kubernetes {major}.{minor}, CEL compatibility {major}.{minor - 1}, "
    assert shown == want + f"DRAConsumableCapacity {gate}"


def _without_cost(line: str) -> dict[str, object]:
    verdict: dict[str, object] = json.loads(line)
    verdict.pop("cost", None)
    return verdict
