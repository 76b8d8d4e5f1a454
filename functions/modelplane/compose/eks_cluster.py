"""EKSCluster: an EKS cluster with a system node group and GPU node groups, for an InferenceCluster.

Steps, each waiting for what it needs:

1. The network, IAM roles, EKS cluster, add-ons, node groups, EFS and the ClusterAuth
   that writes the kubeconfig Secret (:mod:`modelplane.domain.clouds.eks`); where a pool
   uses EFA, the EFA security group, and that pool's launch template and node group once
   EKS reports the cluster security group and AWS the EFA group's id (``EFAReady``).
2. Once the ClusterAuth is Ready: ``status.kubeconfigSecretRef``, and a
   provider-kubernetes ProviderConfig for the cluster (and a provider-helm one plus the
   cluster autoscaler's Release, where a pool autoscales).
3. Once the EFS file system has an id too: the ``modelplane-rwx-efs`` StorageClass on
   the cluster. ``status.cache.storageClassName`` names it from the start: it is fixed.
"""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose import _clouds
from modelplane.domain.clouds import common, eks
from modelplane.models.ekscluster import EKSCluster

SHAPE = _clouds.Shape(
    machine="instanceType", system_machine="m6i.xlarge", version=eks.DEFAULT_VERSION
)


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the EKS cluster's managed resources and report its kubeconfig Secret."""
    cluster = _clouds.read(rsp, kit.composite(req), EKSCluster, SHAPE)
    if cluster is None:
        return kit.Released.NOTHING
    efa = _efa_groups(req, cluster)
    try:
        manifests = eks.resources(cluster, efa)
    except common.ClusterError as exc:
        _clouds.cannot(rsp, "EKSCluster", cluster.name, exc)
        return kit.Released.NOTHING
    auth = kit.observed(req, eks.AUTH_KEY)
    kubeconfig = None
    if kit.is_ready(auth):
        secret = common.kubeconfig_secret(cluster.name)
        kubeconfig = common.kubeconfig_ref(secret, cluster.namespace)
        fs_id = common.at_provider(kit.observed(req, eks.FILE_SYSTEM_KEY)).get("id")
        manifests.update(eks.workload_resources(cluster, kubeconfig, fs_id))
    # An EFA pool's node group, once made, stays while the groups' ids flap.
    waiting = eks.waiting_efa_pools(cluster, efa)
    kit.hold(req, rsp, [k for p in waiting for k in (f"nodegroup-{p}", f"launch-template-{p}")])
    # What goes on the cluster waits for the ClusterAuth and the file system; once there,
    # it stays while either flaps.
    _clouds.compose_all(req, rsp, manifests, eks.WORKLOAD_KEYS)
    status: dict[str, Any] = {"cache": {"storageClassName": eks.STORAGE_CLASS}}
    if kubeconfig is not None:
        status["kubeconfigSecretRef"] = kubeconfig
    kit.set_status(rsp, status)
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
    _conditions(req, rsp, kubeconfig is not None)
    _efa_condition(rsp, cluster, efa)
    return kit.left_out(req, rsp, _clouds.RELEASED)


def _efa_groups(req: fnv1.RunFunctionRequest, cluster: common.CloudCluster) -> eks.EfaGroups:
    """Return the security groups EFA pools join, as far as AWS has reported them."""
    plane = common.at_provider(kit.observed(req, common.CLUSTER_KEY)).get("vpcConfig")
    cluster_group = plane.get("clusterSecurityGroupId") if isinstance(plane, dict) else None
    efa_group = common.at_provider(kit.observed(req, eks.EFA_SECURITY_GROUP_KEY)).get("id")
    running_without = frozenset(
        pool.name
        for pool in eks.efa_pools(cluster)
        if (group := kit.observed(req, f"nodegroup-{pool.name}")) is not None
        and not kit.field(group, "spec", "forProvider", "launchTemplate")
    )
    return eks.EfaGroups(
        str(cluster_group or ""), str(efa_group or ""), running_without=running_without
    )


def _efa_condition(
    rsp: fnv1.RunFunctionResponse, cluster: common.CloudCluster, efa: eks.EfaGroups
) -> None:
    pools = eks.efa_pools(cluster)
    if not pools:
        return
    waiting = eks.waiting_efa_pools(cluster, efa)
    if waiting:
        message = (
            f"the node groups of EFA pools {', '.join(waiting)} wait for the cluster security "
            "group and the EFA security group's ids"
        )
        kit.set_condition(rsp, "EFAReady", False, "WaitingForSecurityGroups", message)
        kit.set_ready(rsp, False)  # a pool the user asked for does not exist yet
        return
    kept = sorted(efa.running_without)
    if kept:
        message = (
            f"EFA pools {', '.join(kept)} already run without the EFA security group; EKS "
            "cannot add it to an existing node group: recreate the pool to join it"
        )
        kit.set_condition(rsp, "EFAReady", False, "NodeGroupPredatesSecurityGroup", message)
        return
    names = ", ".join(p.name for p in pools)
    kit.set_condition(rsp, "EFAReady", True, "Available", f"EFA pools {names} share its group")


def _conditions(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, has_kubeconfig: bool
) -> None:
    if has_kubeconfig:
        kit.set_condition(rsp, "KubeconfigReady", True, "Available", "kubeconfig Secret written")
    elif kit.is_ready(kit.observed(req, common.CLUSTER_KEY)):
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForClusterAuth", "waiting for the ClusterAuth"
        )
    else:
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForCluster", "waiting for the EKS cluster"
        )
    if kit.is_ready(kit.observed(req, common.STORAGE_CLASS_KEY)):
        kit.set_condition(rsp, "CacheReady", True, "Available", f"StorageClass {eks.STORAGE_CLASS}")
    elif not has_kubeconfig:
        kit.set_condition(rsp, "CacheReady", False, "WaitingForKubeconfig", "no kubeconfig yet")
    elif not common.at_provider(kit.observed(req, eks.FILE_SYSTEM_KEY)).get("id"):
        kit.set_condition(rsp, "CacheReady", False, "WaitingForFileSystem", "waiting for EFS")
    else:
        kit.set_condition(
            rsp, "CacheReady", False, "Creating", f"creating StorageClass {eks.STORAGE_CLASS}"
        )
