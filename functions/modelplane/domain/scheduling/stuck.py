"""Stuck replicas: pods the workload cluster's scheduler cannot place, and the grace.

A ModelReplica observes its engine pods (:mod:`modelplane.compose.replica_pods`). A pod
that kube-scheduler cannot place stays Pending with the condition ``PodScheduled=False``,
reason ``Unschedulable``, and the scheduler's own message ("0/3 nodes are available:
..."): :func:`unschedulable` finds it, and the replica reports ``ModelReady=False``,
reason ``Unschedulable``, with that message at once (it is true).

Its deployment moves it (a replacement elsewhere, make before break) only once that
condition has held for the deployment's grace period
(``spec.unschedulableAfterSeconds``, measured from the condition's
``lastTransitionTime``): a pod briefly Pending while an autoscaler adds a node, or while
a rival's pod terminates, is not worth a move. :func:`past_grace` applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from modelplane.domain.scheduling.fleet import Fleet

REASON = "Unschedulable"
"""kube-scheduler's PodScheduled reason, and the replica's ModelReady reason, alike."""
DEFAULT_GRACE_SECONDS = 300


def unschedulable(pods: Iterable[Mapping[str, Any]]) -> str:
    """Return kube-scheduler's message for the first pod (by name) it cannot place, or "".

    Only a pod still Pending counts: one that was placed since (``PodScheduled=True``) or
    runs is not stuck, whatever an older condition said.
    """
    for pod in sorted(pods, key=_name):
        status = pod.get("status")
        if not isinstance(status, Mapping) or status.get("phase", "Pending") != "Pending":
            continue
        for cond in status.get("conditions") or ():
            if not isinstance(cond, Mapping) or cond.get("type") != "PodScheduled":
                continue
            if cond.get("status") == "False" and cond.get("reason") == REASON:
                return str(cond.get("message") or "") or f"pod {_name(pod)} is unschedulable"
    return ""


def _name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, Mapping) else ""


def held_for(since: str, now: float) -> float | None:
    """Seconds since ``since`` (RFC 3339), or None when it is not a time."""
    try:
        return now - datetime.fromisoformat(since).timestamp()
    except (ValueError, TypeError):
        return None


def past_grace(fleet: Fleet, grace_seconds: int, now: float) -> Fleet:
    """Return ``fleet`` with ``stuck`` kept only where it has held ``grace_seconds``.

    A replica whose Unschedulable condition is younger than the grace (or whose time
    cannot be read: waiting is the safe side) is only not Ready, not stuck. The grace is
    the deciding deployment's: the scheduler reads ``stuck`` of its own replicas alone.
    """
    if not any(r.stuck and _young(r.stuck_since, grace_seconds, now) for r in fleet.replicas):
        return fleet
    replicas = tuple(
        replace(r, stuck="") if r.stuck and _young(r.stuck_since, grace_seconds, now) else r
        for r in fleet.replicas
    )
    return replace(fleet, replicas=replicas)


def _young(since: str, grace_seconds: int, now: float) -> bool:
    held = held_for(since, now)
    return held is None or held < grace_seconds
