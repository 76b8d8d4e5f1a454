"""The HTML report of a simulation: one self-contained page, charts included.

The charts are SVG drawn here (:mod:`modelplane.simulate.svg`), so the page has no
script and nothing to fetch: it opens offline, from a file, years later, and weighs
tens of kilobytes. Sections: a summary per step, per-pool use over the timeline,
replicas wanted against placed per deployment, who uses the nodes (a set of charts per
capacity mode), the placement grid (cluster x deployment, per step), and every move
and shortfall with its reason.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from modelplane.simulate import results as rs
from modelplane.simulate import svg
from modelplane.simulate.table import plural

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 1200px; color: #1f2328; padding: 0 1rem; }
h1 { margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: .6rem 0 1.2rem; font-size: .9rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; }
td.gained { background: #dafbe1; } td.lost { background: #ffebe9; }
td.short { background: #fff8c5; }
.muted { color: #656d76; } .bad { color: #cf222e; font-weight: 600; }
"""


def render(simulation: rs.Simulation) -> str:
    """The whole page: tables, and step charts drawn as inline SVG (:mod:`.svg`)."""
    charts = []
    for mode in simulation.modes:
        suffix = f" ({mode})" if len(simulation.modes) > 1 else ""
        charts.append(svg.draw(_pool_chart(simulation, mode, f"Nodes used per pool{suffix}")))
        charts.append(
            svg.draw(_replicas_chart(simulation, mode, f"Replicas wanted and placed{suffix}"))
        )
        charts.append(
            svg.draw(_users_chart(simulation, mode, f"Nodes used per deployment{suffix}"))
        )
    title = html.escape(simulation.name)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>modelplane simulate: {title}</title>",
        f"<style>{_STYLE}{svg.STYLE}</style></head><body>",
        f"<h1>Scenario {title}</h1>",
        f"<p>{html.escape(simulation.description)}</p>" if simulation.description else "",
        *_summary(simulation),
        '<h2 id="pool-use">Pool use over the timeline</h2>',
        '<p class="muted">Each step\'s value holds until the next step. Per pool: nodes in use '
        "(thick, its own dash and marker) against the nodes it has (thin, dotted, same "
        "colour); per deployment: replicas placed (thick) against wanted (thin, dashed). "
        "Series with equal values are drawn a few pixels apart. A red band marks a step "
        "where a deployment is short. Where pods share nodes, a node is in use once any "
        "pod sits on it, and a deployment uses the nodes' worth of the devices its pods "
        "claim. Hover a marker for its value.</p>",
        *charts,
        *_grids(simulation),
        *_moves(simulation),
        *_shortfalls(simulation),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


# Deployments' colours, dashes and markers start here, so they differ from the pools'.
DEPLOYMENT_STYLES = 4

# --- charts -------------------------------------------------------------------------------------


def _labels(simulation: rs.Simulation) -> list[str]:
    return [f"{s.index}: {s.name}" for s in simulation.steps]


def _short_steps(simulation: rs.Simulation, mode: str) -> dict[int, str]:
    """Each step where a deployment is short, and who: for the red bands."""
    out = {}
    for i, step in enumerate(simulation.steps):
        short = step.modes[mode].shortfalls
        if short:
            out[i] = "; ".join(
                f"{s.deployment} {s.placed} of {s.wanted} ({s.reason})" for s in short
            )
    return out


def _pool_chart(simulation: rs.Simulation, mode: str, title: str) -> svg.Chart:
    keys = sorted({(p.cluster, p.pool) for s in simulation.steps for p in s.modes[mode].pools})
    series: list[svg.Series] = []
    for n, (cluster, pool) in enumerate(keys):
        found = [_pool_at(s.modes[mode], cluster, pool) for s in simulation.steps]
        name = f"{cluster} / {pool}"
        tips = [_pool_tip(name, p) if p else f"{name}: not published" for p in found]
        used = [p.used if p else None for p in found]
        nodes = [p.nodes if p else None for p in found]
        series += _against(n, (f"{name} used", used, tips), (f"{name} nodes", nodes), "1 3")
    return _chart(simulation, mode, "pool-use", title, "nodes", series)


def _pool_tip(name: str, pool: rs.PoolUse) -> str:
    """A pool's use at a step; where pods share nodes, with the devices they claim."""
    unit = " devices" if pool.capacity == "Devices" else ""
    text = f"{name}: {pool.used} of {pool.nodes} nodes used"
    if pool.capacity == "Devices":
        text += f"; {pool.devices_used} of {pool.devices} devices claimed (pods share nodes)"
    return text + "".join(f"; {d}: {k}{unit}" for d, k in pool.by_deployment)


def _replicas_chart(simulation: rs.Simulation, mode: str, title: str) -> svg.Chart:
    names = sorted({d.deployment for s in simulation.steps for d in s.modes[mode].deployments})
    series: list[svg.Series] = []
    for n, name in enumerate(names, start=DEPLOYMENT_STYLES):
        found = [_deployment_at(s.modes[mode], name) for s in simulation.steps]
        placed = [d.placed if d else None for d in found]
        tips = [f"{name}: {d.placed} of {d.wanted} placed" if d else "" for d in found]
        wanted = [d.wanted if d else None for d in found]
        series += _against(n, (f"{name} placed", placed, tips), (f"{name} wanted", wanted), "6 4")
    return _chart(simulation, mode, "replicas", title, "replicas", series)


Values = list[int | None]


def _against(
    style: int, measured: tuple[str, Values, list[str]], bound: tuple[str, Values], dash: str
) -> list[svg.Series]:
    """A measured series (with tips) and the bound it is read against: thin, dashed, same color."""
    name, values, tips = measured
    color = svg.COLORS[style % len(svg.COLORS)]
    return [
        svg.Series(name, values, style, tips=tips),
        svg.Series(bound[0], bound[1], style, color=color, dash=dash, thin=True),
    ]


def _chart(
    simulation: rs.Simulation, mode: str, key: str, title: str, unit: str, series: list[svg.Series]
) -> svg.Chart:
    """A chart of the steps of one mode (its id ``<key>-<mode>``)."""
    steps = _short_steps(simulation, mode)
    return svg.Chart(f"{key}-{mode}", title, _labels(simulation), unit, series, steps)


def _deployment_at(result: rs.ModeResult, name: str) -> rs.DeploymentRecord | None:
    return next((d for d in result.deployments if d.deployment == name), None)


def _users_chart(simulation: rs.Simulation, mode: str, title: str) -> svg.Chart:
    totals: list[dict[str, float]] = []
    for step in simulation.steps:
        counts: dict[str, float] = defaultdict(float)
        for pool in step.modes[mode].pools:
            for deployment, used in pool.by_deployment:
                counts[deployment] += _nodes_worth(pool, used)
        totals.append(counts)
    names = sorted({d for c in totals for d in c})
    series = [
        svg.Series(f"{name} nodes", [c.get(name, 0) for c in totals], n)
        for n, name in enumerate(names, start=DEPLOYMENT_STYLES)
    ]
    return svg.Chart(f"deployment-use-{mode}", title, _labels(simulation), "nodes", series)


def _nodes_worth(pool: rs.PoolUse, used: int) -> float:
    """What a deployment uses of a pool in nodes: its nodes, or where pods share nodes,
    its devices over the devices a node has."""
    if pool.capacity != "Devices" or not pool.devices:
        return used
    return round(used * pool.nodes / pool.devices, 3)


def _pool_at(result: rs.ModeResult, cluster: str, pool: str) -> rs.PoolUse | None:
    return next((p for p in result.pools if (p.cluster, p.pool) == (cluster, pool)), None)


# --- tables -------------------------------------------------------------------------------------


def _summary(simulation: rs.Simulation) -> list[str]:
    rows = []
    for step in simulation.steps:
        for mode in simulation.modes:
            result = step.modes[mode]
            wanted = sum(d.wanted for d in result.deployments)
            placed = sum(d.placed for d in result.deployments)
            passes = plural(result.passes, "pass")
            settled = (
                passes
                if result.converged
                else f'<span class="bad">did not settle in {passes}</span>'
            )
            rows.append(
                [
                    str(step.index),
                    html.escape(step.name),
                    "<br>".join(html.escape(e) for e in step.events)
                    or '<span class="muted">-</span>',
                    *([mode] if len(simulation.modes) > 1 else []),
                    settled,
                    f"{placed} / {wanted}",
                    str(len(result.moves)),
                    str(len(result.shortfalls)),
                ]
            )
    header = ["step", "name", "events", *(["mode"] if len(simulation.modes) > 1 else [])]
    header += ["settled", "placed / wanted", "moves", "shortfalls"]
    return ['<h2 id="summary">Steps</h2>', _table(header, rows)]


def _grids(simulation: rs.Simulation) -> list[str]:
    out = [
        '<h2 id="placements">Placements</h2>',
        '<p class="muted">Replicas per cluster and deployment at the end of each step (ready in '
        "brackets); green: more than the step before, red: fewer, yellow: the deployment is short.</p>",
    ]
    for mode in simulation.modes:
        before: dict[tuple[str, str], int] = {}
        for step in simulation.steps:
            result = step.modes[mode]
            suffix = f" ({html.escape(mode)})" if len(simulation.modes) > 1 else ""
            out.append(f"<h3>Step {step.index}: {html.escape(step.name)}{suffix}</h3>")
            out.append(_grid(result, before))
            before = _counts(result)
    return out


def _counts(result: rs.ModeResult) -> dict[tuple[str, str], int]:
    counts: Counter[tuple[str, str]] = Counter()
    for record in result.deployments:
        for replica in record.replicas:
            counts[(replica.cluster, record.deployment)] += 1
    return dict(counts)


def _grid(result: rs.ModeResult, before: dict[tuple[str, str], int]) -> str:
    deployments = [d.deployment for d in result.deployments]
    now = _counts(result)
    clusters = sorted(
        {p.cluster for p in result.pools} | {c for c, _ in now} | {c for c, _ in before}
    )
    ready: Counter[tuple[str, str]] = Counter(
        (r.cluster, d.deployment) for d in result.deployments for r in d.replicas if r.ready
    )
    if not deployments:
        return '<p class="muted">No ModelDeployments.</p>'
    rows = []
    for cluster in clusters:
        row = [f"<th>{html.escape(cluster)}</th>"]
        for deployment in deployments:
            key = (cluster, deployment)
            count, previous = now.get(key, 0), before.get(key, 0)
            style = "gained" if count > previous else "lost" if count < previous else ""
            text = f"{count} ({ready[key]})" if count else ("0" if previous else "")
            row.append(f'<td class="num {style}">{text}</td>')
        rows.append("<tr>" + "".join(row) + "</tr>")
    short = ["<th>short</th>"]
    for record in result.deployments:
        missing = record.wanted - record.placed
        short.append(
            f'<td class="num short">{missing}</td>' if missing > 0 else '<td class="num"></td>'
        )
    rows.append("<tr>" + "".join(short) + "</tr>")
    head = "".join(f"<th>{html.escape(d)}</th>" for d in deployments)
    return f'<table class="grid"><tr><th>cluster</th>{head}</tr>{"".join(rows)}</table>'


def _moves(simulation: rs.Simulation) -> list[str]:
    rows = [
        [
            str(step.index),
            *([mode] if len(simulation.modes) > 1 else []),
            html.escape(m.deployment),
            html.escape(m.replica),
            html.escape(m.source),
            html.escape(m.target) if m.target else '<span class="bad">nowhere</span>',
            html.escape(m.reason),
        ]
        for step in simulation.steps
        for mode in simulation.modes
        for m in step.modes[mode].moves
    ]
    header = ["step", *(["mode"] if len(simulation.modes) > 1 else [])]
    header += ["deployment", "replica", "from", "to", "why"]
    body = _table(header, rows) if rows else '<p class="muted">Nothing moved.</p>'
    changes = _changes(simulation)
    return ['<h2 id="moves">Moves and changes</h2>', body, "<h3>Every change</h3>", changes]


def _changes(simulation: rs.Simulation) -> str:
    rows = [
        [
            str(step.index),
            *([mode] if len(simulation.modes) > 1 else []),
            str(c.pass_),
            c.change,
            html.escape(c.deployment),
            html.escape(c.replica),
            html.escape(c.cluster),
            html.escape(c.reason),
        ]
        for step in simulation.steps
        for mode in simulation.modes
        for c in step.modes[mode].changes
    ]
    header = ["step", *(["mode"] if len(simulation.modes) > 1 else [])]
    header += ["pass", "change", "deployment", "replica", "cluster", "why"]
    return _table(header, rows) if rows else '<p class="muted">No changes.</p>'


def _shortfalls(simulation: rs.Simulation) -> list[str]:
    rows = []
    for step in simulation.steps:
        for mode in simulation.modes:
            for s in step.modes[mode].shortfalls:
                clusters = "<br>".join(
                    f"<b>{html.escape(p.cluster)}</b>: {html.escape('; '.join(rs.reasons(p)))}"
                    for p in s.clusters
                )
                rows.append(
                    [
                        str(step.index),
                        *([mode] if len(simulation.modes) > 1 else []),
                        html.escape(s.deployment),
                        f"{s.placed} / {s.wanted}",
                        html.escape(s.reason),
                        clusters or html.escape(s.message),
                    ]
                )
    header = ["step", *(["mode"] if len(simulation.modes) > 1 else [])]
    header += ["deployment", "placed / wanted", "reason", "why, per cluster"]
    body = (
        _table(header, rows) if rows else '<p class="muted">Every deployment got every replica.</p>'
    )
    return ['<h2 id="shortfalls">Shortfalls</h2>', body]


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """An HTML table; cells are HTML already (escaped by the caller)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"
