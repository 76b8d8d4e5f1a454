"""ModelDeployment: place whole replicas on the fleet, compose them and their endpoints.

Each call:

1. requires the referenced ModelCache (same namespace, by name) and its **narrow
   view**: its own ModelReplicas, each cluster they run on (by name) and the
   ModelReplicas on each (every namespace). When that view is steady (every wanted
   replica kept where it is, nothing to place, move or drop) it answers from it; else
   it also requires the InferenceClusters matching the ``clusterSelector`` and every
   ModelReplica of the fleet (the capacity ledger is fleet-wide) and answers from them
   (:mod:`modelplane.planning.steady`; docs/design/loop-cost.md section 5a). Crossplane
   seeds each reconcile's first call with what the last one required, so a steady
   deployment is answered in one call, and is woken only by what it requires;
2. reads the deployment, the fleet and the cache, and schedules
   (:func:`modelplane.planning.plan`: the fleet reader, then
   :func:`modelplane.domain.scheduler.schedule`), then takes this pass of a rolling
   update (:func:`modelplane.planning.roll`);
3. composes a ModelReplica per placed replica
   (:func:`modelplane.planning.replica_manifests`) and a ModelEndpoint per Ready replica
   on a cluster with a gateway address (:mod:`.endpoints`);
4. writes ``status.replicas``, the conditions and events (:mod:`.report`).

Nothing running is lost by a bad edit: when the deployment cannot be read or the
fleet is not read yet, what the composite already composed is composed again
unchanged; when a selector does not compile or the cache is unresolved, the scheduler
keeps what is placed and places nothing new.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose.model_deployment.endpoints import (
    ObservedReplicas,
    compose_endpoints,
    compose_replicas,
    observed_replicas,
    observed_routes,
)
from modelplane.compose.model_deployment.report import report, report_rollout
from modelplane.compose.model_deployment.unindexed import keep_unindexed
from modelplane.domain import rollout
from modelplane.domain.api import CLUSTER_LABEL, DEPLOYMENT_LABEL
from modelplane.domain.api import MODELPLANE as API_VERSION
from modelplane.domain.naming import label_value
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import Placement
from modelplane.domain.text import cut
from modelplane.models.modeldeployment import ModelDeployment
from modelplane.planning import (
    CACHE,
    CLUSTERS,
    MESSAGE_LIMIT,
    OWN,
    REPLICAS,
    CacheState,
    FleetState,
    Planned,
    Rolled,
    cache_name,
    cluster_requirement,
    distinct,
    fleet_items,
    hosting,
    is_steady,
    ledger_view,
    narrowed,
    on_cluster_requirement,
    plan,
    plan_read,
    read_cache,
    read_deployment,
    read_fleet,
    read_strategy,
    replica_manifests,
    roll,
    surge_for,
    template_hash,
    warnings,
)

__all__ = ["CACHE", "CLUSTERS", "OWN", "REPLICAS", "compose", "require"]

Surge = Callable[[FleetState, Placement], int]


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose a ModelDeployment's replicas and endpoints, and report on them."""
    with _collector_paused():
        return _compose(req, rsp)


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


def _compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    xr = kit.composite(req)
    try:
        model = ModelDeployment.model_validate(xr)
        deployment = read_deployment(model, xr)
    except pydantic.ValidationError as exc:
        _unreadable(req, rsp, kit.summarize(exc))
        return kit.Released.NOTHING  # held: everything observed is composed again
    except ValueError as exc:
        _unreadable(req, rsp, _one_line(exc))
        return kit.Released.NOTHING  # held: everything observed is composed again
    try:
        strategy = read_strategy(xr)
    except rollout.StrategyError as exc:
        _unreadable(req, rsp, _one_line(exc))
        return kit.Released.NOTHING  # held: everything observed is composed again
    cache = read_cache(
        cache_name(model), kit.was_required(req, CACHE), kit.required_structs(req, CACHE)
    )
    seen = observed_replicas(req)
    current = template_hash(xr)
    surge = surge_for(deployment, strategy, current, seen.ready)
    planned = _planned(req, rsp, _Asking.of(model, deployment, seen, current), cache, surge)
    if planned is None:
        return kit.Released.NOTHING  # held: everything observed is composed again
    ready = seen.ready | planned.state.ready
    routes = observed_routes(req, deployment, planned.placement, planned.state)
    rolled = roll(
        xr, deployment, strategy, planned.placement, planned.state, ready, planned.surge, routes
    )
    placement, ready = rolled.placement, ready & set(rolled.ready) | _moving(rolled, ready)
    manifests = replica_manifests(xr, deployment, placement, planned.state, rolled.labels)
    composed = compose_replicas(rsp, manifests)
    unindexed = keep_unindexed(req, rsp)
    # The scheduler keeps whatever must keep running; nothing placed is its decision
    # (scaled to zero, every cluster deleted), not a failure to compose.
    nothing_placed = not composed and not unindexed
    compose_endpoints(
        req, rsp, xr, deployment, composed, planned.state, ready, seen.unreachable, rolled.labels
    )
    report(rsp, deployment, placement, cache, composed, ready, seen.unreachable)
    report_rollout(rsp, xr, rolled, deployment.replicas)
    for message in [*warnings(planned.state, cache), *unindexed]:
        kit.warn(rsp, message)
    if nothing_placed:
        return kit.Released.everything("nothing placed: scaled to zero or no cluster left")
    return kit.left_out(req, rsp, "replicas and endpoints the placement no longer has")


def _moving(rolled: Rolled, ready: set[str]) -> set[str]:
    """Replicas that must move keep their Ready as read: the rollout does not judge them."""
    return {m.name for m in rolled.placement.moving} & ready


@dataclass(frozen=True)
class _Asking:
    """What a call's requirements are made of: the deployment, and two hints from what
    it composed, which save Crossplane's requirement loop a call where it has not seeded
    the last reconcile's requirements (a first reconcile, ``crossplane render``):

    - the clusters its ModelReplicas were observed on, asked for with its own replicas;
    - ``must_place``: it composed more or fewer replicas than it wants, or some on an
      old template, so it will place: the fleet's clusters are asked for at once.

    Hints only ask: the view and the verdict are built from the replicas it reads.
    """

    model: ModelDeployment
    deployment: Deployment
    observed_on: frozenset[str]
    must_place: bool

    @classmethod
    def of(
        cls, model: ModelDeployment, deployment: Deployment, seen: ObservedReplicas, current: str
    ) -> _Asking:
        """The hints from the replicas it composed, as observed (``current``: its
        template's hash)."""
        settled = seen.count == deployment.replicas and seen.templates <= {current}
        return cls(model, deployment, seen.clusters, must_place=not settled)

    def require(
        self,
        rsp: fnv1.RunFunctionResponse,
        on: Sequence[str],
        *,
        placing: Sequence[str] | None = None,
        whole: bool = False,
    ) -> None:
        """Ask for the narrow view over ``on`` and the observed clusters; to place (with
        ``placing``, or when it must place) for the fleet's clusters and the replicas on
        the ``placing`` ones; with ``whole``, for every replica of the fleet."""
        on = sorted({*on, *self.observed_on})
        if placing is None and self.must_place:
            placing = ()
        require(rsp, self.model, self.deployment, on, placing=placing, whole=whole)


def _planned(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    asking: _Asking,
    cache: CacheState,
    surge: Surge,
) -> Planned | None:
    """Plan on the narrow view when it is steady, else on the fleet's clusters and their
    ledgers (on the whole fleet when the call holds it); None: held (what is composed
    stays) until Crossplane answers what this call requires.

    The verdict is taken on the narrow view whichever view the call holds, so the
    requirements it asks for are the same either way and Crossplane's loop settles.
    """
    deployment = asking.deployment
    if _answered(req, CLUSTERS, REPLICAS):
        return _on_the_whole_fleet(req, rsp, asking, cache, surge)
    asking.require(rsp, [])
    if not _answered(req, OWN):
        _hold(req, rsp, "reading the deployment's ModelReplicas")
        return None
    on = hosting(read_fleet([], fleet_items(req, OWN), deployment))
    asking.require(rsp, on)
    if not _answered(req, *(cluster_requirement(c) for c in on)):
        _hold(req, rsp, "reading the InferenceClusters its replicas run on")
        return None
    if not _answered(req, *(on_cluster_requirement(c) for c in on)):
        _hold(req, rsp, "reading the ModelReplicas on the clusters its replicas run on")
        return None
    if _answered(req, CLUSTERS):
        return _on_the_ledgers(req, rsp, asking, cache, surge, on)
    narrow = _on_the_narrow_view(req, deployment, cache, surge, on)
    if is_steady(narrow):
        return narrow
    asking.require(rsp, on, placing=())
    _hold(req, rsp, "reading the fleet's InferenceClusters")
    return None


def _on_the_ledgers(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    asking: _Asking,
    cache: CacheState,
    surge: Surge,
    on: Sequence[str],
) -> Planned | None:
    """Plan on the fleet's clusters, reading the replicas of those it runs on or places
    on and the ledgers of the rest (:mod:`modelplane.planning.tally`).

    A placement on a cluster whose replicas were not read is not answered: the call
    asks for them and holds, so every replica it places is checked against the replicas
    on its cluster, as on the whole fleet. The clusters read that way only grow within
    a reconcile, so the loop settles; where a second widening would be needed, it reads
    the whole fleet instead.
    """
    deployment = asking.deployment
    view = ledger_view(req, deployment)
    exact, tally = view.exact, view.tallied
    planned = plan(deployment, cache, view.clusters, view.replicas, surge, tallied=tally.replicas)
    needed = {*on, *tally.unpublished, *(p.cluster for p in planned.placement.replicas)}
    if not needed <= exact:
        if exact - {*on, *tally.unpublished}:
            asking.require(rsp, on, whole=True)
        else:
            asking.require(rsp, on, placing=sorted(exact | needed))
        _hold(req, rsp, "reading the ModelReplicas on the clusters it places on")
        return None
    narrow = plan_read(deployment, cache, narrowed(planned.state), surge, narrow=True)
    asking.require(rsp, on, placing=None if is_steady(narrow) else sorted(exact))
    return planned


def _on_the_whole_fleet(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    asking: _Asking,
    cache: CacheState,
    surge: Surge,
) -> Planned:
    """Plan on the whole fleet; ask for it again only if the narrow view cut out of it is
    not steady (a call holding only the narrow view would say the same)."""
    deployment = asking.deployment
    whole = plan(deployment, cache, fleet_items(req, CLUSTERS), fleet_items(req, REPLICAS), surge)
    narrow = plan_read(deployment, cache, narrowed(whole.state), surge, narrow=True)
    asking.require(rsp, hosting(whole.state), whole=not is_steady(narrow))
    return whole


def _on_the_narrow_view(
    req: fnv1.RunFunctionRequest,
    deployment: Deployment,
    cache: CacheState,
    surge: Surge,
    on: Sequence[str],
) -> Planned:
    """Plan on the hosting clusters and the replicas on them, the deployment's own among
    them (each once: an own replica is answered as own and as on its cluster)."""
    clusters = [item for c in on for item in fleet_items(req, cluster_requirement(c))]
    on_them = (item for c in on for item in fleet_items(req, on_cluster_requirement(c)))
    replicas = distinct([*on_them, *fleet_items(req, OWN)])
    return plan(deployment, cache, clusters, replicas, surge, narrow=True)


def _answered(req: fnv1.RunFunctionRequest, *names: str) -> bool:
    return all(kit.was_required(req, name) for name in names)


def require(
    rsp: fnv1.RunFunctionResponse,
    model: ModelDeployment,
    deployment: Deployment,
    on: Sequence[str],
    *,
    placing: Sequence[str] | None = None,
    whole: bool = False,
) -> None:
    """Ask for the narrow view (the cache, its own replicas, per hosting cluster the
    cluster and the replicas on it); to place (``placing`` not None) for the clusters
    its selector matches, with their ledgers, and the replicas on each ``placing``
    cluster; with ``whole``, for the selected clusters and every replica of the fleet.
    Each call replaces what the last one asked for."""
    rsp.requirements.Clear()
    own = {DEPLOYMENT_LABEL: label_value(deployment.name)}
    kit.require(
        rsp, OWN, API_VERSION, "ModelReplica", match_labels=own, namespace=deployment.namespace
    )
    for cluster in on:
        kit.require(
            rsp, cluster_requirement(cluster), API_VERSION, "InferenceCluster", match_name=cluster
        )
    for cluster in sorted({*on, *(placing or ())}):
        on_it = {CLUSTER_LABEL: label_value(cluster)}
        kit.require(
            rsp, on_cluster_requirement(cluster), API_VERSION, "ModelReplica", match_labels=on_it
        )
    if placing is not None or whole:
        spec = model.spec.template.spec if model.spec else None
        selector = spec.cluster_selector.match_labels if spec and spec.cluster_selector else None
        kit.require(rsp, CLUSTERS, API_VERSION, "InferenceCluster", match_labels=selector or {})
    if whole:
        kit.require(rsp, REPLICAS, API_VERSION, "ModelReplica", match_labels={})
    name = cache_name(model)
    if name is not None:
        kit.require(
            rsp, CACHE, API_VERSION, "ModelCache", match_name=name, namespace=deployment.namespace
        )


def _unreadable(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, why: str) -> None:
    """Keep what is composed, unchanged, and say (with a Warning event) that the
    deployment cannot be read, so nothing is scheduled; it is not Ready meanwhile."""
    message = f"cannot read the deployment: {why}"
    kit.hold_and_wait(req, rsp, "ReplicasScheduled", "Scheduling", message)


def _hold(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, message: str) -> None:
    """Keep what is composed, unchanged, while the fleet is read: nothing is scheduled yet.

    The deployment is not Ready meanwhile: what it holds may all be ready, but a
    deployment whose fleet is not read yet is not what its user asked for. Not a fault,
    so ``ReplicasScheduled`` is Unknown and no event is emitted.
    """
    kit.hold(req, rsp)
    kit.set_ready(rsp, False)
    kit.set_condition(rsp, "ReplicasScheduled", None, "Scheduling", message)


def _one_line(exc: Exception) -> str:
    return cut(" ".join(str(exc).split()), MESSAGE_LIMIT)
