"""The scheduling call: a ModelDeployment and its fleet in, a placement out.

The function (:mod:`modelplane.compose.model_deployment`), ``modelplane plan``,
``modelplane simulate`` and the benchmarks all decide through :func:`plan`, so what
they show is what the function does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.domain import scheduler
from modelplane.domain.conditions import Condition
from modelplane.domain.scheduling import stuck
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    Deployment,
    DeviceRequest,
    Engine,
    ExistingReplica,
    Fleet,
    Member,
    labels,
)
from modelplane.domain.scheduling.placement import Placement
from modelplane.domain.taints import Toleration
from modelplane.models.modeldeployment import ModelDeployment
from modelplane.planning import rolling
from modelplane.planning.cache import CacheState
from modelplane.planning.fields import Item, as_item
from modelplane.planning.fleet import FleetState, read_fleet
from modelplane.planning.memo import MEMO
from modelplane.planning.scheduled import scheduled_condition
from modelplane.planning.wire import EncodedItems


@dataclass(frozen=True)
class Planned:
    """A placement, the fleet it was made on, and the ``ReplicasScheduled`` it earns."""

    deployment: Deployment
    state: FleetState
    placement: Placement
    scheduled: Condition
    surge: int = 0


def plan(
    deployment: Deployment,
    cache: CacheState,
    clusters: Iterable[Item | Mapping[str, Any]],
    replicas: Iterable[Item | Mapping[str, Any]],
    surge: Callable[[FleetState, Placement], int] | None = None,
    *,
    narrow: bool = False,
    tallied: Sequence[ExistingReplica] = (),
) -> Planned:
    """Read the fleet and schedule the deployment on it: the function's decision, alone.

    ``modelplane plan`` calls this with YAML documents; the function with Structs, or
    with the fleet's objects still encoded when the runtime decoded the request with
    :func:`modelplane.planning.decode_request`. ``surge``, given the fleet read and the
    placement, says how many replicas a rolling update adds for this pass. ``narrow``:
    the fleet is a deployment's narrow view (:mod:`.steady`), remembered apart.
    ``tallied``: replicas read from the clusters' ledgers (:mod:`.tally`) in place of
    those not among ``replicas``.
    """
    if not isinstance(clusters, EncodedItems):
        clusters = [as_item(c) for c in clusters]
    if not isinstance(replicas, EncodedItems):
        replicas = [as_item(r) for r in replicas]
    state = read_fleet(clusters, replicas, deployment, tallied)
    return plan_read(deployment, cache, state, surge, narrow=narrow)


def plan_read(
    deployment: Deployment,
    cache: CacheState,
    state: FleetState,
    surge: Callable[[FleetState, Placement], int] | None = None,
    *,
    narrow: bool = False,
) -> Planned:
    """Schedule the deployment on a fleet already read (:func:`plan`), through the
    placement memos, which keep one placement per deployment and view: ``narrow`` for
    its narrow view (:func:`modelplane.planning.narrowed`)."""
    # A stuck replica moves only once its grace is over; the clock is the rollout's,
    # read once per call (tests replace it).
    state.fleet = stuck.past_grace(
        state.fleet, deployment.unschedulable_after_seconds, rolling.clock()
    )
    ready = frozenset(state.ready)
    placements, surged = (
        (MEMO.narrow, MEMO.narrow_surged) if narrow else (MEMO.placements, MEMO.surged)
    )
    placement = placements.placement(_schedule, deployment, state.fleet, cache.footprint, ready)
    extra = surge(state, placement) if surge is not None else 0
    if extra:
        asked = dataclasses.replace(deployment, replicas=deployment.replicas + extra)
        placement = surged.placement(_schedule, asked, state.fleet, cache.footprint, ready)
    scheduled = scheduled_condition(deployment, placement, cache)
    return Planned(deployment, state, placement, scheduled, extra)


def _schedule(
    deployment: Deployment, found: Fleet, cache: CacheFootprint | None, ready: frozenset[str]
) -> Placement:
    return scheduler.schedule(deployment, found, cache=cache, ready=ready)


def forget() -> None:
    """Forget what earlier calls read and placed, so the next call starts afresh."""
    MEMO.reset()


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
