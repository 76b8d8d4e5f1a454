"""The ``modelplane simulate`` command: read a scenario, run it, print or report it."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

import click

from modelplane import cli_output
from modelplane.cli_output import output_option
from modelplane.simulate import engine, table
from modelplane.simulate import results as rs
from modelplane.simulate import scenario as sc
from modelplane.simulate.results import Simulation

# Progress shows on a terminal, or anywhere once a run has taken this long.
PROGRESS_AFTER_SECONDS = 1.0


@click.command()
@click.argument("scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@output_option("run")
@click.option(
    "--report",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write a self-contained HTML report (charts included) to this file.",
)
@click.option(
    "--max-passes",
    type=click.IntRange(1, 1000),
    default=engine.DEFAULT_MAX_PASSES,
    show_default=True,
    help="Reconcile passes a step may take to settle before it is reported as not settling.",
)
@click.option(
    "--compare-capacity",
    is_flag=True,
    help=(
        "Run every step twice and show both side by side: every pool charged whole nodes "
        "per pod (nodes), and every pool letting pods share a node's devices (devices)."
    ),
)
@click.option(
    "--validate/--no-validate",
    default=True,
    show_default=True,
    help=(
        "Check the scenario's Modelplane documents against the XRDs first, as the API "
        "server would (like kubectl's --validate). --no-validate plays a hypothetical "
        "fleet the API server would refuse."
    ),
)
def simulate(
    scenario: Path,
    output: str,
    report: Path | None,
    max_passes: int,
    compare_capacity: bool,
    validate: bool,
) -> None:
    """Play a fleet's timeline through the scheduler and show where everything lands.

    SCENARIO is a YAML file: a fleet (InferenceClasses, InferenceClusters, ModelDeployments,
    ModelCaches, ModelReplicas) and a timeline of events (apply, delete, editDeployment,
    taint, untaint, addPool, removePool, setPoolNodes, setClusterReady). Each step's
    events are applied, then every deployment is reconciled, pass after pass, with the
    ModelDeployment function's own code until nothing changes. See examples/simulate/.

    Pools are counted as each InferenceCluster declares (spec.nodePools[].capacity:
    Nodes, the default, or Devices); --compare-capacity shows what GPU sharing would
    change.
    """
    try:
        loaded = sc.load(scenario)
        if validate:
            _require_valid(scenario, loaded)
        progress = _Progress(sys.stderr)
        modes = rs.COMPARED if compare_capacity else rs.MODES
        result = engine.simulate(loaded, max_passes=max_passes, progress=progress, modes=modes)
        progress.done()
    except sc.ScenarioError as exc:
        raise click.ClickException(str(exc)) from None
    if report is not None:
        _write_report(result, report)
    cli_output.echo(output, result.as_data, lambda: table.render(result), sort_keys=True)
    if report is not None:
        click.echo(f"report written to {report}", err=True)
    if not result.converged:
        passes = table.plural(max_passes, "reconcile pass")
        click.echo(f"warning: some steps did not settle within {passes}", err=True)


def _require_valid(path: Path, loaded: sc.Scenario) -> None:
    """Check the scenario's Modelplane documents (fleet and applied) against the XRDs."""
    from modelplane.dev.checks import Located  # noqa: PLC0415

    documents = [Located(f"{path}: {where}", doc) for where, doc in loaded.fleet]
    for step in loaded.steps:
        for located in step.events:
            if isinstance(located.event, sc.Apply):
                where = f"{path}: {located.where}"
                documents += [Located(where, d) for d in located.event.documents]
    cli_output.require_valid(documents)


def _write_report(result: Simulation, path: Path) -> None:
    from modelplane.simulate import report  # noqa: PLC0415 - loaded only for a report

    page = report.render(result)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page)
    except OSError as exc:
        msg = f"cannot write the report to {path}: {exc.strerror or exc}"
        raise click.ClickException(msg) from None


class _Progress:
    """``step 3/7, pass 2`` on stderr: live on a terminal, else once a run takes a while."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._start = time.monotonic()
        self._shown = False
        self._last_step = -1

    def __call__(self, step: int, total: int, pass_: int) -> None:
        slow = time.monotonic() - self._start > PROGRESS_AFTER_SECONDS
        if self._tty:
            self._stream.write(f"\rsimulating: step {step + 1}/{total}, pass {pass_}   ")
            self._stream.flush()
            self._shown = True
        elif slow and step != self._last_step:
            self._stream.write(f"simulating: step {step + 1}/{total}\n")
            self._stream.flush()
        self._last_step = step

    def done(self) -> None:
        """Clear the live line."""
        if self._shown:
            self._stream.write("\r" + " " * 48 + "\r")
            self._stream.flush()
