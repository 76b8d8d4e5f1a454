"""A simulation for people: one block of tables per step, in ``modelplane plan``'s style.

Where a run has several capacity modes, the deployment and pool tables get one column
per mode side by side, and every other table a MODE column.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from modelplane.simulate import results as rs


def render(simulation: rs.Simulation) -> str:
    """Every step of a run, as text."""
    head = f"scenario {simulation.name}"
    lines = [head, *([simulation.description] if simulation.description else [])]
    for step in simulation.steps:
        lines += ["", *step_lines(simulation.modes, step)]
    if not simulation.converged:
        passes = plural(simulation.max_passes, "reconcile pass")
        lines += ["", f"WARNING: some steps did not settle within {passes}"]
    return "\n".join(lines) + "\n"


def step_lines(modes: Sequence[str], step: rs.StepResult) -> list[str]:
    """One step: its events, how it settled, and its tables."""
    lines = [f"STEP {step.index}: {step.name}"]
    lines += [f"  - {event}" for event in step.events]
    for mode in modes:
        result = step.modes[mode]
        label = f" ({mode})" if len(modes) > 1 else ""
        if result.converged:
            lines.append(f"settled{label} after {plural(result.passes, 'reconcile pass')}")
        else:
            lines.append(f"DID NOT SETTLE{label} within {plural(result.passes, 'reconcile pass')}")
    lines += ["", *_deployments(modes, step)]
    sections = (_changes(modes, step), _rollout(modes, step), _moves(modes, step))
    for section in (*sections, _shortfalls(modes, step)):
        if section:
            lines += ["", *section]
    lines += ["", *_pools(modes, step)]
    return lines


def _suffix(modes: Sequence[str], mode: str) -> str:
    return f" ({mode})" if len(modes) > 1 else ""


def _deployments(modes: Sequence[str], step: rs.StepResult) -> list[str]:
    header = ["DEPLOYMENT", "WANTED"]
    for mode in modes:
        header += [
            f"PLACED{_suffix(modes, mode)}",
            f"READY{_suffix(modes, mode)}",
            f"SCHEDULED{_suffix(modes, mode)}",
            f"WHERE{_suffix(modes, mode)}",
        ]
    first = step.modes[modes[0]]
    rows = []
    for i, record in enumerate(first.deployments):
        row = [record.deployment, str(record.wanted)]
        for mode in modes:
            other = step.modes[mode].deployments[i]
            row += [str(other.placed), str(other.ready), other.scheduled.reason, _where(other)]
        rows.append(row)
    if not rows:
        return ["(no ModelDeployments)"]
    return table(header, rows)


def _where(record: rs.DeploymentRecord) -> str:
    """``a (2), b`` for placed replicas, and ``c (moving)`` for those that must move."""
    counts = Counter((r.cluster, bool(r.moving)) for r in record.replicas)
    parts = []
    for (cluster, moving), n in sorted(counts.items()):
        note = ", ".join([*([str(n)] if n > 1 else []), *(["moving"] if moving else [])])
        parts.append(f"{cluster} ({note})" if note else cluster)
    return ", ".join(parts) or "-"


def _changes(modes: Sequence[str], step: rs.StepResult) -> list[str]:
    rows = [
        [
            *_mode_cell(modes, mode),
            c.change,
            str(c.pass_),
            c.deployment,
            c.replica,
            c.cluster,
            c.reason or "-",
        ]
        for mode in modes
        for c in step.modes[mode].changes
    ]
    header = [*_mode_header(modes), "CHANGE", "PASS", "DEPLOYMENT", "REPLICA", "CLUSTER", "WHY"]
    return table(header, rows) if rows else []


def _rollout(modes: Sequence[str], step: rs.StepResult) -> list[str]:
    """A rolling update pass by pass: replicas on the current template, on an old one, down."""
    rows = [
        [
            *_mode_cell(modes, mode),
            str(r.pass_),
            r.deployment,
            str(r.updated),
            str(r.old),
            str(r.unavailable),
            str(r.ready),
            r.progressing,
        ]
        for mode in modes
        for r in step.modes[mode].rollout
    ]
    header = [*_mode_header(modes), "ROLLOUT PASS", "DEPLOYMENT", "UPDATED", "OLD"]
    header += ["UNAVAILABLE", "READY", "PROGRESSING"]
    return table(header, rows) if rows else []


def _moves(modes: Sequence[str], step: rs.StepResult) -> list[str]:
    rows = [
        [
            *_mode_cell(modes, mode),
            m.deployment,
            m.replica,
            m.source,
            m.target or "(nowhere)",
            m.reason,
        ]
        for mode in modes
        for m in step.modes[mode].moves
    ]
    header = [*_mode_header(modes), "MOVED", "REPLICA", "FROM", "TO", "WHY"]
    return table(header, rows) if rows else []


def _shortfalls(modes: Sequence[str], step: rs.StepResult) -> list[str]:
    rows = [
        [*_mode_cell(modes, mode), s.deployment, f"{s.placed}/{s.wanted}", s.reason, s.message]
        for mode in modes
        for s in step.modes[mode].shortfalls
    ]
    header = [*_mode_header(modes), "SHORT", "PLACED", "REASON", "WHY"]
    return table(header, rows) if rows else []


def _pools(modes: Sequence[str], step: rs.StepResult) -> list[str]:
    """Each pool's nodes used and free per mode; where pods share nodes, with its devices."""
    header = ["CLUSTER", "POOL", "NODES"]
    for mode in modes:
        header += [f"USED{_suffix(modes, mode)}", f"FREE{_suffix(modes, mode)}"]
    header += [f"USED BY{_suffix(modes, mode)}" for mode in modes]
    first = step.modes[modes[0]]
    rows = []
    for i, pool in enumerate(first.pools):
        nodes = f"{pool.nodes} ({pool.declared} declared)" if pool.declared else str(pool.nodes)
        row = [pool.cluster, f"{pool.pool} (draining)" if pool.draining else pool.pool, nodes]
        found = [step.modes[mode].pools[i] for mode in modes]
        for other in found:
            shared = f" ({other.devices_used}/{other.devices} devices)" if other.devices else ""
            row += [f"{other.used}{shared}", _free(other)]
        for other in found:
            unit = " devices" if other.capacity == "Devices" else ""
            row.append(", ".join(f"{d}={n}{unit}" for d, n in other.by_deployment) or "-")
        rows.append(row)
    if not rows:
        return ["(no published pools)"]
    return table(header, rows)


def _free(pool: rs.PoolUse) -> str:
    """Free nodes; an over-committed pool says so, and whom it does not admit."""
    if not pool.overcommitted and pool.free >= 0:
        return str(pool.free)
    who = ", ".join(pool.overcommitted)
    return f"over-committed ({who} not admitted)" if who else "over-committed"


def _mode_header(modes: Sequence[str]) -> list[str]:
    return ["MODE"] if len(modes) > 1 else []


def _mode_cell(modes: Sequence[str], mode: str) -> list[str]:
    return [mode] if len(modes) > 1 else []


def plural(count: int, noun: str) -> str:
    """``1 reconcile pass``, ``2 reconcile passes``."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}es" if noun.endswith("s") else f"{count} {noun}s"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, three spaces apart (``kubectl get``'s look)."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=False)]
    return [
        "   ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
        for row in [header, *rows]
    ]
