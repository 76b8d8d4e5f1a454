"""GKECluster: a GKE cluster with a system node pool and GPU node pools, for an InferenceCluster.

Steps, each waiting for what it needs:

1. The GCP provider config the spec's ``credentials`` name is read for its ``projectID``
   (else the node service account's project, once GCP reports it): the project turns on
   Workload Identity.
2. The network, node service account and its key, the Filestore API, the GKE cluster
   (which writes the kubeconfig Secret) and its node pools
   (:mod:`modelplane.domain.clouds.gke`).
3. Once GCP reports the service account's email and project: its
   ``roles/container.admin`` grant.
4. Once the cluster is Ready: ``status.kubeconfigSecretRef``; once the key is Ready:
   ``status.identitySecretRef``; once both: a provider-kubernetes ProviderConfig pairing
   them, and the ``modelplane-rwx-filestore`` StorageClass on the cluster.
   ``status.cache.storageClassName`` names it from the start: it is fixed.
"""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose import _clouds
from modelplane.domain.clouds import common, gke
from modelplane.models.gkecluster import GKECluster

SHAPE = _clouds.Shape(
    machine="machineType", system_machine="e2-standard-4", version=gke.DEFAULT_VERSION
)
GCP = "gcp.m.upbound.io/v1beta1"


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the GKE cluster's managed resources and report its kubeconfig and identity."""
    cluster = _clouds.read(rsp, kit.composite(req), GKECluster, SHAPE)
    if cluster is None:
        return kit.Released.NOTHING
    if not _clouds.credentials_read(req, rsp, cluster, GCP):
        kit.asking(req, rsp)  # Crossplane calls again with the provider config
        return kit.Released.NOTHING
    account = common.at_provider(kit.observed(req, gke.ACCOUNT_KEY))
    project = _project(req) or kit.text(account, "project") or None
    manifests = gke.resources(cluster, project)
    if account.get("email") and account.get("project"):
        manifests.update(gke.iam_member(cluster, account["email"], account["project"]))
    status: dict[str, Any] = {"cache": {"storageClassName": gke.STORAGE_CLASS}}
    cluster_ready = kit.is_ready(kit.observed(req, common.CLUSTER_KEY))
    key_ready = kit.is_ready(kit.observed(req, gke.ACCOUNT_KEY_KEY))
    if cluster_ready:
        secret = common.kubeconfig_secret(cluster.name)
        status["kubeconfigSecretRef"] = common.kubeconfig_ref(secret, cluster.namespace)
    if key_ready:
        identity = gke.identity_ref(cluster)
        status["identitySecretRef"] = {k: identity[k] for k in ("name", "namespace", "key", "type")}
    if cluster_ready and key_ready:
        manifests.update(gke.workload_resources(cluster, status["kubeconfigSecretRef"]))
    # The grant waits for the account, what goes on the cluster for its kubeconfig and key;
    # once made, each stays while what it waited for flaps.
    _clouds.compose_all(req, rsp, manifests, [*gke.IAM_KEYS, *gke.WORKLOAD_KEYS])
    kit.set_status(rsp, status)
    kit.keep_status(req, rsp, "kubeconfigSecretRef", "identitySecretRef")
    _conditions(req, rsp, cluster_ready, key_ready)
    return kit.left_out(req, rsp, _clouds.RELEASED)


def _project(req: fnv1.RunFunctionRequest) -> str:
    """Return the project the GCP provider config sets, or ``""``."""
    found = kit.required(req, _clouds.CREDENTIALS)
    return kit.text(found[0], "spec", "projectID") if found else ""


def _conditions(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    cluster_ready: bool,
    key_ready: bool,
) -> None:
    _clouds.kubeconfig_condition(rsp, cluster_ready, "the GKE cluster")
    if key_ready:
        kit.set_condition(rsp, "IdentityReady", True, "Available", "service account key written")
    else:
        kit.set_condition(
            rsp, "IdentityReady", False, "WaitingForKey", "waiting for the service account key"
        )
    if kit.is_ready(kit.observed(req, common.STORAGE_CLASS_KEY)):
        kit.set_condition(rsp, "CacheReady", True, "Available", f"StorageClass {gke.STORAGE_CLASS}")
    elif not (cluster_ready and key_ready):
        kit.set_condition(
            rsp, "CacheReady", False, "WaitingForKubeconfig", "no kubeconfig and key yet"
        )
    else:
        kit.set_condition(
            rsp, "CacheReady", False, "Creating", f"creating StorageClass {gke.STORAGE_CLASS}"
        )
