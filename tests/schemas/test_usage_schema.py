"""The Usage a replica or cache composes to hold its cluster validates against Crossplane's CRD."""

from __future__ import annotations

import pytest
from modelplane.dev import schemas
from modelplane.domain import usage

pytestmark = [
    pytest.mark.crank,
    pytest.mark.skipif(
        not schemas.available(), reason="schemas not fetched: run tools/schemas/fetch.sh"
    ),
]


def test_usage_validates() -> None:
    holding = usage.of_cluster("ModelReplica", "qwen-demo-92535", "ml-team", "eks-us-east")
    report = schemas.validate([holding])
    assert report.ok, report.failures + report.missing


def test_usage_without_what_it_holds_is_refused() -> None:
    holding = usage.of_cluster("ModelCache", "qwen3-coder", "ml-team", "eks-us-east")
    del holding["spec"]["of"]
    assert not schemas.validate([holding]).ok


@pytest.mark.parametrize(
    ("user", "cluster"),
    [
        pytest.param("qwen-demo-92535", "eks-us-east", id="short"),
        pytest.param("m" * 63, "c" * 63, id="long-names-cut-with-a-hash"),
    ],
)
def test_usage_names_are_valid(user: str, cluster: str) -> None:
    name = usage.name(user, cluster)
    assert len(name) <= 63
    assert name == usage.name(user, cluster), "stable across calls"
    assert name.startswith(user[:20])
