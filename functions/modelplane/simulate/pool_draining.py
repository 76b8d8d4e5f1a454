"""The simulator's stand-in for the InferenceCluster function's draining pools.

A pool removed from a cluster's ``spec.nodePools`` while replicas are pinned there
stays published, as it was shown, with ``draining: true``
(:mod:`modelplane.domain.draining`, the function's rule): the scheduler moves those
replicas, make before break, and the pool goes once none is pinned there. There are
no cloud node groups here, so a class change replaces nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.domain import cluster as cluster_domain
from modelplane.domain import draining


def publish(
    pools: Sequence[cluster_domain.Pool],
    fresh: Sequence[Mapping[str, Any]],
    shown: Sequence[Any],
    pinned: Mapping[str, tuple[str, ...]],
) -> list[dict[str, Any]]:
    """Return ``status.gpuPools``: ``fresh`` (published from the spec), then the removed
    pools still pinned, as shown before, draining."""
    existing = {str(p.get("name")) for p in shown if isinstance(p, Mapping) and p.get("name")}
    drains = draining.drains([p.name for p in pools], existing, [], pinned)
    return draining.published(fresh, shown, drains)
