"""Selector budgets: counted in cost and work units, never timed; the call's deadline;
the shared verdict store; and what the scheduler makes of a selector past its bounds."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest
from modelplane.domain import dra as cel
from modelplane.domain.dra import Device, _budget, _selector
from modelplane.domain.scheduler import schedule
from modelplane.domain.scheduling.fleet import ExistingReplica
from modelplane.domain.scheduling.placement import CostlySelector
from modelplane.domain.scheduling.selectors import CelSelectors, SelectorCostError

from tests.domain.scheduler_kit import (
    cluster,
    deployment,
    engine,
    existing,
    fleet,
    pool,
    reasons,
    request,
    standalone,
)
from tests.domain.scheduler_kit import (
    gpu as kit_gpu,
)

# Admitted (estimated just under the cost limit); here each findAll is a thousand
# automaton steps per cost unit, so it runs into the work limit.
WORST = "lists.range(9345).all(i, '" + "a" * 1000 + "'.findAll('a|b').size() > 0)"
# Admitted, nested list macros over ranges: 941,612 cost units, within the work limit.
NESTED = "lists.range(100).all(i, lists.range(100).all(j, lists.range(13).all(k, k >= 0)))"
CHEAP = 'device.driver == "gpu.nvidia.com"'


def gpu(memory: str = "80Gi") -> Device:
    return Device.build("gpu.nvidia.com", capacity={"memory": memory})


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    cel.clear_caches()
    yield
    cel.clear_caches()
    cel.share_verdicts(None)


def test_the_worst_selectors_are_admitted() -> None:
    for expression in (WORST, NESTED):
        assert 900_000 < cel.compile_selector(expression).max_cost <= cel.COST_LIMIT


def test_a_selector_past_the_work_limit_is_an_over_limit_verdict_counted_not_timed() -> None:
    verdict = cel.compile_selector(WORST).evaluate(gpu())
    assert verdict.matched is False
    assert verdict.over_limit
    assert verdict.over_work
    assert verdict.error == f"operation cancelled: work limit of {cel.WORK_LIMIT} exceeded"
    assert cel.WORK_LIMIT < verdict.work < cel.WORK_LIMIT + 10_000
    cel.clear_caches()
    again = cel.compile_selector(WORST).evaluate(gpu())
    assert again == verdict, "the same count on a fresh run: a verdict, not a timing"


def test_verdicts_ignore_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock that jumps an hour at every reading changes nothing: no timer decides."""
    honest = cel.compile_selector(NESTED).evaluate(gpu())
    assert (honest.matched, honest.error, honest.cost) == (True, None, 941_612)
    cel.clear_caches()
    hours = itertools.count(start=0, step=3600)
    monkeypatch.setattr(time, "monotonic", lambda: float(next(hours)))
    assert cel.compile_selector(NESTED).evaluate(gpu()) == honest


def test_a_run_past_kubernetes_cost_limit_is_cel_gos_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    selector = cel.compile_selector(NESTED)
    # the runtime limit, as cel-go applies it (read where the evaluator reads it)
    monkeypatch.setattr(_selector, "COST_LIMIT", 10_000)
    verdict = selector.evaluate(gpu())
    assert verdict.over_limit
    assert not verdict.over_work
    assert verdict.error == "operation cancelled: actual cost limit exceeded"
    assert 10_000 < (verdict.cost or 0) < 10_100


def test_a_call_over_its_deadline_cancels_evaluation_and_caches_nothing() -> None:
    selector = cel.compile_selector(NESTED)
    budget = cel.CallBudget(time.monotonic() + 0.05)
    with cel.call_deadline(budget), pytest.raises(cel.Cancelled):
        selector.evaluate(gpu())
    assert selector.evaluate(gpu()).matched is True, "not remembered as anything"
    cheap = cel.compile_selector(CHEAP)
    with cel.call_deadline(budget), pytest.raises(cel.Cancelled):
        cheap.evaluate(gpu("1Gi"))  # a call already over starts nothing new
    assert cheap.evaluate(gpu("1Gi")).matched is True, "outside the call it evaluates"


def test_a_cancelled_call_stops_evaluation_from_another_thread() -> None:
    budget = cel.CallBudget()
    budget.cancel()
    assert budget.over()
    with cel.call_deadline(budget), pytest.raises(cel.Cancelled):
        cel.check_call_deadline()
    cel.check_call_deadline()  # outside any call: unbounded


def test_work_outside_an_evaluation_is_not_metered() -> None:
    _budget.spend(10**12)  # no meter: nothing to stop


class Store:
    def __init__(self) -> None:
        self.kept: dict[str, cel.Verdict] = {}
        self.asked: list[str] = []

    def get(self, key: str) -> cel.Verdict | None:
        self.asked.append(key)
        return self.kept.get(key)

    def put(self, key: str, verdict: cel.Verdict) -> None:
        self.kept[key] = verdict


def test_costly_verdicts_are_shared_and_cheap_ones_are_not() -> None:
    store = Store()
    cel.share_verdicts(store)
    cel.compile_selector(CHEAP).evaluate(gpu())
    assert store.asked == [], "a cheap selector never consults the store"
    first = cel.compile_selector(NESTED).evaluate(gpu())
    key = cel.verdict_key(NESTED, gpu())
    assert store.kept == {key: first}
    # Another process (here: caches cleared) is answered from the store, not by running.
    cel.clear_caches()
    planted = cel.Verdict(False, None, 1)
    store.kept[key] = planted
    assert cel.compile_selector(NESTED).evaluate(gpu()) is planted
    assert cel.compile_selector(NESTED).evaluate(gpu("40Gi")) is not planted, "keyed by device"


# --- the scheduler ------------------------------------------------------------------------


def test_the_engine_raises_on_a_selector_past_its_work_limit_naming_the_device() -> None:
    with pytest.raises(SelectorCostError) as raised:
        CelSelectors().matches(WORST, gpu())
    assert raised.value.expression == WORST
    assert raised.value.message == (
        f"does more than {cel.WORK_LIMIT} units of work (CEL cost plus regular-expression "
        "steps) on device gpu.nvidia.com (gpu.nvidia.com/memory=80Gi), more than one "
        "evaluation may do in this function"
    )


def test_the_engine_charges_each_distinct_pair_once_against_its_ceiling() -> None:
    engine_ = CelSelectors(ceiling=2_000_000)
    assert engine_.matches(NESTED, gpu())
    assert engine_.matches(NESTED, gpu()), "the same pair again costs nothing more"
    assert engine_.spent == 941_612
    assert engine_.matches(NESTED, gpu("40Gi"))
    assert engine_.spent == 2 * 941_612
    with pytest.raises(SelectorCostError, match="past the ceiling of 2000000 units"):
        engine_.matches(NESTED, gpu("20Gi"))


def _mine(cluster_: str, index: int = 0) -> ExistingReplica:
    return existing("qwen", cluster_, index, {"qwen": ("gpu", 1)})


def test_a_costly_selector_holds_the_deployment_naming_it_and_keeps_what_runs() -> None:
    costly = standalone(request("gpu", 1, CHEAP, WORST))
    dep = deployment("qwen", 3, engine("qwen", costly))
    placement = schedule(
        dep,
        fleet(cluster("a", pool("gpu", 4)), cluster("b", pool("gpu", 4)), replicas=[_mine("a")]),
    )
    assert [(r.cluster, r.index) for r in placement.replicas] == [("a", 0)], "nothing new"
    hold = placement.hold
    assert isinstance(hold, CostlySelector)
    assert (hold.engine, hold.role, hold.request, hold.selector) == (
        "qwen",
        "Standalone",
        "gpu",
        WORST,
    )
    assert hold.error.startswith(f"does more than {cel.WORK_LIMIT} units of work")
    assert reasons(placement) == {"a": ["Held"], "b": ["Held"]}


def test_a_deployment_past_the_call_ceiling_is_held_the_same_on_every_run() -> None:
    clusters = [cluster(n, pool("gpu", 4, kit_gpu(m))) for n, m in (("a", "80Gi"), ("b", "40Gi"))]
    dep = deployment("qwen", 2, engine("qwen", standalone(request("gpu", 1, NESTED))))
    first = schedule(dep, fleet(*clusters), selectors=CelSelectors(ceiling=1_000_000))
    cel.clear_caches()  # a fresh process: the same counts, the same answer
    second = schedule(dep, fleet(*clusters), selectors=CelSelectors(ceiling=1_000_000))
    assert first == second
    assert isinstance(first.hold, CostlySelector)
    assert first.hold.error == (
        "brings this deployment's selectors to 1883224 units of work on device "
        "gpu.nvidia.com (gpu.nvidia.com/memory=40Gi), past the ceiling of 1000000 units one "
        "scheduling call may spend"
    )
    assert first.replicas == ()
    assert schedule(dep, fleet(*clusters)).hold is None, "within the default ceiling it places"
