"""`modelplane plan`: the docs' fleets, printed as tables and as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from modelplane.cli import main
from modelplane.domain import naming

FLEETS = Path(__file__).parent / "testdata" / "fleets"


def plan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["plan", *args])
    return result.exit_code, result.output


def plan_data(*args: str) -> dict[str, Any]:
    code, out = plan(*args, "-o", "json")
    assert code == 0, out
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(
    ("fleet", "deployment", "want", "removed"),
    [
        pytest.param(
            "getting-started",
            "qwen-demo",
            [("eks-us-east", 0, {"qwen": "gpu-l4"}, True)],
            [],
            id="getting-started",
        ),
        pytest.param(
            "scale-the-model",
            "qwen-west",
            [("eks-us-west", 0, {"qwen": "gpu-l40s"}, True)],
            [],
            id="scale-the-model",
        ),
        pytest.param(
            "qwen3-coder",
            "qwen3-coder",
            [("eks-coder", 0, {"qwen3-coder": "gpu-h200"}, True)],
            [],
            id="qwen3-coder-gang",
        ),
        pytest.param(
            "kimi-k2",
            "kimi-k2",
            [("eks-kimi", 0, {"kimi-prefill": "gpu-h200", "kimi-decode": "gpu-h200"}, True)],
            [],
            id="kimi-k2-prefill-decode",
        ),
        pytest.param(
            "drained-cluster",
            "qwen-a100",
            [
                ("gpu-us-west", 0, {"qwen": "gpu-a100"}, False),
                ("gpu-us-west", 1, {"qwen": "gpu-a100"}, True),
            ],
            [("gpu-us-east", 0, "taint modelplane.ai/maintenance:NoExecute not tolerated")],
            id="drained-cluster",
        ),
    ],
)
def test_docs_fleets(
    fleet: str,
    deployment: str,
    want: list[tuple[str, int, dict[str, str], bool]],
    removed: list[tuple[str, int, str]],
) -> None:
    data = plan_data(str(FLEETS / fleet))
    got = [
        (r["cluster"], r["index"], {e["engine"]: e["pool"] for e in r["engines"]}, r["new"])
        for r in data["replicas"]
    ]
    assert got == want
    assert [r["name"] for r in data["replicas"]] == [
        naming.replica_name(deployment, c, i) for c, i, _, _ in want
    ]
    assert [(d["cluster"], d["index"], d["reason"]) for d in data["removed"]] == removed
    assert data["scheduled"]["status"] is True


def test_pools_free_before_and_after() -> None:
    data = plan_data(str(FLEETS / "qwen3-coder"))
    # A Leader plus one Worker, each claiming GPUs: the gang takes both H200 nodes.
    assert data["pools"] == [
        {"cluster": "eks-coder", "pool": "gpu-h200", "nodes": 2, "freeBefore": 2, "freeAfter": 0}
    ]


def test_the_existing_replica_of_another_deployment_stays_charged() -> None:
    fleet = FLEETS / "scale-the-model"
    data = plan_data(str(fleet / "model-deployment-west.yaml"), str(fleet / "fleet"))
    pools = {(p["cluster"], p["pool"]): (p["freeBefore"], p["freeAfter"]) for p in data["pools"]}
    assert pools[("eks-us-east", "gpu-l4")] == (0, 0)
    passed = {p["cluster"]: p["reasons"] for p in data["passedOver"]}
    assert passed["eks-us-east"] == [
        "clusterSelector wants modelplane.ai/region=us-west, cluster has modelplane.ai/region=us-east"
    ]


def test_table_for_people() -> None:
    code, out = plan(str(FLEETS / "drained-cluster"))
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "ml-team/qwen-a100: 2 of 2 replicas placed"
    assert lines[2].split() == ["REPLICA", "CLUSTER", "INDEX", "POOLS", "STATUS"]
    for section in ("REMOVED", "FREE BEFORE", "PASSED OVER"):
        assert section in out
    assert lines[-1].split()[0] == "gpu-us-east"


def test_yaml_output_is_the_json_data() -> None:
    code, out = plan(str(FLEETS / "kimi-k2"), "-o", "yaml")
    assert code == 0, out
    assert yaml.safe_load(out) == plan_data(str(FLEETS / "kimi-k2"))


def test_shortfall_explained(tmp_path: Path) -> None:
    source = yaml.safe_load((FLEETS / "getting-started" / "model-deployment.yaml").read_text())
    source["spec"]["replicas"] = 2
    (tmp_path / "md.yaml").write_text(yaml.safe_dump(source))
    data = plan_data(str(tmp_path / "md.yaml"), str(FLEETS / "getting-started" / "fleet"))
    assert data["placed"] == 1
    assert data["scheduled"] == {
        "status": False,
        "reason": "InsufficientCapacity",
        "message": "placed 1 of 2 replicas; eks-us-east: pool gpu-l4 has 0 of 1 nodes free, needs 1",
    }


@pytest.mark.parametrize(
    ("documents", "args", "error"),
    [
        pytest.param([], [], "no ModelDeployment in DEPLOYMENT", id="none"),
        pytest.param(
            [{"kind": "ModelDeployment", "metadata": {"name": n}} for n in ("b", "a")],
            [],
            "several ModelDeployments (a, b); choose one with --name",
            id="several",
        ),
        pytest.param(
            [{"kind": "ModelDeployment", "metadata": {"name": "a"}}],
            ["--name", "z"],
            "no ModelDeployment named z",
            id="wrong-name",
        ),
        pytest.param(
            [{"kind": "ModelDeployment", "metadata": {"name": "a", "namespace": "n"}}],
            [],
            "cannot read the ModelDeployment",
            id="invalid",
        ),
    ],
)
def test_errors(
    tmp_path: Path, documents: list[dict[str, Any]], args: list[str], error: str
) -> None:
    path = tmp_path / "md.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    code, out = plan(str(path), *args)
    assert code == 1
    assert error in out


def test_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "md.yaml"
    path.write_text("kind: [unclosed\n")
    code, out = plan(str(path))
    assert code == 1
    assert "not valid YAML" in out


def test_name_chooses_among_several(tmp_path: Path) -> None:
    fleet = FLEETS / "scale-the-model"
    both = [
        yaml.safe_load((FLEETS / "getting-started" / "model-deployment.yaml").read_text()),
        yaml.safe_load((fleet / "model-deployment-west.yaml").read_text()),
    ]
    (tmp_path / "both.yaml").write_text(yaml.safe_dump_all(both))
    data = plan_data(str(tmp_path / "both.yaml"), str(fleet / "fleet"), "--name", "qwen-west")
    assert data["deployment"] == "ml-team/qwen-west"
