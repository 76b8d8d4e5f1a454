"""Where a Go-encoded call's CPU goes, in process: decode, read the fleet, schedule, compose.

``python -m benches.profile_read L [--calls N] [--steady] [--cprofile]`` takes N
requests encoded by the Go client (``tools/benchclient``: a fleet never seen on every
call, as Crossplane encodes them), runs each in this process as a worker does, and prints
the CPU time of each phase per call (min and median):

- ``decode``: :func:`modelplane.planning.decode_request` (the fleet's items left encoded);
- ``floor``: a full protobuf decode of the same bytes (``RunFunctionRequest``), and the
  decode of every fleet object as a plain ``Struct``: what any reader of the request pays
  at least, for comparison;
- ``keys``: each fleet object's identity, read from its ``metadata``;
- ``read fleet``: :func:`modelplane.planning.read_fleet` on a fleet never seen (memos
  forgotten before each call; ``--steady``: a fleet read by two calls before, each call's
  objects the same but encoded anew by the Go client, as a steady reconcile sends them);
- ``run``: the whole call (:func:`modelplane.runtime.run` on the decoded request).

Not part of ``make bench`` (CPU seconds are what to trust on a busy machine; figures
here are for finding where time goes).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2
from modelplane import planning, registry, runtime
from modelplane.models.modeldeployment import ModelDeployment

from benches import goclient
from benches.fleets import SIZES, fleet_request


def cpu_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = fn()
    return (time.process_time() - start) * 1e3, out


def _fleet_items(req: fnv1.RunFunctionRequest) -> list[Any]:
    """Every fleet object of the request, of every requirement."""
    return [
        raw
        for name in sorted(req.required_resources)
        if name != planning.CACHE
        for raw in planning.encoded_items(req.required_resources[name])
    ]


def floor_struct(req: fnv1.RunFunctionRequest) -> int:
    """Decode every fleet object as a plain Struct (what the fleet costs to decode at all)."""
    count = 0
    for raw in _fleet_items(req):
        struct_pb2.Struct.FromString(raw)
        count += 1
    return count


def keys(req: fnv1.RunFunctionRequest) -> int:
    count = 0
    for raw in _fleet_items(req):
        planning.object_key(raw)
        count += 1
    return count


def read(req: fnv1.RunFunctionRequest) -> planning.FleetState:
    """The fleet as a placing call reads it (:func:`modelplane.planning.ledger_view`): the
    clusters, the replicas it reads and the rest from the clusters' ledgers."""
    deployment = planning.read_deployment(*_deployment(req))
    view = planning.ledger_view(req, deployment)
    return planning.read_fleet(view.clusters, view.replicas, deployment, view.tallied.replicas)


def _deployment(req: fnv1.RunFunctionRequest) -> tuple[Any, dict[str, Any]]:
    xr = resource.struct_to_dict(req.observed.composite.resource)
    return ModelDeployment.model_validate(xr), xr


SORT = "tottime"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("size", choices=list(SIZES))
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--steady", action="store_true")
    parser.add_argument("--cprofile", action="store_true")
    args = parser.parse_args()
    clusters, replicas = SIZES[args.size]
    template = fleet_request(clusters, replicas)
    with goclient.GoClient("127.0.0.1:1", template) as client:
        # --steady: the same objects each call, encoded anew; the first call reads them.
        encodings = client.encodings(args.calls + 2 * args.steady, steady=args.steady)
    if args.steady:
        for data in encodings[:2]:
            runtime.run(planning.decode_request(data), registry.COMPOSERS)
        encodings = encodings[2:]
    figures: dict[str, list[float]] = {}

    def add(what: str, ms: float) -> None:
        figures.setdefault(what, []).append(ms)

    for data in encodings:
        add("floor: full decode", cpu_ms(partial(fnv1.RunFunctionRequest.FromString, data))[0])
        ms, req = cpu_ms(partial(planning.decode_request, data))
        add("decode", ms)
        add("floor: + each object a Struct", cpu_ms(partial(floor_struct, req))[0] + ms)
        add("keys", cpu_ms(partial(keys, req))[0])
        if not args.steady:
            planning.forget()
        add("read fleet", cpu_ms(partial(read, req))[0])
        if not args.steady:
            planning.forget()
        if args.cprofile:
            profile = cProfile.Profile()
            profile.enable()
        add("run", cpu_ms(partial(runtime.run, req, registry.COMPOSERS))[0])
        if args.cprofile:
            profile.disable()
            pstats.Stats(profile).sort_stats(SORT).print_stats(40)
    print(f"{args.size}: {len(encodings)} Go-encoded calls, {'steady' if args.steady else 'new'}")
    for what, samples in figures.items():
        print(f"  {what:32} min {min(samples):8.1f} ms  median {statistics.median(samples):8.1f}")


if __name__ == "__main__":
    main()
