"""Where a served call's CPU goes, per process of the served function.

``python -m benches.served_split L [--calls N] [--rounds R]`` serves the ModelDeployment
function (:class:`benches.served.Served`), sends N calls of a fleet never seen, then N
steady ones, from the Go client (R times), and prints per call, for each process that
used any: its user and system CPU time and its minor page faults, from
``/proc/<pid>/stat`` (10 ms ticks, so use N of 6 or more). The processes: the serving
process (gRPC, the memory file), the fork server, its workers, multiprocessing's
resource tracker. Not part of ``make bench``: for finding where time goes (Stop 33 of
docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import NamedTuple

from benches import goclient
from benches.fleets import SIZES, fleet_request
from benches.procfs import process_tree, stat_fields
from benches.served import Served

TICKS = os.sysconf("SC_CLK_TCK")


class Usage(NamedTuple):
    """A process's counters so far: CPU ticks (user, system), minor faults, parent, role."""

    user: int
    system: int
    faults: int
    parent: int
    command: str


def usage(pid: int) -> Usage | None:
    """A process's counters, or None if it is gone."""
    fields = stat_fields(Path(f"/proc/{pid}/stat"))
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    if not fields:
        return None
    return Usage(int(fields[11]), int(fields[12]), int(fields[7]), int(fields[1]), command)


def role(pid: int, root: int, found: dict[int, Usage]) -> str:
    """Which of the served function's processes ``pid`` is."""
    if pid == root:
        return "serving"
    if "resource_tracker" in found[pid].command:
        return "resource tracker"
    return "fork server" if found[pid].parent == root else "worker"


def snapshot(root: int) -> dict[int, Usage]:
    """Every process of the served function, with its counters now."""
    found = {pid: usage(pid) for pid in process_tree(root)}
    return {pid: u for pid, u in found.items() if u is not None}


def per_call(before: dict[int, Usage], after: dict[int, Usage], root: int, calls: int) -> str:
    """One line: the CPU (ms) and faults per call of each process that used any."""
    parts, total = [], 0.0
    for pid, now in after.items():
        then = before.get(pid, Usage(0, 0, 0, 0, ""))
        user = (now.user - then.user) * 1e3 / TICKS / calls
        system = (now.system - then.system) * 1e3 / TICKS / calls
        faults = (now.faults - then.faults) / calls
        total += user + system
        if user + system or faults > 10:
            name = role(pid, root, after)
            parts.append(f"{name} {pid}: user {user:.0f} sys {system:.0f} faults {faults:.0f}")
    return f"total {total:.0f} ms | " + " | ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("size", choices=list(SIZES))
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    clusters, replicas = SIZES[args.size]
    with (
        Served() as served,
        goclient.GoClient(served.address, fleet_request(clusters, replicas)) as client,
    ):
        client.run("steady", 1)  # connected, and every worker started
        root = served.proc.pid
        for what in ("new", "steady") * args.rounds:
            before = snapshot(root)
            client.run(what, args.calls)
            line = per_call(before, snapshot(root), root, args.calls)
            print(f"{args.size} {what:6} {line} | load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
