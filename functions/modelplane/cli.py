"""The ``modelplane`` command: tools for platform teams, offline.

``modelplane plan DEPLOYMENT [FLEET]...`` answers "where would this deployment's
replicas land, and why not elsewhere?" from YAML alone: a ModelDeployment manifest and
the fleet (InferenceClusters with their status, the existing ModelReplicas, and the
ModelCache the deployment references). It runs the same reading and scheduling code as
the ModelDeployment function, so its answer is the function's answer.

New subcommands are new functions decorated with ``@main.command()``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pydantic
import yaml

from modelplane import cli_output, planning
from modelplane.cli_output import output_option
from modelplane.dev import checks, validate
from modelplane.domain import naming
from modelplane.domain.conditions import Condition
from modelplane.domain.scheduling import explain
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import NotSelected, Placement
from modelplane.models.modeldeployment import ModelDeployment
from modelplane.simulate.command import simulate as simulate_command

YAML_SUFFIXES = (".yaml", ".yml")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Modelplane's offline tools."""


@main.command()
@click.argument("deployment", type=click.Path(exists=True, path_type=Path))
@click.argument("fleet", nargs=-1, type=click.Path(exists=True, path_type=Path))
@output_option("plan")
@click.option("--name", help="Which ModelDeployment to plan, when DEPLOYMENT holds several.")
def plan(deployment: Path, fleet: tuple[Path, ...], output: str, name: str | None) -> None:
    """Show where a ModelDeployment's replicas would be placed on a fleet.

    DEPLOYMENT is a file or folder holding the ModelDeployment; FLEET are files or
    folders (read recursively) holding InferenceClusters with status, ModelReplicas and
    ModelCaches. Other documents in DEPLOYMENT count as fleet too. A DEPLOYMENT folder
    is read as ``make render`` reads it: its own ``*.yaml`` files (sub-folders are other
    variants, such as the docs' per-cloud tabs) and its ``fleet/``, whose documents
    stand in for the ones they observe.
    """
    documents = load_deployment(deployment)
    fleet_documents = [d for path in fleet for d in load(path)]
    inputs = _located_deployment(deployment) + _located(fleet)
    cli_output.require_valid(inputs)
    _one_per_name(_located_deployment(deployment), name)
    xr = pick_deployment(documents, name)
    result = make_plan(xr, [d for d in documents if d is not xr] + fleet_documents)
    cli_output.echo(output, result.as_data, result.as_table, sort_keys=False)


def load(path: Path) -> list[dict[str, Any]]:
    """Load every YAML document of a file, or of every YAML file under a folder.

    Raises:
        click.ClickException: a file is not valid YAML.
    """
    files = (
        sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())
        if path.is_dir()
        else [path]
    )
    documents: list[dict[str, Any]] = []
    for file in files:
        try:
            documents.extend(d for d in yaml.safe_load_all(file.read_text()) if isinstance(d, dict))
        except yaml.YAMLError as exc:
            msg = f"{file}: not valid YAML: {exc}"
            raise click.ClickException(msg) from exc
    return documents


def _located(paths: Iterable[Path], *, recursive: bool = True) -> list[checks.Located]:
    try:
        return checks.located(paths, recursive=recursive)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc


def _located_deployment(path: Path) -> list[checks.Located]:
    """The documents :func:`load_deployment` reads, with their files."""
    own = _located([path], recursive=False)
    return own + (_located([path / "fleet"]) if (path / "fleet").is_dir() else [])


def _one_per_name(documents: Sequence[checks.Located], name: str | None) -> None:
    """Refuse a ``--name`` that several files of DEPLOYMENT define, naming the files.

    A docs recipe may hold variants of one deployment (``model-deployment.yaml`` and
    ``model-deployment-sglang.yaml``, both ``laguna``): the file then says which.
    """
    if name is None:
        return
    files = [
        one.where
        for one in documents
        if one.document.get("kind") == "ModelDeployment"
        and (one.document.get("metadata") or {}).get("name") == name
    ]
    if len(files) > 1:
        msg = (
            f"several ModelDeployments are named {name} ({'; '.join(files)}): pass one "
            "file as DEPLOYMENT and the folder as FLEET"
        )
        raise click.ClickException(msg)


def load_deployment(path: Path) -> list[dict[str, Any]]:
    """Load DEPLOYMENT: a file, or a folder's own ``*.yaml`` files overlaid by its ``fleet/``.

    Raises:
        click.ClickException: a file is not valid YAML.
    """
    if not path.is_dir():
        return load(path)
    own = [d for file in sorted(path.glob("*.y*ml")) if file.is_file() for d in load(file)]
    fleet = load(path / "fleet") if (path / "fleet").is_dir() else []
    observed = {_identity(d): d for d in fleet}
    merged = [observed.pop(_identity(d), d) for d in own]
    return merged + list(observed.values())


def _identity(doc: dict[str, Any]) -> tuple[str, str, str]:
    meta = doc.get("metadata") or {}
    return (str(doc.get("kind")), str(meta.get("namespace", "")), str(meta.get("name", "")))


def pick_deployment(documents: Sequence[dict[str, Any]], name: str | None) -> dict[str, Any]:
    """Return the one ModelDeployment to plan.

    Raises:
        click.ClickException: none, or several and no (matching) ``--name``.
    """
    found = [d for d in documents if d.get("kind") == "ModelDeployment"]
    if name is not None:
        found = [d for d in found if (d.get("metadata") or {}).get("name") == name]
    if len(found) == 1:
        return found[0]
    if not found:
        msg = "no ModelDeployment" + (f" named {name}" if name else "") + " in DEPLOYMENT"
        raise click.ClickException(msg)
    names = ", ".join(sorted(str((d.get("metadata") or {}).get("name")) for d in found))
    msg = f"DEPLOYMENT holds several ModelDeployments ({names}); choose one with --name"
    raise click.ClickException(msg)


@dataclass(frozen=True)
class Plan:
    """A placement with what is needed to print it."""

    deployment: Deployment
    placement: Placement
    scheduled: Condition

    def as_data(self) -> dict[str, Any]:
        """The plan as plain data, for ``-o json`` and ``-o yaml``."""
        dep, placement = self.deployment, self.placement
        scheduled = self.scheduled
        return {
            "deployment": f"{dep.namespace}/{dep.name}",
            "wanted": max(dep.replicas, 0),
            "placed": len(placement.replicas),
            "scheduled": {
                "status": scheduled.status,
                "reason": scheduled.reason,
                "message": scheduled.message,
            },
            "replicas": [
                {
                    "name": naming.replica_name(dep.name, r.cluster, r.index),
                    "cluster": r.cluster,
                    "index": r.index,
                    "new": r.new,
                    "engines": [
                        {"engine": e.engine, "pool": e.pool, "nodes": e.nodes}
                        for e in r.engines or ()
                    ]
                    if r.engines is not None
                    else None,
                }
                for r in placement.replicas
            ],
            "removed": [
                {
                    "name": d.name,
                    "cluster": d.cluster,
                    "index": d.index,
                    "reason": explain.drop_reason(d.reason),
                }
                for d in placement.dropped
            ],
            "pools": [
                {
                    "cluster": p.cluster,
                    "pool": p.pool,
                    "nodes": p.nodes,
                    "freeBefore": p.free_before,
                    "freeAfter": p.free_after,
                }
                for p in placement.pools
            ],
            "passedOver": [
                {"cluster": p.cluster, "reasons": [explain.cluster_reason(r) for r in p.reasons]}
                for p in placement.passed_over
            ],
        }

    def as_table(self) -> str:
        """The plan for people: replicas, removals, pools and passed-over clusters."""
        data = self.as_data()
        lines = [f"{data['deployment']}: {data['scheduled']['message']}", ""]
        replicas = [
            [r["name"], r["cluster"], str(r["index"]), _pools(r["engines"]), _status(r["new"])]
            for r in data["replicas"]
        ]
        lines += _table(["REPLICA", "CLUSTER", "INDEX", "POOLS", "STATUS"], replicas)
        removed = [[d["name"], d["cluster"], str(d["index"]), d["reason"]] for d in data["removed"]]
        if removed:
            lines += ["", *_table(["REMOVED", "CLUSTER", "INDEX", "WHY"], removed)]
        shown = self._clusters_worth_showing()
        pools = [
            [p["cluster"], p["pool"], str(p["nodes"]), str(p["freeBefore"]), str(p["freeAfter"])]
            for p in data["pools"]
            if p["cluster"] in shown
        ]
        lines += ["", *_table(["CLUSTER", "POOL", "NODES", "FREE BEFORE", "FREE AFTER"], pools)]
        used = {r["cluster"] for r in data["replicas"]}
        passed = [
            [p["cluster"], "; ".join(p["reasons"])]
            for p in data["passedOver"]
            if p["cluster"] not in used
        ]
        if passed:
            lines += ["", *_table(["PASSED OVER", "WHY"], passed)]
        return "\n".join(lines) + "\n"

    def _clusters_worth_showing(self) -> set[str]:
        """Every cluster the deployment may use: those its clusterSelector does not exclude."""
        excluded = {
            p.cluster
            for p in self.placement.passed_over
            if any(isinstance(r, NotSelected) for r in p.reasons)
        }
        return {p.cluster for p in self.placement.pools} - excluded


def make_plan(xr: dict[str, Any], fleet: Iterable[dict[str, Any]]) -> Plan:
    """Plan a ModelDeployment manifest on a fleet of documents, as the function would.

    Raises:
        click.ClickException: the ModelDeployment does not validate.
    """
    try:
        model = ModelDeployment.model_validate(xr)
        deployment = planning.read_deployment(model, xr)
    except (pydantic.ValidationError, ValueError) as exc:
        msg = f"cannot read the ModelDeployment: {exc}"
        raise click.ClickException(msg) from exc
    documents = list(fleet)
    name = planning.cache_name(model)
    caches = [
        planning.as_struct(d)
        for d in documents
        if d.get("kind") == "ModelCache"
        and (d.get("metadata") or {}).get("name") == name
        and (d.get("metadata") or {}).get("namespace", deployment.namespace) == deployment.namespace
    ]
    planned = planning.plan(
        deployment,
        planning.read_cache(name, True, caches),
        [d for d in documents if d.get("kind") == "InferenceCluster"],
        [d for d in documents if d.get("kind") == "ModelReplica"],
    )
    return Plan(deployment, planned.placement, planned.scheduled)


def _status(new: bool) -> str:
    return "new" if new else "retained"


def _pools(engines: list[dict[str, Any]] | None) -> str:
    if engines is None:
        return "(unchanged)"
    return ",".join(f"{e['engine']}={e['pool']}" for e in engines)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=False)]
    return [
        "   ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
        for row in [header, *rows]
    ]


@main.command(name="validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def validate_command(paths: tuple[Path, ...]) -> None:
    """Check Modelplane manifests against the XRDs, as the API server would.

    PATHS are files or folders (read recursively). Every document of a Modelplane API
    group is checked with one `crank beta validate` run: types, enums, required fields,
    bounds, patterns, the XRDs' CEL rules, and unknown fields (which the API server
    would silently drop). A kind no XRD defines is an error. Documents of other groups
    are skipped. Exits 1 when there is a problem.
    """
    inputs = _located(paths)
    try:
        problems = checks.check(inputs)
    except checks.ChecksUnavailableError as exc:
        raise click.ClickException(str(exc)) from None
    for problem in problems:
        click.echo(problem)
    ours = len([one for one in inputs if validate.is_modelplane(one.document)])
    click.echo(f"{ours} Modelplane documents checked, {len(problems)} problems", err=True)
    if not ours:
        msg = f"nothing to validate: none of the {len(inputs)} documents is a Modelplane kind"
        raise click.ClickException(msg)
    if problems:
        sys.exit(1)


# `modelplane simulate`: what-if planning over a timeline (modelplane.simulate).
main.add_command(simulate_command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
