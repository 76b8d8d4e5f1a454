"""Remembering each deployment's last placement, for the calls where nothing changed.

Crossplane calls a ModelDeployment's function on every poll, and on a steady fleet
nothing the scheduler reads changes between calls: the placement is a pure function of
the deployment, the fleet, the ModelCache footprint and which replicas are Ready, so the
last one is still the answer. Comparing the fleet costs little: the fleet reader hands
out the same cluster and replica values for unchanged objects, and tuples compare
element by element, identical elements first. A change the scheduler does not read (a
replica's status, say) compares equal, so it still reuses the placement.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from modelplane.domain.scheduling.fleet import CacheFootprint, Deployment, Fleet
from modelplane.domain.scheduling.placement import Placement

# How many fleet objects the remembered fleets may hold together (each entry holds its
# fleet's tuples, whose values the fleets mostly share): some 8 MiB of references.
REFERENCES = 1_000_000
MIN_ENTRIES = 16
MAX_ENTRIES = 1024

Schedule = Callable[[Deployment, Fleet, CacheFootprint | None, frozenset[str]], Placement]


@dataclass(frozen=True)
class _Inputs:
    deployment: Deployment
    fleet: Fleet
    cache: CacheFootprint | None
    ready: frozenset[str]


class PlacementMemo:
    """The last placement per deployment (by namespace and name), with its inputs.

    Safe to share between threads (a server composes several calls at once): the
    bookkeeping is locked, scheduling is not.
    """

    def __init__(self) -> None:
        """Remember nothing yet."""
        self._last: OrderedDict[tuple[str, str], tuple[_Inputs, Placement]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def placement(
        self,
        schedule: Schedule,
        deployment: Deployment,
        fleet: Fleet,
        cache: CacheFootprint | None,
        ready: frozenset[str],
    ) -> Placement:
        """Return ``schedule``'s placement, reusing the last one when the inputs are equal."""
        key = (deployment.namespace, deployment.name)
        inputs = _Inputs(deployment, fleet, cache, ready)
        with self._lock:
            found = self._last.get(key)
        if found is not None and found[0] == inputs:
            with self._lock:
                if key in self._last:
                    self._last.move_to_end(key)
                self.hits += 1
            return found[1]
        placed = schedule(deployment, fleet, cache, ready)
        size = len(fleet.clusters) + len(fleet.replicas)
        limit = min(max(REFERENCES // max(size, 1), MIN_ENTRIES), MAX_ENTRIES)
        with self._lock:
            self._last[key] = (inputs, placed)
            self._last.move_to_end(key)
            while len(self._last) > limit:
                self._last.popitem(last=False)
        return placed

    def __len__(self) -> int:
        """How many deployments' placements are remembered."""
        return len(self._last)

    def clear(self) -> None:
        """Forget every placement."""
        with self._lock:
            self._last.clear()
