"""Shared helpers for the `modelplane simulate` tests: running it, and small fleets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result
from modelplane.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "simulate"
EXPECTED = Path(__file__).parent / "expected"
MD = "modelplane.ai/v1alpha1"


def simulate(*args: str) -> Result:
    """Run `modelplane simulate` in process, on the simulator's own reading alone.

    These tests write small hypothetical fleets (a cluster with status only, a pod
    template without an ``engine`` container) to exercise the simulator itself; the XRD
    check in front of it (``--validate``, the default) is tested in tests/dev/test_checks.py.
    """
    return CliRunner().invoke(main, ["simulate", "--no-validate", *args])


def simulate_data(*args: str) -> dict[str, Any]:
    """Run `modelplane simulate -o json` and return its data; it must succeed."""
    result = simulate(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def write_scenario(
    where: Path, fleet: list[dict[str, Any]], timeline: list[dict[str, Any]], **extra: Any
) -> Path:
    """Write a scenario file and return its path."""
    path = where / "scenario.yaml"
    doc = {"kind": "Scenario", "name": "test", **extra, "fleet": fleet, "timeline": timeline}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def gpu_class(name: str = "a100", memory: str = "40960Mi") -> dict[str, Any]:
    """An InferenceClass of one-GPU nodes."""
    return {
        "apiVersion": MD,
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {
            "devices": [
                {
                    "name": "gpu",
                    "claim": "DRA",
                    "driver": "gpu.nvidia.com",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": 1,
                    "capacity": {"memory": {"value": memory}},
                }
            ]
        },
    }


def cluster(
    name: str, pools: dict[str, int], class_name: str = "a100", **labels: str
) -> dict[str, Any]:
    """An InferenceCluster with pools of ``class_name`` (name -> nodes); healthy (no status)."""
    return {
        "apiVersion": MD,
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": {f"modelplane.ai/{k}": v for k, v in labels.items()}},
        "spec": {
            "cluster": {"source": "Existing"},
            "nodePools": [
                {"name": pool, "className": class_name, "nodeCount": nodes}
                for pool, nodes in pools.items()
            ],
        },
    }


def deployment(name: str, replicas: int, memory: str = "35Gi", **spec: Any) -> dict[str, Any]:
    """A one-engine ModelDeployment (engine ``qwen``) wanting a GPU of ``memory``."""
    cel = f'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("{memory}")) >= 0'
    return {
        "apiVersion": MD,
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "replicas": replicas,
            "template": {
                "spec": {
                    **spec,
                    "engines": [
                        {
                            "name": "qwen",
                            "members": [
                                {
                                    "role": "Standalone",
                                    "nodeSelector": {
                                        "devices": [
                                            {"name": "gpu", "count": 1, "selectors": [{"cel": cel}]}
                                        ]
                                    },
                                    "template": {
                                        "spec": {"containers": [{"name": "e", "image": "vllm"}]}
                                    },
                                }
                            ],
                        }
                    ],
                }
            },
        },
    }


def step(data: dict[str, Any], index: int) -> dict[str, Any]:
    """The ``declared`` mode (pools counted as declared) of one step of a run's data."""
    found: dict[str, Any] = data["steps"][index]["modes"]["declared"]
    return found


def placed(data: dict[str, Any], index: int) -> dict[str, list[str]]:
    """Each deployment's replicas at a step, as ``cluster/index`` (``+moving`` if moving)."""
    return {
        d["deployment"]: [
            f"{r['cluster']}/{r['index']}" + ("+moving" if r["moving"] else "")
            for r in d["replicas"]
        ]
        for d in step(data, index)["deployments"]
    }
