"""Stuck replicas: reading kube-scheduler's PodScheduled condition, and the grace."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from modelplane.domain.scheduling import stuck
from modelplane.domain.scheduling.fleet import ExistingReplica, Fleet


def pod(name: str, phase: str = "Pending", **condition: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"phase": phase, "conditions": [{"type": "PodScheduled", **condition}]},
    }


def unschedulable(name: str, message: str) -> dict[str, Any]:
    return pod(name, status="False", reason="Unschedulable", message=message)


def test_the_first_unschedulable_pod_by_name_gives_the_message() -> None:
    pods = [unschedulable("b", "0/3 nodes: b"), unschedulable("a", "0/3 nodes: a")]
    assert stuck.unschedulable(pods) == "0/3 nodes: a"
    assert stuck.unschedulable(list(reversed(pods))) == "0/3 nodes: a"


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param([], id="none"),
        pytest.param([pod("a", "Running", status="True")], id="running"),
        pytest.param([pod("a", status="False", reason="SchedulingGated")], id="gated"),
        pytest.param([pod("a", "Running", status="False", reason="Unschedulable")], id="placed"),
        pytest.param([{"status": "nonsense"}, {"metadata": 3}], id="malformed"),
        pytest.param([{"status": {"conditions": ["x", {"type": "Ready"}]}}], id="odd-conditions"),
    ],
)
def test_no_unschedulable_pod_reads_as_nothing(pods: list[Any]) -> None:
    assert stuck.unschedulable(pods) == ""


def test_a_pod_without_a_message_is_still_named() -> None:
    found = stuck.unschedulable([pod("p1", status="False", reason="Unschedulable")])
    assert found == "pod p1 is unschedulable"


SINCE = "2026-01-02T03:00:00Z"
T0 = datetime(2026, 1, 2, 3, 0, tzinfo=UTC).timestamp()


def fleet(*replicas: ExistingReplica) -> Fleet:
    return Fleet((), replicas)


def replica(name: str, message: str = "", since: str = SINCE) -> ExistingReplica:
    return ExistingReplica("ns", "d", "c1", 0, name=name, stuck=message, stuck_since=since)


@pytest.mark.parametrize(
    ("elapsed", "grace", "kept"),
    [
        pytest.param(0, 300, False, id="at-once"),
        pytest.param(299, 300, False, id="just-before"),
        pytest.param(300, 300, True, id="at-grace"),
        pytest.param(3600, 300, True, id="long-after"),
        pytest.param(0, 0, True, id="no-grace"),
    ],
)
def test_stuck_counts_only_once_the_grace_is_over(elapsed: int, grace: int, kept: bool) -> None:
    before = fleet(replica("a", "0/3 nodes"), replica("b"))
    after = stuck.past_grace(before, grace, T0 + elapsed)
    assert after.replicas[0].stuck == ("0/3 nodes" if kept else "")
    assert after.replicas[1] == before.replicas[1]


def test_an_unreadable_time_waits() -> None:
    after = stuck.past_grace(fleet(replica("a", "0/3 nodes", since="yesterday")), 0, T0)
    assert after.replicas[0].stuck == ""


def test_a_fleet_with_nothing_stuck_is_returned_as_is() -> None:
    before = fleet(replica("a"), replica("b"))
    assert stuck.past_grace(before, 300, T0) is before


def test_held_for_reads_rfc3339() -> None:
    assert stuck.held_for(SINCE, T0 + 42) == 42
    assert stuck.held_for("", T0) is None
