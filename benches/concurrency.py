"""4 concurrent L reconciles on one connection against 2 sequential, round by round.

``python -m benches.concurrency [--rounds R] [--workers N] [--split] [--source S ...]``
serves ``modelplane-function all --workers N`` (as ``bench_server.concurrent_large``),
drives it from the Go client (:mod:`benches.goclient`) and prints, per round: the wall of
``new 2`` and of ``concurrent 4``, their ratio, the load, and each process's peak RSS
(MiB, largest first); with ``--split``, per call of each, every process's CPU time and
minor faults and the client's CPU. Each ``--source`` is ``DIR[:WORKERS[:NAME=VALUE]]``:
a checkout's ``functions`` folder the server imports ``modelplane`` from, its workers,
and a variable set in its environment; the servers run in turn, round by round and in
the other order each round, so A and B share the machine's load. Not part of ``make
bench``: for finding where the ratio goes (docs/benchmarks.md, Stop 34).
"""

from __future__ import annotations

import argparse
import os
import statistics
from contextlib import ExitStack
from pathlib import Path

from benches import goclient
from benches.bench_server import Served
from benches.fleets import fleet_request
from benches.procfs import cpu_seconds, peak_rss_mib, process_tree
from benches.served_split import per_call, snapshot


class _From(Served):
    """The server with ``modelplane`` from ``source`` (None: this checkout) and ``env``."""

    def __init__(self, workers: int, source: str | None, env: dict[str, str]) -> None:
        super().__init__(workers)
        self.env = {"PYTHONPATH": source, **env} if source else env

    def __enter__(self) -> _From:
        saved = {name: os.environ.get(name) for name in self.env}
        os.environ.update(self.env)
        try:
            super().__enter__()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        return self


def _parse(source: str) -> tuple[str, int | None, dict[str, str]]:
    path, _, rest = source.partition(":")
    count, _, env = rest.partition(":")
    name, _, value = env.partition("=")
    return path, int(count) if count else None, {name: value} if name else {}


def _name(source: str) -> str:
    path, _, rest = source.partition(":")
    return (Path(path).parent.name if path else "here") + (f" x{rest}" if rest else "")


def _peak_rss(root: int) -> str:
    """Each process's peak RSS (MiB) so far, largest first."""
    peaks = [peak_rss_mib(pid) for pid in process_tree(root)]
    return "/".join(f"{p:.0f}" for p in sorted(peaks, reverse=True) if p > 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--source", action="append", default=[])
    parser.add_argument("--split", action="store_true", help="per-process CPU per call")
    args = parser.parse_args()
    sources = args.source or [""]
    base = fleet_request(1_000, 10_000)
    found: dict[str, dict[str, list[float]]] = {s: {"seq": [], "conc": []} for s in sources}
    with ExitStack() as stack:
        servers = []
        for source in sources:
            path, count, env = _parse(source)
            served = stack.enter_context(_From(count or args.workers, path or None, env))
            client = stack.enter_context(goclient.GoClient(served.address, base))
            client.run("concurrent", 4)  # every worker started and connected
            servers.append((source, served, client))
        for at in range(args.rounds):
            # Each round in the other order: the second meets what the first left behind.
            for source, served, client in servers if at % 2 == 0 else servers[::-1]:
                root = served.proc.pid
                before, go0 = snapshot(root), cpu_seconds(client.pid)
                seq = sum(client.run("new", 2).seconds)
                middle, go1 = snapshot(root), cpu_seconds(client.pid)
                conc = client.run("concurrent", 4).seconds[0]
                after, go2 = snapshot(root), cpu_seconds(client.pid)
                found[source]["seq"].append(seq)
                found[source]["conc"].append(conc)
                print(
                    f"{at} {_name(source)}: seq {seq:.3f} conc {conc:.3f} ratio "
                    f"{conc / seq:.2f} load {os.getloadavg()[0]:.2f} peak RSS {_peak_rss(root)}",
                    flush=True,
                )
                if args.split:
                    print("   seq  (per call) " + per_call(before, middle, root, 2))
                    print("   conc (per call) " + per_call(middle, after, root, 4))
                    print(
                        f"   client CPU, encoding too: seq {go1 - go0:.2f} s conc {go2 - go1:.2f} s"
                    )
    for source, times in found.items():
        seq, conc = times["seq"], times["conc"]
        ratios = [c / s for c, s in zip(conc, seq, strict=True)]
        print(
            f"{_name(source)}: seq min {min(seq):.3f} med {statistics.median(seq):.3f} | "
            f"conc min {min(conc):.3f} med {statistics.median(conc):.3f} | ratio of medians "
            f"{statistics.median(conc) / statistics.median(seq):.3f}, of mins "
            f"{min(conc) / min(seq):.3f}, median ratio {statistics.median(ratios):.3f}"
        )


if __name__ == "__main__":
    main()
