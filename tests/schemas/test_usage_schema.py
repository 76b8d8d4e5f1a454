"""The ClusterUsage an InferenceCluster composes of itself validates against Crossplane's CRD."""

from __future__ import annotations

import pytest
from modelplane.dev import schemas
from modelplane.domain import teardown, usage

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


def test_the_ordering_usages_validate() -> None:
    """Each kind of ordering Usage (namespaced with a cross-namespace ``of``, namespaced
    with a cluster-scoped ``by``, cluster-scoped) validates against Crossplane's CRDs."""
    ns = "modelplane-system"
    edges = [
        teardown.Edge(
            teardown.Ref("pool", "metallb.io/v1beta1", "IPAddressPool", "p", "metallb-system"),
            teardown.Ref("metallb", "helm.m.crossplane.io/v1beta1", "Release", "metallb", ns),
        ),
        teardown.Edge(
            teardown.Ref("pc", "helm.m.crossplane.io/v1beta1", "ClusterProviderConfig", "c"),
            teardown.Ref("cluster", "infrastructure.modelplane.ai/v1alpha1", "EKSCluster", "c", ns),
        ),
        teardown.Edge(
            teardown.Ref("a", "gateway.networking.k8s.io/v1", "GatewayClass", "a"),
            teardown.Ref("b", "apiextensions.k8s.io/v1", "CustomResourceDefinition", "b"),
        ),
    ]
    built = [teardown.usage("o" * 63, edge) for edge in edges]
    assert [u["kind"] for u in built if u] == ["Usage", "Usage", "ClusterUsage"]
    report = schemas.validate([u for u in built if u])
    assert report.ok, report.failures + report.missing
