"""The one place that maps a composite resource's kind to the function that composes it.

Adding a function is adding one module under ``modelplane.compose`` and one line here.

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


def names() -> list[str]:
    """Return the function names this package serves, one per composite kind.

    Returns:
        Lower-case kind names, sorted, e.g. ``["inferenceclass", ...]``.
    """
    return sorted(kind.lower() for kind in COMPOSERS)


def kind_for(name: str) -> str | None:
    """Return the composite kind a function name serves, or None if it serves none.

    Args:
        name: A function name as given on the command line, e.g. ``inferenceclass``.
    """
    wanted = name.lower().removeprefix("modelplane-function-")
    return next((kind for kind in COMPOSERS if kind.lower() == wanted), None)
