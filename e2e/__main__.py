"""Run the e2e scenarios against the running control plane (tools/e2e/cluster.sh up).

    python -m e2e                       every scenario, in order
    python -m e2e getting-started scale only these (and what they need)
    python -m e2e --list

Prints each scenario as it runs and its checks as they pass, then one closing line,
``N passed, N failed`` (``, N skipped`` when a scenario's prerequisite failed).
Exits non-zero when any scenario failed or was skipped.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.context import Context
from e2e.kube import Kube
from e2e.scenarios import SCENARIOS, Scenario

METRICS = "http://127.0.0.1:8080/metrics"  # Crossplane's, inside the stack's namespace


def stack_rss_mib() -> float:
    """Resident memory of every process in this network namespace (the whole stack)."""
    mine = os.readlink("/proc/self/ns/net")
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/net") != mine:
                continue
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


class PeakMemory(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, stack_rss_mib())
            self.stop.wait(2)


def circuit_breaker_opens() -> dict[str, int]:
    """How often Crossplane opened a controller's watch circuit breaker (its metrics)."""
    try:
        with urllib.request.urlopen(METRICS, timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("circuit_breaker_opens_total{"):
            labels, value = line.rsplit(" ", 1)
            controller = labels.split('controller="', 1)[1].split('"', 1)[0]
            if float(value):
                out[controller.removeprefix("composite/")] = int(float(value))
    return out


def run(scenario: Scenario, ctx: Context) -> bool:
    """Run one scenario; print and return whether it passed."""
    t0 = time.monotonic()
    try:
        scenario.run(ctx)
    except AssertionError as exc:
        print(f"--- FAIL {scenario.name} ({time.monotonic() - t0:.0f}s): {exc}", flush=True)
        return False
    except Exception as exc:
        print(f"--- FAIL {scenario.name} ({time.monotonic() - t0:.0f}s): {exc!r}")
        traceback.print_exc(file=sys.stdout)
        return False
    print(f"--- PASS {scenario.name} ({time.monotonic() - t0:.0f}s)", flush=True)
    return True


def wanted_scenarios(scenarios: Sequence[Scenario], doc: str | None) -> set[str] | None:
    """Parse the command line: the scenarios to run and what they need (None: --list)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n", 1)[0])
    parser.add_argument("only", nargs="*", help="scenario names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the scenarios")
    args = parser.parse_args()
    if args.list:
        for scenario in scenarios:
            extra = f" (only when named: {scenario.optional})" if scenario.optional else ""
            print(f"{scenario.name}: {scenario.title}{extra}")
        return None
    names = [s.name for s in scenarios]
    unknown = [n for n in args.only if n not in names]
    if unknown:
        parser.error(f"unknown scenarios {unknown}; known: {names}")
    wanted = set(args.only or [s.name for s in scenarios if not s.optional])
    for scenario in scenarios:  # a scenario needs what it builds on
        if scenario.name in wanted:
            wanted.update(scenario.needs)
    return wanted


@dataclass
class Outcome:
    """What a run of scenarios gave."""

    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    peak_mib: float = 0.0

    def summary(self) -> int:
        """Print the failed and skipped and the ``N passed, N failed`` line; the exit code."""
        if self.failed:
            print(f"failed: {', '.join(self.failed)}")
        if self.skipped:
            print(f"skipped: {', '.join(self.skipped)}")
        line = f"{len(self.passed)} passed, {len(self.failed)} failed"
        if self.skipped:
            line += f", {len(self.skipped)} skipped"
        print(line, flush=True)
        return 1 if self.failed or self.skipped else 0


def run_all(scenarios: Sequence[Scenario], wanted: set[str], ctx: Any) -> Outcome:
    """Run the wanted scenarios in order (one whose needs did not pass is skipped),
    watching the stack's peak resident memory."""
    memory = PeakMemory()
    memory.start()
    outcome = Outcome()
    started = time.monotonic()
    for scenario in scenarios:
        if scenario.name not in wanted:
            continue
        print(f"\n=== {scenario.name}: {scenario.title}", flush=True)
        missing = [n for n in scenario.needs if n not in outcome.passed]
        if missing:
            outcome.skipped.append(scenario.name)
            print(f"--- SKIP {scenario.name}: needs {', '.join(missing)}, which did not pass")
            continue
        (outcome.passed if run(scenario, ctx) else outcome.failed).append(scenario.name)
    memory.stop.set()
    outcome.peak_mib = max(memory.peak, stack_rss_mib())
    outcome.seconds = time.monotonic() - started
    return outcome


def main() -> int:
    wanted = wanted_scenarios(SCENARIOS, __doc__)
    if wanted is None:
        return 0
    ctx = Context(Kube(), Path(os.environ.get("E2E_STATE", "build/e2e")))
    outcome = run_all(SCENARIOS, wanted, ctx)
    print(
        f"\nscenarios took {outcome.seconds:.0f}s; "
        f"peak resident memory of the stack {outcome.peak_mib:.0f} MiB"
    )
    breakers = circuit_breaker_opens()
    if breakers:
        print(f"Crossplane's watch circuit breaker opened: {breakers}")
    return outcome.summary()


if __name__ == "__main__":
    sys.exit(main())
