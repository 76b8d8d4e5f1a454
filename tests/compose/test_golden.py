"""Whole responses, one per kind, against golden files; and byte-for-byte determinism.

Each kind is reconciled (in process) until it settles; its last response, as JSON, must
equal ``tests/testdata/golden/<kind>.json``. After a deliberate change, regenerate
with ``UPDATE_GOLDEN=1 make test PYTEST_ARGS=tests/compose/test_golden.py`` and review
the diff like code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from modelplane import registry

from tests import inprocess as loop
from tests import setups
from tests.compose import test_waiting as cases
from tests.requests import as_dict

GOLDEN = Path(__file__).resolve().parents[1] / "testdata" / "golden"

SETUPS: dict[str, Callable[[], setups.Setup]] = {}
for _kind, _setup, _what, _edit in cases.CASES:
    SETUPS.setdefault(_kind, _setup)
SETUPS["InferenceClass"] = lambda: setups.Setup(
    loop.find(loop.load(*setups.GETTING_STARTED), "InferenceClass"), loop.Store()
)


def test_every_kind_has_a_golden_case() -> None:
    assert set(SETUPS) == set(registry.COMPOSERS)


@pytest.mark.parametrize("kind", sorted(SETUPS))
def test_the_settled_response_matches_its_golden_file(kind: str) -> None:
    xr, store, observed = cases._settled(SETUPS[kind]())
    got = as_dict(loop.reconcile(xr, store, observed))
    path = GOLDEN / f"{kind.lower()}.json"
    text = json.dumps(got, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}: run with UPDATE_GOLDEN=1"
    assert json.loads(path.read_text()) == got


@pytest.mark.parametrize("kind", sorted(SETUPS))
def test_the_same_request_gives_the_same_bytes(kind: str) -> None:
    xr, store, observed = cases._settled(SETUPS[kind]())
    first = loop.reconcile(xr, store, observed).SerializeToString(deterministic=True)
    second = loop.reconcile(xr, store, observed).SerializeToString(deterministic=True)
    assert first == second
