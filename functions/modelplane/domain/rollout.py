"""Rolling updates of a ModelDeployment's replicas: Deployment's arithmetic, fleet-wide.

A template edit (image, args, env, resources, ...) changes the spec every ModelReplica
should carry. Rewriting them all at once restarts every replica together (each
replica's Deployment restarts its pods), so a ModelDeployment rolls the edit out the
way a Deployment rolls out a pod template (``spec.strategy.rollingUpdate``):

- ``maxSurge``: replicas beyond ``spec.replicas`` that may run during the rollout, each
  a new replica on the new template, placed by the scheduler like any other (so only
  where there is room). An absolute number, or a percentage of ``spec.replicas``
  rounded up. Default 25%.
- ``maxUnavailable``: replicas that may be not Ready during the rollout, below
  ``spec.replicas``. A number, or a percentage rounded down. Default 25%. Both
  resolving to 0 would never progress; as Deployment does, ``maxUnavailable`` is then 1
  (``spec`` with both set to 0 is refused by the XRD).

Each pass (:func:`step`), given the replicas as they are (which carry the current
template, which are Ready):

1. **Surge.** The scheduler is asked for ``spec.replicas`` plus
   :func:`surge_allowance` replicas; a new replica always gets the current template.
2. **Retire.** While more replicas run than wanted, an old one goes: one not Ready
   first (it serves nothing), a Ready one only while at least ``spec.replicas -
   maxUnavailable`` stay Ready.
3. **Update in place.** An old replica that is not Ready takes the current template at
   once; a Ready one only while at least ``spec.replicas - maxUnavailable`` stay Ready.
   Every other old replica keeps its old spec exactly, as observed.

**Available** is what the floor counts: a replica Ready *and routed to* (``routed``: its
ModelEndpoint reports that the ModelServices selecting it route to it, see
:mod:`modelplane.domain.routed`). A replica just updated turns Ready some seconds before
the service sends it traffic; counted at once, the next replica would go down while the
service still routes to one fewer than the floor (as a Deployment counts a pod available
only after its readiness gates and ``minReadySeconds``). An old replica that is not Ready
still takes the current template at once (it serves nothing); one Ready but not yet
routed is held like an available one, and counts for nothing towards the floor.

A replica on a bad template never turns Ready, so the Ready count stays down and the
rollout stops with at most ``maxUnavailable`` replicas down; the others keep serving.
:func:`progress` says whether the rollout is progressing, complete, or past its
progress deadline (Deployment's ``Progressing`` condition).

Pure: no clock is read here; the caller passes the time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_DEADLINE_SECONDS",
    "DEFAULT_SURGE",
    "DEFAULT_UNAVAILABLE",
    "Bounds",
    "Progress",
    "Replica",
    "Step",
    "Strategy",
    "StrategyError",
    "progress",
    "resolve",
    "step",
    "surge_allowance",
]

DEFAULT_SURGE = "25%"
DEFAULT_UNAVAILABLE = "25%"
DEFAULT_DEADLINE_SECONDS = 600

_PERCENT = re.compile(r"^(0|[1-9][0-9]*)%$")

Amount = int | str


class StrategyError(ValueError):
    """A ``rollingUpdate`` value that is neither a non-negative number nor a percentage."""


@dataclass(frozen=True)
class Strategy:
    """``spec.strategy.rollingUpdate`` and ``spec.progressDeadlineSeconds``, as written."""

    max_surge: Amount = DEFAULT_SURGE
    max_unavailable: Amount = DEFAULT_UNAVAILABLE
    deadline_seconds: int = DEFAULT_DEADLINE_SECONDS


@dataclass(frozen=True)
class Bounds:
    """A strategy resolved against ``spec.replicas``: how many may surge, how many be down."""

    surge: int
    unavailable: int


def _scaled(value: Amount, replicas: int, *, round_up: bool, field: str) -> int:
    """Resolve a number or percentage (Kubernetes' ``GetScaledValueFromIntOrPercent``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            msg = f"{field}: {value} is negative"
            raise StrategyError(msg)
        return value
    found = _PERCENT.match(value) if isinstance(value, str) else None
    if found is None:  # as IntOrString: a string must be a percentage
        msg = f"{field}: {value!r} is not a number or a percentage like 25%"
        raise StrategyError(msg)
    share = int(found.group(1)) * max(replicas, 0)
    return -(-share // 100) if round_up else share // 100


def resolve(strategy: Strategy, replicas: int) -> Bounds:
    """Resolve ``maxSurge`` (rounded up) and ``maxUnavailable`` (rounded down).

    As Deployment's ``ResolveFenceposts``: when both come to 0, ``maxUnavailable`` is 1,
    so that a rollout can always progress.

    Raises:
        StrategyError: a value is negative, or neither a number nor a percentage.
    """
    surge = _scaled(strategy.max_surge, replicas, round_up=True, field="maxSurge")
    unavailable = _scaled(
        strategy.max_unavailable, replicas, round_up=False, field="maxUnavailable"
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return Bounds(surge, unavailable)


@dataclass(frozen=True)
class Replica:
    """One replica of the deployment as this pass finds it.

    Attributes:
        key: Its stable identity (the composed-resource key); orders every choice.
        updated: It carries the current template.
        ready: It reports Ready.
        routed: The ModelServices that select it route to it (True when it has no
            endpoint to route to).
    """

    key: str
    updated: bool
    ready: bool
    routed: bool = True

    @property
    def available(self) -> bool:
        """Ready and routed to: what the floor of ``spec.replicas - maxUnavailable`` counts."""
        return self.ready and self.routed


def surge_allowance(wanted: int, bounds: Bounds, replicas: Sequence[Replica]) -> int:
    """How many replicas beyond ``wanted`` to ask the scheduler for this pass.

    No more than ``maxSurge``, and no more than old replicas remain to be replaced: a
    finished rollout asks for exactly ``wanted``.
    """
    old = sum(1 for r in replicas if not r.updated)
    return max(min(bounds.surge, old), 0)


@dataclass(frozen=True)
class Step:
    """What a pass does to the old replicas.

    Attributes:
        retire: Old replicas that go (surplus over ``spec.replicas``).
        update: Old replicas that take the current template now, in place.
        hold: Old replicas that keep their old spec exactly, as observed.
        blocked: Why old replicas are held, if some are: "" when none is.
    """

    retire: tuple[str, ...] = ()
    update: tuple[str, ...] = ()
    hold: tuple[str, ...] = ()
    blocked: str = ""


def _old_first(replicas: Sequence[Replica]) -> list[Replica]:
    """Old replicas, not Ready first (they serve nothing), then not routed to, then by key."""
    return sorted(
        (r for r in replicas if not r.updated), key=lambda r: (r.ready, r.available, r.key)
    )


def step(wanted: int, bounds: Bounds, replicas: Sequence[Replica]) -> Step:
    """Decide one pass of the rollout over ``replicas`` (after the scheduler's surge).

    ``replicas`` holds every replica the scheduler placed this pass: retained ones, old
    or updated, and new ones (updated by definition).
    """
    wanted = max(wanted, 0)
    floor = wanted - bounds.unavailable
    available = sum(1 for r in replicas if r.available)
    surplus = len(replicas) - wanted
    updated = sum(1 for r in replicas if r.updated)
    retire: list[str] = []
    update: list[str] = []
    hold: list[str] = []
    for replica in _old_first(replicas):
        # Not Ready: it serves nothing, so it may go. Else only while the floor holds.
        may_go = not replica.ready or available - replica.available >= floor
        if surplus > 0 and may_go:
            retire.append(replica.key)
            surplus -= 1
            available -= replica.available
        elif updated < wanted and surplus <= 0 and may_go:
            update.append(replica.key)
            updated += 1
            available -= replica.available
        else:
            hold.append(replica.key)
    blocked = ""
    if hold:
        blocked = (
            f"{available} available (Ready and routed to), and maxUnavailable "
            f"{bounds.unavailable} keeps at least {max(floor, 0)} of {wanted} available"
        )
    return Step(tuple(retire), tuple(update), tuple(hold), blocked)


@dataclass(frozen=True)
class Progress:
    """Deployment's ``Progressing`` condition for this pass: status, reason, message."""

    status: bool
    reason: str
    message: str


PROGRESSING = "ReplicasUpdating"
COMPLETE = "RolloutComplete"
DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"


def progress(
    state: str,
    *,
    complete: bool,
    deadline_seconds: int,
    previous: tuple[str, str, float] | None,
    now: float,
) -> Progress:
    """Return the ``Progressing`` condition, given the rollout's ``state`` in words.

    ``state`` names how far the rollout got (counts of updated and Ready replicas): it
    changes exactly when the rollout progresses. ``previous`` is the condition as last
    reported: (reason, message, seconds since the epoch of its last transition), so a
    rollout whose state has not changed for ``deadline_seconds`` is past its deadline
    (Deployment's ``progressDeadlineSeconds``), and stays reported so until it moves.
    """
    if complete:
        return Progress(True, COMPLETE, state)
    stalled = f"{state}; no progress for {deadline_seconds}s"
    if previous is not None:
        reason, message, since = previous
        if reason == DEADLINE_EXCEEDED and message.startswith(stalled):
            return Progress(False, DEADLINE_EXCEEDED, message)
        if reason == PROGRESSING and message == state and now - since > deadline_seconds:
            return Progress(False, DEADLINE_EXCEEDED, f"{stalled}: the rollout stopped")
    return Progress(True, PROGRESSING, state)
