"""The names a replica's objects take: they fit Kubernetes' limits, stay distinct and
stable, and the cache claim is the ModelCache's PVC."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from modelplane.domain.workload import (
    Engine,
    Phase,
    Replica,
    ServingMode,
    cache_claim,
    plan,
    pods,
)
from modelplane.domain.workload import names as naming

from tests.domain.test_workload import CLUSTER, gang, member

LABEL = st.from_regex(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?", fullmatch=True)


@given(name=LABEL, engine=LABEL, other=LABEL)
def test_names_fit_kubernetes_and_stay_distinct(name: str, engine: str, other: str) -> None:
    engines: tuple[Engine, ...] = (Engine(engine, (member(),), phase=Phase.PREFILL),)
    if other != engine:
        engines += (Engine(other, gang().members, phase=Phase.DECODE),)
    mode = ServingMode.PREFILL_DECODE if len(engines) == 2 else ServingMode.UNIFIED
    found = Replica(name, "ns", engines, mode)
    composed = plan(found, CLUSTER)
    objects = [c.resource["metadata"]["name"] for c in composed]
    assert len(set(objects)) == len(objects)
    assert all(len(n) <= 63 for n in objects)
    for item in composed:
        limit = 40 if item.kind == "LeaderWorkerSet" else 63
        assert len(item.name) <= limit, item
        labels = item.resource["spec"]["forProvider"]["manifest"]["metadata"].get("labels", {})
        assert all(len(v) <= 63 for v in labels.values()), item
    services = [c.name for c in composed if c.kind == "Service"]
    assert all(n[0].isalpha() for n in services), "Service names are DNS-1035 labels"


@pytest.mark.parametrize(
    ("name", "limit", "want"),
    [
        pytest.param("short", 63, "short", id="fits"),
        pytest.param("a" * 63, 63, "a" * 63, id="exactly"),
        pytest.param("ab-" * 30, 20, "ab-ab-ab-ab-ab-", id="cut-then-hash"),
    ],
)
def test_fit(name: str, limit: int, want: str) -> None:
    got = naming.fit(name, limit)
    assert len(got) <= limit
    assert got.startswith(want)
    assert naming.fit(name, limit) == got, "stable"


def test_fit_keeps_long_names_apart() -> None:
    assert naming.fit("x" * 70 + "a") != naming.fit("x" * 70 + "b")


def test_cache_claim_is_the_modelcache_pvc_name() -> None:
    assert cache_claim("qwen3-coder") == "qwen3-coder-model-cache"
    assert pods.has_model_argument(["--model", "x"])
