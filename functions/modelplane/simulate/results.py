"""What a simulation records, per step and per capacity mode, and its plain-data form.

Every step holds one :class:`ModeResult` per capacity mode, keyed by the mode's name.
A run has one mode, ``declared``: each pool counted as its InferenceCluster declares
(``capacity``; by default a pod is charged whole nodes, as the docs say). A compared run
(``--compare-capacity``) has two: ``nodes`` counts every pool in whole nodes, and
``devices`` lets pods share the nodes of every pool (each pod needs what it claims on one
node); the table and the report show them side by side. Lists are sorted, so the same
scenario always gives the same data, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modelplane.domain.conditions import Condition
from modelplane.domain.scheduling import explain
from modelplane.domain.scheduling.fleet import PinnedEngine
from modelplane.domain.scheduling.placement import PassedOver

DECLARED = "declared"
NODES = "nodes"
DEVICES = "devices"
MODES = (DECLARED,)
COMPARED = (NODES, DEVICES)
# Each mode's capacity for every published pool (None: as the pool declares it).
CAPACITY: dict[str, str | None] = {DECLARED: None, NODES: "Nodes", DEVICES: "Devices"}


@dataclass(frozen=True)
class ReplicaRecord:
    """A replica of a deployment at the end of a step.

    Attributes:
        engines: Its engines as the scheduler reads them back from the replica: each one's
            pool and the nodes it charges there.
        moving: Why it must move, when it runs on only until a replacement is Ready
            (make before break); empty when it is placed.
    """

    name: str
    cluster: str
    index: int
    ready: bool
    engines: tuple[PinnedEngine, ...]
    moving: str = ""


@dataclass(frozen=True)
class DeploymentRecord:
    """A deployment at the end of a step: its replicas and its ``ReplicasScheduled``."""

    deployment: str
    wanted: int
    replicas: tuple[ReplicaRecord, ...]
    scheduled: Condition
    passed_over: tuple[PassedOver, ...] = ()

    @property
    def placed(self) -> int:
        """How many replicas are placed (those that must move are not)."""
        return sum(1 for r in self.replicas if not r.moving)

    @property
    def ready(self) -> int:
        """How many replicas report Ready."""
        return sum(1 for r in self.replicas if r.ready)


@dataclass(frozen=True)
class Change:
    """A replica placed, removed, or starting to move during a step.

    Attributes:
        pass_: The reconcile pass (0: the step's events themselves).
        change: ``placed``, ``removed``, or ``moving`` (it keeps running until a
            replacement is Ready: make before break).
        reason: Why, in the scheduler's words (empty for a placement).
    """

    pass_: int
    deployment: str
    replica: str
    cluster: str
    change: str
    reason: str = ""


@dataclass(frozen=True)
class Move:
    """A replica that left its cluster for a reason other than scaling down, and where
    its replacement went (None: nowhere had room)."""

    deployment: str
    replica: str
    source: str
    target: str | None
    reason: str


@dataclass(frozen=True)
class Shortfall:
    """A deployment that has fewer replicas placed than it wants, and why."""

    deployment: str
    wanted: int
    placed: int
    reason: str
    message: str
    clusters: tuple[PassedOver, ...]


@dataclass(frozen=True)
class PoolUse:
    """A published pool at the end of a step: its nodes and who uses them.

    Attributes:
        used: Nodes charged; where pods share nodes (``capacity`` Devices), the nodes
            they sit on.
        by_deployment: Nodes each deployment is charged; where pods share nodes, the
            devices its pods claim.
        devices: Where pods share nodes: the pool's devices (every class), and those
            claimed.
        declared: The nodes the pool declares, when it observes fewer (``nodes`` is
            then what is observed: what the scheduler charges against); 0 otherwise.
        overcommitted: The replicas the pool does not admit (admission order: Ready
            first, then oldest), when it is over-committed.
    """

    cluster: str
    pool: str
    nodes: int
    used: int
    by_deployment: tuple[tuple[str, int], ...] = ()
    capacity: str = "Nodes"
    devices: int = 0
    devices_used: int = 0
    declared: int = 0
    overcommitted: tuple[str, ...] = ()
    draining: bool = False  # kept only for the replicas still pinned there

    @property
    def free(self) -> int:
        """Free nodes (negative when what runs there overcommits it)."""
        return self.nodes - self.used


@dataclass(frozen=True)
class RolloutPass:
    """A deployment's rolling update after one reconcile pass.

    Attributes:
        updated: Replicas on the current template; ``old`` on an earlier one.
        unavailable: Replicas of ``spec.replicas`` not Ready (wanted minus Ready).
        progressing: The ``Progressing`` reason.
    """

    pass_: int
    deployment: str
    updated: int
    old: int
    unavailable: int
    ready: int
    progressing: str


@dataclass(frozen=True)
class ModeResult:
    """One step's outcome under one capacity mode."""

    passes: int
    converged: bool
    deployments: tuple[DeploymentRecord, ...]
    changes: tuple[Change, ...]
    moves: tuple[Move, ...]
    shortfalls: tuple[Shortfall, ...]
    pools: tuple[PoolUse, ...]
    rollout: tuple[RolloutPass, ...] = ()


@dataclass(frozen=True)
class StepResult:
    """A step of the timeline (step 0 is the fleet as given) and its outcome per mode."""

    index: int
    name: str
    events: tuple[str, ...]
    modes: dict[str, ModeResult] = field(default_factory=dict)


@dataclass(frozen=True)
class Simulation:
    """A whole run: the scenario's name and every step."""

    name: str
    description: str
    max_passes: int
    steps: tuple[StepResult, ...]
    modes: tuple[str, ...] = MODES

    @property
    def converged(self) -> bool:
        """Tell whether every step converged in every mode."""
        return all(m.converged for s in self.steps for m in s.modes.values())

    def as_data(self) -> dict[str, Any]:
        """The run as plain data, for ``-o json`` and ``-o yaml``."""
        return {
            "scenario": self.name,
            "description": self.description,
            "modes": list(self.modes),
            "maxPasses": self.max_passes,
            "converged": self.converged,
            "steps": [
                {
                    "index": s.index,
                    "name": s.name,
                    "events": list(s.events),
                    "modes": {m: _mode_data(s.modes[m]) for m in self.modes},
                }
                for s in self.steps
            ],
        }


def _mode_data(result: ModeResult) -> dict[str, Any]:
    return {
        "passes": result.passes,
        "converged": result.converged,
        "deployments": [_deployment_data(d) for d in result.deployments],
        "changes": [
            {
                "pass": c.pass_,
                "deployment": c.deployment,
                "replica": c.replica,
                "cluster": c.cluster,
                "change": c.change,
                "reason": c.reason,
            }
            for c in result.changes
        ],
        "moves": [
            {
                "deployment": m.deployment,
                "replica": m.replica,
                "from": m.source,
                "to": m.target,
                "reason": m.reason,
            }
            for m in result.moves
        ],
        "shortfalls": [
            {
                "deployment": s.deployment,
                "wanted": s.wanted,
                "placed": s.placed,
                "reason": s.reason,
                "message": s.message,
                "clusters": [_passed_data(p) for p in s.clusters],
            }
            for s in result.shortfalls
        ],
        "pools": [_pool_data(p) for p in result.pools],
    } | ({"rollout": [_rollout_data(r) for r in result.rollout]} if result.rollout else {})


def _rollout_data(row: RolloutPass) -> dict[str, Any]:
    return {
        "pass": row.pass_,
        "deployment": row.deployment,
        "updated": row.updated,
        "old": row.old,
        "unavailable": row.unavailable,
        "ready": row.ready,
        "progressing": row.progressing,
    }


def _pool_data(pool: PoolUse) -> dict[str, Any]:
    data: dict[str, Any] = {
        "cluster": pool.cluster,
        "pool": pool.pool,
        "capacity": pool.capacity,
        "nodes": pool.nodes,
        "used": pool.used,
        "free": pool.free,
        "byDeployment": dict(pool.by_deployment),
    }
    if pool.capacity == "Devices":
        data |= {"devices": pool.devices, "devicesUsed": pool.devices_used}
    if pool.declared:
        data["declared"] = pool.declared
    if pool.draining:
        data["draining"] = True
    if pool.overcommitted:
        data["overcommitted"] = list(pool.overcommitted)
    return data


def _deployment_data(record: DeploymentRecord) -> dict[str, Any]:
    scheduled = record.scheduled
    return {
        "deployment": record.deployment,
        "wanted": record.wanted,
        "placed": record.placed,
        "ready": record.ready,
        "scheduled": {
            "status": scheduled.status,
            "reason": scheduled.reason,
            "message": scheduled.message,
        },
        "replicas": [
            {
                "name": r.name,
                "cluster": r.cluster,
                "index": r.index,
                "ready": r.ready,
                "engines": [
                    {"engine": e.name, "pool": e.pool, "nodes": e.nodes} for e in r.engines
                ],
                "moving": r.moving,
            }
            for r in record.replicas
        ],
    }


def _passed_data(passed: PassedOver) -> dict[str, Any]:
    return {"cluster": passed.cluster, "reasons": reasons(passed)}


def reasons(passed: PassedOver) -> list[str]:
    """Why the scheduler passed a cluster over, in its words."""
    return [explain.cluster_reason(r) for r in passed.reasons]
