"""EKSCluster: an EKS cluster with a system node group and GPU node groups, for an InferenceCluster.

Steps, each waiting for what it needs:

1. The network, IAM roles, EKS cluster, add-ons, node groups, EFS and the ClusterAuth
   that writes the kubeconfig Secret (:mod:`modelplane.domain.clouds.eks`).
2. Once the ClusterAuth is Ready: ``status.kubeconfigSecretRef``, and a
   provider-kubernetes ProviderConfig for the cluster (and a provider-helm one plus the
   cluster autoscaler's Release, where a pool autoscales).
3. Once the EFS file system has an id too: the ``modelplane-rwx-efs`` StorageClass on
   the cluster. ``status.cache.storageClassName`` names it from the start: it is fixed.
"""

from __future__ import annotations

from typing import Any

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _clouds
from modelplane.compose import _kit as kit
from modelplane.domain.clouds import common, eks
from modelplane.models.ekscluster import EKSCluster

SHAPE = _clouds.Shape(
    machine="instanceType", system_machine="m6i.xlarge", version=eks.DEFAULT_VERSION
)


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose the EKS cluster's managed resources and report its kubeconfig Secret."""
    xr = kit.composite(req)
    name = kit.meta(xr).name
    try:
        cluster = _cluster(xr)
        manifests = eks.resources(cluster)
    except common.ClusterError as exc:
        # Fatal keeps every resource already composed: a bad edit never tears a cluster down.
        response.fatal(rsp, f"cannot compose EKSCluster {name}: {exc}")
        return
    auth = kit.observed(req, eks.AUTH_KEY)
    kubeconfig = None
    if kit.is_ready(auth):
        kubeconfig = common.kubeconfig_ref(eks.kubeconfig_secret(cluster), cluster.namespace)
        fs_id = common.at_provider(kit.observed(req, eks.FILE_SYSTEM_KEY)).get("id")
        manifests.update(eks.workload_resources(cluster, kubeconfig, fs_id))
    for key, manifest in sorted(manifests.items()):
        kit.compose(rsp, key, manifest)
    # What goes on the cluster waits for the ClusterAuth and the file system; once there,
    # it stays while either flaps.
    kit.hold(req, rsp, eks.WORKLOAD_KEYS)
    status: dict[str, Any] = {"cache": {"storageClassName": eks.STORAGE_CLASS}}
    if kubeconfig is not None:
        status["kubeconfigSecretRef"] = kubeconfig
    kit.set_status(rsp, status)
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
    _conditions(req, rsp, kubeconfig is not None)


def _cluster(xr: dict[str, Any]) -> common.CloudCluster:
    """Return the plain cluster the composite asks for (defaults filled by the model)."""
    spec = EKSCluster.model_validate(xr).spec  # a malformed spec stops here, with what is wrong
    return _clouds.read_cluster(xr, spec, SHAPE)


def _conditions(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, has_kubeconfig: bool
) -> None:
    if has_kubeconfig:
        kit.set_condition(rsp, "KubeconfigReady", True, "Available", "kubeconfig Secret written")
    elif kit.is_ready(kit.observed(req, eks.CLUSTER_KEY)):
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForClusterAuth", "waiting for the ClusterAuth"
        )
    else:
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForCluster", "waiting for the EKS cluster"
        )
    if kit.is_ready(kit.observed(req, eks.STORAGE_CLASS_KEY)):
        kit.set_condition(rsp, "CacheReady", True, "Available", f"StorageClass {eks.STORAGE_CLASS}")
    elif not has_kubeconfig:
        kit.set_condition(rsp, "CacheReady", False, "WaitingForKubeconfig", "no kubeconfig yet")
    elif not common.at_provider(kit.observed(req, eks.FILE_SYSTEM_KEY)).get("id"):
        kit.set_condition(rsp, "CacheReady", False, "WaitingForFileSystem", "waiting for EFS")
    else:
        kit.set_condition(
            rsp, "CacheReady", False, "Creating", f"creating StorageClass {eks.STORAGE_CLASS}"
        )
