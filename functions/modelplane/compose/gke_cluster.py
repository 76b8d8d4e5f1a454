"""GKECluster: a GKE cluster with a system node pool and GPU node pools, for an InferenceCluster.

Steps, each waiting for what it needs:

1. The network, node service account and its key, the GKE cluster (which writes the
   kubeconfig Secret) and its node pools (:mod:`modelplane.domain.clouds.gke`).
2. Once GCP reports the service account's email and project: its
   ``roles/container.admin`` grant.
3. Once the cluster is Ready: ``status.kubeconfigSecretRef``; once the key is Ready:
   ``status.identitySecretRef``. ``status.cache.storageClassName`` names GKE's
   Filestore Enterprise class from the start: the cluster's add-on provides it.
"""

from __future__ import annotations

from typing import Any

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _clouds
from modelplane.compose import _kit as kit
from modelplane.domain.clouds import common, gke
from modelplane.models.gkecluster import GKECluster


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose the GKE cluster's managed resources and report its kubeconfig and identity."""
    xr = kit.composite(req)
    name = kit.meta(xr).name
    try:
        cluster = _cluster(xr)
    except common.ClusterError as exc:
        response.fatal(rsp, f"cannot compose GKECluster {name}: {exc}")
        return
    manifests = gke.resources(cluster)
    account = common.at_provider(kit.observed(req, gke.ACCOUNT_KEY))
    if account.get("email") and account.get("project"):
        manifests.update(gke.iam_member(cluster, account["email"], account["project"]))
    for key, manifest in sorted(manifests.items()):
        kit.compose(rsp, key, manifest)
    kit.hold(req, rsp, gke.IAM_KEYS)  # the grant waits for the account; once made, it stays
    status: dict[str, Any] = {"cache": {"storageClassName": gke.STORAGE_CLASS}}
    cluster_ready = kit.is_ready(kit.observed(req, gke.CLUSTER_KEY))
    key_ready = kit.is_ready(kit.observed(req, gke.ACCOUNT_KEY_KEY))
    if cluster_ready:
        secret = gke.kubeconfig_secret(cluster)
        status["kubeconfigSecretRef"] = common.kubeconfig_ref(secret, cluster.namespace)
    if key_ready:
        secret = gke.identity_secret(cluster)
        identity = common.kubeconfig_ref(secret, cluster.namespace, gke.IDENTITY_KEY)
        status["identitySecretRef"] = {**identity, "type": "GoogleApplicationCredentials"}
    kit.set_status(rsp, status)
    kit.keep_status(req, rsp, "kubeconfigSecretRef", "identitySecretRef")
    _conditions(rsp, cluster_ready, key_ready)


def _cluster(xr: dict[str, Any]) -> common.CloudCluster:
    """Return the plain cluster the composite asks for (defaults filled by the model)."""
    spec = GKECluster.model_validate(xr).spec  # a malformed spec stops here, with what is wrong
    return _clouds.read_cluster(
        xr, spec, shape="machineType", version=gke.DEFAULT_VERSION, system_shape="e2-standard-4"
    )


def _conditions(rsp: fnv1.RunFunctionResponse, cluster_ready: bool, key_ready: bool) -> None:
    if cluster_ready:
        kit.set_condition(rsp, "KubeconfigReady", True, "Available", "kubeconfig Secret written")
    else:
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForCluster", "waiting for the GKE cluster"
        )
    if key_ready:
        kit.set_condition(rsp, "IdentityReady", True, "Available", "service account key written")
    else:
        kit.set_condition(
            rsp, "IdentityReady", False, "WaitingForKey", "waiting for the service account key"
        )
