"""The ClusterUsage an InferenceCluster composes of itself validates against Crossplane's CRD."""

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


def test_the_cluster_usage_validates() -> None:
    holding = usage.cluster_usage("eks-us-east")
    report = schemas.validate([holding])
    assert report.ok, report.failures + report.missing


def test_a_cluster_usage_without_what_it_holds_is_refused() -> None:
    holding = usage.cluster_usage("eks-us-east")
    del holding["spec"]["of"]
    assert not schemas.validate([holding]).ok


@pytest.mark.parametrize("cluster", ["eks-us-east", "c" * 63])
def test_cluster_usage_names_are_valid(cluster: str) -> None:
    name = usage.cluster_usage_name(cluster)
    assert len(name) <= 63
    assert name == usage.cluster_usage_name(cluster), "stable across calls"
