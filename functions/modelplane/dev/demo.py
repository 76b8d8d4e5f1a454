"""``make demo``: the getting-started tour, reconciled until it settles, then its tree.

``python -m modelplane.dev.demo [FLEET]`` applies an example fleet (default
``getting-started``: the docs' tour, the EKS tab) to a mini control plane
(:mod:`modelplane.dev.loop`) and reconciles it pass after pass, as Crossplane would:
every composite through Crossplane's own composite reconciler (``crossplane internal
render``) and Modelplane's functions over gRPC, with fake providers standing in for
the clouds, Helm and the workload clusters. It prints one line per pass, then the
tree of what runs once a pass changes nothing (``crossplane beta trace`` style): the
InferenceCluster Ready with its pools and gateway, the replica placed and Ready, the
ModelService routing at its address. What was faked is said at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev import render, tree
from modelplane.dev.fakes.base import Key, describe
from modelplane.dev.loop import apis, fleets, harness, records

DEFAULT_FLEET = "getting-started"
MAX_PASSES = 12
FAKED = """\
What was real and what was faked:
  real   Crossplane's composite reconciler (crossplane internal render, in memory), the
         XRDs and Compositions of apis/, every Modelplane function over gRPC, the
         scheduler's placement, and the fake API server's admission of names and labels.
  faked  the providers and controllers that report on composed resources (AWS, GCP,
         Azure, Vultr and Nebius managed resources Ready; Helm releases deployed; Objects
         applied on the workload cluster with the status their kind would have there:
         Deployments Available, the Gateway Programmed at an address); the clouds, the
         GPUs and the model server do not exist, and the addresses are made up.
"""


def _line(record: records.PassRecord, plane: harness.ControlPlane, seconds: float) -> str:
    composites = plane.composites()
    ready = sum(1 for k in composites if plane.ready(k))
    changed = len(record.appeared) + len(record.changed) + len(record.disappeared)
    what = "nothing changed: settled" if record.quiet else f"{changed} objects changed"
    return (
        f"  pass {record.number:>2}  {ready:>2} of {len(composites)} composites Ready, "
        f"{len(plane.store)} objects, {what} ({seconds:.0f}s)"
    )


def renders(plane: harness.ControlPlane) -> list[list[dict[str, Any]]]:
    """Each composite with what it composes, as :func:`modelplane.dev.tree.format_tree` takes."""
    return [
        [plane.get(k), *(plane.get(c) for c in plane.composed_by(k))] for k in plane.composites()
    ]


def facts(plane: harness.ControlPlane) -> list[str]:
    """The tour's outcome in a few lines: where the model runs and where it answers."""
    out = []
    for key in plane.find("InferenceCluster"):
        status = plane.get(key).get("status") or {}
        pools = ", ".join(str(p.get("name")) for p in status.get("gpuPools") or [])
        address = (status.get("gateway") or {}).get("address", "none")
        out.append(f"  {describe(key)}: {_ready(plane, key)}, pools {pools}, gateway {address}")
    for key in plane.find("ModelReplica"):
        labels = (plane.get(key).get("metadata") or {}).get("labels") or {}
        cluster = labels.get("modelplane.ai/cluster", "?")
        out.append(f"  {describe(key)}: {_ready(plane, key)}, placed on {cluster}")
    for key in plane.find("ModelService"):
        status = plane.get(key).get("status") or {}
        where = status.get("url") or status.get("address") or "no address"
        out.append(f"  {describe(key)}: {_ready(plane, key)}, routing at {where}")
    return out


def yaml_text(plane: harness.ControlPlane) -> str:
    """Every object of the control plane as YAML, each document starting with ``---``."""
    docs = [render.tidy(plane.get(k)) for k in sorted(plane.store)]
    return yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)


def _ready(plane: harness.ControlPlane, key: Key) -> str:
    return "Ready" if plane.ready(key) else "NOT Ready"


def run(fleet_name: str, max_passes: int) -> tuple[harness.ControlPlane, bool]:
    """Reconcile the fleet until a pass changes nothing; print a line per pass."""
    fleet = fleets.BY_NAME[fleet_name]
    with render.serve() as functions, apis.deep_messages():
        plane = harness.ControlPlane(fleet.documents(), apis.function_targets(functions.address))
        settled = _passes(plane, max_passes)
        if settled and fleet.then:
            print(f"  applying the tour's next step: {', '.join(fleet.then)}", flush=True)
            for doc in fleet.then_documents():
                plane.put(doc)
            settled = _passes(plane, max_passes)
    return plane, settled


def _passes(plane: harness.ControlPlane, max_passes: int) -> bool:
    for _ in range(max_passes):
        started = time.monotonic()
        record = plane.run_pass()
        print(_line(record, plane, time.monotonic() - started), flush=True)
        for key, message in [*record.fatal.items(), *record.errors.items()]:
            print(f"    {describe(key)}: {message}", flush=True)
        if record.quiet:
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Play the fleet until it settles; print the tree; exit 1 if it did not settle Ready."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet", nargs="?", default=DEFAULT_FLEET, choices=sorted(fleets.BY_NAME))
    parser.add_argument("--max-passes", type=int, default=MAX_PASSES)
    parser.add_argument(
        "--yaml-file", type=Path, metavar="FILE", help="also write every object, as YAML, to FILE"
    )
    args = parser.parse_args(argv)
    print(
        f"  demo   applying the {args.fleet} fleet to a control plane in memory: Crossplane's\n"
        "         reconciler and Modelplane's functions, fake providers; one line per pass",
        flush=True,
    )
    try:
        plane, settled = run(args.fleet, args.max_passes)
    except render.RenderError as err:
        print(f"demo: {err}", file=sys.stderr)
        return 1
    print()
    print(tree.format_tree(renders(plane)))
    print("Where it ended up:")
    print("\n".join(facts(plane)))
    print()
    print(FAKED, end="")
    if args.yaml_file is not None:
        args.yaml_file.parent.mkdir(parents=True, exist_ok=True)
        args.yaml_file.write_text(yaml_text(plane))
        print(f"Every object of the control plane, as YAML: {args.yaml_file}")
    unready = plane.unready()
    if not settled:
        print(f"demo: still changing after {args.max_passes} passes", file=sys.stderr)
    if unready:
        print("demo: not Ready: " + ", ".join(describe(k) for k in unready), file=sys.stderr)
    return 0 if settled and not unready else 1


if __name__ == "__main__":
    sys.exit(main())
