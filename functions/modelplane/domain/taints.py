"""InferenceCluster taints and ModelDeployment tolerations, on the Kubernetes model.

A toleration matches a taint by key and effect. ``Exists`` matches any value of the
key, ``Equal`` (the default) matches key and value together, an empty key with
``Exists`` tolerates every taint, and an empty effect matches both effects
(docs L4637-L4643). Kubernetes rejects an empty key with ``Equal``; here such a
toleration simply tolerates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Effect = Literal["NoSchedule", "NoExecute"]
Operator = Literal["Exists", "Equal"]

NO_SCHEDULE: Effect = "NoSchedule"
NO_EXECUTE: Effect = "NoExecute"


def spelled(key: str, effect: str, value: str = "") -> str:
    """Spell a taint as kubectl does: ``key=value:Effect``, or ``key:Effect`` without a value."""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


@dataclass(frozen=True, order=True)
class Taint:
    """A taint on a cluster: it repels replicas that do not tolerate it."""

    key: str
    effect: Effect
    value: str = ""

    def __str__(self) -> str:
        """Render like kubectl does (:func:`spelled`)."""
        return spelled(self.key, self.effect, self.value)


@dataclass(frozen=True)
class Toleration:
    """A deployment's permission to run on clusters carrying matching taints."""

    key: str = ""
    operator: Operator = "Equal"
    value: str = ""
    effect: Effect | Literal[""] = ""


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Tell whether one toleration tolerates one taint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return bool(toleration.key) and toleration.key == taint.key and toleration.value == taint.value


def untolerated(
    taints: Iterable[Taint],
    tolerations: Iterable[Toleration],
    *,
    effect: Effect | None = None,
) -> tuple[Taint, ...]:
    """Return the taints no toleration tolerates, sorted.

    Args:
        taints: A cluster's taints.
        tolerations: A deployment's tolerations.
        effect: Only consider taints with this effect (None: every taint).

    Returns:
        The taints that repel the deployment, in a stable order.
    """
    allowed = tuple(tolerations)
    return tuple(
        sorted(
            taint
            for taint in set(taints)
            if (effect is None or taint.effect == effect)
            and not any(tolerates(t, taint) for t in allowed)
        )
    )
