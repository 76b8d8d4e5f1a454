"""Shared fixtures: request builders, and the function servers crank renders against."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from modelplane import registry
from modelplane.dev import render


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip tests that need the Crossplane CLI when `make tools` has not built it."""
    if render.CRANK.exists():
        return
    skip = pytest.mark.skip(reason="bin/crank is missing: run `make tools`")
    for item in items:
        if "crank" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def functions() -> Iterator[render.Functions]:
    """Every Modelplane function, served once for the whole session (one process)."""
    with render.serve(registry.COMPOSERS, shared=True) as running:
        yield running
