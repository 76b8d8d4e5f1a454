"""The one place that maps a composite resource's kind to the function that composes it.

Adding a function is adding one module under ``modelplane.compose``, one line here and
its kind in :data:`modelplane.kinds.KINDS` (the command line's list; checked here).

The runtime decodes every request with :func:`decode_request` (planning's): a
ModelDeployment's fleet stays encoded until its reader reads it; any other request
decodes as usual; and names a request for the runtime's memo of responses with
:func:`request_identity` (planning's). So the runtime needs the registry alone, never
planning's modules.
"""

from modelplane.compose import (
    aks_cluster,
    eks_cluster,
    gke_cluster,
    inference_class,
    inference_cluster,
    inference_gateway,
    model_cache,
    model_deployment,
    model_endpoint,
    model_replica,
    model_service,
    nebius_cluster,
    serving_stack,
    vultr_cluster,
)
from modelplane.kinds import KINDS, kind_for, names
from modelplane.kit import Compose
from modelplane.planning import decode_request, request_identity

__all__ = [
    "COMPOSERS",
    "Compose",
    "decode_request",
    "kind_for",
    "names",
    "request_identity",
]

COMPOSERS: dict[str, Compose] = {
    "AKSCluster": aks_cluster.compose,
    "EKSCluster": eks_cluster.compose,
    "GKECluster": gke_cluster.compose,
    "InferenceClass": inference_class.compose,
    "InferenceCluster": inference_cluster.compose,
    "InferenceGateway": inference_gateway.compose,
    "ModelCache": model_cache.compose,
    "ModelDeployment": model_deployment.compose,
    "ModelEndpoint": model_endpoint.compose,
    "ModelReplica": model_replica.compose,
    "ModelService": model_service.compose,
    "NebiusCluster": nebius_cluster.compose,
    "ServingStack": serving_stack.compose,
    "VultrCluster": vultr_cluster.compose,
}

if set(COMPOSERS) != set(KINDS):  # one kind added in one place and not the other
    _differ = sorted(set(COMPOSERS) ^ set(KINDS))
    _msg = f"modelplane.kinds.KINDS and the registry differ on {', '.join(_differ)}"
    raise ImportError(_msg)
