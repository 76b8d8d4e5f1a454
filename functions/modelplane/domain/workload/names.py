"""Names and labels of everything a replica puts on its cluster.

Every name is a function of the replica and engine names only, so it is stable across
reconciles and upgrades, and short enough for what Kubernetes derives from it.
"""

from __future__ import annotations

import hashlib

from modelplane.domain import api
from modelplane.domain.workload.spec import Engine, Replica, Role

MAX_NAME = 63
"""A DNS label: the limit for Services, label values and most names."""

MAX_WORKLOAD_NAME = 40
"""A LeaderWorkerSet's name recurs in its StatefulSets, pod hostnames and
``controller-revision-hash`` labels (``<name>-<group>-<hash>``), which must stay
within 63 characters; 40 leaves room for the suffixes."""

LABEL_DEPLOYMENT = api.DEPLOYMENT_LABEL
LABEL_REPLICA = "modelplane.ai/replica"
LABEL_ENGINE = "modelplane.ai/engine"
LABEL_SERVING = "modelplane.ai/serving"
"""On the pods that serve the API (Standalone and Leader pods): what Services,
InferencePools and PodMonitors select."""
LABEL_POOL = api.POOL_LABEL
LABEL_ROLE = "llm-d.ai/role"
"""llm-d's endpoint picker tells prefill pods from decode pods by this label."""
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "modelplane"
SERVING = "true"


def fit(name: str, limit: int = MAX_NAME) -> str:
    """Return ``name`` if it fits ``limit``, else a cut of it with a stable hash suffix.

    The cut keeps the readable start and drops trailing dashes; the suffix is the first
    five hex digits of the sha256 of the whole name, so two long names that share a
    prefix still differ.

    Args:
        name: A valid Kubernetes name of any length.
        limit: The longest name allowed.
    """
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:5]
    return f"{name[: limit - 6].rstrip('-.')}-{digest}"


def service_name(name: str) -> str:
    """Return ``name`` as a Service name: a DNS-1035 label, which must start with a letter."""
    return fit(name if name[:1].isalpha() else f"s-{name}")


def workload(replica: Replica, engine: Engine) -> str:
    """Name the engine's Deployment or LeaderWorkerSet (and its Service)."""
    return fit(f"{replica.name}-{engine.name}", MAX_WORKLOAD_NAME)


def claim_template(replica: Replica, engine: Engine, role: Role) -> str:
    """Name the ResourceClaimTemplate of one member of an engine."""
    return fit(f"{workload(replica, engine)}-{role.value.lower()}")


def endpoint_picker(replica: Replica) -> str:
    """Name the endpoint picker's objects (Deployment, Service, RBAC, config)."""
    return service_name(fit(f"{replica.name}-epp"))


def cache_claim(cache: str) -> str:
    """Name a ModelCache's PVC on every cluster it stages to.

    The ModelCache composes its PVC under this name, in the namespace named like the
    cache's own, and a replica that references the cache mounts it by the same name.
    """
    return fit(f"{cache}-model-cache")


def base_labels(replica: Replica) -> dict[str, str]:
    """Return the labels every object of the replica carries."""
    labels = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_REPLICA: fit(replica.name)}
    if replica.deployment:
        labels[LABEL_DEPLOYMENT] = fit(replica.deployment)
    return labels


def engine_selector(replica: Replica, engine: Engine) -> dict[str, str]:
    """Return the labels that select an engine's pods (immutable once a workload exists)."""
    return {LABEL_REPLICA: fit(replica.name), LABEL_ENGINE: fit(engine.name)}
