"""``make demo``: the getting-started tour converges through Crossplane's reconciler.

It runs the loop (:mod:`modelplane.dev.loop`) on the getting-started fleet until a pass
changes nothing, prints the tree, where the model ended up and what was faked, and
writes every object as YAML that a strict loader reads back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from modelplane.dev import demo, strict_yaml

pytestmark = [pytest.mark.loop, pytest.mark.crossplane]


def test_the_tour_settles_ready_and_says_what_was_faked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "converged.yaml"
    assert demo.main(["getting-started", "--yaml-file", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "nothing changed: settled" in out
    tree = out[out.index("NAME ") : out.index("Where it ended up:")]
    for name in ("InferenceCluster/eks-us-east", "ModelDeployment/qwen-demo", "ModelService/qwen"):
        assert _synced_ready(tree, name) == ("True", "True"), tree
    ending = out[out.index("Where it ended up:") :]
    assert "InferenceCluster eks-us-east: Ready, pools gpu-l4, gateway " in ending
    assert "placed on eks-us-east" in ending
    assert "ModelService ml-team/qwen: Ready, routing at http://" in ending
    assert "faked" in ending
    docs = [d for d in strict_yaml.load_all(out_file.read_text()) if d]
    kinds = {d["kind"] for d in docs}
    assert {"InferenceCluster", "ModelDeployment", "ModelReplica", "ModelService"} <= kinds
    assert len(docs) == out_file.read_text().count("\n---\n") + 1


def _synced_ready(tree: str, name: str) -> tuple[str, str]:
    """SYNCED and READY of the tree's first row for ``name`` (``Kind/name``)."""
    for line in tree.splitlines():
        words = [w for w in line.split() if w.strip("├└─│")]
        if words and words[0] == name:
            columns = [w for w in words[1:] if not w.startswith("(")]
            return columns[0], columns[1]
    raise AssertionError(f"no row {name} in:\n{tree}")
