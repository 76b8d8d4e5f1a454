"""The order the scheduler reads a deployment's own replicas in (``in_place_order``).

Duplicates (two replicas at one cluster and index, with one name) must resolve the
same whatever order the request lists them in, so their pins break the tie.
"""

from __future__ import annotations

import itertools
from dataclasses import astuple

from modelplane.domain.scheduling.fleet import ExistingReplica, in_place_order

from tests.domain.scheduler_kit import existing


def _replicas() -> list[ExistingReplica]:
    return [
        existing("qwen", "b", 0, {"vllm": ("gpu-b", 1)}),
        existing("qwen", "a", 1, {"vllm": ("gpu-a", 2)}),
        existing("qwen", "a", 0, {"vllm": ("gpu-z", 1)}),  # duplicates of a/0: pins differ
        existing("qwen", "a", 0, {"vllm": ("gpu-a", 1)}),
        existing("qwen", "a", 0, {"vllm": ("gpu-a", 3)}),
    ]


def _sorted_at_once(replicas: list[ExistingReplica]) -> list[ExistingReplica]:
    return sorted(
        replicas, key=lambda r: (r.cluster, r.index, r.name, [astuple(e) for e in r.engines])
    )


def test_duplicates_are_ordered_by_their_pins_whatever_the_input_order() -> None:
    expected = _sorted_at_once(_replicas())
    assert [(r.cluster, r.index, r.engines[0].pool, r.engines[0].nodes) for r in expected] == [
        ("a", 0, "gpu-a", 1),
        ("a", 0, "gpu-a", 3),
        ("a", 0, "gpu-z", 1),
        ("a", 1, "gpu-a", 2),
        ("b", 0, "gpu-b", 1),
    ]
    for order in itertools.permutations(_replicas()):
        assert in_place_order(order) == expected
