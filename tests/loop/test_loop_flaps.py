"""The loop contract's flaps: a dependency reporting ``Ready=False``, or missing a status
field, for one pass deletes nothing, and every composite that was Ready is Ready again
within :data:`~tests.loop.contract.RECOVER_WITHIN` passes (see :mod:`tests.loop.test_loop`)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from modelplane.dev.fakes.base import describe
from modelplane.dev.loop.fakes import Flap
from modelplane.dev.loop.records import history_text

from tests.loop.conftest import Fleets
from tests.loop.contract import (
    RECOVER_WITHIN,
    Locate,
    _errors,
    _kind,
    _located,
    _not_ready_text,
    _object_of,
    _python_errors,
)

pytestmark = pytest.mark.loop


# --- flaps ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlapCase:
    """One dependency misreporting for one pass in a converged fleet."""

    id: str
    fleet: str
    target: Locate
    flap: Flap


NOT_READY = Flap(ready=False)


def _without(*paths: str, ready: bool = True) -> Flap:
    return Flap(ready=ready, drop=paths)


EKS_GROUP = "eks.aws.m.upbound.io"
REPLICA_WORKLOADS = ("Deployment", "LeaderWorkerSet")
FLAP_CASES = [
    # EKS: the cloud cluster's managed resources and what the EKSCluster publishes.
    FlapCase("eks-clusterauth-not-ready", "getting-started", _kind("ClusterAuth"), NOT_READY),
    FlapCase(
        "eks-cluster-not-ready", "getting-started", _kind("Cluster", group=EKS_GROUP), NOT_READY
    ),
    FlapCase(
        "eks-filesystem-without-id",
        "getting-started",
        _kind("FileSystem"),
        _without("status.atProvider.id"),
    ),
    FlapCase("ekscluster-not-ready", "getting-started", _kind("EKSCluster"), NOT_READY),
    FlapCase(
        "ekscluster-without-kubeconfig",
        "getting-started",
        _kind("EKSCluster"),
        _without("status.kubeconfigSecretRef"),
    ),
    # The serving stack and what it publishes.
    FlapCase("servingstack-not-ready", "getting-started", _kind("ServingStack"), NOT_READY),
    FlapCase(
        "servingstack-without-gateway",
        "getting-started",
        _kind("ServingStack"),
        _without("status.gateway"),
    ),
    FlapCase(
        "stack-release-not-ready",
        "getting-started",
        _kind("Release", name="envoy-gateway"),
        NOT_READY,
    ),
    FlapCase(
        "stack-gateway-without-address",
        "getting-started",
        _object_of("ServingStack", "Gateway"),
        _without("status.atProvider.manifest.status.addresses"),
    ),
    # The InferenceCluster, as its consumers (ModelDeployment, ModelReplica, ModelCache) read it.
    FlapCase("inferencecluster-not-ready", "getting-started", _kind("InferenceCluster"), NOT_READY),
    FlapCase(
        "inferencecluster-without-gateway",
        "getting-started",
        _kind("InferenceCluster"),
        _without("status.gateway"),
    ),
    FlapCase(
        "inferencecluster-without-provider-config",
        "getting-started",
        _kind("InferenceCluster"),
        _without("status.providerConfigRef"),
    ),
    FlapCase(
        "inferencecluster-nonsense-pools",
        "getting-started",
        _kind("InferenceCluster"),
        Flap(put=(("status.gpuPools", "nonsense"),)),
    ),
    FlapCase(
        "inferencecluster-nonsense-gateway",
        "getting-started",
        _kind("InferenceCluster"),
        Flap(put=(("status.gateway", ["nonsense"]), ("status.providerConfigRef", 42))),
    ),
    # A replica's workload on its cluster, and the replica as its deployment reads it.
    FlapCase(
        "replica-workload-not-ready",
        "getting-started",
        _object_of("ModelReplica", *REPLICA_WORKLOADS),
        NOT_READY,
    ),
    FlapCase(
        "replica-workload-without-status",
        "getting-started",
        _object_of("ModelReplica", *REPLICA_WORKLOADS),
        _without("status.atProvider.manifest.status", ready=False),
    ),
    FlapCase(
        "replica-route-without-parents",
        "getting-started",
        _object_of("ModelReplica", "HTTPRoute"),
        _without("status.atProvider.manifest.status.parents", ready=False),
    ),
    FlapCase("modelreplica-not-ready", "getting-started", _kind("ModelReplica"), NOT_READY),
    # Routing on the control plane.
    FlapCase(
        "modelendpoint-without-backend",
        "getting-started",
        _kind("ModelEndpoint"),
        _without("status.routing"),
    ),
    FlapCase(
        "inferencegateway-without-address",
        "getting-started",
        _kind("InferenceGateway"),
        _without("status.address"),
    ),
    FlapCase(
        "control-plane-route-without-parents",
        "getting-started",
        _kind("HTTPRoute", group="gateway.networking.k8s.io"),
        _without("status.parents"),
    ),
    # GKE, AKS and Vultr clusters.
    FlapCase(
        "gke-cluster-not-ready",
        "getting-started-gke",
        _kind("Cluster", group="container.gcp.m.upbound.io"),
        NOT_READY,
    ),
    FlapCase(
        "gke-service-account-without-email",
        "getting-started-gke",
        _kind("ServiceAccount", group="cloudplatform.gcp.m.upbound.io"),
        _without("status.atProvider.email"),
    ),
    FlapCase(
        "gke-service-account-key-not-ready",
        "getting-started-gke",
        _kind("ServiceAccountKey"),
        NOT_READY,
    ),
    FlapCase(
        "gkecluster-without-kubeconfig",
        "getting-started-gke",
        _kind("GKECluster"),
        _without("status.kubeconfigSecretRef"),
    ),
    FlapCase("aks-cluster-not-ready", "getting-started-aks", _kind("KubernetesCluster"), NOT_READY),
    FlapCase(
        "akscluster-without-kubeconfig",
        "getting-started-aks",
        _kind("AKSCluster"),
        _without("status.kubeconfigSecretRef"),
    ),
    FlapCase(
        "vultr-cluster-not-ready",
        "getting-started-vultr",
        _kind("Kubernetes", group="vultr.m.upbound.io"),
        NOT_READY,
    ),
    FlapCase(
        "vultr-cluster-without-id",
        "getting-started-vultr",
        _kind("Kubernetes", group="vultr.m.upbound.io"),
        _without("status.atProvider.id"),
    ),
    # A ModelCache, and the cluster as the cache reads it.
    FlapCase("modelcache-not-ready", "recipe-qwen3-coder", _kind("ModelCache"), NOT_READY),
    FlapCase(
        "modelcache-without-clusters",
        "recipe-qwen3-coder",
        _kind("ModelCache"),
        _without("status.clusters"),
    ),
    FlapCase(
        "modelcache-nonsense-clusters",
        "recipe-qwen3-coder",
        _kind("ModelCache"),
        Flap(put=(("status.clusters", [{"name": 5, "phase": ["Ready"]}, "nonsense"]),)),
    ),
    FlapCase(
        "inferencecluster-without-cache",
        "recipe-qwen3-coder",
        _kind("InferenceCluster"),
        _without("status.cache"),
    ),
    FlapCase(
        "cache-claim-without-status",
        "recipe-qwen3-coder",
        _object_of("ModelCache", "PersistentVolumeClaim"),
        _without("status.atProvider.manifest.status", ready=False),
    ),
    FlapCase(
        "cache-claim-not-ready",
        "recipe-qwen3-coder",
        _object_of("ModelCache", "PersistentVolumeClaim"),
        NOT_READY,
    ),
    # An Existing cluster's serving stack.
    FlapCase(
        "existing-servingstack-not-ready",
        "platform",
        _kind("ServingStack", name="byo-us-east"),
        NOT_READY,
    ),
]


@pytest.mark.parametrize("case", FLAP_CASES, ids=[c.id for c in FLAP_CASES])
def test_flap_drops_nothing_and_recovers(case: FlapCase, converged: Fleets) -> None:
    """A dependency misreporting for one pass deletes nothing; Ready comes back."""
    done = converged.get(case.fleet)
    plane = done.plane.clone()
    target = _located(plane, case.target, f"the flap target of {case.id}")
    before = set(plane.store)
    ready_before = [k for k in plane.composites() if plane.ready(k)]
    plane.flap(target, case.flap)
    records = [plane.run_pass()]
    records += plane.converge(RECOVER_WITHIN)
    what = f"{describe(target)} {case.flap.describe()} in pass {records[0].number}"
    dropped = [(r.number, k) for r in records for k in r.disappeared if k in before]
    assert not dropped, (
        f"{case.fleet}: {what} deleted {len(dropped)} resources that existed before:\n"
        + "\n".join(f"  pass {n}: {describe(k)}" for n, k in dropped[:40])
        + f"\nhistory:\n{history_text(records)}\nnow:\n{plane.report()}"
    )
    leaked = _python_errors(records) + _errors(records)
    assert not leaked, f"{case.fleet}: {what}; errors:\n  " + "\n  ".join(leaked[:10])
    not_back = [k for k in ready_before if not plane.ready(k)]
    assert not not_back, (
        f"{case.fleet}: {what}; {len(not_back)} composites that were Ready are not Ready "
        f"{len(records) - 1} passes later:\n{_not_ready_text(plane, not_back)}\n"
        f"history:\n{history_text(records)}"
    )
