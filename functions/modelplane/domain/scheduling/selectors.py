"""The real DRA CEL engine for the scheduler, and the cost ceilings it keeps.

Kubernetes bounds a selector by its CEL cost, not by time: one evaluation on one device
may cost at most :data:`modelplane.domain.dra.COST_LIMIT` units (what the API server
and the scheduler apply to DRA selectors), and running past it is an error of that
claim, not a mismatch. This engine keeps that rule and two of its own, so that no
request burns seconds of CPU in this interpreter (about 1.5 million units a second):
one evaluation may do at most ``WORK_LIMIT`` units of work (CEL cost plus the steps of
regular-expression automata, which cel-go runs a thousand times faster per cost unit),
and a scheduling run may spend at most :data:`CALL_COST_CEILING` units of work on all
its distinct (selector, device) pairs. All are counted, never measured in time, so a
request gets the same placement on an idle machine and on a saturated one.
"""

from __future__ import annotations

from modelplane.domain import dra as cel
from modelplane.domain.dra import Device

CALL_COST_CEILING = 3 * cel.COST_LIMIT
"""Work one scheduling run may spend on distinct (selector, device) pairs: three
evaluations at Kubernetes' cost limit (some two seconds of CPU here), or a hundred
thousand ordinary ones (a typical selector costs under 20 units per device)."""


class SelectorCostError(Exception):
    """Selector evaluation ran past a cost bound; ``message`` says which, in one line.

    Attributes:
        expression: the selector whose evaluation crossed the bound.
        message: what happened, naming the device (the scheduler adds the request).
    """

    def __init__(self, expression: str, message: str) -> None:
        self.expression = expression
        self.message = message
        super().__init__(message)


class CelSelectors:
    """Compiled once per expression, evaluations memoized by it; costs charged per run.

    Each distinct (selector, device) pair charges its runtime cost once, whether its
    verdict was computed now or remembered: the total depends on the request only.
    """

    def __init__(self, ceiling: int = CALL_COST_CEILING) -> None:
        """Start with nothing compiled and nothing spent."""
        self._compiled: dict[str, cel.Selector] = {}
        self._charged: set[tuple[str, Device]] = set()
        self.ceiling = ceiling
        self.spent = 0

    def check(self, expression: str) -> str | None:
        """Return None when ``expression`` compiles, else why it does not."""
        try:
            self._compiled[expression] = cel.compile_selector(expression)
        except cel.SelectorError as exc:
            return exc.reason
        return None

    def matches(self, expression: str, device: Device) -> bool:
        """Tell whether ``expression`` is true for ``device``; an evaluation error is false.

        Raises:
            SelectorCostError: the evaluation ran past Kubernetes' cost limit, or this
                run's selectors past :attr:`ceiling`.
        """
        selector = self._compiled.get(expression)
        if selector is None:
            selector = self._compiled[expression] = cel.compile_selector(expression)
        verdict = selector.evaluate(device)
        if verdict.over_work:
            message = (
                f"does more than {cel.WORK_LIMIT} units of work (CEL cost plus "
                f"regular-expression steps) on device {_describe(device)}, more than one "
                "evaluation may do in this function"
            )
            raise SelectorCostError(expression, message)
        if verdict.over_limit:
            message = (
                f"exceeds Kubernetes' runtime cost limit of {cel.COST_LIMIT} units on "
                f"device {_describe(device)}"
            )
            raise SelectorCostError(expression, message)
        self._charge(expression, device, max(verdict.work, verdict.cost or 0))
        return verdict.matched

    def _charge(self, expression: str, device: Device, cost: int) -> None:
        key = (expression, device)
        if key in self._charged:
            return
        self._charged.add(key)
        self.spent += cost
        if self.spent > self.ceiling:
            message = (
                f"brings this deployment's selectors to {self.spent} units of work on device "
                f"{_describe(device)}, past the ceiling of {self.ceiling} units one "
                "scheduling call may spend"
            )
            raise SelectorCostError(expression, message)


def _describe(device: Device) -> str:
    """A device in a message: its driver and a few capacities, enough to find its entry."""
    capacity = ", ".join(f"{k}={v}" for k, v in device.capacity[:3])
    return f"{device.driver} ({capacity})" if capacity else device.driver
