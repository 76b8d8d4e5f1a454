"""Planning: a ModelDeployment's fleet read and scheduled, the one public door.

The ModelDeployment adapter, ``modelplane plan``, ``modelplane simulate`` and the
benchmarks all import from here, never from the modules below:

- the fleet reader (:mod:`.fleet`, with :mod:`.clusters`, :mod:`.replicas`,
  :mod:`.cache` on :mod:`.fields` and the lazy schemas of :mod:`.lazy`): the
  InferenceClusters, ModelReplicas and ModelCache as the scheduler sees them;
- the wire decoding (:mod:`.wire`): a request whose fleet stays encoded until read;
- what is remembered across calls (:mod:`.memo`): one owner, :data:`MEMO`, one reset,
  :func:`forget`;
- :func:`plan`: read and schedule, with the ``ReplicasScheduled`` verdict
  (:mod:`.scheduled`);
- the ledger an InferenceCluster publishes and a placing deployment reads in place of
  the replicas on it (:mod:`.tally`);
- the rolling update (:mod:`.rolling`) and the ModelReplicas a placement asks for,
  pure (:func:`replica_manifests`).
"""

from modelplane.planning import rolling
from modelplane.planning.cache import CacheState, read_cache
from modelplane.planning.clusters import read_cluster
from modelplane.planning.fields import (
    Item,
    Skipped,
    UnreadableError,
    as_item,
    as_struct,
    decoded,
    is_ready,
    object_key,
)
from modelplane.planning.fleet import WARNING_NAMES, FleetState, read_fleet, warnings
from modelplane.planning.identities import request_identity
from modelplane.planning.manifests import (
    API_VERSION,
    ComposedReplica,
    ReplicaManifest,
    managed_labels,
    replica_manifests,
    replica_spec,
    with_labels,
)
from modelplane.planning.memo import MEMO, Memos
from modelplane.planning.planner import (
    Planned,
    cache_name,
    forget,
    plan,
    plan_read,
    read_deployment,
)
from modelplane.planning.replicas import read_replica
from modelplane.planning.rolling import CONDITION as ROLLOUT_CONDITION
from modelplane.planning.rolling import (
    Rolled,
    Routes,
    read_strategy,
    roll,
    surge_for,
    template_hash,
)
from modelplane.planning.scheduled import MESSAGE_LIMIT, cap, replicas_word, scheduled_condition
from modelplane.planning.steady import distinct, hosting, is_steady, narrowed
from modelplane.planning.tally import (
    LedgerView,
    Tallied,
    TallyError,
    ledger_lines,
    ledger_view,
    published_ledger,
    tallied,
)
from modelplane.planning.wire import (
    CACHE,
    CLUSTERS,
    OWN,
    REPLICAS,
    EncodedItems,
    cluster_requirement,
    decode_request,
    deterministic_bytes,
    encoded_items,
    fleet_items,
    on_cluster_of,
    on_cluster_requirement,
)

__all__ = [
    "API_VERSION",
    "CACHE",
    "CLUSTERS",
    "MEMO",
    "MESSAGE_LIMIT",
    "OWN",
    "REPLICAS",
    "ROLLOUT_CONDITION",
    "WARNING_NAMES",
    "CacheState",
    "ComposedReplica",
    "EncodedItems",
    "FleetState",
    "Item",
    "LedgerView",
    "Memos",
    "Planned",
    "ReplicaManifest",
    "Rolled",
    "Routes",
    "Skipped",
    "Tallied",
    "TallyError",
    "UnreadableError",
    "as_item",
    "as_struct",
    "cache_name",
    "cap",
    "cluster_requirement",
    "decode_request",
    "decoded",
    "deterministic_bytes",
    "distinct",
    "encoded_items",
    "fleet_items",
    "forget",
    "hosting",
    "is_ready",
    "is_steady",
    "ledger_lines",
    "ledger_view",
    "managed_labels",
    "narrowed",
    "object_key",
    "on_cluster_of",
    "on_cluster_requirement",
    "plan",
    "plan_read",
    "published_ledger",
    "read_cache",
    "read_cluster",
    "read_deployment",
    "read_fleet",
    "read_replica",
    "read_strategy",
    "replica_manifests",
    "replica_spec",
    "replicas_word",
    "request_identity",
    "roll",
    "rolling",
    "scheduled_condition",
    "surge_for",
    "tallied",
    "template_hash",
    "warnings",
    "with_labels",
]
