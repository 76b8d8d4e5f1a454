"""Teardown in order, played on converged fleets: deleting an InferenceCluster (after its
ML resources, the docs' clean-up order) or the InferenceGateway goes in waves that
Crossplane's Usages and foreground deletion allow (:mod:`modelplane.dev.loop.teardown`).

Without the ordering Usages every leaf would go in the first wave; these tests check the
order a real teardown needs: what reaches the workload cluster (Releases, Objects) before
the provider configs, the cluster, its node groups and its network; node groups before
the cluster; the cluster before its network. And it never hangs.
"""

from __future__ import annotations

import pytest
from modelplane.dev.fakes.base import Key
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.teardown import delete_in_order
from modelplane.domain import teardown

from tests.loop.conftest import Fleets

pytestmark = pytest.mark.loop

CLUSTER_KINDS = {
    ("eks.aws.m.upbound.io", "Cluster"),
    ("container.gcp.m.upbound.io", "Cluster"),
    ("containerservice.azure.m.upbound.io", "KubernetesCluster"),
    ("mk8s.nebius.m.upbound.io", "Cluster"),
    ("vke.vultr.m.upbound.io", "Kubernetes"),
}
INFRA = "infrastructure.modelplane.ai"
ML_KINDS = ("ModelDeployment", "ModelService", "ModelCache")


def _waves(waves: list[list[Key]]) -> dict[Key, int]:
    return {key: i for i, wave in enumerate(waves) for key in wave}


def _of(keys: dict[Key, int], kinds: set[tuple[str, str]]) -> list[Key]:
    return sorted(k for k in keys if (k[0], k[1]) in kinds)


def _workload(keys: dict[Key, int]) -> list[Key]:
    return sorted(
        k for k in keys if k[0] in teardown.WORKLOAD_GROUPS and k[1] in teardown.WORKLOAD_KINDS
    )


def _configs(keys: dict[Key, int]) -> list[Key]:
    return sorted(
        k
        for k in keys
        if k[0] in teardown.WORKLOAD_GROUPS and k[1] in teardown.PROVIDER_CONFIG_KINDS
    )


def _config_of(plane: ControlPlane, key: Key) -> Key | None:
    """The provider config a Release or Object names, if it is in the store."""
    ref = (plane.store[key].get("spec") or {}).get("providerConfigRef") or {}
    kind = ref.get("kind", "ClusterProviderConfig")
    found = (key[0], kind, key[2] if kind == "ProviderConfig" else "", ref.get("name", ""))
    return found if key[1] in teardown.WORKLOAD_KINDS and found in plane.store else None


def _before(wave: dict[Key, int], first: list[Key], then: list[Key], what: str) -> None:
    late = [(a, b) for a in first for b in then if wave[a] >= wave[b]]
    assert not late, f"{what}: " + "; ".join(
        f"{a[1]} {a[3]} (wave {wave[a]}) not before {b[1]} {b[3]} (wave {wave[b]})"
        for a, b in late[:5]
    )


def _unused(plane: ControlPlane) -> None:
    """Delete the ML resources and let the clusters see nothing uses them."""
    for key in sorted(k for k in plane.store if k[0] == "modelplane.ai" and k[1] in ML_KINDS):
        if key in plane.store:
            plane.delete(key)
    plane.converge(6)


@pytest.mark.parametrize(
    "fleet",
    [
        "getting-started",
        "getting-started-gke",
        "getting-started-aks",
        "getting-started-nebius",
        "getting-started-vultr",
    ],
)
def test_an_inference_cluster_tears_down_in_order(fleet: str, converged: Fleets) -> None:
    plane = converged.get(fleet).plane.clone()
    _unused(plane)
    provisioned = [
        k
        for k in plane.store
        if k[1] == "InferenceCluster"
        and any(c[0] == INFRA and c[1].endswith("Cluster") for c in plane.composed_by(k))
    ]
    assert provisioned, f"{fleet} provisions no cluster"
    for cluster in sorted(provisioned):
        tree = {cluster, *plane.tree(cluster)}
        configs = {k: c for k in tree if (c := _config_of(plane, k)) is not None}
        assert configs, f"{cluster[3]}: nothing goes through a provider config"
        wave = _waves(delete_in_order(plane, cluster))
        assert tree <= set(wave)  # all of it went: nothing hangs, nothing is left behind
        clusters = _of(wave, CLUSTER_KINDS)
        nodes = _of(wave, set(teardown.NODE_KINDS))
        network = _of(wave, set(teardown.NETWORK_KINDS))
        assert len(clusters) == 1, clusters
        assert nodes, f"{cluster[3]} has no node group"
        assert network or fleet.endswith("vultr"), f"{cluster[3]} has no network"
        infrastructure = clusters + nodes + network
        _before(wave, _workload(wave), infrastructure, "Releases and Objects first")
        for obj in _workload(wave):  # each before the provider config it goes through
            _before(wave, [obj], [configs[obj]] if obj in configs else [], "through its config")
        _before(wave, _configs(wave), infrastructure, "provider configs before the infrastructure")
        _before(wave, nodes, clusters, "node groups before the cluster")
        _before(wave, clusters, network, "the cluster before its network")


def test_the_inference_gateway_tears_down_in_order(converged: Fleets) -> None:
    plane = converged.get("getting-started").plane.clone()
    gateway = next(k for k in plane.store if k[1] == "InferenceGateway")
    wave = _waves(delete_in_order(plane, gateway))
    by_name = {(k[1], k[3]): k for k in wave}
    gw, traefik = by_name[("Gateway", "modelplane")], by_name[("Release", "traefik")]
    crds = by_name[("Release", "gateway-api-crds")]
    _before(wave, [gw, by_name[("GatewayClass", "modelplane")]], [traefik], "the Gateway first")
    _before(wave, [traefik], [crds], "Traefik before the Gateway API CRDs")
    assert gateway not in plane.store
