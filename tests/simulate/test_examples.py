"""Every scenario of examples/simulate/ lands where the docs' rules say.

The expected placements (tests/simulate/expected/<example>.yaml) were written from the
rules, with a comment per step saying which rule gives it, before they were checked
against the simulator. Here each run's JSON is projected onto the same short form.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from modelplane.domain import naming

from tests.simulate.conftest import EXAMPLES, EXPECTED, simulate_data

NAMES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))


def test_every_example_has_expected_placements() -> None:
    assert NAMES, "examples/simulate/ holds no scenario"
    assert sorted(p.stem for p in EXPECTED.glob("*.yaml")) == NAMES


def _replica(replica: dict[str, Any]) -> str:
    engines = ",".join(f"{e['engine']}={e['pool']}" for e in replica["engines"])
    ready = "" if replica["ready"] else " (not Ready)"
    moving = f" (moving: {replica['moving']})" if replica["moving"] else ""
    return f"{replica['cluster']}/{replica['index']} {engines}{ready}{moving}"


def _project(step: dict[str, Any]) -> dict[str, Any]:
    """A step of `-o json` in the expected files' form."""
    nodes = step["modes"]["declared"]
    assert nodes["converged"], f"step {step['index']} did not settle"
    return (
        {
            "step": step["index"],
            "passes": nodes["passes"],
            "replicas": {
                d["deployment"]: sorted(_replica(r) for r in d["replicas"])
                for d in nodes["deployments"]
            },
            "moves": [
                f"{m['deployment']}: {m['from']} -> {m['to']} ({m['reason']})"
                for m in nodes["moves"]
            ],
            "shortfalls": [
                {
                    "deployment": s["deployment"],
                    "placed": s["placed"],
                    "wanted": s["wanted"],
                    "reason": s["reason"],
                    "clusters": {c["cluster"]: c["reasons"] for c in s["clusters"]},
                }
                for s in nodes["shortfalls"]
            ],
            "pools": _pools(nodes),
        }
        | _overcommitted(nodes)
        | ({"rollout": [_rollout(r) for r in nodes["rollout"]]} if nodes.get("rollout") else {})
    )


def _rollout(row: dict[str, Any]) -> str:
    """A rollout pass as ``pass N: updated/old/unavailable/ready Progressing``."""
    counts = f"{row['updated']}/{row['old']}/{row['unavailable']}/{row['ready']}"
    return f"pass {row['pass']}: {counts} {row['progressing']}"


def _overcommitted(mode: dict[str, Any]) -> dict[str, Any]:
    """Pools that do not admit all they run, with whom (as ``cluster/index``), if any."""
    where = {
        r["name"]: f"{r['cluster']}/{r['index']}"
        for d in mode["deployments"]
        for r in d["replicas"]
    }
    found = {
        f"{p['cluster']}/{p['pool']}": [where.get(n, n) for n in p["overcommitted"]]
        for p in mode["pools"]
        if p.get("overcommitted")
    }
    return {"overcommitted": found} if found else {}


def _pools(mode: dict[str, Any]) -> dict[str, str]:
    """Pools as ``used/nodes``, and where pods share nodes ``(claimed/devices devices)``;
    a pool that observes fewer nodes than it declares adds ``(N declared)``."""
    return {
        f"{p['cluster']}/{p['pool']}": f"{p['used']}/{p['nodes']}"
        + (f" ({p['devicesUsed']}/{p['devices']} devices)" if p["capacity"] == "Devices" else "")
        + (f" ({p['declared']} declared)" if p.get("declared") else "")
        + (" (draining)" if p.get("draining") else "")
        for p in mode["pools"]
    }


def _placed(mode: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Placed replicas per deployment and cluster."""
    placed: dict[str, dict[str, int]] = {}
    for d in mode["deployments"]:
        for r in d["replicas"]:
            counts = placed.setdefault(d["deployment"], {})
            counts[r["cluster"]] = counts.get(r["cluster"], 0) + 1
    return placed


def _expected(name: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = yaml.safe_load((EXPECTED / f"{name}.yaml").read_text())["steps"]
    for step in steps:
        step["replicas"] = {d: sorted(r) for d, r in step["replicas"].items()}
    return steps


@pytest.mark.parametrize("name", NAMES)
def test_example_places_as_the_rules_say(name: str) -> None:
    data = simulate_data(str(EXAMPLES / f"{name}.yaml"))
    assert data["converged"] is True
    got = [_project(step) for step in data["steps"]]
    assert got == _expected(name)


@pytest.mark.parametrize("name", NAMES)
def test_replica_names_are_the_functions_names(name: str) -> None:
    data = simulate_data(str(EXAMPLES / f"{name}.yaml"))
    for step in data["steps"]:
        for deployment in step["modes"]["declared"]["deployments"]:
            short = deployment["deployment"].split("/", 1)[1]
            for r in deployment["replicas"]:
                assert r["name"] == naming.replica_name(short, r["cluster"], r["index"])


@pytest.mark.parametrize("name", NAMES)
def test_pool_use_adds_up_to_the_placed_replicas(name: str) -> None:
    data = simulate_data(str(EXAMPLES / f"{name}.yaml"))
    for step in data["steps"]:
        nodes = step["modes"]["declared"]
        charged: dict[tuple[str, str], int] = {}
        for deployment in nodes["deployments"]:
            for r in deployment["replicas"]:
                for e in r["engines"]:
                    key = (r["cluster"], e["pool"])
                    charged[key] = charged.get(key, 0) + e["nodes"]
        for pool in nodes["pools"]:
            assert pool["free"] == pool["nodes"] - pool["used"]
            if pool["capacity"] == "Devices":
                # Pods share nodes: a node is used once a pod sits there; devices add up.
                pods = charged.get((pool["cluster"], pool["pool"]), 0)
                assert min(pods, 1) <= pool["used"] <= min(pods, pool["nodes"])
                assert pool["devicesUsed"] == sum(pool["byDeployment"].values())
                continue
            assert pool["used"] == charged.get((pool["cluster"], pool["pool"]), 0)
            assert pool["used"] == sum(pool["byDeployment"].values())


COMPARED = [
    p.stem for p in sorted(EXPECTED.glob("*.yaml")) if "compare" in yaml.safe_load(p.read_text())
]


def test_some_example_compares_capacity_modes() -> None:
    assert "gpu-sharing" in COMPARED


@pytest.mark.parametrize("name", COMPARED)
def test_compared_capacity_places_as_the_rules_say(name: str) -> None:
    data = simulate_data(str(EXAMPLES / f"{name}.yaml"), "--compare-capacity")
    assert data["modes"] == ["nodes", "devices"]
    expected = yaml.safe_load((EXPECTED / f"{name}.yaml").read_text())["compare"]
    for mode in ("nodes", "devices"):
        got = [
            {
                "step": s["index"],
                "placed": _placed(s["modes"][mode]),
                "pools": _pools(s["modes"][mode]),
            }
            for s in data["steps"]
        ]
        assert got == expected[mode], mode
