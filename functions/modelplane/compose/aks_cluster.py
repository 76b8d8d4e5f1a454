"""AKSCluster: an AKS cluster with a system pool and GPU pools, for an InferenceCluster.

Composes the managed resources :mod:`modelplane.domain.clouds.aks` builds and reports the
kubeconfig Secret once the cluster is Ready, plus the RWX StorageClass the ServingStack
creates on AKS.
"""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _kit as kit
from modelplane.domain.clouds import aks
from modelplane.models.akscluster import AKSCluster


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose the AKS cluster's managed resources and report its kubeconfig Secret."""
    xr = kit.composite(req)
    AKSCluster.model_validate(xr)  # a malformed spec stops here, with what is wrong
    identity = kit.meta(xr)
    name, namespace = identity.name, identity.namespace
    for key, manifest in sorted(aks.resources(name, namespace, xr["spec"]).items()):
        kit.compose(rsp, key, manifest)
    ready = kit.is_ready(kit.observed(req, aks.CLUSTER_KEY))
    kit.set_status(rsp, aks.status(name, namespace, ready))
    kit.keep_status(req, rsp, "kubeconfigSecretRef")
