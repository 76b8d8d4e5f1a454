"""The typed models are generated from the XRDs: one source of truth."""

from __future__ import annotations

from modelplane.dev import models


def test_committed_models_match_a_fresh_generation() -> None:
    stale = models.drift()
    assert stale == [], f"models are stale, run `make models`: {stale}"


def test_every_xrd_has_a_model() -> None:
    kinds = {xrd["spec"]["names"]["kind"].lower() for xrd in models.xrds()}
    generated = {p.stem for p in models.MODELS.glob("*.py")} - {"__init__"}
    assert kinds == generated
