"""NebiusCluster: a Nebius mk8s cluster with a system node group and GPU node groups.

Steps, each waiting for what it needs:

1. The Nebius provider config the spec's ``credentials`` name is read for its
   credentials Secret: the identity every consumer pairs with the kubeconfig.
2. The network, the mk8s cluster, the shared filesystem and the nodes' cloud-init, GPU
   clusters for InfiniBand fabrics, and the node groups
   (:mod:`modelplane.domain.clouds.nebius`).
3. Once the cluster is Ready and reports its endpoint and CA: the kubeconfig Secret;
   ``status.kubeconfigSecretRef`` once that Secret exists.
4. Once the identity is known too: ``status.identitySecretRef``, a provider-kubernetes
   ProviderConfig pairing the two, and the ``modelplane-rwx-fs`` StorageClass on the
   cluster. ``status.cache.storageClassName`` names it from the start: it is fixed.
"""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose import _clouds
from modelplane.domain.clouds import common, nebius
from modelplane.models.nebiuscluster import NebiusCluster

SHAPE = _clouds.Shape(
    machine="platform",
    system_machine=nebius.SYSTEM_PLATFORM,
    version=nebius.DEFAULT_VERSION,
    location=None,
    preset="preset",
    system_preset=nebius.SYSTEM_PRESET,
)
CACHE_GIB = 2048


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the mk8s cluster's managed resources and report its kubeconfig and identity."""
    xr = kit.composite(req)
    cluster = _clouds.read(rsp, xr, NebiusCluster, SHAPE)
    if cluster is None:
        return kit.Released.NOTHING
    if not _clouds.credentials_read(req, rsp, cluster, nebius.NEBIUS):
        kit.asking(req, rsp)  # Crossplane calls again with the provider config
        return kit.Released.NOTHING
    found = kit.required(req, _clouds.CREDENTIALS)
    identity = nebius.identity(found[0] if found else None, cluster.namespace)
    cache_gib = _count(kit.field(xr, "spec", "cache", "sizeGiB"), CACHE_GIB)
    manifests = nebius.resources(cluster, cache_gib)
    observed = kit.observed(req, common.CLUSTER_KEY)
    server, ca = nebius.endpoint(observed)
    if kit.is_ready(observed) and server:
        manifests.update(nebius.access_resources(cluster, server, ca, identity))
    # What reaches the cluster waits for its endpoint and the identity; once made, it stays
    # while either flaps.
    _clouds.compose_all(req, rsp, manifests, nebius.ACCESS_KEYS)
    status: dict[str, Any] = {"cache": {"storageClassName": nebius.STORAGE_CLASS}}
    if kit.observed(req, nebius.KUBECONFIG_SECRET_KEY) is not None:
        secret = common.kubeconfig_secret(cluster.name)
        status["kubeconfigSecretRef"] = common.kubeconfig_ref(
            secret, cluster.namespace, common.KUBECONFIG_KEY
        )
    if identity is not None:
        status["identitySecretRef"] = {k: identity[k] for k in ("name", "namespace", "key", "type")}
    kit.set_status(rsp, status)
    kit.keep_status(req, rsp, "kubeconfigSecretRef", "identitySecretRef")
    _conditions(req, rsp, cluster, identity is not None, bool(server))
    if (
        not kit.text(xr, "status", "kubeconfigSecretRef", "name")
        and "kubeconfigSecretRef" not in status
    ):
        # Its resources may all be ready; nobody can reach the cluster yet.
        kit.set_ready(rsp, False)
    return kit.left_out(req, rsp, _clouds.RELEASED)


def _count(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


def _conditions(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    cluster: common.CloudCluster,
    has_identity: bool,
    has_endpoint: bool,
) -> None:
    if kit.observed(req, nebius.KUBECONFIG_SECRET_KEY) is not None:
        kit.set_condition(rsp, "KubeconfigReady", True, "Available", "kubeconfig Secret written")
    elif kit.is_ready(kit.observed(req, common.CLUSTER_KEY)) and not has_endpoint:
        kit.set_condition(
            rsp,
            "KubeconfigReady",
            False,
            "WaitingForEndpoint",
            "the mk8s cluster reports no public endpoint and CA yet",
        )
    else:
        kit.set_condition(
            rsp, "KubeconfigReady", False, "WaitingForCluster", "waiting for the mk8s cluster"
        )
    config = cluster.provider_config
    if has_identity:
        kit.set_condition(rsp, "IdentityReady", True, "Available", f"credentials of {config.name}")
    else:
        kit.waiting(
            rsp,
            "IdentityReady",
            "WaitingForCredentials",
            f"Nebius {config.kind} {config.name} is missing or reads no credentials Secret",
        )
    if kit.is_ready(kit.observed(req, common.STORAGE_CLASS_KEY)):
        message = f"StorageClass {nebius.STORAGE_CLASS}"
        kit.set_condition(rsp, "CacheReady", True, "Available", message)
    else:
        message = f"StorageClass {nebius.STORAGE_CLASS} waits for the kubeconfig and identity"
        kit.set_condition(rsp, "CacheReady", False, "Creating", message)
