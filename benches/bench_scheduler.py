"""The ModelDeployment function on generated fleets: latency, memory, identical placements.

Fleets (every cluster publishes 8 GPU pools of 6 InferenceClasses; every object carries
a ``uid`` and ``resourceVersion``, as objects read from the API server do):

- S: 20 clusters, 100 ModelReplicas in the fleet;
- M: 200 clusters, 1,000 ModelReplicas;
- L: 1,000 clusters, 10,000 ModelReplicas;
- 5xL: 5,000 clusters, 50,000 ModelReplicas.

The deployment under test wants one replica per 10 clusters and already has half of
them, so each call retains, fills and explains. Each request is the one a placing
reconcile settles on (:func:`benches.fleets.fleet_request`): every cluster with its
published ledger, the deployment's own replicas, and the replicas of the clusters it
runs on and places on; ``=whole`` says its response equals, but for the requirements,
the one to a request holding every replica of the fleet (in process). Each size runs against its own served
function (``modelplane-function`` in a subprocess, over a local socket, its default
workers), so its peak RSS is its own. Every served figure comes from the Go client
(:mod:`benches.goclient`, ``tools/benchclient``), which builds each request from the
fleet's objects and encodes it as Crossplane does: Go's protobuf, a new map order on
every call, so the server never sees the same bytes twice (a Python client would send
identical bytes, which Crossplane never does). Figures are medians:

- ``cpu new``: the server's CPU time per reconcile, summed over its processes (10 ms
  ticks, so small fleets take many calls: :data:`REPEAT`), with a fleet it has never seen (every object a fresh uid, other teams'
  replicas new pod templates): what every call paid after a restart;
- ``cpu steady``: the same objects again, re-encoded (nothing changed: the steady state,
  measured after the workers have each seen the fleet once more, as a polling loop
  has); Crossplane tags such a request as before, and the worker answers it with the
  response it sent (:mod:`modelplane.runtime.answers`); ``ratio`` is steady / new;
- ``cpu touched``: the same fleet, but the composite changed before each call (a status
  written: a new tag every call), so every call composes again on what the fleet reader
  and the scheduler remember; ``t/new`` is touched / new;
- ``wall new`` / ``wall steady``: the round trips (encoding left out: ``Go enc`` is
  the client's encoding per call, as Crossplane pays it);
- ``RSS``: the server's peak resident memory, summed over its processes (VmHWM): a
  page they share (the fork server's modules, mapped copy-on-write by every worker) is
  counted once per process;
- ``PSS``: the peak of the sum of their proportional set sizes, sampled every 20 ms: a
  shared page counted once, split among the processes that map it (what the machine
  pays; a peak shorter than 20 ms may be missed).

The profile line splits an in-process call of the Python client on a fleet read before
(as a touched call) by phase.

Every response is checked against the digest of the response recorded before the
speed work (``benches/placements.json``): placements, conditions and events must be
byte-identical. ``python -m benches.bench_scheduler --record`` records them afresh.

The fleets are :mod:`benches.fleets`; the served function and its figures
:mod:`benches.served`. ``python -m benches`` runs every size; ``python -m benches.bench_scheduler S M`` picks.
"""

from __future__ import annotations

import cProfile
import functools
import hashlib
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crossplane.function import logging
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning, registry, runtime

from benches import goclient
from benches.fleets import SIZES, fleet_request, whole_fleet_request
from benches.served import Served

# Issue 24's targets: the server's CPU per reconcile in ms, summed over its processes (a
# fleet never seen, and steady), peak RSS summed over its processes in MiB, and steady / new.
TARGET_MS = {"M": 30.0, "L": 250.0, "5xL": 1_500.0}
TARGET_RSS_MIB = {"5xL": 500.0}
TARGET_RATIO = 1 / 3
FLOOR_REQUESTS = 5
REPEAT = {"S": (150, 30), "M": (45, 12), "L": (8, 4), "5xL": (3, 2)}  # (steady, new fleet)
DIGESTS = Path(__file__).with_name("placements.json")


def digest(rsp: fnv1.RunFunctionResponse) -> str:
    """The response's digest: placements, composed resources, conditions and events."""
    return hashlib.sha256(rsp.SerializeToString(deterministic=True)).hexdigest()


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


PHASES = {
    "read XR": (("request.py", "composite"), ("planner.py", "read_deployment")),
    "read fleet": (("fleet.py", "read_fleet"), ("cache.py", "read_cache")),
    "schedule": (("scheduler.py", "schedule"),),
    "compose": (
        ("endpoints.py", "compose_replicas"),
        ("endpoints.py", "compose_endpoints"),
        ("endpoints.py", "observed_replicas"),
        ("report.py", "report"),
    ),
}


def where_time_goes(req: fnv1.RunFunctionRequest) -> dict[str, float]:
    """Split one run on a fleet read before by phase: shares of the profiled run's
    cumulative time (in process, ``runtime.run``: no memo of responses, so it composes
    again on what is remembered of the fleet, as a touched call does)."""
    runtime.run(req, registry.COMPOSERS)
    profile = cProfile.Profile()
    profile.enable()
    runtime.run(req, registry.COMPOSERS)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    cumulative = {
        (path.rsplit("/", 1)[-1], func): c for (path, _, func), (_, _, _, c, _) in stats.items()
    }
    total = cumulative.get(("dispatch.py", "run"), 0.0)
    if not total:
        return {}
    return {
        phase: sum(cumulative.get(key, 0.0) for key in keys) / total
        for phase, keys in PHASES.items()
    }


def bench(size: str) -> dict[str, Any]:
    """Measure one size, served, from the Go client (never seen, steady), and profile it."""
    clusters, replicas = SIZES[size]
    req = fleet_request(clusters, replicas)
    steady_repeat, new_repeat = REPEAT[size]
    result: dict[str, Any] = {"size": size, "clusters": clusters, "replicas": replicas}
    result["whole fleet"] = answers_as_the_whole_fleet(req, clusters, replicas)
    result["where"] = where_time_goes(planning.decode_request(req.SerializeToString()))
    planning.forget()
    with Served() as served, goclient.GoClient(served.address, req) as client:
        digests = {client.run("steady", 1).digest}  # connected, and every worker started
        pss = 0.0
        for what, repeat in (
            ("new", new_repeat),
            ("steady", steady_repeat),
            ("touched", steady_repeat),
        ):
            if what == "steady":
                # A fleet is steady once each worker has seen it again after it was new
                # (the first look aliases its objects, the next find them in bulk), as a
                # reconcile loop polls it; the new calls just left it new to each (one call per
                # worker the served function starts: its default, as Served runs it).
                digests.add(client.run("steady", runtime.default_workers()).digest)
            cpu = served.cpu_seconds()
            answer, peak = served.peak_pss_mib(functools.partial(client.run, what, repeat))
            pss = max(pss, peak)
            result[f"{what} cpu ms"] = (served.cpu_seconds() - cpu) / repeat * 1e3
            result[f"{what} ms"] = statistics.median(answer.seconds) * 1e3
            result["encode ms"] = answer.encode_seconds / repeat * 1e3
            result["request MiB"] = answer.sizes[-1] / 2**20
            digests.add(answer.digest)
        result["RSS MiB"] = served.peak_rss_mib()
        result["PSS MiB"] = pss
        result["floor ms"] = decode_floor_ms(client.encodings(FLOOR_REQUESTS))
    result["digests"] = digests
    return result


def answers_as_the_whole_fleet(req: fnv1.RunFunctionRequest, clusters: int, replicas: int) -> bool:
    """Whether the request the bench sends (the clusters' ledgers, the replicas of the
    clusters it runs and places on) is answered as the whole fleet's request (every
    replica) is, but for the requirements: in process, each on a fresh memo."""
    answers = []
    for asked in (req, whole_fleet_request(clusters, replicas)):
        planning.forget()
        rsp = runtime.run(asked, registry.COMPOSERS)
        rsp.ClearField("requirements")
        answers.append(digest(rsp))
    planning.forget()
    return answers[0] == answers[1]


def decode_floor_ms(encodings: list[bytes]) -> float:
    """The least CPU any reader of such a request pays, in ms: protobuf's own decode of the
    whole request (C code, in this process; the fastest of Go-encoded requests). Targets
    below it plus the serving process's share cannot be met by reading the request."""
    samples = []
    for data in encodings:
        start = time.process_time()
        fnv1.RunFunctionRequest.FromString(data)
        samples.append((time.process_time() - start) * 1e3)
    return min(samples)


def recorded() -> dict[str, str]:
    """The digests recorded before the speed work, per size."""
    if not DIGESTS.exists():
        return {}
    found: dict[str, str] = json.loads(DIGESTS.read_text())
    return found


def record(results: list[dict[str, Any]]) -> None:
    """Record each size's digest (one per size: every call must have answered the same)."""
    found = recorded()
    for r in results:
        if len(r["digests"]) != 1:
            msg = f"{r['size']}: calls answered differently, nothing recorded"
            raise SystemExit(msg)
        found[r["size"]] = next(iter(r["digests"]))
    DIGESTS.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")


def same_placements(r: dict[str, Any], digests: dict[str, str]) -> str:
    want = digests.get(r["size"])
    if want is None:
        return "unrecorded"
    return "identical" if r["digests"] == {want} else "CHANGED"


def verdicts(r: dict[str, Any]) -> list[tuple[str, float, float]]:
    """Each target of the size: (what, measured, target)."""
    out = []
    if r["size"] in TARGET_MS:
        target = TARGET_MS[r["size"]]
        out += [("cpu new", r["new cpu ms"], target), ("cpu steady", r["steady cpu ms"], target)]
    if r["size"] in TARGET_RSS_MIB:
        out.append(("RSS MiB", r["RSS MiB"], TARGET_RSS_MIB[r["size"]]))
        out.append(("PSS MiB", r["PSS MiB"], TARGET_RSS_MIB[r["size"]]))
    out.append(("steady/new", ratio(r), TARGET_RATIO))
    return out


def ratio(r: dict[str, Any], what: str = "steady") -> float:
    """Steady (or touched) CPU over never-seen CPU."""
    return float(r[f"{what} cpu ms"]) / max(float(r["new cpu ms"]), 1e-9)


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}, load average {load}"
    )


def main(sizes: list[str] | None = None) -> None:
    args = sizes if sizes is not None else sys.argv[1:]
    recording = "--record" in args
    chosen = [a for a in args if a != "--record"] or list(SIZES)
    logging.configure(logging.Level.INFO)
    print(f"machine: {machine()}")
    print(
        "served figures from the Go client (tools/benchclient: requests built, tagged and "
        "encoded as Crossplane does, a new map order on every call, one connection); "
        "touched = the fleet steady, the composite changed (a new tag); cpu = the server's "
        "CPU per reconcile summed over its processes; wall = median round trip; RSS = peak, "
        "summed over its processes (pages they share counted once per process); PSS = peak "
        "of the sum of their proportional set sizes (shared pages counted once: what the "
        "machine pays), sampled every 20 ms; floor = protobuf's full decode of one such "
        "request in one process (C code: the least any reader of it pays)"
    )
    header = (
        f"{'size':4} {'clusters':>8} {'replicas':>8} {'req MiB':>8} {'floor':>6} {'cpu new':>8} "
        f"{'cpu steady':>10} {'ratio':>6} {'touched':>8} {'t/new':>6} "
        f"{'wall new':>9} {'wall steady':>11} {'Go enc':>7} "
        f"{'RSS MiB':>8} {'PSS MiB':>8}  placements  =whole  targets"
    )
    print(header)
    digests = recorded()
    results = []
    for size in chosen:
        r = bench(size)
        results.append(r)
        missed = [what for what, got, want in verdicts(r) if got > want]
        print(
            f"{r['size']:4} {r['clusters']:>8} {r['replicas']:>8} {r['request MiB']:>8.1f} "
            f"{r['floor ms']:>6.0f} "
            f"{r['new cpu ms']:>8.0f} {r['steady cpu ms']:>10.1f} {ratio(r):>6.2f} "
            f"{r['touched cpu ms']:>8.1f} {ratio(r, 'touched'):>6.2f} "
            f"{r['new ms']:>9.0f} {r['steady ms']:>11.0f} {r['encode ms']:>7.0f} "
            f"{r['RSS MiB']:>8.0f} {r['PSS MiB']:>8.0f}  {same_placements(r, digests):10}  "
            f"{'yes' if r['whole fleet'] else 'NO':6}  "
            f"{'missed: ' + ', '.join(missed) if missed else 'ok'}  (load {_load()})",
            flush=True,
        )
    for r in results:
        shares = ", ".join(f"{k} {v:.0%}" for k, v in r["where"].items())
        print(f"{r['size']}: profile of a touched call (Python client, in process): {shares}")
    print(f"against issue 24's targets (machine: {machine()}):")
    for r in results:
        checks = "; ".join(
            f"{what} {got:.2f} <= {want:.2f} {'ok' if got <= want else 'MISSED'}"
            if what == "steady/new"
            else f"{what} {got:.0f} <= {want:.0f} {'ok' if got <= want else 'MISSED'}"
            for what, got, want in verdicts(r)
        )
        print(f"  {r['size']}: {checks}; placements {same_placements(r, digests)}")
    if recording:
        record(results)
        print(f"recorded digests of {', '.join(chosen)} in {DIGESTS.name}")


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
