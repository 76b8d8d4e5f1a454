"""AKSCluster: an AKS cluster with a system pool and GPU pools, for an InferenceCluster.

Composes the managed resources :mod:`modelplane.domain.clouds.aks` builds and reports the
kubeconfig Secret once the cluster is Ready, plus the RWX StorageClass the ServingStack
creates on AKS.
"""

from __future__ import annotations

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _clouds
from modelplane.compose import _kit as kit
from modelplane.domain.clouds import aks, common
from modelplane.models.akscluster import AKSCluster

SHAPE = _clouds.Shape(
    machine="vmSize",
    system_machine=aks.SYSTEM_VM_SIZE,
    system_name=aks.SYSTEM_POOL,
    location="location",
)


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose the AKS cluster's managed resources and report its kubeconfig Secret."""
    xr = kit.composite(req)
    spec = AKSCluster.model_validate(xr).spec  # a malformed spec stops here, with what is wrong
    try:
        cluster = _clouds.read_cluster(xr, spec, SHAPE)
    except common.ClusterError as exc:
        response.fatal(rsp, f"cannot compose AKSCluster {kit.meta(xr).name}: {exc}")
        return
    for key, manifest in sorted(aks.resources(cluster).items()):
        kit.compose(rsp, key, manifest)
    ready = kit.is_ready(kit.observed(req, aks.CLUSTER_KEY))
    kit.set_status(rsp, aks.status(cluster, ready))
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
    if ready:
        kit.set_condition(rsp, "KubeconfigReady", True, "Available", "kubeconfig Secret written")
    else:
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForCluster", "waiting for the AKS cluster"
        )
