"""Whether a replica is applied and whether it serves, from its Objects' conditions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplane.domain.workload.plan import Composed

NOT_CREATED = "not created yet"
"""Why an Object is not applied when Crossplane has not created it yet."""


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
        serving: Every workload is Available.
        ready: It serves, and every other object (the route above all) is ready too.
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
    serving = not starting and any(item.workload for item in composed)
    return Verdict(
        accepted=not unapplied,
        serving=serving,
        ready=serving and not waiting,
        unapplied=tuple(unapplied),
        starting=tuple(starting),
        waiting=tuple(waiting),
    )
