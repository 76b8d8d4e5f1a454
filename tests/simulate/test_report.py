"""The HTML report: self-contained, small, and its charts render in a real (headless) browser.

The browser is Debian's chromium (`tools/simulate/chromium.sh` installs it). Without
it these tests fail, on purpose: a report nobody has seen render is not tested. The one
exception is a machine set up with `make setup NO_BROWSER=1`, which records that choice
in build/no-browser: there the browser tests skip, saying so.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.simulate import png
from tests.simulate.conftest import EXAMPLES, ROOT, simulate

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "tools/simulate/chromium.sh"
NO_BROWSER = ROOT / "build" / "no-browser"
DRAIN = EXAMPLES / "drain-a-cluster.yaml"
POOLS = ("gpu-us-east / gpu-a100", "gpu-us-west / gpu-a100")
DEPLOYMENTS = ("ml-team/qwen-a100", "ml-team/qwen-critical")
# Charts are SVG we draw: a report is tens of kilobytes (plotly.js alone was 4.8 MB).
MAX_REPORT_BYTES = 300_000
# Enough pixels of a series' colour that its line, not a stray legend swatch, is drawn.
MIN_SERIES_PIXELS = 400


def _need_chromium() -> None:
    if CHROMIUM.exists():
        return
    if NO_BROWSER.exists():
        pytest.skip("make setup NO_BROWSER=1 skipped Chromium: the report's browser tests skip")
    pytest.fail(f"{CHROMIUM} is missing: run {INSTALL} (it installs Debian's chromium)")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    result = simulate(str(DRAIN), "--report", str(path))
    assert result.exit_code == 0, result.output
    assert f"report written to {path}" in result.stderr
    return path


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    _need_chromium()
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        # No name resolves: the page must draw its charts with no network at all.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_report_is_self_contained_and_small(report: Path) -> None:
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert report.stat().st_size < MAX_REPORT_BYTES
    # Nothing is fetched, nothing runs: no scripts, external styles or images.
    assert "<script" not in page
    assert not re.search(r"<link[^>]+href=", page)
    assert not re.search(r"<img[^>]+src=\"?https?:", page)
    for section in ("summary", "pool-use", "placements", "moves", "shortfalls"):
        assert f'id="{section}"' in page
    legend = re.findall(r'class="legendtext"[^>]*>([^<]+)<', page)
    for pool in POOLS:
        assert f"{pool} used" in legend  # the legend names cluster and pool
        assert f"<th>{pool.split(' / ')[0]}</th>" in page  # a row of the placement grid
    for deployment in DEPLOYMENTS:
        assert {f"{deployment} placed", f"{deployment} wanted"} <= set(legend)
    assert "taint modelplane.ai/maintenance:NoExecute not tolerated" in page  # the move's reason
    assert "pool gpu-a100 has 0 of 2 nodes free, needs 1" in page  # the shortfall's


def test_series_are_step_lines_each_with_its_own_dash_and_marker(report: Path) -> None:
    page = report.read_text()
    chart = page[page.index('id="pool-use-declared"') : page.index('id="replicas-declared"')]
    thick = re.findall(r'<path d="([^"]+)" fill="none" stroke="[^"]+" stroke-width="2.5"', chart)
    assert len(thick) == len(POOLS)
    for d in thick:
        points = [tuple(map(float, p[1:].split(","))) for p in d.split()]
        # Step lines: every segment is flat or vertical, never a slope between steps.
        for (x1, y1), (x2, y2) in itertools.pairwise(points):
            assert x1 == x2 or y1 == y2, d
    dashes = re.findall(r'<path [^>]*stroke-width="2.5"(?: stroke-dasharray="([^"]+)")?', chart)
    assert len(set(dashes)) == len(dashes), "each pool's line has its own dash"
    groups = [g.split("</g>")[0] for g in chart.split('<g class="series"')[1:]]
    shapes = [re.findall(r"<(circle|rect|polygon) [^>]*class=\"marker\"", g)[:1] for g in groups]
    used = [s[0] for s in shapes if s]
    assert len(used) == len(POOLS)
    assert len(set(used)) == len(POOLS), "each pool's line has its own marker"


def test_shortfalls_are_marked_on_the_timeline(report: Path) -> None:
    page = report.read_text()
    chart = page[page.index('id="replicas-declared"') : page.index('id="deployment-use-declared"')]
    bands = re.findall(r'<rect class="shortfall"[^>]*><title>step (\d+): ([^<]+)</title>', chart)
    assert bands, "the drain leaves a deployment short: the timeline shows where"
    assert all("ml-team/" in what for _, what in bands)


def test_the_report_is_deterministic(report: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.html"
    assert simulate(str(DRAIN), "--report", str(again)).exit_code == 0
    assert again.read_text() == report.read_text()


def test_the_charts_render_in_a_browser(report: Path, tmp_path: Path) -> None:
    run = _chromium(tmp_path, "--dump-dom", report.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    for chart in ("pool-use-declared", "replicas-declared", "deployment-use-declared"):
        assert re.search(rf'<svg id="{chart}"[^>]*class="chart"', dom), chart
    pool_chart = dom[dom.index('id="pool-use-declared"') : dom.index('id="replicas-declared"')]
    # Per pool: a line of nodes used and a dotted line of nodes it has.
    assert len(re.findall(r'<g class="series"', pool_chart)) == 2 * len(POOLS)


def test_a_screenshot_shows_every_series(report: Path, tmp_path: Path) -> None:
    """Each pool's and deployment's colour is on screen, drawn, in the first charts."""
    page = report.read_text()
    charts = re.findall(r'<svg id="[^"]+-declared".*?</svg>', page, flags=re.S)
    # Only the charts, each line in its own colour: a smaller page, a quicker decode.
    only = tmp_path / "charts.html"
    only.write_text("<!DOCTYPE html><html><body style='margin:0;width:1100px'>" + charts[0]
                    + charts[1] + "</body></html>")  # fmt: skip
    shot = tmp_path / "charts.png"
    run = _chromium(tmp_path, "--window-size=1100,1100", f"--screenshot={shot}", only.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    counts = png.colour_counts(shot)
    colours = re.findall(r'<g class="series" data-name="([^"]+)">\s*<path [^>]*stroke="(#[0-9a-f]{6})"'
                         r' stroke-width="2.5"', charts[0] + charts[1])  # fmt: skip
    assert len(colours) == len(POOLS) + len(DEPLOYMENTS)
    for name, colour in colours:
        assert counts[colour] >= MIN_SERIES_PIXELS, f"{name} ({colour}) is not visible"


def test_chromium_install_script_is_idempotent_when_present() -> None:
    script = ROOT / INSTALL
    assert script.exists()
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run {INSTALL}")
    bash = shutil.which("bash") or "/bin/bash"
    run = subprocess.run(
        [bash, str(script)], capture_output=True, text=True, check=False, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert str(CHROMIUM) in run.stdout


def test_a_compared_report_charts_both_capacity_modes(tmp_path: Path) -> None:
    path = tmp_path / "compare.html"
    sharing = EXAMPLES / "gpu-sharing.yaml"
    result = simulate(str(sharing), "--compare-capacity", "--report", str(path))
    assert result.exit_code == 0, result.output
    page = path.read_text()
    assert "Nodes used per pool (nodes)" in page
    assert "Nodes used per pool (devices)" in page
    assert "16 of 16 devices claimed (pods share nodes)" in page  # a devices-mode tooltip
    run = _chromium(tmp_path, "--dump-dom", path.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    for mode in ("nodes", "devices"):
        assert f'<svg id="pool-use-{mode}"' in run.stdout, mode


def test_without_chromium_the_browser_tests_skip_only_when_setup_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setattr(module, "NO_BROWSER", tmp_path / "no-browser")
    with pytest.raises(pytest.fail.Exception, match=r"is missing: run tools/simulate/chromium\.sh"):
        _need_chromium()
    (tmp_path / "no-browser").write_text("make setup NO_BROWSER=1\n")
    with pytest.raises(pytest.skip.Exception, match="NO_BROWSER=1 skipped Chromium"):
        _need_chromium()


def test_make_setup_no_browser_records_the_choice_and_installs_nothing() -> None:
    before = NO_BROWSER.read_text() if NO_BROWSER.exists() else None
    run = subprocess.run(
        ["make", "--no-print-directory", "chromium", "NO_BROWSER=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    try:
        assert run.returncode == 0, run.stderr
        assert "skipped (NO_BROWSER=1)" in run.stderr
        assert NO_BROWSER.read_text().strip() == "make setup NO_BROWSER=1"
    finally:  # leave the machine's own choice as it was
        if before is None:
            NO_BROWSER.unlink(missing_ok=True)
        else:
            NO_BROWSER.write_text(before)
