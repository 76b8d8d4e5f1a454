"""VultrCluster: a VKE cluster with an inline system pool and GPU node pools.

Composes the managed resources :mod:`modelplane.domain.clouds.vultr` builds (the GPU
pools reference the cluster, so the provider attaches them once it exists) and reports
the kubeconfig Secret once the cluster is Ready. Then, through a provider-kubernetes
ProviderConfig of its own, it observes the GPU operator's validator DaemonSet: that
Object is ready only when the GPU nodes' drivers are, so the VultrCluster is not Ready
before (``GPUOperatorReady`` says where it stands).
"""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose import _clouds
from modelplane.domain.clouds import common, vultr
from modelplane.models.vultrcluster import VultrCluster

SHAPE = _clouds.Shape(machine="plan", system_machine=vultr.SYSTEM_PLAN)


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the VKE cluster and its GPU pools and report its kubeconfig Secret."""
    cluster = _clouds.read(rsp, kit.composite(req), VultrCluster, SHAPE)
    if cluster is None:
        return kit.Released.NOTHING
    ready = kit.is_ready(kit.observed(req, common.CLUSTER_KEY))
    manifests = vultr.resources(cluster)
    if ready:
        manifests.update(vultr.workload_resources(cluster))
    _clouds.compose_all(req, rsp, manifests, vultr.WORKLOAD_KEYS)
    kit.set_status(rsp, vultr.status(cluster, ready))
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
    _clouds.kubeconfig_condition(rsp, ready, "the VKE cluster")
    _gpu_operator_condition(req, rsp, bool(cluster.pools))
    return kit.left_out(req, rsp, _clouds.RELEASED)


def _gpu_operator_condition(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, has_gpus: bool
) -> None:
    gate = kit.observed(req, vultr.GPU_OPERATOR_KEY)
    where = f"DaemonSet {vultr.GPU_OPERATOR_NAMESPACE}/{vultr.GPU_OPERATOR_VALIDATOR}"
    if not has_gpus:
        kit.set_condition(rsp, "GPUOperatorReady", True, "NoGPUPools", "no GPU pool to validate")
    elif kit.is_ready(gate):
        kit.set_condition(rsp, "GPUOperatorReady", True, "Available", f"{where}: every pod ready")
    elif gate is None:
        message = "waiting for the kubeconfig to observe the GPU operator"
        kit.set_condition(rsp, "GPUOperatorReady", False, "WaitingForCluster", message)
    else:
        message = f"{where}: not every GPU node's drivers are validated yet"
        kit.set_condition(rsp, "GPUOperatorReady", False, "Validating", message)
