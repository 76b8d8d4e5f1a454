"""Names of the resources a ModelDeployment composes: stable, opaque and valid.

A replica's name depends only on its deployment, cluster and index, so the same
placement always composes the same names and a replica keeps its name for life.
"""

from __future__ import annotations

import hashlib

# The name stays a valid DNS label (63 characters): 57 of the deployment, '-', 5 hex.
DEPLOYMENT_PREFIX_LENGTH = 57
HASH_LENGTH = 5


def replica_name(deployment: str, cluster: str, index: int) -> str:
    """Return the name of a deployment's replica ``index`` on ``cluster``.

    The deployment name cut to 57 characters (trailing ``-`` removed), ``-``, then
    the first 5 hex digits of the sha256 of ``<deployment>-<cluster>-<index>``.

    Args:
        deployment: The ModelDeployment's name.
        cluster: The InferenceCluster the replica runs on.
        index: The replica's index on that cluster.

    Returns:
        A valid Kubernetes name of at most 63 characters.
    """
    digest = hashlib.sha256(f"{deployment}-{cluster}-{index}".encode()).hexdigest()
    prefix = deployment[:DEPLOYMENT_PREFIX_LENGTH].rstrip("-")
    return f"{prefix}-{digest[:HASH_LENGTH]}"


def endpoint_name(replica: str) -> str:
    """Return the name of the ModelEndpoint composed for a replica: the replica's own.

    Replica and endpoint are different kinds, so sharing the name is unambiguous and
    ``kubectl get me <replica>`` finds a replica's endpoint.
    """
    return replica


def endpoint_url(gateway_address: str, namespace: str, replica: str) -> str:
    """Return a replica's OpenAI base URL behind its cluster's gateway.

    Args:
        gateway_address: The cluster's gateway address, a host (``http://`` is added;
            a bare IPv6 address is bracketed) or a URL with a scheme.
        namespace: The deployment's namespace.
        replica: The replica's name.
    """
    if "://" in gateway_address:
        base = gateway_address
    elif gateway_address.count(":") > 1 and not gateway_address.startswith("["):
        base = f"http://[{gateway_address}]"  # host:port has one colon; IPv6 has several
    else:
        base = f"http://{gateway_address}"
    return f"{base.rstrip('/')}{rewrite_path(namespace, replica)}v1"


def rewrite_path(namespace: str, replica: str) -> str:
    """Return the path prefix the workload gateway routes to a replica: ``/<ns>/<replica>/``."""
    return f"/{namespace}/{replica}/"
