"""ModelDeployment: place whole replicas on the fleet, compose them and their endpoints.

Each call:

1. requires the same three things, whatever it reads: the referenced ModelCache (same
   namespace, by name), the InferenceClusters matching the ``clusterSelector``, and
   every ModelReplica of the fleet (all namespaces: the capacity ledger is fleet-wide);
2. reads the deployment, the fleet and the cache into domain values (:mod:`.fleet`);
3. runs the scheduler (:func:`modelplane.domain.scheduler.schedule`);
4. composes a ModelReplica per placed replica and a ModelEndpoint per Ready replica on
   a cluster with a gateway address (:mod:`.manifests`);
5. writes ``status.replicas``, the conditions and events (:mod:`.report`).

Nothing running is lost by a bad edit: when the deployment cannot be read or the
fleet is not read yet, what the composite already composed is composed again
unchanged; when a selector does not compile or the cache is unresolved, the scheduler
keeps what is placed and places nothing new.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.compose import _kit as kit
from modelplane.compose.model_deployment import fleet, rolling, wire
from modelplane.compose.model_deployment.fleet import (
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    INDEX_LABEL,
    CacheState,
    FleetState,
    as_item,
    read_cache,
    read_fleet,
)
from modelplane.compose.model_deployment.manifests import (
    API_VERSION,
    compose_endpoints,
    compose_replicas,
    observed_replicas,
)
from modelplane.compose.model_deployment.report import MESSAGE_LIMIT, report, scheduled_condition
from modelplane.compose.model_deployment.unindexed import keep_unindexed
from modelplane.domain import rollout, scheduler
from modelplane.domain.scheduling import stuck
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    Deployment,
    DeviceRequest,
    Engine,
    Fleet,
    Member,
    labels,
)
from modelplane.domain.scheduling.memo import PlacementMemo
from modelplane.domain.scheduling.placement import Placement
from modelplane.domain.taints import Toleration
from modelplane.domain.text import cut
from modelplane.models.modeldeployment import ModelDeployment

__all__ = [
    "CACHE",
    "CLUSTERS",
    "CLUSTER_LABEL",
    "DEPLOYMENT_LABEL",
    "INDEX_LABEL",
    "MESSAGE_LIMIT",
    "REPLICAS",
    "Planned",
    "cache_name",
    "compose",
    "forget",
    "plan",
    "read_deployment",
    "require",
]

# Requirement names: the keys Crossplane answers under.
CLUSTERS = "inferenceclusters"
REPLICAS = "modelreplicas"
CACHE = "modelcache"


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose a ModelDeployment's replicas and endpoints, and report on them."""
    with _collector_paused():
        _compose(req, rsp)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one call.

    A large fleet's request makes tens of thousands of short-lived objects, which sets
    off full collections over everything alive: a quarter of the time on a 10,000
    replica fleet. Nothing here makes reference cycles, so reference counting frees it
    all; the collector resumes afterwards.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    xr = kit.composite(req)
    try:
        model = ModelDeployment.model_validate(xr)
        deployment = read_deployment(model, xr)
    except pydantic.ValidationError as exc:
        _hold(req, rsp, f"cannot read the deployment: {kit.summarize(exc)}", warn=True)
        return
    except ValueError as exc:
        _hold(req, rsp, f"cannot read the deployment: {_one_line(exc)}", warn=True)
        return
    try:
        strategy = rolling.read_strategy(xr)
    except rollout.StrategyError as exc:
        _hold(req, rsp, f"cannot read the deployment: {_one_line(exc)}", warn=True)
        return
    require(rsp, model, deployment.namespace)
    if not (kit.was_required(req, CLUSTERS) and kit.was_required(req, REPLICAS)):
        _hold(req, rsp, "reading the fleet's InferenceClusters and ModelReplicas")
        return
    cache = read_cache(cache_name(model), kit.was_required(req, CACHE), _required(req, CACHE))
    seen = observed_replicas(req)
    surge = rolling.surge_for(deployment, strategy, rolling.template_hash(xr), seen.ready)
    planned = plan(deployment, cache, _fleet(req, CLUSTERS), _fleet(req, REPLICAS), surge)
    ready = seen.ready | planned.state.ready
    rolled = rolling.roll(
        xr, deployment, strategy, planned.placement, planned.state, ready, planned.surge
    )
    placement, ready = rolled.placement, ready & set(rolled.ready) | _moving(rolled, ready)
    composed = compose_replicas(rsp, xr, deployment, placement, planned.state, rolled.labels)
    unindexed = keep_unindexed(req, rsp)
    if not composed and not unindexed:
        # The scheduler keeps whatever must keep running; nothing placed is its
        # decision (scaled to zero, every cluster deleted), not a failure to compose.
        kit.release_all()
    compose_endpoints(
        req, rsp, xr, deployment, composed, planned.state, ready, seen.unreachable, rolled.labels
    )
    report(rsp, deployment, placement, cache, composed, ready, seen.unreachable)
    rolling.report(rsp, xr, rolled, deployment.replicas)
    for message in [*fleet.warnings(planned.state, cache), *unindexed]:
        kit.warn(rsp, message)


def _moving(rolled: rolling.Rolled, ready: set[str]) -> set[str]:
    """Replicas that must move keep their Ready as read: the rollout does not judge them."""
    return {m.name for m in rolled.placement.moving} & ready


@dataclass(frozen=True)
class Planned:
    """A placement, the fleet it was made on, and the ``ReplicasScheduled`` it earns."""

    deployment: Deployment
    state: FleetState
    placement: Placement
    scheduled: tuple[bool, str, str]
    surge: int = 0


def plan(
    deployment: Deployment,
    cache: CacheState,
    clusters: Iterable[fleet.Item | Mapping[str, Any]],
    replicas: Iterable[fleet.Item | Mapping[str, Any]],
    surge: Callable[[FleetState, Placement], int] | None = None,
) -> Planned:
    """Read the fleet and schedule the deployment on it: the function's decision, alone.

    ``modelplane plan`` calls this with YAML documents; the function with Structs, or
    with the fleet's objects still encoded when the server decoded the request with
    :func:`.wire.decode_request`.
    """
    if not isinstance(clusters, wire.EncodedItems):
        clusters = [as_item(c) for c in clusters]
    if not isinstance(replicas, wire.EncodedItems):
        replicas = [as_item(r) for r in replicas]
    state = read_fleet(clusters, replicas, deployment)
    # A stuck replica moves only once its grace is over; the clock is the rollout's,
    # read once per call (tests replace it).
    state.fleet = stuck.past_grace(
        state.fleet, deployment.unschedulable_after_seconds, rolling.clock()
    )
    ready = frozenset(state.ready)
    placement = _placements.placement(_schedule, deployment, state.fleet, cache.footprint, ready)
    extra = surge(state, placement) if surge is not None else 0
    if extra:
        asked = dataclasses.replace(deployment, replicas=deployment.replicas + extra)
        placement = scheduler.schedule(asked, state.fleet, cache=cache.footprint, ready=ready)
    scheduled = scheduled_condition(deployment, placement, cache)
    return Planned(deployment, state, placement, scheduled, extra)


def _schedule(
    deployment: Deployment, found: Fleet, cache: CacheFootprint | None, ready: frozenset[str]
) -> Placement:
    return scheduler.schedule(deployment, found, cache=cache, ready=ready)


# Each deployment's last placement, reused while nothing it depends on changes.
_placements = PlacementMemo()


def forget() -> None:
    """Forget what earlier calls read and placed, so the next call starts afresh."""
    fleet.forget()
    _placements.clear()


def require(rsp: fnv1.RunFunctionResponse, model: ModelDeployment, namespace: str) -> None:
    """Ask for the selected clusters, the fleet's replicas and the cache: the same every call."""
    spec = model.spec.template.spec if model.spec else None
    selector = spec.cluster_selector.match_labels if spec and spec.cluster_selector else None
    kit.require(rsp, CLUSTERS, API_VERSION, "InferenceCluster", match_labels=selector or {})
    kit.require(rsp, REPLICAS, API_VERSION, "ModelReplica", match_labels={})
    name = cache_name(model)
    if name is not None:
        kit.require(rsp, CACHE, API_VERSION, "ModelCache", match_name=name, namespace=namespace)


def read_deployment(model: ModelDeployment, xr: Mapping[str, Any]) -> Deployment:
    """Convert a validated ModelDeployment into the scheduler's view of it.

    Raises:
        ValueError: the deployment has no spec, name or namespace.
    """
    meta = xr.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    if model.spec is None or not name or not namespace:
        msg = "a ModelDeployment needs metadata.name, metadata.namespace and spec.template"
        raise ValueError(msg)
    spec = model.spec.template.spec
    engines = tuple(
        Engine(
            name=e.name,
            copies=e.copies or 1,
            members=tuple(
                Member(
                    role=m.role,
                    worker_nodes=m.worker.nodes if m.worker else 1,
                    devices=tuple(
                        DeviceRequest(d.name, d.count, tuple(s.cel for s in d.selectors or ()))
                        for d in (m.node_selector.devices or () if m.node_selector else ())
                    ),
                )
                for m in e.members
            ),
        )
        for e in spec.engines
    )
    tolerations = tuple(
        Toleration(t.key or "", t.operator or "Equal", t.value or "", t.effect or "")
        for t in spec.tolerations or ()
    )
    selector = spec.cluster_selector.match_labels if spec.cluster_selector else None
    replicas = model.spec.replicas if model.spec.replicas is not None else 1
    grace = model.spec.unschedulable_after_seconds
    return Deployment(
        namespace,
        name,
        replicas,
        engines,
        labels(selector),
        tolerations,
        stuck.DEFAULT_GRACE_SECONDS if grace is None else grace,
    )


def cache_name(model: ModelDeployment) -> str | None:
    """The referenced ModelCache's name, if the deployment references one."""
    spec = model.spec.template.spec if model.spec else None
    return spec.model_cache_ref.name if spec and spec.model_cache_ref else None


def _required(req: fnv1.RunFunctionRequest, name: str) -> list[structpb.Struct]:
    """The Structs Crossplane fetched for a requirement, unconverted (they are many)."""
    found = req.required_resources.get(name) or req.extra_resources.get(name)
    return [] if found is None else [item.resource for item in found.items]


def _fleet(req: fnv1.RunFunctionRequest, name: str) -> Sequence[fleet.Item]:
    """The fleet objects Crossplane fetched for a requirement: decoded or still encoded."""
    found = req.required_resources.get(name) or req.extra_resources.get(name)
    return () if found is None else wire.encoded_items(found)


def _hold(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, message: str, *, warn: bool = False
) -> None:
    """Keep what is composed, unchanged, and say why nothing is scheduled.

    The deployment is not Ready meanwhile: what it holds may all be ready, but a
    deployment whose spec cannot be read (or whose fleet is not read yet) is not what
    its user asked for.
    """
    kit.hold(req, rsp)
    kit.set_ready(rsp, False)
    kit.set_condition(rsp, "ReplicasScheduled", False if warn else None, "Scheduling", message)
    if warn:
        kit.warn(rsp, message)


def _one_line(exc: Exception) -> str:
    return cut(" ".join(str(exc).split()), MESSAGE_LIMIT)
