"""AKSCluster: an AKS cluster with a system pool and GPU pools, for an InferenceCluster.

Composes the managed resources :mod:`modelplane.domain.clouds.aks` builds and reports the
kubeconfig Secret once the cluster is Ready, plus the RWX StorageClass the ServingStack
creates on AKS.
"""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose import _clouds
from modelplane.domain.clouds import aks, common
from modelplane.models.akscluster import AKSCluster

SHAPE = _clouds.Shape(
    machine="vmSize",
    system_machine=aks.SYSTEM_VM_SIZE,
    system_name=aks.SYSTEM_POOL,
    location="location",
)


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the AKS cluster's managed resources and report its kubeconfig Secret."""
    cluster = _clouds.read(rsp, kit.composite(req), AKSCluster, SHAPE)
    if cluster is None:
        return kit.Released.NOTHING
    _clouds.compose_all(req, rsp, aks.resources(cluster), ())
    ready = kit.is_ready(kit.observed(req, common.CLUSTER_KEY))
    kit.set_status(rsp, aks.status(cluster, ready))
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
    _clouds.kubeconfig_condition(rsp, ready, "the AKS cluster")
    return kit.left_out(req, rsp, _clouds.RELEASED)
