"""Steps gated by readiness: a plan of composed resources, each after the steps it needs.

A ServingStack (and anything else that installs in order) plans :class:`Step` s;
:func:`gate` takes what the observed state says is ready and returns what to compose
now: a step is composed once everything it needs is ready, and kept from then on (so a
flapping condition never uninstalls a working component).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    """One composed resource of the stack.

    Attributes:
        key: Its composed-resource name, stable across reconciles.
        label: What it is, for condition messages.
        resource: Its manifest (a Release or an Object).
        needs: The keys of the steps that must be ready before it is composed.
    """

    key: str
    label: str
    resource: Mapping[str, Any]
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Progress:
    """What to compose now, and what the stack still waits for.

    Attributes:
        composed: The steps to compose, in plan order.
        installing: The composed steps that are not ready yet.
        blocked: Each step not composed yet, with the labels of what it waits for.
    """

    composed: tuple[Step, ...]
    installing: tuple[Step, ...]
    blocked: tuple[tuple[Step, tuple[str, ...]], ...]

    @property
    def ready(self) -> bool:
        """Tell whether every step is composed and ready."""
        return not self.installing and not self.blocked

    def waiting(self) -> list[str]:
        """Say what the stack waits for, one phrase per step, in plan order."""
        phrases = [f"{step.label} to become ready" for step in self.installing]
        phrases += [f"{step.label} (after {', '.join(after)})" for step, after in self.blocked]
        return phrases


def gate(steps: Sequence[Step], observed: Mapping[str, bool]) -> Progress:
    """Decide which steps to compose from what the observed state says.

    Args:
        steps: The plan, in order.
        observed: Whether each composed step that exists is ready, by key; a missing key
            is a step not created yet.
    """
    labels = {s.key: s.label for s in steps}
    composed: list[Step] = []
    installing: list[Step] = []
    blocked: list[tuple[Step, tuple[str, ...]]] = []
    for step in steps:
        unmet = tuple(need for need in step.needs if not observed.get(need, False))
        if unmet and step.key not in observed:
            blocked.append((step, tuple(labels[n] for n in unmet)))
            continue
        composed.append(step)
        if not observed.get(step.key, False):
            installing.append(step)
    return Progress(tuple(composed), tuple(installing), tuple(blocked))
