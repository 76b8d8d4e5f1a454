"""Fixtures of the loop tests: one function server per session, converged fleets cached."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
from modelplane.dev import engine, render
from modelplane.dev.loop import fleets
from modelplane.dev.loop.apis import function_targets
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import PassRecord

QUIESCE_LIMIT = 10
"""Passes a fleet gets to stop changing before flaps and edits start from it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the loop tests when Crossplane's render engine (``bin/crossplane``) is not built."""
    try:
        engine.find_crossplane()
    except engine.EngineError as err:
        skip = pytest.mark.skip(reason=f"{err} (the loop tests run Crossplane's reconciler)")
        for item in items:
            if "loop" in item.keywords:
                item.add_marker(skip)


SERVER_ENV = "MODELPLANE_LOOP_FUNCTIONS"
"""``host:port`` of a function server already running (e.g. with ``--debug``) to use instead."""


@pytest.fixture(scope="session")
def loop_functions(request: pytest.FixtureRequest) -> dict[str, str]:
    """Every function, served by the session's one function server (``functions``)."""
    running = os.environ.get(SERVER_ENV)
    if running:
        return function_targets(running)
    served: render.Functions = request.getfixturevalue("functions")
    return function_targets(served.address)


@dataclass
class Converged:
    """A fleet reconciled from scratch: every pass's record, and the control plane after.

    ``plane`` is the state once a pass changed nothing (or after :data:`QUIESCE_LIMIT`
    passes); take a :meth:`ControlPlane.clone` before changing it.
    """

    fleet: str
    plane: ControlPlane
    records: list[PassRecord]
    first: list[PassRecord] = field(default_factory=list)
    """For a fleet applied in two steps, the passes of the first step (``records`` are the
    second step's)."""

    @property
    def quiet(self) -> bool:
        """Tell whether the last pass changed nothing."""
        return bool(self.records) and self.records[-1].quiet

    def after(self, passes: int) -> PassRecord:
        """Return the record of pass ``passes`` (the last one when it converged earlier)."""
        return self.records[min(passes, len(self.records)) - 1]


@dataclass
class Fleets:
    """Every fleet converged so far in this session, by name."""

    functions: dict[str, str]
    done: dict[str, Converged] = field(default_factory=dict)

    def get(self, name: str) -> Converged:
        """Return fleet ``name`` converged (reconciling it the first time it is asked for)."""
        if name not in self.done:
            fleet = fleets.BY_NAME[name]
            plane = ControlPlane(fleet.documents(), self.functions)
            records = plane.converge(QUIESCE_LIMIT)
            first: list[PassRecord] = []
            if fleet.then:
                first = records
                for doc in fleet.then_documents():
                    plane.put(doc)
                records = plane.converge(QUIESCE_LIMIT)
            self.done[name] = Converged(name, plane, records, first)
        return self.done[name]


@pytest.fixture(scope="session")
def converged(loop_functions: dict[str, str]) -> Fleets:
    """Fleets reconciled from scratch to quiescence, once per session."""
    return Fleets(loop_functions)
