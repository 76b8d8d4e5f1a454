"""Selector time budgets: per device evaluation, per call, and the shared verdict cache."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from modelplane.domain.dra import cel
from modelplane.domain.dra.device import Device

# Admitted (estimated just under the cost limit) and slow here: 9,345 regex scans.
WORST = "lists.range(9345).all(i, '" + "a" * 1000 + "'.findAll('a|b').size() > 0)"
CHEAP = 'device.driver == "gpu.nvidia.com"'


def gpu(memory: str = "80Gi") -> Device:
    return Device.build("gpu.nvidia.com", capacity={"memory": memory})


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    cel.clear_caches()
    yield
    cel.clear_caches()
    cel.share_verdicts(None)


def test_the_worst_selector_is_admitted() -> None:
    selector = cel.compile_selector(WORST)
    assert 900_000 < selector.max_cost <= cel.COST_LIMIT


def test_an_exhausted_budget_is_an_error_naming_the_selector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cel, "EVALUATION_BUDGET_SECONDS", 0.05)
    selector = cel.compile_selector(WORST)
    verdict = selector.evaluate(gpu())
    assert verdict.matched is False
    assert verdict.error is not None
    assert verdict.error.startswith("selector \"lists.range(9345).all(i, 'aaa"), verdict.error
    assert "ran out of its evaluation budget (50 ms) on this device" in verdict.error
    # It stopped early: far from the cost a full run charges.
    assert verdict.cost is not None
    assert verdict.cost < selector.max_cost // 2
    assert selector.evaluate(gpu()) is verdict, "remembered, not run again"


def test_a_call_over_its_deadline_cancels_evaluation_and_caches_nothing() -> None:
    selector = cel.compile_selector(WORST)
    budget = cel.CallBudget(time.monotonic() + 0.05)
    with cel.call_deadline(budget), pytest.raises(cel.Cancelled):
        selector.evaluate(gpu())
    cheap = cel.compile_selector(CHEAP)
    with cel.call_deadline(budget), pytest.raises(cel.Cancelled):
        cheap.evaluate(gpu())  # a call already over starts nothing new
    assert cheap.evaluate(gpu()).matched is True, "outside the call it evaluates"


def test_a_cancelled_call_stops_evaluation_from_another_thread() -> None:
    budget = cel.CallBudget()
    budget.cancel()
    assert budget.over()
    with cel.call_deadline(budget), pytest.raises(cel.Cancelled):
        cel.check_call_deadline()
    cel.check_call_deadline()  # outside any call: unbounded


class Store:
    def __init__(self) -> None:
        self.kept: dict[str, cel.Verdict] = {}
        self.asked: list[str] = []

    def get(self, key: str) -> cel.Verdict | None:
        self.asked.append(key)
        return self.kept.get(key)

    def put(self, key: str, verdict: cel.Verdict) -> None:
        self.kept[key] = verdict


def test_costly_verdicts_are_shared_and_cheap_ones_are_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cel, "EVALUATION_BUDGET_SECONDS", 0.02)
    store = Store()
    cel.share_verdicts(store)
    cel.compile_selector(CHEAP).evaluate(gpu())
    assert store.asked == [], "a cheap selector never consults the store"
    first = cel.compile_selector(WORST).evaluate(gpu())
    key = cel.verdict_key(WORST, gpu())
    assert store.kept == {key: first}
    # Another process (here: caches cleared) is answered from the store, not by running.
    cel.clear_caches()
    planted = cel.Verdict(True, None, 1)
    store.kept[key] = planted
    assert cel.compile_selector(WORST).evaluate(gpu()) is planted
    assert cel.compile_selector(WORST).evaluate(gpu("40Gi")) is not planted, "keyed by device"
