"""Time budgets for selector evaluation: one per device evaluation, one per call.

Kubernetes bounds a selector by its CEL cost, and so do we; but a cost unit takes this
interpreter far longer than cel-go (a selector just under the cost limit can run for
seconds), so each evaluation also has a wall-clock budget, checked at every loop
iteration. Running out of it is an error for that device, like cel-go's cost limit.

The call budget is the deadline of the request the evaluation serves (its client's
deadline, or the moment the client gave up). It is ambient (a context variable) so the
code between the server and the evaluator need not carry it; the server sets it with
:func:`call_deadline`. When it passes, evaluation raises :class:`Cancelled`, which is no
``Exception``: nothing on the way catches it as a failure, the whole call stops.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from contextvars import ContextVar

from modelplane.domain.dra._values import CostExceededError

EVALUATION_BUDGET_SECONDS = 1.0
"""Wall-clock time one selector may take on one device (cold; results are cached)."""


class Cancelled(BaseException):  # named like asyncio.CancelledError's kin
    """The call this work serves is over: its deadline passed or its client gave up.

    A ``BaseException`` like ``asyncio.CancelledError``, so that handlers turning errors
    into results (``except Exception``) let it through to the server.
    """


class OutOfTimeError(CostExceededError):
    """An evaluation ran past its deadline; every CEL error handler lets it through."""


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
def call_deadline(budget: CallBudget) -> Iterator[CallBudget]:
    """Run the block (in this thread or context) under ``budget``."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


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
