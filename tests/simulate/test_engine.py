"""The simulator's reconcile loop: the function's decisions, pass after pass, one ledger."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.simulate import command

from tests.simulate.conftest import (
    EXAMPLES,
    ROOT,
    cluster,
    deployment,
    gpu_class,
    placed,
    simulate,
    simulate_data,
    step,
    write_scenario,
)
from tests.test_plan_cli import plan_data

FLEETS = ROOT / "tests" / "testdata" / "fleets"


@pytest.mark.parametrize(
    "fleet", ["getting-started", "scale-the-model", "qwen3-coder", "kimi-k2", "drained-cluster"]
)
def test_the_fleet_as_given_settles_where_plan_places(tmp_path: Path, fleet: str) -> None:
    # `modelplane plan` is one reconcile of one deployment; with nothing else moving, the
    # settled fleet must hold exactly the replicas that one reconcile places.
    scenario = write_scenario(tmp_path, [], [], include=[str(FLEETS / fleet)])
    data = simulate_data(str(scenario))
    planned = plan_data(str(FLEETS / fleet))
    settled = {d["deployment"]: d for d in step(data, 0)["deployments"]}[planned["deployment"]]
    assert [(r["name"], r["cluster"], r["index"]) for r in settled["replicas"]] == [
        (r["name"], r["cluster"], r["index"]) for r in planned["replicas"]
    ]
    assert settled["scheduled"]["reason"] == planned["scheduled"]["reason"]


def test_an_existing_replica_is_retained_and_charged(tmp_path: Path) -> None:
    # The drained fleet's ModelReplicas exist before the run: the one on gpu-us-west is
    # kept as it is (index 0), the one under NoExecute leaves at once.
    scenario = write_scenario(tmp_path, [], [], include=[str(FLEETS / "drained-cluster")])
    data = simulate_data(str(scenario))
    assert placed(data, 0) == {"ml-team/qwen-a100": ["gpu-us-west/0", "gpu-us-west/1"]}
    changes = [(c["change"], c["cluster"]) for c in step(data, 0)["changes"]]
    assert changes == [("placed", "gpu-us-west"), ("removed", "gpu-us-east")]
    assert step(data, 0)["moves"][0]["to"] == "gpu-us-west"


def test_deployments_share_one_ledger(tmp_path: Path) -> None:
    # a reconciles first (name order) and takes c1's only node; b sees it charged.
    fleet = [gpu_class(), cluster("c1", {"p": 1}), cluster("c2", {"p": 1})]
    fleet += [deployment("a", 1), deployment("b", 2)]
    data = simulate_data(str(write_scenario(tmp_path, fleet, [])))
    assert placed(data, 0) == {"ml/a": ["c1/0"], "ml/b": ["c2/0"]}
    short = step(data, 0)["shortfalls"]
    assert [(s["deployment"], s["placed"], s["wanted"]) for s in short] == [("ml/b", 1, 2)]
    assert short[0]["clusters"] == [
        {"cluster": "c1", "reasons": ["pool p has 0 of 1 nodes free, needs 1"]},
        {"cluster": "c2", "reasons": ["pool p has 0 of 1 nodes free, needs 1"]},
    ]


def test_a_copies_edit_moves_make_before_break(tmp_path: Path) -> None:
    # a and b share c1's two nodes. copies: 2 grows a's replica to 2 nodes, which c1 no
    # longer has: it must move, and keeps running (charging its node) while nowhere has
    # room. A second cluster takes the replacement; then the old one goes.
    fleet = [gpu_class(), cluster("c1", {"p": 2}), deployment("a", 1), deployment("b", 1)]
    timeline: list[dict[str, Any]] = [
        {
            "name": "grow a",
            "events": [{"editDeployment": {"deployment": "ml/a", "copies": {"qwen": 2}}}],
        },
        {"name": "add c2", "events": [{"apply": cluster("c2", {"p": 2})}]},
    ]
    data = simulate_data(str(write_scenario(tmp_path, fleet, timeline)))
    assert placed(data, 1) == {"ml/a": ["c1/0+moving"], "ml/b": ["c1/0"]}
    moving = step(data, 1)["deployments"][0]["replicas"][0]["moving"]
    assert moving == "engine qwen now needs 2 nodes of pool p, which has 1 free"
    assert [(s["deployment"], s["placed"]) for s in step(data, 1)["shortfalls"]] == [("ml/a", 0)]
    assert {p["cluster"]: p["used"] for p in step(data, 1)["pools"]} == {"c1": 2}
    assert placed(data, 2) == {"ml/a": ["c2/0"], "ml/b": ["c1/0"]}
    assert [(m["from"], m["to"]) for m in step(data, 2)["moves"]] == [("c1", "c2")]
    assert step(data, 2)["passes"] == 3  # place; see it Ready, let the old go; settle
    assert {p["cluster"]: p["used"] for p in step(data, 2)["pools"]} == {"c1": 1, "c2": 2}


def test_a_selector_edit_that_nothing_fits_keeps_the_replicas_running(tmp_path: Path) -> None:
    fleet = [gpu_class(), cluster("c1", {"p": 2}), deployment("a", 2)]
    edit = {
        "deployment": "ml/a",
        "deviceSelectors": [
            {
                "engine": "qwen",
                "device": "gpu",
                "cel": [
                    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'
                ],
            }
        ],
    }
    timeline = [{"events": [{"editDeployment": edit}]}]
    data = simulate_data(str(write_scenario(tmp_path, fleet, timeline)))
    assert placed(data, 1) == {"ml/a": ["c1/0+moving", "c1/1+moving"]}
    [short] = step(data, 1)["shortfalls"]
    assert (short["placed"], short["wanted"]) == (0, 2)
    assert short["clusters"][0]["reasons"] == ["no pool fits engine qwen: gpu needs memory >= 80Gi"]


def test_an_invalid_selector_holds_placement(tmp_path: Path) -> None:
    fleet = [gpu_class(), cluster("c1", {"p": 2}), deployment("a", 1)]
    edit = {
        "deployment": "ml/a",
        "replicas": 2,
        "deviceSelectors": [{"engine": "qwen", "device": "gpu", "cel": ["device.("]}],
    }
    data = simulate_data(
        str(write_scenario(tmp_path, fleet, [{"events": [{"editDeployment": edit}]}]))
    )
    assert placed(data, 1) == {"ml/a": ["c1/0"]}
    record = step(data, 1)["deployments"][0]
    assert record["scheduled"]["reason"] == "InvalidNodeSelector"
    assert [s["reason"] for s in step(data, 1)["shortfalls"]] == ["InvalidNodeSelector"]


def test_deleting_a_deployment_frees_its_pools(tmp_path: Path) -> None:
    fleet = [gpu_class(), cluster("c1", {"p": 1}), deployment("a", 1), deployment("b", 1)]
    timeline: list[dict[str, Any]] = [
        {"events": [{"delete": {"kind": "ModelDeployment", "name": "a", "namespace": "ml"}}]}
    ]
    data = simulate_data(str(write_scenario(tmp_path, fleet, timeline)))
    assert placed(data, 0) == {"ml/a": ["c1/0"], "ml/b": []}
    assert placed(data, 1) == {"ml/b": ["c1/0"]}
    changes = [
        (c["pass"], c["deployment"], c["change"], c["reason"]) for c in step(data, 1)["changes"]
    ]
    assert changes == [
        (0, "ml/a", "removed", "its ModelDeployment was deleted"),
        (1, "ml/b", "placed", ""),
    ]
    assert step(data, 1)["moves"] == []


def test_pool_events_change_what_is_published(tmp_path: Path) -> None:
    fleet = [gpu_class(), cluster("c1", {"p": 1}), deployment("a", 3)]
    timeline: list[dict[str, Any]] = [
        {
            "events": [
                {
                    "addPool": {
                        "cluster": "c1",
                        "pool": {"name": "q", "className": "a100", "nodeCount": 1},
                    }
                }
            ]
        },
        {"events": [{"setPoolNodes": {"cluster": "c1", "pool": "p", "nodes": 2}}]},
        {"events": [{"removePool": {"cluster": "c1", "pool": "q"}}]},
    ]
    data = simulate_data(str(write_scenario(tmp_path, fleet, timeline)))
    pools = [
        {
            p["pool"]: (p["used"], p["nodes"], p.get("draining", False))
            for p in step(data, i)["pools"]
        }
        for i in range(4)
    ]
    assert pools == [
        {"p": (1, 1, False)},
        {"p": (1, 1, False), "q": (1, 1, False)},
        {"p": (2, 2, False), "q": (1, 1, False)},
        # A replica is pinned to the removed pool: it stays published, draining.
        {"p": (2, 2, False), "q": (1, 1, True)},
    ]
    # The replica on the removed pool must move; c1 has no room, so it keeps running.
    assert placed(data, 3) == {"ml/a": ["c1/0", "c1/1+moving", "c1/2"]}


def test_a_removed_pool_nothing_pins_goes_even_the_last(tmp_path: Path) -> None:
    fleet = [gpu_class(), cluster("c1", {"p": 1}), cluster("c2", {"q": 1})]
    timeline: list[dict[str, Any]] = [
        {"events": [{"removePool": {"cluster": "c1", "pool": "p"}}]},
    ]
    data = simulate_data(str(write_scenario(tmp_path, fleet, timeline)))
    assert [(p["cluster"], p["pool"]) for p in step(data, 1)["pools"]] == [("c2", "q")]


def test_a_not_ready_cluster_keeps_its_replicas_and_takes_no_new_ones(tmp_path: Path) -> None:
    fleet = [gpu_class(), cluster("c1", {"p": 2}), deployment("a", 1)]
    timeline: list[dict[str, Any]] = [
        {"events": [{"setClusterReady": {"cluster": "c1", "ready": False}}]},
        {"events": [{"editDeployment": {"deployment": "ml/a", "replicas": 2}}]},
        {"events": [{"setClusterReady": {"cluster": "c1", "ready": True}}]},
    ]
    data = simulate_data(str(write_scenario(tmp_path, fleet, timeline)))
    assert [r["ready"] for r in step(data, 1)["deployments"][0]["replicas"]] == [False]
    assert step(data, 2)["shortfalls"][0]["clusters"] == [
        {"cluster": "c1", "reasons": ["not Ready"]}
    ]
    assert placed(data, 3) == {"ml/a": ["c1/0", "c1/1"]}


def test_a_step_that_does_not_settle_is_reported() -> None:
    # One pass places a replica but cannot see it Ready: no step that changes anything
    # settles, and the move to eu-central is caught halfway, the old replica running.
    scenario = EXAMPLES / "getting-started.yaml"
    result = simulate(str(scenario), "-o", "json", "--max-passes", "1")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["converged"] is False
    settled = [s["modes"]["declared"]["converged"] for s in data["steps"]]
    assert settled == [False, True, False, False, False, False]
    assert placed(data, 3)["ml-team/qwen-west"] == ["eks-eu-central/0", "eks-us-west/0+moving"]
    assert "did not settle within 1 reconcile pass\n" in result.stderr
    table = simulate(str(scenario), "--max-passes", "1")
    assert "DID NOT SETTLE within 1 reconcile pass\n" in table.stdout


def test_output_is_deterministic_and_yaml_is_the_json(tmp_path: Path) -> None:
    scenario = str(EXAMPLES / "drain-a-cluster.yaml")
    first, second = simulate(scenario, "-o", "json"), simulate(scenario, "-o", "json")
    assert first.stdout == second.stdout
    as_yaml = simulate(scenario, "-o", "yaml")
    assert yaml.safe_load(as_yaml.stdout) == json.loads(first.stdout)


def test_table_for_people() -> None:
    result = simulate(str(EXAMPLES / "drain-a-cluster.yaml"))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.splitlines()[0] == "scenario drain-a-cluster"
    for header in ("STEP 0: the fleet as given", "STEP 2: drain gpu-us-east (NoExecute)"):
        assert header in out
    step2 = out.split("STEP 2:")[1].split("STEP 3:")[0]
    moved = next(line for line in step2.splitlines() if line.startswith("ml-team/qwen-a100   qwen"))
    assert moved.split()[2:4] == ["gpu-us-east", "gpu-us-west"]
    step3 = out.split("STEP 3:")[1].split("STEP 4:")[0]
    short = next(line for line in step3.splitlines() if line.startswith("SHORT"))
    assert short.split() == ["SHORT", "PLACED", "REASON", "WHY"]
    assert "ml-team/qwen-a100   2/3      InsufficientCapacity" in step3


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_live_on_a_terminal_and_clears() -> None:
    stream = _Terminal()
    progress = command._Progress(stream)
    progress(0, 3, 1)
    progress(2, 3, 2)
    assert stream.getvalue().startswith("\rsimulating: step 1/3, pass 1")
    assert "\rsimulating: step 3/3, pass 2" in stream.getvalue()
    progress.done()
    assert stream.getvalue().endswith("\r")


def test_progress_stays_quiet_off_a_terminal_on_a_quick_run() -> None:
    stream = io.StringIO()
    progress = command._Progress(stream)
    progress(0, 3, 1)
    progress.done()
    assert stream.getvalue() == ""


def _two_gpu_nodes() -> dict[str, Any]:
    """An InferenceClass of two-GPU nodes."""
    found = gpu_class()
    found["spec"]["devices"][0]["count"] = 2
    return found


def test_a_pool_added_with_capacity_devices_shares_its_nodes(tmp_path: Path) -> None:
    shared = {"name": "q", "className": "a100", "nodeCount": 1, "capacity": "Devices"}
    timeline = [{"events": [{"addPool": {"cluster": "c1", "pool": shared}}]}]
    fleet = [_two_gpu_nodes(), cluster("c1", {"p": 1}), deployment("a", 4)]
    data = simulate_data(str(write_scenario(tmp_path, fleet, timeline)))
    pools = [
        {p["pool"]: (p["capacity"], p["used"]) for p in step(data, i)["pools"]} for i in (0, 1)
    ]
    # Whole nodes: p's one node takes one pod (1 of its 2 GPUs). Shared: q's takes two.
    assert pools == [{"p": ("Nodes", 1)}, {"p": ("Nodes", 1), "q": ("Devices", 1)}]
    assert placed(data, 1) == {"ml/a": ["c1/0", "c1/1", "c1/2"]}


def test_compare_capacity_shows_both_modes_side_by_side(tmp_path: Path) -> None:
    fleet = [_two_gpu_nodes(), cluster("c1", {"p": 2}), deployment("a", 4)]
    scenario = str(write_scenario(tmp_path, fleet, []))
    data = simulate_data(scenario, "--compare-capacity")
    got = {
        mode: [d["placed"] for d in data["steps"][0]["modes"][mode]["deployments"]]
        for mode in data["modes"]
    }
    assert got == {"nodes": [2], "devices": [4]}
    text = simulate(scenario, "--compare-capacity").stdout
    assert "PLACED (nodes)   READY (nodes)" in text
    assert "PLACED (devices)" in text
    assert "USED BY (devices)" in text
    assert "ml/a=4 devices" in text
