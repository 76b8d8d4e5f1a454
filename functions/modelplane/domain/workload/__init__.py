"""A ModelReplica's serving workload on its workload cluster, for every topology.

``plan(replica, cluster)`` returns every provider-kubernetes Object the replica
composes; ``judge(plan, observed)`` says whether it is applied and whether it serves.
The modules, in the order a request meets them: ``routing`` (the HTTPRoute to the
replica's InferencePool, and llm-d's endpoint picker in front of it, configured for
Unified or PrefillDecode serving), ``engines`` (a Deployment or LeaderWorkerSet per
engine, its Service and claims), ``pods`` (what every pod gets), ``objects`` (the Object
wrapper), ``names`` (names and labels).
"""

from modelplane.domain.workload.names import cache_claim
from modelplane.domain.workload.plan import Composed, InvalidReplicaError, plan
from modelplane.domain.workload.spec import (
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    DeviceRequest,
    Engine,
    Member,
    Phase,
    ProviderConfigKind,
    Replica,
    Role,
    ServingMode,
    SpecError,
    WorkloadCluster,
)
from modelplane.domain.workload.verdict import NOT_CREATED, UNREACHABLE, Observed, Verdict, judge

__all__ = [
    "GATEWAY_NAME",
    "GATEWAY_NAMESPACE",
    "NOT_CREATED",
    "UNREACHABLE",
    "Composed",
    "DeviceRequest",
    "Engine",
    "InvalidReplicaError",
    "Member",
    "Observed",
    "Phase",
    "ProviderConfigKind",
    "Replica",
    "Role",
    "ServingMode",
    "SpecError",
    "Verdict",
    "WorkloadCluster",
    "cache_claim",
    "judge",
    "plan",
]
