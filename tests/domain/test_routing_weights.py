"""Traffic weights: each entry gets its weight's share, spread evenly over its endpoints."""

from __future__ import annotations

from fractions import Fraction
from math import gcd

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modelplane.domain import routing
from modelplane.domain.routing import Entry


def _names(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}-{i}" for i in range(count))


def _entry_shares(entries: list[Entry]) -> list[Fraction]:
    return routing.entry_shares(entries, routing.split(entries).as_dict())


@pytest.mark.parametrize(
    ("entries", "want"),
    [
        pytest.param(
            [Entry(95, _names("stable", 3)), Entry(5, _names("canary", 1))],
            {"stable-0": 19, "stable-1": 19, "stable-2": 19, "canary-0": 3},
            id="canary-95-5",
        ),
        pytest.param(
            [Entry(80, _names("a", 2)), Entry(20, _names("b", 3))],
            {"a-0": 6, "a-1": 6, "b-0": 1, "b-1": 1, "b-2": 1},
            id="80-20-uneven-counts",
        ),
        pytest.param(
            [Entry(1, _names("demo", 1)), Entry(1, _names("west", 2))],
            {"demo-0": 2, "west-0": 1, "west-1": 1},
            id="equal-entries-uneven-counts",
        ),
        pytest.param(
            [Entry(1, _names("qwen", 4))],
            {"qwen-0": 1, "qwen-1": 1, "qwen-2": 1, "qwen-3": 1},
            id="one-entry-equal",
        ),
        pytest.param(
            [Entry(50, _names("aks", 1)), Entry(50, _names("nebius", 1))],
            {"aks-0": 1, "nebius-0": 1},
            id="split-by-cluster-50-50",
        ),
        pytest.param(
            [Entry(100, _names("aks", 1)), Entry(0, _names("nebius", 1))],
            {"aks-0": 1, "nebius-0": 0},
            id="100-0-keeps-backend-at-zero",
        ),
        pytest.param(
            [Entry(0, _names("a", 2))],
            {"a-0": 0, "a-1": 0},
            id="all-zero",
        ),
        pytest.param(
            [Entry(1, ("x", "shared")), Entry(1, ("shared", "y"))],
            {"x": 1, "shared": 2, "y": 1},
            id="overlap-counts-once-and-sums",
        ),
        pytest.param(
            [Entry(3, _names("a", 1)), Entry(1, ())],
            {"a-0": 1},
            id="entry-without-endpoints-takes-nothing",
        ),
        pytest.param([], {}, id="no-entries"),
    ],
)
def test_split(entries: list[Entry], want: dict[str, int]) -> None:
    got = routing.split(entries)
    assert got.as_dict() == want
    assert got.exact
    assert got.dropped == ()


@pytest.mark.parametrize("replicas", [1, 2, 3, 5, 7, 16])
def test_scaling_a_deployment_keeps_its_entry_share(replicas: int) -> None:
    entries = [Entry(95, _names("stable", replicas)), Entry(5, _names("canary", 1))]
    assert _entry_shares(entries) == [Fraction(95, 100), Fraction(5, 100)]


def test_an_endpoint_matched_twice_leaves_each_entry_its_share() -> None:
    entries = [Entry(80, ("a", "b")), Entry(20, ("b", "c", "d"))]
    weights = routing.split(entries).as_dict()
    assert sorted(weights) == ["a", "b", "c", "d"], "b is one backend"
    assert routing.entry_shares(entries, weights) == [Fraction(4, 5), Fraction(1, 5)]


def test_more_endpoints_than_a_rule_holds_keeps_every_entry_and_its_share() -> None:
    entries = [Entry(90, _names("big", 20)), Entry(10, _names("small", 3))]
    got = routing.split(entries)
    assert len(got.weights) == routing.MAX_BACKENDS
    assert {"small-0", "small-1", "small-2"} <= set(got.as_dict())
    assert len(got.dropped) == 20 + 3 - routing.MAX_BACKENDS
    assert routing.entry_shares(entries, got.as_dict()) == [Fraction(9, 10), Fraction(1, 10)]


def test_weighted_entries_are_kept_before_zero_weight_entries() -> None:
    entries = [Entry(0, _names("off", 10)), Entry(1, _names("on", 10))]
    kept = routing.split(entries, max_backends=4).as_dict()
    assert sorted(kept) == ["off-0", "off-1", "on-0", "on-1"]
    assert [kept["on-0"], kept["off-0"]] == [1, 0]


def test_weights_beyond_the_bound_are_approximated_within_it() -> None:
    entries = [Entry(1_000_000, ("a",)), Entry(1, _names("b", 7))]
    got = routing.split(entries)
    assert not got.exact
    assert max(w for _, w in got.weights) <= routing.MAX_WEIGHT
    assert min(w for _, w in got.weights) >= 1, "an endpoint with a share keeps some traffic"
    shares = routing.entry_shares(entries, got.as_dict())
    assert abs(shares[0] - Fraction(1_000_000, 1_000_001)) < Fraction(1, 100_000)


def test_the_result_is_sorted_and_deterministic() -> None:
    entries = [Entry(2, ("zeta", "alpha")), Entry(1, ("mid",))]
    first = routing.split(entries)
    assert [n for n, _ in first.weights] == ["alpha", "mid", "zeta"]
    assert routing.split(list(entries)) == first


_entries = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=1000),
        st.sets(st.sampled_from([f"e{i}" for i in range(12)]), max_size=8),
    ),
    max_size=6,
).map(lambda raw: [Entry(w, tuple(sorted(names))) for w, names in raw])


@settings(max_examples=300, deadline=None)
@given(_entries)
def test_every_entry_gets_exactly_its_weight_share(entries: list[Entry]) -> None:
    got = routing.split(entries)
    weights = got.as_dict()
    assert all(0 <= w <= routing.MAX_WEIGHT for w in weights.values())
    live = [e for e in entries if e.endpoints]
    total = sum(e.weight for e in live)
    shares = routing.entry_shares(entries, weights)
    for entry, share in zip(entries, shares, strict=True):
        if not entry.endpoints or total == 0:
            assert share == 0
        elif got.exact:
            assert share == Fraction(entry.weight, total)


@settings(max_examples=300, deadline=None)
@given(_entries)
def test_weights_are_as_small_as_exactness_allows(entries: list[Entry]) -> None:
    weights = [w for _, w in routing.split(entries).weights]
    positive = [w for w in weights if w]
    if positive:
        assert gcd(*positive) == 1
