"""The rolling update's arithmetic (modelplane.domain.rollout): Deployment's semantics."""

from __future__ import annotations

import pytest
from modelplane.domain import rollout
from modelplane.domain.rollout import Bounds, Replica, Strategy


@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "want"),
    [
        ("25%", "25%", 4, (1, 1)),
        ("25%", "25%", 3, (1, 0)),  # surge 0.75 rounds up, unavailable 0.75 rounds down
        ("25%", "25%", 10, (3, 2)),
        ("25%", "25%", 1, (1, 0)),
        ("50%", "50%", 5, (3, 2)),
        (2, 1, 3, (2, 1)),
        ("100%", "0%", 7, (7, 0)),
        ("0%", "10%", 1, (0, 1)),  # both come to 0: maxUnavailable is 1 (Deployment's fencepost)
        (0, "25%", 3, (0, 1)),
        ("0%", "0%", 0, (0, 1)),
        ("30%", "30%", 0, (0, 1)),
    ],
)
def test_resolve_rounds_surge_up_and_unavailable_down(
    surge: int | str, unavailable: int | str, replicas: int, want: tuple[int, int]
) -> None:
    bounds = rollout.resolve(Strategy(surge, unavailable), replicas)
    assert (bounds.surge, bounds.unavailable) == want


@pytest.mark.parametrize("bad", [-1, "-1", "25", "x%", "25 %", "1.5", True, "%"])
def test_resolve_refuses_what_is_not_a_number_or_percentage(bad: object) -> None:
    strategy = Strategy(bad, 1)  # type: ignore[arg-type]
    with pytest.raises(rollout.StrategyError, match="maxSurge"):
        rollout.resolve(strategy, 4)


def _fleet(
    old_ready: int, new_ready: int = 0, old_down: int = 0, new_down: int = 0
) -> list[Replica]:
    out = []
    for i in range(old_ready):
        out.append(Replica(f"old-ready-{i}", updated=False, ready=True))
    for i in range(old_down):
        out.append(Replica(f"old-down-{i}", updated=False, ready=False))
    for i in range(new_ready):
        out.append(Replica(f"new-ready-{i}", updated=True, ready=True))
    for i in range(new_down):
        out.append(Replica(f"new-down-{i}", updated=True, ready=False))
    return out


def test_an_edit_updates_max_unavailable_replicas_in_place_at_first() -> None:
    step = rollout.step(3, Bounds(0, 1), _fleet(3))
    assert step.update == ("old-ready-0",)
    assert step.hold == ("old-ready-1", "old-ready-2")
    assert "maxUnavailable 1 keeps at least 2 of 3 available" in step.blocked


def test_old_replicas_that_are_not_ready_go_first_and_cost_nothing() -> None:
    step = rollout.step(3, Bounds(0, 1), _fleet(2, old_down=1))
    assert step.update == ("old-down-0",)  # the one down already spends maxUnavailable
    assert step.hold == ("old-ready-0", "old-ready-1")
    wider = rollout.step(3, Bounds(0, 2), _fleet(2, old_down=1))
    assert wider.update == ("old-down-0", "old-ready-0")


def test_a_bad_template_stops_the_rollout_at_max_unavailable() -> None:
    # One replica took the bad image and never turns Ready: nothing else moves.
    step = rollout.step(3, Bounds(0, 1), [*_fleet(2), Replica("new", True, False)])
    assert step.update == ()
    assert step.retire == ()
    assert step.hold == ("old-ready-0", "old-ready-1")


def test_surge_asks_for_no_more_than_remain_old() -> None:
    assert rollout.surge_allowance(3, Bounds(1, 0), _fleet(3)) == 1
    assert rollout.surge_allowance(10, Bounds(3, 2), _fleet(2, new_ready=8)) == 2
    assert rollout.surge_allowance(3, Bounds(2, 0), _fleet(0, new_ready=3)) == 0


def test_a_surge_replica_not_ready_retires_nothing_under_max_unavailable_0() -> None:
    step = rollout.step(3, Bounds(1, 0), [*_fleet(3), Replica("surge", True, False)])
    assert step.retire == ()
    assert step.update == ()
    assert len(step.hold) == 3


def test_a_ready_surge_replica_retires_one_old() -> None:
    step = rollout.step(3, Bounds(1, 0), _fleet(3, new_ready=1))
    assert step.retire == ("old-ready-0",)
    assert step.update == ()


def test_replicas_1_with_room_surges_and_without_room_updates_in_place() -> None:
    bounds = rollout.resolve(Strategy(), 1)  # 25%/25% of 1: surge 1, unavailable 0
    assert bounds == Bounds(1, 0)
    assert rollout.surge_allowance(1, bounds, _fleet(1)) == 1
    # Without room the surge replica is not placed, and maxUnavailable 0 holds the one.
    held = rollout.step(1, bounds, _fleet(1))
    assert held.hold == ("old-ready-0",)
    assert held.blocked
    # maxUnavailable 1 (the fencepost when both are 0%) updates it in place.
    assert rollout.step(1, Bounds(0, 1), _fleet(1)).update == ("old-ready-0",)


def _simulate(
    wanted: int, bounds: Bounds, replicas: list[Replica], *, room: int, bad: bool = False
) -> list[tuple[int, int, int]]:
    """Run passes as the adapter does; return (total, Ready, updated) after each.

    A replica updated in a pass turns Ready the next pass (never, when ``bad``); a
    surge replica is placed only while ``room`` lasts.
    """
    history = []
    serial = 0
    for _ in range(4 * wanted + 8):
        replicas = [Replica(r.key, r.updated, r.ready or (r.updated and not bad)) for r in replicas]
        extra = rollout.surge_allowance(wanted, bounds, replicas)
        missing = wanted + extra - len(replicas)
        while missing > 0 and (room > 0 or len(replicas) < wanted):
            if len(replicas) >= wanted:
                room -= 1
            serial += 1
            replicas.append(Replica(f"new-{serial:03d}", True, False))
            missing -= 1
        step = rollout.step(wanted, bounds, replicas)
        room += sum(1 for r in replicas if r.key in step.retire)
        replicas = [
            Replica(r.key, r.updated or r.key in step.update, r.ready and r.key not in step.update)
            for r in replicas
            if r.key not in step.retire
        ]
        history.append(
            (len(replicas), sum(r.ready for r in replicas), sum(r.updated for r in replicas))
        )
    return history


@pytest.mark.parametrize(
    ("wanted", "strategy", "room"),
    [
        (3, Strategy(), 0),
        (3, Strategy(), 5),
        (3, Strategy(1, 1), 1),
        (3, Strategy(0, 1), 0),
        (10, Strategy(), 3),
        (10, Strategy("50%", "50%"), 0),
        (1, Strategy(), 1),
        (1, Strategy(0, 1), 0),
    ],
)
def test_every_pass_keeps_ready_and_total_within_bounds_until_done(
    wanted: int, strategy: Strategy, room: int
) -> None:
    bounds = rollout.resolve(strategy, wanted)
    history = _simulate(wanted, bounds, _fleet(wanted), room=room)
    for total, ready, _ in history:
        assert ready >= wanted - bounds.unavailable
        assert total <= wanted + bounds.surge
    if bounds.unavailable == 0 and room == 0:
        assert history[-1] == (wanted, wanted, 0)  # stuck, and says so: nothing taken down
    else:
        assert history[-1] == (wanted, wanted, wanted)


@pytest.mark.parametrize(
    ("wanted", "strategy"), [(3, Strategy(0, 1)), (3, Strategy(1, 1)), (8, Strategy())]
)
def test_a_bad_template_never_takes_more_than_max_unavailable_down(
    wanted: int, strategy: Strategy
) -> None:
    bounds = rollout.resolve(strategy, wanted)
    history = _simulate(wanted, bounds, _fleet(wanted), room=wanted, bad=True)
    for total, ready, _ in history:
        assert ready >= wanted - bounds.unavailable
        assert total <= wanted + bounds.surge
    assert history[-1][2] <= bounds.surge + bounds.unavailable  # it stopped


def test_scale_up_during_a_rollout_adds_only_updated_replicas() -> None:
    bounds = rollout.resolve(Strategy(), 6)
    replicas = _fleet(2, new_ready=1)  # mid-rollout of 3, now scaled to 6
    assert rollout.surge_allowance(6, bounds, replicas) == 2
    step = rollout.step(6, bounds, [*replicas, *(Replica(f"n{i}", True, False) for i in range(5))])
    # 3 Ready of 6 is below 6 - maxUnavailable 1: no old replica may go yet.
    assert step.update == ()
    assert step.retire == ()
    assert step.hold == ("old-ready-0", "old-ready-1")


def test_scale_down_during_a_rollout_retires_old_before_updated() -> None:
    step = rollout.step(2, Bounds(1, 0), _fleet(2, new_ready=2))
    assert step.retire == ("old-ready-0", "old-ready-1")


def test_an_edit_during_a_rollout_makes_every_replica_old_again() -> None:
    # The first edit's updated replicas are old to the second edit: the same arithmetic.
    step = rollout.step(3, Bounds(0, 1), _fleet(3))
    assert len(step.update) == 1
    # One of the first edit's replicas was still starting: it takes the second at once.
    again = rollout.step(3, Bounds(0, 1), _fleet(0, old_down=1) + _fleet(2))
    assert again.update == ("old-down-0",)
    assert again.hold == ("old-ready-0", "old-ready-1")


def test_progress_reports_updating_then_complete() -> None:
    running = rollout.progress("1 of 3", complete=False, deadline_seconds=60, previous=None, now=0)
    assert (running.status, running.reason) == (True, rollout.PROGRESSING)
    done = rollout.progress("3 of 3", complete=True, deadline_seconds=60, previous=None, now=0)
    assert (done.status, done.reason) == (True, rollout.COMPLETE)


def test_progress_stops_past_the_deadline_without_change_and_resumes_on_progress() -> None:
    previous = (rollout.PROGRESSING, "1 of 3", 1000.0)
    within = rollout.progress(
        "1 of 3", complete=False, deadline_seconds=60, previous=previous, now=1060
    )
    assert within.status is True
    late = rollout.progress(
        "1 of 3", complete=False, deadline_seconds=60, previous=previous, now=1061
    )
    assert (late.status, late.reason) == (False, rollout.DEADLINE_EXCEEDED)
    assert late.message.startswith("1 of 3; no progress for 60s")
    stays = rollout.progress(
        "1 of 3",
        complete=False,
        deadline_seconds=60,
        previous=(late.reason, late.message, 1061),
        now=9999,
    )
    assert stays == late
    moved = rollout.progress(
        "2 of 3",
        complete=False,
        deadline_seconds=60,
        previous=(late.reason, late.message, 1061),
        now=9999,
    )
    assert (moved.status, moved.reason) == (True, rollout.PROGRESSING)
    # Progress of another kind (a changed message) restarts the clock.
    fresh = rollout.progress(
        "2 of 3", complete=False, deadline_seconds=60, previous=previous, now=5000
    )
    assert fresh.status is True


# --- available: Ready and routed to ------------------------------------------------------------


def test_an_updated_replica_ready_but_not_routed_holds_the_next() -> None:
    # old-0 took the template and turned Ready; the ModelService does not route to it yet.
    replicas = [Replica("a", True, True, routed=False), *_fleet(2)]
    step = rollout.step(3, Bounds(0, 1), replicas)
    assert step.update == ()
    assert step.hold == ("old-ready-0", "old-ready-1")
    assert "2 available (Ready and routed to)" in step.blocked
    routed = rollout.step(3, Bounds(0, 1), [Replica("a", True, True), *_fleet(2)])
    assert routed.update == ("old-ready-0",)


def test_an_old_replica_ready_but_not_routed_is_held_not_updated_freely() -> None:
    # Not Ready old replicas take the template at once; a Ready one not routed to yet
    # (its endpoint just made) may be about to serve, so the floor decides for it.
    replicas = [Replica("old-a", False, True, routed=False), *_fleet(2)]
    step = rollout.step(3, Bounds(0, 1), replicas)
    assert step.update == ("old-a",)  # it serves nothing yet: first, at no cost
    assert step.hold == ("old-ready-0", "old-ready-1")
    none_routed = [Replica(f"old-{i}", False, True, routed=False) for i in range(3)]
    assert rollout.step(3, Bounds(0, 1), none_routed).update == ()


def test_a_surge_replica_retires_an_old_one_only_once_routed() -> None:
    unrouted = rollout.step(3, Bounds(1, 0), [*_fleet(3), Replica("surge", True, True, False)])
    assert unrouted.retire == ()
    routed = rollout.step(3, Bounds(1, 0), [*_fleet(3), Replica("surge", True, True)])
    assert routed.retire == ("old-ready-0",)


@pytest.mark.parametrize(
    ("wanted", "strategy", "room"),
    [
        (3, Strategy(0, 1), 0),
        (3, Strategy(), 2),
        (5, Strategy("40%", "20%"), 1),
        (1, Strategy(), 1),
    ],
)
def test_with_routing_lag_every_pass_keeps_the_floor_available(
    wanted: int, strategy: Strategy, room: int
) -> None:
    """A replica turns Ready a pass after it is updated and is routed to a pass later:
    at every pass at least ``wanted - maxUnavailable`` are available (Ready and routed)."""
    bounds = rollout.resolve(strategy, wanted)
    replicas = _fleet(wanted)
    serial, history = 0, list[int]()
    for _ in range(6 * wanted + 8):
        replicas = [
            Replica(r.key, r.updated, r.ready or r.updated, r.routed or r.ready) for r in replicas
        ]
        extra = rollout.surge_allowance(wanted, bounds, replicas)
        while len(replicas) < wanted + extra and room > 0:
            room, serial = room - 1, serial + 1
            replicas.append(Replica(f"new-{serial:03d}", True, False, False))
        step = rollout.step(wanted, bounds, replicas)
        room += len(step.retire)
        replicas = [
            Replica(r.key, True, False, False) if r.key in step.update else r
            for r in replicas
            if r.key not in step.retire
        ]
        available = sum(r.available for r in replicas)
        assert available >= wanted - bounds.unavailable, (len(history), replicas)
        assert len(replicas) <= wanted + bounds.surge
        history.append(available)
    assert all(r.updated and r.available for r in replicas)
    assert len(replicas) == wanted
