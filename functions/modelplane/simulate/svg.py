"""Step charts drawn as inline SVG: no plotting library, a few kilobytes per chart.

A simulation's values change only at its steps, so every series is a step line: flat
across a step, vertical at the next one (never a slope between two steps). Series
that share values would hide each other, so each series has its own dash pattern,
marker shape and colour, and is drawn a few pixels off its neighbours; the legend
names each one. Every marker carries an SVG ``<title>`` (the browser's tooltip) with
its exact value. Steps where a deployment fell short get a red band and a label on
the timeline.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

WIDTH = 1100
PLOT_TOP = 46
PLOT_HEIGHT = 300
LEFT = 64
RIGHT = 24
LABEL_SPACE = 56  # below the x axis: each step's number and name
CHAR_WIDTH = 6.8  # of a 12px label, for cutting a step's name to its band
LEGEND_ROW = 22

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
DASHES = ("", "8 4", "2 3", "10 3 2 3", "4 4", "12 4 4 4 4 4")
MARKERS = ("circle", "square", "diamond", "triangle", "triangle-down", "cross")


@dataclass(frozen=True)
class Series:
    """One line: a value per step (None: not there at that step).

    Attributes:
        name: The legend's text (``cluster / pool``, ``ml-team/qwen wanted``).
        values: One per step.
        style: Which colour, dash and marker (an index; equal styles look alike).
        color: Overrides the colour of ``style`` (a deployment's wanted and placed share one).
        dash: Overrides the dash pattern of ``style``.
        thin: A reference line (a pool's size): thin, no markers.
        tips: A tooltip per step (default: the name and value).
    """

    name: str
    values: Sequence[float | None]
    style: int
    color: str | None = None
    dash: str | None = None
    thin: bool = False
    tips: Sequence[str] = ()


@dataclass(frozen=True)
class Chart:
    """A step chart over the simulation's steps."""

    chart_id: str
    title: str
    steps: Sequence[str]
    y_title: str
    series: Sequence[Series]
    shortfalls: dict[int, str] = field(default_factory=dict)  # step index -> what fell short


def draw(chart: Chart) -> str:
    """Return the chart as an ``<svg>`` element."""
    legend_rows = math.ceil(len(chart.series) / 3)
    height = PLOT_TOP + PLOT_HEIGHT + LABEL_SPACE + LEGEND_ROW * legend_rows + 10
    top = max([v for s in chart.series for v in s.values if v is not None] or [1])
    scale = _Scale(len(chart.steps), _nice(top))
    parts = [
        f'<svg id="{chart.chart_id}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
        f'aria-label="{html.escape(chart.title)}">',
        f'<text x="{LEFT}" y="24" class="title">{html.escape(chart.title)}</text>',
        *_shortfall_bands(chart, scale),
        *_axes(chart, scale),
    ]
    offsets = _offsets(len(chart.series))
    for series, offset in zip(chart.series, offsets, strict=True):
        parts += _series(series, scale, offset)
    parts += _legend(chart.series, PLOT_TOP + PLOT_HEIGHT + LABEL_SPACE)
    parts.append("</svg>")
    return "\n".join(parts)


@dataclass(frozen=True)
class _Scale:
    steps: int
    top: int

    @property
    def step_width(self) -> float:
        return (WIDTH - LEFT - RIGHT) / max(self.steps, 1)

    def x(self, step: float) -> float:
        return LEFT + step * self.step_width

    def y(self, value: float) -> float:
        return PLOT_TOP + PLOT_HEIGHT - value / self.top * PLOT_HEIGHT


def _nice(top: float) -> int:
    """The y axis' top: the maximum rounded up, with a little headroom."""
    return max(1, math.ceil(top * 1.1))


def _ticks(top: int) -> list[int]:
    step = max(1, math.ceil(top / 8))
    return list(range(0, top + 1, step))


def _offsets(count: int) -> list[float]:
    """Pixels each series is shifted up or down, so equal series lie side by side."""
    gap = 3.0 if count <= 6 else 2.0
    return [(i - (count - 1) / 2) * gap for i in range(count)]


def _axes(chart: Chart, scale: _Scale) -> list[str]:
    bottom = PLOT_TOP + PLOT_HEIGHT
    out = ['<g class="axes" font-size="12">']
    for tick in _ticks(scale.top):
        y = scale.y(tick)
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    fits = max(4, int(scale.step_width / CHAR_WIDTH))
    for i, label in enumerate(chart.steps):
        x = scale.x(i)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 5}" class="axis"/>'
        )
        # Each step's band is labelled under its middle, level: "step N", then its name
        # cut to the band's width (the full name is the tooltip and in the Steps table).
        middle = x + scale.step_width / 2
        index, _, name = label.partition(": ")
        shown = name if len(name) <= fits else name[: fits - 1] + "…"
        out.append(
            f'<text x="{middle:.1f}" y="{bottom + 18}" text-anchor="middle" class="step">'
            f"<title>{html.escape(label)}</title>step {html.escape(index)}</text>"
        )
        out.append(
            f'<text x="{middle:.1f}" y="{bottom + 34}" text-anchor="middle">'
            f"<title>{html.escape(label)}</title>{html.escape(shown)}</text>"
        )
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{bottom}" y2="{bottom}" class="axis"/>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{PLOT_TOP}" y2="{bottom}" class="axis"/>')
    middle = PLOT_TOP + PLOT_HEIGHT / 2
    out.append(
        f'<text x="16" y="{middle}" transform="rotate(-90 16 {middle})" text-anchor="middle">'
        f"{html.escape(chart.y_title)}</text>"
    )
    out.append("</g>")
    return out


def _shortfall_bands(chart: Chart, scale: _Scale) -> list[str]:
    out = []
    for step, what in sorted(chart.shortfalls.items()):
        x = scale.x(step)
        out.append(
            f'<rect class="shortfall" x="{x:.1f}" y="{PLOT_TOP}" width="{scale.step_width:.1f}" '
            f'height="{PLOT_HEIGHT}"><title>step {step}: {html.escape(what)}</title></rect>'
        )
        out.append(
            f'<text class="shortfall-label" x="{x + 4:.1f}" y="{PLOT_TOP + 14}">'
            f"short at step {step}</text>"
        )
    return out


def _series(series: Series, scale: _Scale, offset: float) -> list[str]:
    color = series.color or COLORS[series.style % len(COLORS)]
    dash = series.dash if series.dash is not None else DASHES[series.style % len(DASHES)]
    width = 1.2 if series.thin else 2.5
    points = _step_points(series.values, scale, offset)
    out = [f'<g class="series" data-name="{html.escape(series.name)}">']
    for run in points:
        d = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(run))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}"{dash_attr}/>'
        )
    if not series.thin:
        marker = MARKERS[series.style % len(MARKERS)]
        for i, value in enumerate(series.values):
            if value is None:
                continue
            x = scale.x(i) + scale.step_width / 2
            y = scale.y(value) + offset
            tip = series.tips[i] if i < len(series.tips) else f"{series.name}: {value:g}"
            out.append(_marker(marker, x, y, color, tip))
    out.append("</g>")
    return out


def _step_points(
    values: Sequence[float | None], scale: _Scale, offset: float
) -> list[list[tuple[float, float]]]:
    """Runs of an hv step line: flat across each step, vertical where the next begins."""
    runs: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    for i, value in enumerate(values):
        if value is None:
            if current:
                runs.append(current)
            current = []
            continue
        y = scale.y(value) + offset
        current += [(scale.x(i), y), (scale.x(i + 1), y)]
    if current:
        runs.append(current)
    return runs


def _marker(shape: str, x: float, y: float, color: str, tip: str) -> str:
    r = 5.0
    title = f"<title>{html.escape(tip)}</title>"
    common = f'fill="{color}" stroke="white" stroke-width="1" class="marker"'
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" {common}>{title}</circle>'
    if shape == "square":
        return (
            f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" {common}>'
            f"{title}</rect>"
        )
    corners = {
        "diamond": ((0, -1.3), (1.3, 0), (0, 1.3), (-1.3, 0)),
        "triangle": ((0, -1.3), (1.2, 1), (-1.2, 1)),
        "triangle-down": ((0, 1.3), (1.2, -1), (-1.2, -1)),
        "cross": ((-0.4, -1.2), (0.4, -1.2), (0.4, -0.4), (1.2, -0.4), (1.2, 0.4), (0.4, 0.4),
                  (0.4, 1.2), (-0.4, 1.2), (-0.4, 0.4), (-1.2, 0.4), (-1.2, -0.4), (-0.4, -0.4)),
    }[shape]  # fmt: skip
    points = " ".join(f"{x + dx * r:.1f},{y + dy * r:.1f}" for dx, dy in corners)
    return f'<polygon points="{points}" {common}>{title}</polygon>'


def _legend(series: Sequence[Series], top: float) -> list[str]:
    out = ['<g class="legend" font-size="13">']
    column = (WIDTH - LEFT) / 3
    for i, one in enumerate(series):
        x = LEFT + (i % 3) * column
        y = top + (i // 3) * LEGEND_ROW + 12
        color = one.color or COLORS[one.style % len(COLORS)]
        dash = one.dash if one.dash is not None else DASHES[one.style % len(DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        width = 1.2 if one.thin else 2.5
        out.append(
            f'<line x1="{x:.1f}" x2="{x + 36:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{color}" '
            f'stroke-width="{width}"{dash_attr}/>'
        )
        if not one.thin:
            out.append(_marker(MARKERS[one.style % len(MARKERS)], x + 18, y, color, one.name))
        out.append(
            f'<text class="legendtext" x="{x + 44:.1f}" y="{y + 4:.1f}">{html.escape(one.name)}</text>'
        )
    out.append("</g>")
    return out


STYLE = """
svg.chart { max-width: 1100px; display: block; margin: .4rem 0 1.6rem; font-family: inherit; }
svg.chart .title { font-size: 16px; font-weight: 600; }
svg.chart .grid { stroke: #e5e7eb; } svg.chart .axis { stroke: #57606a; }
svg.chart text { fill: #1f2328; } svg.chart .step { font-weight: 600; }
svg.chart .shortfall { fill: #ffebe9; }
svg.chart .shortfall-label { fill: #cf222e; font-size: 11px; }
"""
