"""The composite kinds Modelplane composes, by name, and the function name of each.

The command line chooses the functions it serves from these names alone: a serving
process that hands every call to worker processes never composes, so it never imports
the functions (:mod:`modelplane.registry`, which maps each kind to its function and
checks that it maps exactly these).
"""

KINDS = (
    "AKSCluster",
    "EKSCluster",
    "GKECluster",
    "InferenceClass",
    "InferenceCluster",
    "InferenceGateway",
    "ModelCache",
    "ModelDeployment",
    "ModelEndpoint",
    "ModelReplica",
    "ModelService",
    "NebiusCluster",
    "ServingStack",
    "VultrCluster",
)


def names() -> list[str]:
    """Return the function names this package serves, one per composite kind.

    Returns:
        Lower-case kind names, sorted, e.g. ``["inferenceclass", ...]``.
    """
    return sorted(kind.lower() for kind in KINDS)


def kind_for(name: str) -> str | None:
    """Return the composite kind a function name serves, or None if it serves none.

    Args:
        name: A function name as given on the command line, e.g. ``inferenceclass``.
    """
    wanted = name.lower().removeprefix("modelplane-function-")
    return next((kind for kind in KINDS if kind.lower() == wanted), None)
