"""The call budget: when the call a selector evaluation serves must stop.

A selector's verdict is bounded by its CEL cost alone (see ``cel``), never by a clock.
The call budget is the deadline of the request the evaluation serves (its client's
deadline, or the moment the client gave up). It is ambient (a context variable) so the
code between the server and the evaluator need not carry it; the server sets it with
:func:`call_deadline`. When it passes, evaluation raises :class:`Cancelled`, which is no
``Exception``: nothing on the way catches it as a failure, the whole call stops, and no
verdict of that evaluation is kept.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from modelplane.domain.dra._values import CostExceededError

_T = TypeVar("_T")


class Cancelled(BaseException):  # named like asyncio.CancelledError's kin
    """The call this work serves is over: its deadline passed or its client gave up.

    A ``BaseException`` like ``asyncio.CancelledError``, so that handlers turning errors
    into results (``except Exception``) let it through to the server.
    """


class OutOfTimeError(CostExceededError):
    """The call an evaluation serves is over; every CEL error handler lets it through
    (as it does cel-go's cost limit), and the evaluator turns it into :class:`Cancelled`."""


class CallBudget:
    """When the current call must stop; mutable so the server can cancel it early."""

    __slots__ = ("deadline",)

    def __init__(self, deadline: float = math.inf) -> None:
        """``deadline`` is a :func:`time.monotonic` instant."""
        self.deadline = deadline

    def cancel(self) -> None:
        """Stop the call now (its client went away); safe from any thread."""
        self.deadline = -math.inf

    def over(self) -> bool:
        """Whether the call must stop."""
        return time.monotonic() > self.deadline


_UNBOUNDED = CallBudget()
_CURRENT: ContextVar[CallBudget] = ContextVar("modelplane_call_budget", default=_UNBOUNDED)


@contextlib.contextmanager
def _ambient(var: ContextVar[Any], value: _T) -> Iterator[_T]:
    """Set ``var`` to ``value`` for the block (in this thread or context)."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def call_deadline(budget: CallBudget) -> contextlib.AbstractContextManager[CallBudget]:
    """Run the block (in this thread or context) under ``budget``."""
    return _ambient(_CURRENT, budget)


def current() -> CallBudget:
    """The budget of the call being served (unbounded outside any call)."""
    return _CURRENT.get()


def check_call_deadline() -> None:
    """Raise :class:`Cancelled` when the current call is over; a safe point for long work.

    Raises:
        Cancelled: the call's deadline passed or its client gave up.
    """
    if _CURRENT.get().over():
        raise Cancelled


class OverWorkError(CostExceededError):
    """An evaluation did more work than :data:`WORK_LIMIT` (see :class:`WorkMeter`)."""


WORK_LIMIT = 2_000_000
"""Work one evaluation may do: CEL cost units plus the steps of its regular-expression
automata. A unit of either takes this interpreter about a microsecond, so this bounds an
evaluation to a second or two of CPU on any machine, counted rather than timed. Cost
alone cannot: a cost unit of ``findAll`` on a long string is a thousand automaton steps
here (cel-go's native regexp is that much faster)."""


class WorkMeter:
    """The work of one evaluation: its CEL cost (read from its frame) plus automaton
    steps, deterministic for a given selector and device (never a cache's or a clock's)."""

    __slots__ = ("frame", "limit", "steps")

    def __init__(self, frame: Any, limit: int = WORK_LIMIT) -> None:
        """Meter the evaluation whose running cost is ``frame.cost``."""
        self.frame = frame
        self.steps = 0
        self.limit = limit

    @property
    def work(self) -> int:
        """Automaton steps plus the CEL cost so far."""
        return self.steps + int(self.frame.cost)


_METER: ContextVar[WorkMeter | None] = ContextVar("modelplane_work_meter", default=None)


def metered(meter: WorkMeter) -> contextlib.AbstractContextManager[WorkMeter]:
    """Count the automaton steps of the block (one evaluation) on ``meter``."""
    return _ambient(_METER, meter)


def spend(steps: int) -> None:
    """Count ``steps`` of automaton work for the evaluation in progress, if any.

    Raises:
        OverWorkError: the evaluation has done more than its meter allows.
    """
    meter = _METER.get()
    if meter is None:
        return
    meter.steps += steps
    if meter.work > meter.limit:
        msg = f"operation cancelled: work limit of {meter.limit} exceeded"
        raise OverWorkError(msg)
