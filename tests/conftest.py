"""Shared fixtures: request builders, and the function server the render engine calls."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings
from modelplane.dev import engine, render
from modelplane.planning import agreement

# Every fleet read in every test checks that the reader's short paths agree with the
# careful readers (planning.agreement); function servers the tests start inherit it.
os.environ["MODELPLANE_CHECK_READERS"] = "1"
agreement.CHECKING = True

# The property tests explore new examples on every run (a failure found is kept in
# .hypothesis and replayed first), except where HYPOTHESIS_PROFILE=ci (.ci/run): there
# each property runs the same examples every time, so a submission's CI never fails on
# an example no earlier run tried.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip tests whose Go binaries are not built.

    ``crank``: the Crossplane CLI (``crank beta validate``), built by ``make tools``.
    ``crossplane``: Crossplane core, whose ``internal render`` renders composites, built by
    ``make crossplane``.
    """
    missing = {
        "crank": None if render.CRANK.exists() else "bin/crank is missing: run `make tools`",
        "crossplane": _crossplane_missing(),
    }
    for item in items:
        for marker, reason in missing.items():
            if reason and marker in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


def _crossplane_missing() -> str | None:
    try:
        engine.find_crossplane()
    except engine.EngineError as err:
        return str(err)
    return None


@pytest.fixture(scope="session")
def functions() -> Iterator[render.Functions]:
    """Every Modelplane function, served once for the whole session (one process).

    Tests that take it render through the engine: without ``bin/crossplane`` they skip.
    """
    reason = _crossplane_missing()
    if reason:
        pytest.skip(reason)
    with render.serve() as running:
        yield running
