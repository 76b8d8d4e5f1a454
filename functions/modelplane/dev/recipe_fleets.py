"""Write each docs recipe folder's ``fleet/``: its InferenceClusters as Modelplane runs them.

``python -m modelplane.dev.recipe_fleets`` writes ``examples/recipes/<recipe>/fleet/``;
``--check`` fails when a written file differs from what it would write now.

A recipe declares its platform (InferenceClasses, InferenceClusters) and its model. To
render or plan it offline (``make render EXAMPLE=examples/recipes/qwen3-8b``,
``modelplane plan examples/recipes/qwen3-8b``) the scheduler needs what it reads on a
running platform: each InferenceCluster's status. This module derives that status as
the InferenceCluster function publishes it: ``gpuPools`` from the pools' classes (the
function's own :func:`modelplane.domain.cluster.gpu_pools`), the cache StorageClass of
the cluster's cloud, the provider config named after the cluster, a gateway address and
``Ready``; and the getting-started InferenceGateway ``default`` as it is once ready,
which the recipes' ModelServices route through. Only the address and the timestamps
are made up (203.0.113.0/24 is a
documentation range), as in ``examples/getting-started/fleet/``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from modelplane.domain import cluster as domain
from modelplane.domain.clouds import aks, eks, gke, nebius

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "examples" / "recipes"
STORAGE_CLASSES = {
    "EKS": eks.STORAGE_CLASS,
    "GKE": gke.STORAGE_CLASS,
    "AKS": aks.STORAGE_CLASS,
    "Nebius": nebius.STORAGE_CLASS,
}
SINCE = "2025-01-01T00:00:00Z"
HEADER = """\
# OBSERVED STATE FOR OFFLINE RENDERING - not something a user applies.
#
# The InferenceCluster {name} of ../{file} as it looks once Modelplane has
# provisioned it: the same spec, plus the status the InferenceCluster function
# publishes and the ModelDeployment scheduler reads. Written by
# `python -m modelplane.dev.recipe_fleets`; do not edit by hand. The gateway address
# (a documentation range) and the timestamps are made up.
"""

Doc = dict[str, Any]


def _documents(folder: Path) -> list[tuple[Path, Doc]]:
    return [
        (file, doc)
        for file in sorted(folder.glob("*.yaml"))
        for doc in yaml.safe_load_all(file.read_text())
        if isinstance(doc, dict)
    ]


def _pool(raw: Mapping[str, Any]) -> domain.Pool:
    return domain.Pool(
        name=raw["name"],
        class_name=raw["className"],
        node_count=raw.get("nodeCount", 1),
        min_node_count=raw.get("minNodeCount"),
        max_node_count=raw.get("maxNodeCount"),
        zones=tuple(raw.get("zones") or ()),
        capacity=raw.get("capacity") or "Nodes",
    )


def observed(cluster: Doc, classes: Mapping[str, Mapping[str, Any]], index: int) -> Doc:
    """Return ``cluster`` with the status Modelplane publishes once it is running."""
    name = cluster["metadata"]["name"]
    spec = cluster["spec"]
    pools, _ = domain.gpu_pools([_pool(p) for p in spec["nodePools"]], classes)
    status: Doc = {"gpuPools": pools, "gateway": {"address": f"203.0.113.{10 + index}"}}
    storage = STORAGE_CLASSES.get(spec["cluster"]["source"])
    if storage:
        status["cache"] = {"storageClassName": storage}
    status["providerConfigRef"] = {"name": name}
    status["conditions"] = [
        {"type": t, "status": "True", "reason": r, "lastTransitionTime": SINCE}
        for t, r in (("Synced", "ReconcileSuccess"), ("Ready", "Available"))
    ]
    return {**cluster, "status": status}


def fleet_files(folder: Path) -> dict[Path, str]:
    """Return the ``fleet/`` files of one recipe folder, by path, and their text."""
    docs = _documents(folder)
    classes = {d["metadata"]["name"]: d["spec"] for _, d in docs if d["kind"] == "InferenceClass"}
    clusters = [(f, d) for f, d in docs if d["kind"] == "InferenceCluster"]
    out: dict[Path, str] = {}
    for index, (file, cluster) in enumerate(clusters):
        name = cluster["metadata"]["name"]
        text = HEADER.format(name=name, file=file.name)
        body = yaml.safe_dump(observed(cluster, classes, index), sort_keys=False)
        out[folder / "fleet" / f"inference-cluster-{name}.yaml"] = text + body
    return {**out, **_gateway_file(folder, docs)}


GATEWAY = ROOT / "examples" / "getting-started" / "fleet" / "inference-gateway.yaml"
GATEWAY_HEADER = """\
# OBSERVED STATE FOR OFFLINE RENDERING - not something a user applies.
#
# The recipes run on the platform of the getting-started tour: its InferenceGateway
# default, which every ModelService routes through, as it looks once ready. A copy of
# examples/getting-started/fleet/inference-gateway.yaml without its comments, written
# by `python -m modelplane.dev.recipe_fleets`; do not edit by hand.
"""


def _gateway_file(folder: Path, docs: list[tuple[Path, Doc]]) -> dict[Path, str]:
    """The getting-started gateway, when the recipe routes a ModelService and has none."""
    kinds = {d["kind"] for _, d in docs}
    if "ModelService" not in kinds or "InferenceGateway" in kinds:
        return {}
    gateway = yaml.safe_load(GATEWAY.read_text())
    body = yaml.safe_dump(gateway, sort_keys=False)
    return {folder / "fleet" / "inference-gateway.yaml": GATEWAY_HEADER + body}


def recipe_folders(root: Path = RECIPES) -> list[Path]:
    """Return every recipe folder: the folders under ``root`` that declare a cluster."""
    return [f for f in sorted(root.iterdir()) if f.is_dir() and any(f.glob("inference-cluster*"))]


def everything(folders: Iterable[Path]) -> dict[Path, str]:
    """Return every recipe folder's fleet files."""
    return {path: text for folder in folders for path, text in fleet_files(folder).items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Write the fleets, or with ``--check`` report the ones that differ."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file would change")
    args = parser.parse_args(argv)
    wanted = everything(recipe_folders())
    stale = [p for p, t in wanted.items() if not p.exists() or p.read_text() != t]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python -m {__spec__.name}")
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
