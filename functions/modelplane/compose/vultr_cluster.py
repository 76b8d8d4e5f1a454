"""VultrCluster: a VKE cluster with an inline system pool and GPU node pools.

Composes the managed resources :mod:`modelplane.domain.clouds.vultr` builds (the GPU
pools reference the cluster, so the provider attaches them once it exists) and reports
the kubeconfig Secret once the cluster is Ready.
"""

from __future__ import annotations

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _clouds
from modelplane.compose import _kit as kit
from modelplane.domain.clouds import common, vultr
from modelplane.models.vultrcluster import VultrCluster

SHAPE = _clouds.Shape(machine="plan", system_machine=vultr.SYSTEM_PLAN)


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose the VKE cluster and its GPU pools and report its kubeconfig Secret."""
    xr = kit.composite(req)
    spec = VultrCluster.model_validate(xr).spec  # a malformed spec stops here, with what is wrong
    try:
        cluster = _clouds.read_cluster(xr, spec, SHAPE)
    except common.ClusterError as exc:
        response.fatal(rsp, f"cannot compose VultrCluster {kit.meta(xr).name}: {exc}")
        return
    for key, manifest in sorted(vultr.resources(cluster).items()):
        kit.compose(rsp, key, manifest)
    ready = kit.is_ready(kit.observed(req, vultr.CLUSTER_KEY))
    kit.set_status(rsp, vultr.status(cluster, ready))
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
    if ready:
        kit.set_condition(rsp, "KubeconfigReady", True, "Available", "kubeconfig Secret written")
    else:
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForCluster", "waiting for the VKE cluster"
        )
