"""Status for what no controller can run on the fleet's workload clusters.

Envoy Gateway, the LeaderWorkerSet controller and the Inference Extension need images
that do not run here; what they would report is written instead, and nothing else:

- a GatewayClass of Envoy Gateway's controller: ``Accepted``;
- a Gateway of such a class: ``Accepted``, ``Programmed``, the cluster's load balancer
  address (a documentation-range address per cluster, as e2e/providers.py gives it) and
  each listener's attached routes;
- an HTTPRoute attached to such a Gateway: ``Accepted`` and ``ResolvedRefs`` per parent;
- a LeaderWorkerSet: ``Available`` with all groups ready (no pods: the controller that
  would make the leader and worker pods does not run; a gap the scenarios name);
- an InferencePool: ``Accepted`` by the Gateways of the routes that reach it.

Every workload cluster of the plan is polled every ``--interval`` seconds; a status is
written only when it differs, and a cluster that does not answer (stopped on purpose) is
skipped until it does.

    python -m e2e.fleet.faker
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from e2e.fleet import plan as fleet_plan
from e2e.kube import Kube, Obj, dig
from e2e.workloads import WORKLOAD_GATEWAY_CONTROLLER, gateway_ip, gateway_status
from e2e.writes import ok, strip_times

log = logging.getLogger("e2e.fleet.faker")

GW = "gateway.networking.k8s.io/v1"
LWS = "leaderworkerset.x-k8s.io/v1"
POOL = "inference.networking.k8s.io/v1"
STAMP = "1970-01-01T00:00:00Z"


def with_generation(conds: list[dict[str, Any]], generation: int) -> list[dict[str, Any]]:
    return [{**c, "observedGeneration": generation} for c in conds]


def same(old: Any, new: Any) -> bool:
    """Equal but for condition times."""
    if isinstance(old, dict) and isinstance(new, dict):
        if "conditions" in new and strip_times(old.get("conditions")) != strip_times(
            new.get("conditions")
        ):
            return False
        keys = (set(old) | set(new)) - {"conditions", "lastTransitionTime"}
        return all(same(old.get(k), new.get(k)) for k in keys)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(same(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)


class Cluster:
    def __init__(self, name: str, kube: Kube) -> None:
        self.name = name
        self.kube = kube
        self.address = gateway_ip(name)

    def ours(self) -> set[str]:
        return {
            c["metadata"]["name"]
            for c in self.kube.list(GW, "GatewayClass")
            if dig(c, "spec", "controllerName") == WORKLOAD_GATEWAY_CONTROLLER
        }

    def write(self, obj: Obj, status: dict[str, Any]) -> None:
        if same(obj.get("status") or {}, status):
            return
        meta = obj["metadata"]
        self.kube.patch(
            obj["apiVersion"],
            obj["kind"],
            meta["name"],
            {"status": status},
            meta.get("namespace"),
            sub="status",
        )
        log.info("%s: %s %s/%s status written", self.name, obj["kind"],
                 meta.get("namespace", ""), meta["name"])  # fmt: skip

    def sync(self) -> None:
        classes = self.ours()
        for gc in self.kube.list(GW, "GatewayClass"):
            if gc["metadata"]["name"] in classes:
                gen = int(gc["metadata"].get("generation", 1))
                conds = [ok("Accepted", "Accepted", "Handled by Envoy Gateway")]
                self.write(gc, {"conditions": with_generation(conds, gen)})
        gateways = [
            g
            for g in self.kube.list(GW, "Gateway")
            if dig(g, "spec", "gatewayClassName") in classes
        ]
        routes = self.kube.list(GW, "HTTPRoute")
        ours = {(g["metadata"]["namespace"], g["metadata"]["name"]) for g in gateways}
        for gw in gateways:
            self.gateway(gw, routes)
        for route in routes:
            self.route(route, ours)
        if self.kube.served(POOL, "InferencePool"):
            for pool in self.kube.list(POOL, "InferencePool"):
                self.pool(pool, routes, ours)
        if self.kube.served(LWS, "LeaderWorkerSet"):
            for lws in self.kube.list(LWS, "LeaderWorkerSet"):
                self.leader_worker_set(lws)

    def gateway(self, gw: Obj, routes: list[Obj]) -> None:
        meta = gw["metadata"]
        attached: dict[str, int] = {}
        for route in routes:
            for ref in parents_of(route):
                if ref == (meta["namespace"], meta["name"], None):
                    for li in dig(gw, "spec", "listeners") or []:
                        attached[li["name"]] = attached.get(li["name"], 0) + 1
                elif ref[:2] == (meta["namespace"], meta["name"]):
                    attached[str(ref[2])] = attached.get(str(ref[2]), 0) + 1
        address = [{"type": "IPAddress", "value": self.address}]
        status = gateway_status(gw.get("spec") or {}, address, attached)
        gen = int(meta.get("generation", 1))
        status["conditions"] = with_generation(status["conditions"], gen)
        for li in status["listeners"]:
            li["conditions"] = with_generation(li["conditions"], gen)
        self.write(gw, status)

    def route(self, route: Obj, ours: set[tuple[str, str]]) -> None:
        gen = int(route["metadata"].get("generation", 1))
        parents = [
            {
                "parentRef": ref,
                "controllerName": WORKLOAD_GATEWAY_CONTROLLER,
                "conditions": with_generation(
                    [
                        ok("Accepted", "Accepted", "Route is accepted"),
                        ok("ResolvedRefs", "ResolvedRefs", "Resolved all the Object references"),
                    ],
                    gen,
                ),
            }
            for ref in dig(route, "spec", "parentRefs") or []
            if _parent(route, ref)[:2] in ours
        ]
        if parents:
            self.write(route, {"parents": parents})

    def pool(self, pool: Obj, routes: list[Obj], ours: set[tuple[str, str]]) -> None:
        meta = pool["metadata"]
        gateways: list[tuple[str, str]] = []
        for route in routes:
            if route["metadata"]["namespace"] != meta["namespace"]:
                continue
            backends = [
                b
                for rule in dig(route, "spec", "rules") or []
                for b in rule.get("backendRefs") or []
                if b.get("kind") == "InferencePool" and b.get("name") == meta["name"]
            ]
            if backends:
                gateways += [p[:2] for p in parents_of(route) if p[:2] in ours]
        if not gateways:
            return
        gen = int(meta.get("generation", 1))
        parents = [
            {
                "parentRef": {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "namespace": ns,
                    "name": name,
                },
                "conditions": with_generation(
                    [
                        ok("Accepted", "Accepted", "InferencePool has been accepted"),
                        ok("ResolvedRefs", "ResolvedRefs", "Resolved the endpoint picker"),
                    ],
                    gen,
                ),
            }
            for ns, name in sorted(set(gateways))
        ]
        self.write(pool, {"parents": parents})

    def leader_worker_set(self, lws: Obj) -> None:
        n = int(dig(lws, "spec", "replicas") or 1)
        name = lws["metadata"]["name"]
        status = {
            "replicas": n,
            "readyReplicas": n,
            "updatedReplicas": n,
            "hpaPodSelector": f"leaderworkerset.sigs.k8s.io/name={name}",
            "conditions": [ok("Available", "AllGroupsReady", "All replicas are ready")],
        }
        self.write(lws, status)


def _parent(route: Obj, ref: Mapping[str, Any]) -> tuple[str, str, str | None]:
    ns = ref.get("namespace") or route["metadata"]["namespace"]
    return (str(ns), str(ref.get("name")), ref.get("sectionName"))


def parents_of(route: Obj) -> list[tuple[str, str, str | None]]:
    return [_parent(route, ref) for ref in dig(route, "spec", "parentRefs") or []]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--interval", type=float, default=2.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    state = Path(os.environ.get("FLEET_STATE", "build/fleet"))
    clusters, _ = fleet_plan.load(state / "plan.json")
    fakes = [Cluster(c.name, Kube(str(state / c.name / "kubeconfig"))) for c in clusters]
    down: set[str] = set()
    while True:
        for fake in fakes:
            try:
                fake.sync()
            except Exception as exc:  # a stopped cluster fails in every way
                if fake.name not in down:
                    log.warning("%s: %s (skipped until it answers)", fake.name, exc)
                down.add(fake.name)
                continue
            down.discard(fake.name)
        time.sleep(args.interval)


if __name__ == "__main__":
    main()
