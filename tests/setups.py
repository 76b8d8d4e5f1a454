"""The composites the compose tests start from: each a settled example and the store
its requirements are answered from (one place for what the waiting, golden and bad-input
tests share)."""

from __future__ import annotations

from dataclasses import dataclass

from tests import inprocess as loop
from tests.inprocess import Doc, Store

GETTING_STARTED = ("examples/getting-started/platform.yaml",)
FLEET_CLUSTER = "examples/getting-started/fleet/inference-cluster.yaml"
REPLICA = "examples/replicas/qwen3-8b/model-replica.yaml"
REPLICA_FLEET = "examples/replicas/qwen3-8b/fleet/inference-cluster.yaml"
SERVICE = "examples/routing/model-service/model-service.yaml"
SERVICE_FLEET = (
    "examples/routing/model-service/fleet/inference-gateway.yaml",
    "examples/routing/model-service/fleet/model-endpoints.yaml",
)


@dataclass(frozen=True)
class Setup:
    """A composite and the store its requirements are answered from."""

    xr: Doc
    store: Store


def replica() -> Setup:
    return Setup(loop.find(loop.load(REPLICA), "ModelReplica"), Store(loop.load(REPLICA_FLEET)))


def cache() -> Setup:
    cluster = loop.find(loop.load(REPLICA_FLEET), "InferenceCluster")
    cluster["status"]["cache"] = {"storageClassName": "modelplane-rwx-efs"}
    xr = loop.find(loop.load("examples/recipes/kimi-k2/model-cache.yaml"), "ModelCache")
    return Setup(xr, Store([cluster]))


def stack() -> Setup:
    xr = {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "eks-us-east", "namespace": "modelplane-system"},
        "spec": {
            "cloud": "EKS",
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "eks-us-east"},
        },
    }
    return Setup(xr, Store())


def endpoint() -> Setup:
    return Setup(loop.find(loop.load(*SERVICE_FLEET), "ModelEndpoint"), Store())


def inference_cluster(platform: str = GETTING_STARTED[0]) -> Setup:
    docs = loop.load(platform)
    return Setup(loop.find(docs, "InferenceCluster"), Store([loop.find(docs, "InferenceClass")]))


def cloud_cluster(platform: str) -> Setup:
    """The cloud composite exactly as the InferenceCluster composes it."""
    setup = inference_cluster(platform)
    composed = loop.desired(loop.reconcile(setup.xr, setup.store))["cluster"]
    return Setup(composed, Store())


NEBIUS_PLATFORM = "examples/getting-started/build-the-platform/nebius/platform.yaml"
NEBIUS_CONFIG = {
    "apiVersion": "nebius.m.upbound.io/v1beta1",
    "kind": "ClusterProviderConfig",
    "metadata": {"name": "default"},
    "spec": {
        "credentials": {
            "source": "Secret",
            "secretRef": {
                "name": "nebius-credentials",
                "namespace": "crossplane-system",
                "key": "credentials.json",
            },
        },
        "identity": {"type": "ServiceAccount"},
    },
}


def nebius_cluster() -> Setup:
    """The NebiusCluster as the InferenceCluster composes it; its provider config exists."""
    return Setup(cloud_cluster(NEBIUS_PLATFORM).xr, Store([NEBIUS_CONFIG]))


def deployment() -> Setup:
    xr = loop.find(loop.load("examples/getting-started/model-deployment.yaml"), "ModelDeployment")
    return Setup(xr, Store(loop.load(FLEET_CLUSTER)))


def service() -> Setup:
    return Setup(loop.find(loop.load(SERVICE), "ModelService"), Store(loop.load(*SERVICE_FLEET)))


def gateway() -> Setup:
    docs = loop.load("examples/getting-started/inference-gateway.yaml")
    return Setup(loop.find(docs, "InferenceGateway"), Store())
