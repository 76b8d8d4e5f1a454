"""Teardown in order: which composed resource goes before which, as Usages."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from modelplane.domain import teardown
from modelplane.domain.clouds import common
from modelplane.domain.gating import Step

from tests.compose.test_golden import GOLDEN

NS = "modelplane-system"


def _golden_manifests(name: str) -> dict[str, dict[str, Any]]:
    """A cloud composite's composed manifests, as its golden response has them."""
    got = json.loads((GOLDEN / f"{name}.json").read_text())
    return {
        k: v["resource"]
        for k, v in got["desired"]["resources"].items()
        if not k.startswith(teardown.KEY_PREFIX)
    }


def _pairs(edges: list[teardown.Edge]) -> set[tuple[str, str]]:
    return {(e.user.key, e.used.key) for e in edges}


def test_eks_tears_down_objects_then_provider_config_then_nodes_cluster_network() -> None:
    edges = teardown.cloud_edges(_golden_manifests("ekscluster"))
    pairs = _pairs(edges)
    assert ("storage-class", "kubernetes-provider-config") in pairs
    assert ("kubernetes-provider-config", "cluster-auth") in pairs  # the kubeconfig's writer
    assert ("cluster-auth", "cluster") in pairs
    for pool in ("nodegroup-system", "nodegroup-gpu-l4"):
        assert ("kubernetes-provider-config", pool) in pairs  # Releases run on the nodes
        assert (pool, "cluster") in pairs
    network = {used for user, used in pairs if user == "cluster"}
    assert network == {
        "vpc",
        *(f"subnet-{s}-us-east-1{z}" for s in ("private", "public") for z in "abc"),
    }
    # What the cluster does not run on is not ordered: IAM, add-ons, EFS, routes.
    assert not {k for pair in pairs for k in pair} & {
        "node-role",
        "addon-coredns",
        "efs",
        "nat-gateway",
    }
    assert len(edges) == 14


@pytest.mark.parametrize(
    ("golden", "pairs"),
    [
        (
            "akscluster",
            {
                ("pool-gpua10", "cluster"),
                ("cluster", "subnet"),
                ("cluster", "virtual-network"),
                ("cluster", "resource-group"),
            },
        ),
        (
            "gkecluster",
            {
                ("storage-class", "kubernetes-provider-config"),
                ("kubernetes-provider-config", "cluster"),
                ("kubernetes-provider-config", "nodepool-system"),
                ("kubernetes-provider-config", "nodepool-gpu-l4"),
                ("nodepool-system", "cluster"),
                ("nodepool-gpu-l4", "cluster"),
                ("cluster", "network"),
                ("cluster", "subnetwork"),
            },
        ),
        (
            "nebiuscluster",
            {
                ("nodegroup-system", "cluster"),
                ("nodegroup-gpu-l40s", "cluster"),
                ("cluster", "network"),
                ("cluster", "subnet"),
                ("cluster", "pool"),
            },
        ),
        (
            "vultrcluster",
            {
                ("gpu-operator-validator", "kubernetes-provider-config"),
                ("kubernetes-provider-config", "cluster"),
                ("kubernetes-provider-config", "pool-gpu-l40s"),
                ("pool-gpu-l40s", "cluster"),
            },
        ),
    ],
)
def test_every_cloud_orders_its_cluster(golden: str, pairs: set[tuple[str, str]]) -> None:
    assert _pairs(teardown.cloud_edges(_golden_manifests(golden))) == pairs


def test_without_a_cluster_nothing_is_ordered() -> None:
    manifests = _golden_manifests("ekscluster")
    del manifests[common.CLUSTER_KEY]
    assert teardown.cloud_edges(manifests) == []


def _ref(key: str, kind: str, name: str, namespace: str = "", api: str = "x.io/v1") -> teardown.Ref:
    return teardown.Ref(key, api, kind, name, namespace)


def test_a_namespaced_user_s_usage_lives_with_it_and_names_of_s_namespace() -> None:
    edge = teardown.Edge(
        _ref("pool", "IPAddressPool", "p", "metallb-system"), _ref("lb", "Release", "metallb", NS)
    )
    got = teardown.usage("default", edge)
    assert got is not None
    assert got["kind"] == "Usage"
    assert got["metadata"] == {"name": "default-pool-uses-lb", "namespace": "metallb-system"}
    assert got["spec"]["of"]["resourceRef"] == {"name": "metallb", "namespace": NS}
    assert got["spec"]["by"]["resourceRef"] == {"name": "p"}  # looked up in the Usage's namespace


def test_a_cluster_scoped_user_of_a_namespaced_resource_uses_its_namespace() -> None:
    edge = teardown.Edge(
        _ref("pc", "ClusterProviderConfig", "c"), _ref("cluster", "EKSCluster", "c", NS)
    )
    got = teardown.usage("c", edge)
    assert got is not None
    assert (got["kind"], got["metadata"]["namespace"]) == ("Usage", NS)
    assert got["spec"]["of"]["resourceRef"] == {"name": "c"}


def test_two_cluster_scoped_ends_make_a_cluster_usage() -> None:
    edge = teardown.Edge(_ref("a", "GatewayClass", "a"), _ref("b", "CustomResourceDefinition", "b"))
    got = teardown.usage("o", edge)
    assert got is not None
    assert got["kind"] == "ClusterUsage"
    assert "namespace" not in got["metadata"]


def test_a_namespaced_user_of_a_cluster_scoped_resource_has_no_usage() -> None:
    """The webhook would look the used resource up under the Usage's namespace: no
    Usage can hold it, so none is composed (rather than one that protects nothing)."""
    edge = teardown.Edge(_ref("obj", "Object", "o", NS), _ref("pc", "ClusterProviderConfig", "c"))
    assert teardown.usage("o", edge) is None


@pytest.mark.parametrize("owner", ["x", "a" * 63, "eks-us-east-with-a-rather-long-cluster-name"])
def test_usage_names_are_valid_and_stable(owner: str) -> None:
    edge = teardown.Edge(
        _ref("route-table-association-private-us-east-1a", "Subnet", "s", NS),
        _ref("vpc", "VPC", "v", NS),
    )
    name = teardown.usage_name(owner, edge)
    assert len(name) <= 63
    assert name == teardown.usage_name(owner, edge)
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name  # a DNS label


def test_steps_go_before_what_they_need_and_only_once_both_exist() -> None:
    def manifest(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "helm.m.crossplane.io/v1beta1",
            "kind": "Release",
            "metadata": {"name": name, "namespace": NS},
        }

    steps = [
        Step("crds", "", {}),
        Step("ctl", "", {}, ("crds",)),
        Step("gw", "", {}, ("ctl", "crds")),
    ]
    both = {"crds": manifest("crds"), "ctl": manifest("ctl"), "gw": manifest("gw")}
    assert _pairs(teardown.step_edges(steps, both)) == {
        ("ctl", "crds"),
        ("gw", "ctl"),
        ("gw", "crds"),
    }
    del both["ctl"]
    assert _pairs(teardown.step_edges(steps, both)) == {("gw", "crds")}


def test_the_edges_are_sorted_so_the_answer_is_the_same_bytes() -> None:
    manifests = _golden_manifests("ekscluster")
    reversed_order = dict(reversed(list(manifests.items())))
    assert teardown.cloud_edges(manifests) == teardown.cloud_edges(reversed_order)
