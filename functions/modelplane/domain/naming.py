"""Names and label values of the resources a ModelDeployment composes: stable and valid.

A replica's name depends only on its deployment, cluster and index, so the same
placement always composes the same names and a replica keeps its name for life.

A label value derived from a name goes through :func:`label_value`, both where the
label is written and where it is selected on, so the two always agree.
"""

from __future__ import annotations

import hashlib
import re

# The name stays a valid DNS label (63 characters): 57 of the deployment, '-', 5 hex.
DEPLOYMENT_PREFIX_LENGTH = 57
HASH_LENGTH = 5

LABEL_VALUE_LIMIT = 63
"""Kubernetes' limit on a label value's length."""

# A label value: empty, or alphanumerics with '-', '_' and '.' between them.
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_NOT_IN_LABEL_VALUE = re.compile(r"[^-A-Za-z0-9_.]+")
_EDGES = "-_."


def label_value(name: str) -> str:
    """Return ``name`` as a valid label value, the same one every time.

    A name that already is one (any Kubernetes name of at most 63 characters) is kept.
    Any other (a name of 64 to 253 characters, say) is cut to its first 57 characters,
    anything a label value may not hold replaced by ``-`` and its ends trimmed to
    alphanumerics, then suffixed with ``-`` and the sha256 of the whole name, as many
    hex digits as make exactly 63 characters: distinct names keep distinct values.

    Args:
        name: A Kubernetes object's name (any text is accepted).

    Returns:
        A valid label value of at most 63 characters.
    """
    if len(name) <= LABEL_VALUE_LIMIT and _LABEL_VALUE.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()
    cut = _NOT_IN_LABEL_VALUE.sub("-", name[:DEPLOYMENT_PREFIX_LENGTH]).strip(_EDGES)
    if not cut:
        return digest[:LABEL_VALUE_LIMIT]
    return f"{cut}-{digest[: LABEL_VALUE_LIMIT - len(cut) - 1]}"


def replica_name(deployment: str, cluster: str, index: int) -> str:
    """Return the name of a deployment's replica ``index`` on ``cluster``.

    The deployment name cut to 57 characters (trailing ``-`` and ``.`` removed), ``-``,
    then the first 5 hex digits of the sha256 of ``<deployment>-<cluster>-<index>``.

    Args:
        deployment: The ModelDeployment's name.
        cluster: The InferenceCluster the replica runs on.
        index: The replica's index on that cluster.

    Returns:
        A valid Kubernetes name of at most 63 characters.
    """
    digest = hashlib.sha256(f"{deployment}-{cluster}-{index}".encode()).hexdigest()
    prefix = deployment[:DEPLOYMENT_PREFIX_LENGTH].rstrip("-.")
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
