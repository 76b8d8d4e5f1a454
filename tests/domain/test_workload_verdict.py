"""Whether a replica is applied and serves, from what its Objects report."""

from __future__ import annotations

import pytest
from modelplane.domain.workload import Composed, Observed, Verdict, judge

PLAN = (
    Composed("engine-llm-service", {}, "Service", "llm"),
    Composed("engine-llm-workload", {}, "Deployment", "llm", workload=True),
    Composed("route", {}, "HTTPRoute", "r"),
)
UP = Observed(synced=True, ready=True)
LOST = "cannot get object: dial tcp 10.0.0.1:6443: connect: connection refused"


@pytest.mark.parametrize(
    ("observed", "want"),
    [
        pytest.param(
            {},
            Verdict(
                accepted=False,
                serving=False,
                ready=False,
                unapplied=(
                    ("Service llm", "not created yet"),
                    ("Deployment llm", "not created yet"),
                    ("HTTPRoute r", "not created yet"),
                ),
                starting=("Deployment llm",),
                waiting=("Service llm", "HTTPRoute r"),
            ),
            id="nothing-yet",
        ),
        pytest.param(
            {
                "engine-llm-service": UP,
                "engine-llm-workload": Observed(synced=True, ready=False),
                "route": UP,
            },
            Verdict(accepted=True, serving=False, ready=False, starting=("Deployment llm",)),
            id="applied-starting",
        ),
        pytest.param(
            {
                "engine-llm-service": UP,
                "engine-llm-workload": Observed(False, None, "no matches for kind"),
                "route": UP,
            },
            Verdict(
                accepted=False,
                serving=False,
                ready=False,
                unapplied=(("Deployment llm", "no matches for kind"),),
                starting=("Deployment llm",),
            ),
            id="refused-by-the-cluster",
        ),
        pytest.param(
            {"engine-llm-service": UP, "engine-llm-workload": UP, "route": Observed(True, False)},
            Verdict(accepted=True, serving=True, ready=False, waiting=("HTTPRoute r",)),
            id="serving-route-not-accepted",
        ),
        pytest.param(
            {"engine-llm-service": UP, "engine-llm-workload": UP, "route": UP},
            Verdict(accepted=True, serving=True, ready=True),
            id="ready",
        ),
        pytest.param(
            {
                "engine-llm-service": Observed(synced=None, ready=True),
                "engine-llm-workload": UP,
                "route": UP,
            },
            Verdict(
                accepted=False,
                serving=True,
                ready=True,
                unapplied=(("Service llm", "not synced yet"),),
            ),
            id="unreported-sync",
        ),
        pytest.param(
            {key: Observed(False, True, LOST) for key in ("engine-llm-service", "route")}
            | {"engine-llm-workload": Observed(False, True, "")},
            Verdict(
                accepted=False,
                serving=False,
                ready=False,
                unapplied=(
                    ("Service llm", LOST),
                    ("Deployment llm", "not synced yet"),
                    ("HTTPRoute r", LOST),
                ),
                unreachable=LOST,
            ),
            id="cluster-unreachable-stale-ready",
        ),
        pytest.param(
            {
                "engine-llm-service": Observed(False, True, LOST),
                "engine-llm-workload": Observed(False, True, LOST),
            },
            Verdict(
                accepted=False,
                serving=True,  # the last word of the workload stands while not all Objects fail
                ready=False,
                unapplied=(
                    ("Service llm", LOST),
                    ("Deployment llm", LOST),
                    ("HTTPRoute r", "not created yet"),
                ),
                waiting=("HTTPRoute r",),
            ),
            id="not-every-object-created-is-not-unreachable",
        ),
    ],
)
def test_judge(observed: dict[str, Observed], want: Verdict) -> None:
    assert judge(PLAN, observed) == want


def test_a_plan_without_workloads_never_serves() -> None:
    only = (Composed("namespace", {}, "Namespace", "ns"),)
    assert judge(only, {"namespace": UP}) == Verdict(accepted=True, serving=False, ready=False)
