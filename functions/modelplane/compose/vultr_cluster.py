"""VultrCluster: a VKE cluster with an inline system pool and GPU node pools.

Composes the managed resources :mod:`modelplane.domain.clouds.vultr` builds. GPU pools
wait for the cluster's id; the kubeconfig Secret is reported once the cluster is Ready.
"""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _kit as kit
from modelplane.domain.clouds import vultr
from modelplane.models.vultrcluster import VultrCluster


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose the VKE cluster and its GPU pools and report its kubeconfig Secret."""
    xr = kit.composite(req)
    VultrCluster.model_validate(xr)  # a malformed spec stops here, with what is wrong
    identity = kit.meta(xr)
    name, namespace = identity.name, identity.namespace
    observed = kit.observed(req, vultr.CLUSTER_KEY)
    cluster_id = kit.text(observed, "status", "atProvider", "id") or None
    for key, manifest in sorted(vultr.resources(name, namespace, xr["spec"], cluster_id).items()):
        kit.compose(rsp, key, manifest)
    # GPU pools wait for the cluster's id; a pool still in the spec stays while it flaps.
    kit.hold(req, rsp, vultr.pool_keys(xr["spec"]))
    kit.set_status(rsp, vultr.status(name, namespace, kit.is_ready(observed)))
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
