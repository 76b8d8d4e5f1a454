"""A ModelDeployment's rolling update, as planned (:mod:`modelplane.domain.rollout`).

Each ModelReplica carries the hash of the template it was composed from
(:data:`HASH_LABEL`, as a Deployment's pods carry ``pod-template-hash``). A replica
whose hash is not the current template's is old: this module decides, with the
domain's arithmetic, which old replicas take the new template this pass, which go, and
which are held: composed again with the spec they run, exactly as observed.

The hash covers the template's engines, cache and serving mode: what reaches the pods.
Labels, ``clusterSelector`` and ``tolerations`` are left out: they change where
replicas may run (the scheduler's moves), not what they run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from google.protobuf import struct_pb2 as structpb

from modelplane import kit
from modelplane.domain import naming, objects, rollout
from modelplane.domain.api import READY_TEMPLATE_FIELD, TEMPLATE_HASH_LABEL
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import PlacedReplica, Placement
from modelplane.planning.fleet import FleetState
from modelplane.planning.manifests import replica_spec
from modelplane.planning.scheduled import replicas_word

HASH_LABEL = TEMPLATE_HASH_LABEL
CONDITION = "Progressing"
# Where placement happens, not what runs: not part of the template hash.
_UNHASHED = ("clusterSelector", "tolerations")

# The wall clock, read once per call for the progress deadline only (tests replace it).
clock: Callable[[], float] = time.time

Key = tuple[str, int]


def read_strategy(xr: Mapping[str, Any]) -> rollout.Strategy:
    """Read ``spec.strategy.rollingUpdate`` and ``spec.progressDeadlineSeconds``.

    Raises:
        rollout.StrategyError: a value is not a number or a percentage, or both are 0.
    """
    spec = xr.get("spec") or {}
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    strategy = rollout.Strategy(
        max_surge=rolling.get("maxSurge", rollout.DEFAULT_SURGE),
        max_unavailable=rolling.get("maxUnavailable", rollout.DEFAULT_UNAVAILABLE),
        deadline_seconds=_seconds(spec.get("progressDeadlineSeconds")),
    )
    prefix = "spec.strategy.rollingUpdate."
    try:
        rollout.resolve(strategy, 100)
    except rollout.StrategyError as exc:
        raise rollout.StrategyError(prefix + str(exc)) from None
    if _zero(strategy.max_surge) and _zero(strategy.max_unavailable):
        msg = f"{prefix}maxSurge and {prefix}maxUnavailable may not both be 0"
        raise rollout.StrategyError(msg)
    return strategy


def _seconds(value: Any) -> int:
    if value is None:
        return rollout.DEFAULT_DEADLINE_SECONDS
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        msg = f"spec.progressDeadlineSeconds: {value!r} is not a positive number of seconds"
        raise rollout.StrategyError(msg)
    return int(value)


def _zero(value: int | str) -> bool:
    return str(value).strip() in ("0", "0%")


def template_hash(xr: Mapping[str, Any]) -> str:
    """The current template's hash: 10 hex digits of SHA-256 over its canonical JSON."""
    template = ((xr.get("spec") or {}).get("template") or {}).get("spec") or {}
    hashed = {k: v for k, v in template.items() if k not in _UNHASHED}
    text = json.dumps(hashed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def observed_hash(state: FleetState, key: Key) -> str | None:
    """The template hash an existing replica carries; None without the label."""
    found = state.own.get(key)
    if found is None:
        return None
    labels = _field(_field(found, "metadata"), "labels")
    value = labels.fields.get(HASH_LABEL) if labels is not None else None
    return value.string_value if value is not None else None


def _field(struct: structpb.Struct | None, name: str) -> structpb.Struct | None:
    """A nested object of a Struct, read in place (a replica is large; this is cheap)."""
    if struct is None or name not in struct.fields:
        return None
    value = struct.fields[name]
    return value.struct_value if value.HasField("struct_value") else None


def surge_for(
    deployment: Deployment, strategy: rollout.Strategy, current: str, ready: set[str]
) -> Callable[[FleetState, Placement], int]:
    """How many surge replicas to ask the scheduler for, given its placement without any.

    Only retained replicas on an old template count: a replica that must move anyway
    (make before break) gets a replacement on the current template from the scheduler.
    """

    def allowance(state: FleetState, placement: Placement) -> int:
        bounds = rollout.resolve(strategy, deployment.replicas)
        views = [
            rollout.Replica(
                _key_text((p.cluster, p.index)),
                p.new or observed_hash(state, (p.cluster, p.index)) in (current, None),
                naming.replica_name(deployment.name, p.cluster, p.index) in ready,
            )
            for p in placement.replicas
        ]
        return rollout.surge_allowance(deployment.replicas, bounds, views)

    return allowance


@dataclass(frozen=True)
class Routes:
    """Which replicas the ModelServices route to, as their ModelEndpoints report it.

    Attributes:
        gated: Replicas that get an endpoint (Ready, on a cluster with a gateway
            address): they count as available only once it is routed to.
        routed: Replicas whose observed endpoint reports ``Routed`` True, with the
            template hash that endpoint was composed for (None: it carries none).
    """

    gated: frozenset[str] = frozenset()
    routed: Mapping[str, str | None] = dataclasses.field(default_factory=dict)

    def serving(self, name: str, template: str | None) -> bool:
        """Tell whether replica ``name`` on ``template`` is routed to (or need not be)."""
        if name not in self.gated:
            return True
        if name not in self.routed:
            return False
        found = self.routed[name]
        return found is None or found == template


@dataclass(frozen=True)
class Rolled:
    """A placement after this pass of the rollout, and what to report.

    Attributes:
        placement: The scheduler's, less the retired replicas, with held ones kept as
            they are (``engines`` None: composed from their observed spec).
        labels: The template hash each composed replica carries, by (cluster, index).
        updated: Replicas on the current template; ``updated_ready`` of them Ready.
        progress: The ``Progressing`` condition.
        events: Normal events: replicas updated or retired this pass.
        ready: The replicas Ready for the rollout: Ready on the template they carry
            (:func:`ready_on_template`), and not updated by this pass.
    """

    placement: Placement
    labels: dict[Key, dict[str, str]]
    updated: int
    updated_ready: int
    progress: rollout.Progress
    events: tuple[str, ...]
    ready: frozenset[str] = frozenset()


def roll(
    xr: Mapping[str, Any],
    deployment: Deployment,
    strategy: rollout.Strategy,
    placement: Placement,
    state: FleetState,
    ready: set[str],
    surge: int,
    routes: Routes | None = None,
) -> Rolled:
    """Run one pass of the rollout over the scheduler's placement.

    ``routes`` says which replicas are routed to; without it every Ready one counts as
    available (a plan or simulation that sees no ModelService).
    """
    routes = routes if routes is not None else Routes()
    current = template_hash(xr)
    bounds = rollout.resolve(strategy, deployment.replicas)
    placed = {(p.cluster, p.index): p for p in placement.replicas}
    name = {key: naming.replica_name(deployment.name, *key) for key in placed}
    ready = {name[key] for key in placed if name[key] in ready and ready_on_template(state, key)}
    hashes = {key: _hash_of(xr, state, key, p, current) for key, p in placed.items()}
    views = [
        rollout.Replica(
            _key_text(key),
            hashes[key] == current,
            name[key] in ready,
            routes.serving(name[key], hashes[key]),
        )
        for key in sorted(placed)
    ]
    decided = rollout.step(deployment.replicas, bounds, views)
    retire, update = set(decided.retire), set(decided.update)
    kept: list[PlacedReplica] = []
    labels: dict[Key, dict[str, str]] = {}
    events: list[str] = []
    for key in sorted(placed):
        text, replica = _key_text(key), placed[key]
        if text in retire:
            events.append(f"replica {name[key]} retired: replaced by one on the current template")
            continue
        stale = hashes[key] != current
        if stale and (text not in update or replica.engines is None):
            # Held: its spec and its hash as observed (engines None: kept as is anyway).
            replica = PlacedReplica(replica.cluster, replica.index, None)
        elif stale:
            events.append(f"replica {name[key]} takes the current template ({current})")
            hashes[key] = current
            ready.discard(name[key])  # its pods restart on the new template
        kept.append(replica)
        if hashes[key] is not None:
            labels[key] = {HASH_LABEL: str(hashes[key])}
    updated = [k for k in labels if hashes[k] == current]
    updated_ready = sum(1 for k in updated if name[k] in ready)
    for moving in placement.moving:  # kept exactly as they run, label and all
        found = observed_hash(state, (moving.cluster, moving.index))
        if found is not None:
            labels[(moving.cluster, moving.index)] = {HASH_LABEL: found}
    short = max(deployment.replicas + surge - len(placed), 0) if surge else 0
    state_text = _state_text(deployment.replicas, len(updated), updated_ready, len(kept), bounds)
    unrouted = sum(1 for k in updated if name[k] in ready and not routes.serving(name[k], current))
    if unrouted:
        state_text += (
            f"; {unrouted} Ready {replicas_word(unrouted)} not routed to yet "
            "(their ModelEndpoint is not Routed)"
        )
    if short:
        state_text += (
            f"; no room for {short} surge {replicas_word(short)}, updating within maxUnavailable"
        )
    if decided.blocked:
        state_text += f"; {len(decided.hold)} old held: {decided.blocked}"
    complete = (
        len(updated) == deployment.replicas == len(kept)
        and updated_ready == deployment.replicas
        and not unrouted
    )
    progress = rollout.progress(
        state_text,
        complete=complete,
        deadline_seconds=strategy.deadline_seconds,
        previous=previous_condition(xr),
        now=clock(),
    )
    rolled = dataclasses.replace(placement, replicas=tuple(kept))
    return Rolled(
        rolled, labels, len(updated), updated_ready, progress, tuple(events), frozenset(ready)
    )


def _hash_of(
    xr: Mapping[str, Any], state: FleetState, key: Key, placed: PlacedReplica, current: str
) -> str | None:
    """The template a placed replica runs: current when new, else its label's.

    A replica from before rolling updates carries no label: it runs the current
    template when its spec already holds everything the current template would write.
    """
    if placed.new:
        return current
    found = observed_hash(state, key)
    if found is not None or placed.engines is None:
        return found
    existing = state.own.get(key)
    found = existing.fields.get("spec") if existing is not None else None
    # Only the spec is compared: converting the whole object would read its status too.
    spec = kit.struct_to_dict(found.struct_value) if found is not None else {}
    return current if objects.covers(spec, replica_spec(xr, placed)) else ""


def ready_on_template(state: FleetState, key: Key) -> bool:
    """Tell whether a replica's own object says it is Ready on the template it carries.

    Read from one copy of the replica (the fleet's), never pieced together from two
    reads that may be seconds apart. Its ``Ready`` must be True and speak of its current
    spec (Crossplane stamps each condition with the ``metadata.generation`` it saw; a
    replica just given a new template shows the old one's Ready until its own reconcile,
    and counts for nothing then: Deployment's rule too). That stamp is not enough:
    Crossplane takes it from the replica as its status write returns it, so a reconcile
    of the old template that ends after the deployment wrote the new one stamps the old
    template's Ready with the new generation. So a replica that carries a template hash
    must also name it in ``status.readyTemplateHash``, which its function writes with the
    verdict itself (see :mod:`modelplane.compose.model_replica`).
    """
    found = state.own.get(key)
    meta = _field(found, "metadata")
    status = _field(found, "status")
    if found is None or meta is None or status is None:
        return True  # nothing read of it here: the caller's Ready stands alone
    ready = _ready_condition(status)
    if ready is None or ready.get("status") != "True":
        return False
    generation = meta.fields["generation"].number_value if "generation" in meta.fields else None
    seen = ready.get("observedGeneration")
    if generation is not None and seen is not None and seen != generation:
        return False
    template = observed_hash(state, key)
    if not template:
        # No template named: a replica from before rolling updates, or a label that is not
        # a hash we wrote (a string of ours). Its Ready stands on its conditions alone, so a
        # replica that runs is never retired for an unreadable label.
        return True
    judged = status.fields.get(READY_TEMPLATE_FIELD)
    return judged is not None and judged.string_value == template


def _ready_condition(status: structpb.Struct) -> dict[str, Any] | None:
    """The ``Ready`` condition of a status, as plain values; None without one."""
    if "conditions" not in status.fields:
        return None
    for cond in status.fields["conditions"].list_value.values:
        fields = cond.struct_value.fields
        if "type" in fields and fields["type"].string_value == "Ready":
            return kit.struct_to_dict(cond.struct_value)
    return None


def previous_condition(xr: Mapping[str, Any]) -> tuple[str, str, float] | None:
    """The ``Progressing`` condition as last reported: reason, message, transition time."""
    for cond in kit.maps(xr, "status", "conditions"):
        if cond.get("type") != CONDITION:
            continue
        try:
            since = datetime.fromisoformat(str(cond.get("lastTransitionTime"))).timestamp()
        except ValueError:
            return None
        return str(cond.get("reason", "")), str(cond.get("message", "")), since
    return None


def _state_text(wanted: int, updated: int, ready: int, total: int, bounds: rollout.Bounds) -> str:
    return (
        f"{updated} of {wanted} {replicas_word(wanted)} updated, {ready} of them Ready, "
        f"{total} running (maxSurge {bounds.surge}, maxUnavailable {bounds.unavailable})"
    )


def _key_text(key: Key) -> str:
    return f"{key[0]}/{key[1]:06d}"
