"""A replica stuck Unschedulable moves only once the deployment's grace is over.

The replica says so at once (``ModelReady=False``, reason ``Unschedulable``, with
kube-scheduler's message); its deployment treats it as over-committed, and places a
replacement elsewhere (make before break), once the condition has held for
``spec.unschedulableAfterSeconds`` (default 300) by its ``lastTransitionTime``.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from modelplane.planning import rolling

from tests.compose.deployments import call, events, model_deployment
from tests.compose.test_admission import ONE_NODE, YOUNGER, _clusters, _placed_on_c1
from tests.requests import conditions

SINCE = "2026-12-01T10:00:10Z"
T0 = datetime(2026, 12, 1, 10, 0, 10, tzinfo=UTC).timestamp()
MESSAGE = "an engine pod cannot be scheduled on c1: 0/1 nodes are available: 1 node(s) had untolerated taint"


def _stuck(name: str) -> dict[str, Any]:
    replica = _placed_on_c1(name, YOUNGER)
    replica["status"]["conditions"].append(
        {
            "type": "ModelReady",
            "status": "False",
            "reason": "Unschedulable",
            "message": MESSAGE,
            "lastTransitionTime": SINCE,
        }
    )
    return replica


def _deployment(grace: int | None = None) -> dict[str, Any]:
    xr = copy.deepcopy(model_deployment("beta"))
    if grace is not None:
        xr["spec"]["unschedulableAfterSeconds"] = grace
    return xr


@pytest.mark.parametrize(
    ("grace", "elapsed", "moved"),
    [
        pytest.param(None, 0, False, id="default-at-once"),
        pytest.param(None, 299, False, id="default-just-before"),
        pytest.param(None, 300, True, id="default-at-300s"),
        pytest.param(60, 59, False, id="custom-before"),
        pytest.param(60, 61, True, id="custom-after"),
        pytest.param(0, 0, True, id="no-grace"),
    ],
)
def test_a_stuck_replica_is_replaced_elsewhere_only_after_the_grace(
    monkeypatch: pytest.MonkeyPatch, grace: int | None, elapsed: int, moved: bool
) -> None:
    monkeypatch.setattr(rolling, "clock", lambda: T0 + elapsed)
    rsp = call(_deployment(grace), ONE_NODE, [_stuck("beta")])
    if not moved:
        assert _clusters(rsp) == ["c1"]  # just not Ready for now
        assert conditions(rsp)["ReplicasScheduled"][:2] == ("True", "ReplicasCreated")
        return
    assert _clusters(rsp) == ["c1", "c2"]  # make before break: the stuck one stays meanwhile
    status, reason, message = conditions(rsp)["ReplicasScheduled"]
    assert (status, reason) == ("False", "Unschedulable")
    assert "0/1 nodes are available" in message
    assert any("0/1 nodes are available" in e for e in events(rsp))


def test_the_same_call_at_the_same_time_gives_the_same_response(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rolling, "clock", lambda: T0 + 301)
    first = call(_deployment(), ONE_NODE, [_stuck("beta")]).SerializeToString(deterministic=True)
    again = call(_deployment(), ONE_NODE, [_stuck("beta")]).SerializeToString(deterministic=True)
    assert first == again


def test_with_no_room_elsewhere_the_stuck_replica_stays_and_the_shortfall_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rolling, "clock", lambda: T0 + 301)
    rsp = call(_deployment(), ONE_NODE[:1], [_stuck("beta")])
    assert _clusters(rsp) == ["c1"]  # never drop what runs
    status, _, message = conditions(rsp)["ReplicasScheduled"]
    assert status == "False"
    assert "0/1 nodes are available" in message, message
