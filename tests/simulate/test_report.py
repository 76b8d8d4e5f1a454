"""The HTML report: self-contained, and its charts render in a real (headless) browser.

The browser is Debian's chromium (`tools/simulate/chromium.sh` installs it). Without
it these tests fail, on purpose: a report nobody has seen render is not tested.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.simulate.conftest import EXAMPLES, ROOT, simulate

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "tools/simulate/chromium.sh"
DRAIN = EXAMPLES / "drain-a-cluster.yaml"
POOLS = ("gpu-us-east/gpu-a100", "gpu-us-west/gpu-a100")
DEPLOYMENTS = ("ml-team/qwen-a100", "ml-team/qwen-critical")
# A screenshot of the page's top with two charts drawn compresses to far more than a
# blank or text-only page does (a blank 1280x2000 PNG is a few kilobytes).
MIN_SCREENSHOT_BYTES = 60_000


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    result = simulate(str(DRAIN), "--report", str(path))
    assert result.exit_code == 0, result.output
    assert f"report written to {path}" in result.stderr
    return path


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run {INSTALL} (it installs Debian's chromium)")
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


def test_the_report_is_self_contained(report: Path) -> None:
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>")
    # Nothing is fetched: no external scripts, styles or images.
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)
    assert not re.search(r"<img[^>]+src=\"?https?:", page)
    assert "plotly.js v" in page  # the library itself, inline
    for section in ("summary", "pool-use", "placements", "moves", "shortfalls"):
        assert f'id="{section}"' in page
    names = {json.loads(f'"{n}"') for n in re.findall(r'"name":"((?:[^"\\]|\\.)*)"', page)}
    for pool in POOLS:
        assert pool in names  # a trace per pool, in the figure's JSON
        assert f"<th>{pool.split('/')[0]}</th>" in page  # a row of the placement grid
    assert "taint modelplane.ai/maintenance:NoExecute not tolerated" in page  # the move's reason
    assert "pool gpu-a100 has 0 of 2 nodes free, needs 1" in page  # the shortfall's


def test_the_report_is_deterministic(report: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.html"
    assert simulate(str(DRAIN), "--report", str(again)).exit_code == 0
    assert again.read_text() == report.read_text()


def test_the_charts_render_in_a_browser(report: Path, tmp_path: Path) -> None:
    run = _chromium(tmp_path, "--dump-dom", report.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    for chart in ("pool-use-declared", "deployment-use-declared"):
        start = dom.index(f'id="{chart}"')
        drawn = dom[start : start + 200_000]
        assert 'class="main-svg"' in drawn, f"{chart} has no SVG: plotly did not draw it"
    pool_chart = dom[
        dom.index('id="pool-use-declared"') : dom.index('id="deployment-use-declared"')
    ]
    # Per pool: a line of nodes used and a dotted line of nodes it has.
    assert len(re.findall(r'class="trace scatter', pool_chart)) == 2 * len(POOLS)
    legend = re.findall(r'class="legendtext"[^>]*data-unformatted="([^"]+)"', pool_chart)
    assert sorted(legend) == sorted(POOLS)
    # Lines through the steps (legend swatches are single strokes, without "L").
    lines = [d for d in re.findall(r'class="js-line"[^>]* d="M([^"]+)"', pool_chart) if "L" in d]
    assert len(lines) == 2 * len(POOLS), "every trace draws a line over the steps"
    users_chart = dom[dom.index('id="deployment-use-declared"') :]
    assert len(re.findall(r'class="trace bars"', users_chart)) == len(DEPLOYMENTS)


def test_a_screenshot_shows_the_charts(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    run = _chromium(tmp_path, "--window-size=1280,2000", f"--screenshot={shot}", report.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > MIN_SCREENSHOT_BYTES


def test_the_function_server_never_imports_plotly() -> None:
    code = (
        "import sys, modelplane.main, modelplane.server, modelplane.registry, modelplane.cli;"
        "sys.exit(1 if any(m == 'plotly' or m.startswith('plotly.') for m in sys.modules) else 0)"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False, timeout=120)
    assert run.returncode == 0, "importing the server (or the CLI) loaded plotly"


def test_without_plotly_the_report_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)  # import fails
    result = simulate(str(DRAIN), "--report", str(tmp_path / "r.html"))
    assert result.exit_code == 1
    assert "pip install 'modelplane[simulate]'" in result.output
    assert not (tmp_path / "r.html").exists()


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
    assert "16 of 16 devices claimed (pods share nodes)" in page  # a devices-mode hover
    run = _chromium(tmp_path, "--dump-dom", path.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    for mode in ("nodes", "devices"):
        start = run.stdout.index(f'id="pool-use-{mode}"')
        assert 'class="main-svg"' in run.stdout[start : start + 200_000], mode
