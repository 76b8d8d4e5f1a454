"""Whether a replica is applied and whether it serves, from its Objects' conditions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplane.domain.workload.plan import Composed

NOT_CREATED = "not created yet"
"""Why an Object is not applied when Crossplane has not created it yet."""

UNREACHABLE = "ClusterUnreachable"
"""The ModelReady reason of a replica whose every Object fails to sync (see ``Verdict``)."""


@dataclass(frozen=True)
class Observed:
    """What an Object reports: its ``Synced`` and ``Ready`` conditions (None: unreported)."""

    synced: bool | None = None
    ready: bool | None = None
    message: str = ""


@dataclass(frozen=True)
class Verdict:
    """The replica's state on its cluster.

    Attributes:
        accepted: Every Object exists and is Synced: everything is applied.
        serving: Every workload is Available (and the cluster answers: see ``unreachable``).
        ready: It serves, and every other object (the route above all) is ready too.
        unreachable: Why the cluster seems out of reach, or "": every Object exists and
            every one fails to sync. What they last reported (Ready) is then stale, so the
            replica is not taken to serve, as Kubernetes takes a pod on an unreachable
            node to be not Ready; it is not moved for that (the docs' retain rule).
        unapplied: ``(what, why)`` for each Object not yet applied.
        starting: What each workload not yet Available is.
        waiting: What each other object not yet ready is.
    """

    accepted: bool
    serving: bool
    ready: bool
    unapplied: tuple[tuple[str, str], ...] = ()
    starting: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    unreachable: str = ""


def judge(composed: Sequence[Composed], observed: Mapping[str, Observed]) -> Verdict:
    """Judge the replica from the Objects it composes and what each reports.

    Args:
        composed: The replica's plan.
        observed: What each composed Object reports, by key; a missing key is an Object
            Crossplane has not created yet.
    """
    unapplied: list[tuple[str, str]] = []
    starting: list[str] = []
    waiting: list[str] = []
    for item in composed:
        what = f"{item.kind} {item.name}"
        seen = observed.get(item.key)
        if seen is None or seen.synced is not True:
            why = NOT_CREATED if seen is None else (seen.message or "not synced yet")
            unapplied.append((what, why))
        if seen is None or seen.ready is not True:
            (starting if item.workload else waiting).append(what)
    unreachable = _unreachable(composed, observed)
    serving = not starting and not unreachable and any(item.workload for item in composed)
    return Verdict(
        accepted=not unapplied,
        serving=serving,
        ready=serving and not waiting,
        unapplied=tuple(unapplied),
        starting=tuple(starting),
        waiting=tuple(waiting),
        unreachable=unreachable,
    )


def _unreachable(composed: Sequence[Composed], observed: Mapping[str, Observed]) -> str:
    """Return the first Object's sync error when every Object exists and fails to sync.

    One Object failing is that Object's problem; all of them failing at once is the
    cluster (its API server down, its credentials revoked).
    """
    seen = [observed.get(item.key) for item in composed]
    if not seen or any(s is None or s.synced is not False for s in seen):
        return ""
    return next((s.message for s in seen if s is not None and s.message), "no Object syncs")
