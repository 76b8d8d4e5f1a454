"""The whole of a replica's workload: every Object it composes, in a stable order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from modelplane.domain.workload import engines, objects, routing
from modelplane.domain.workload.engines import Manifest
from modelplane.domain.workload.spec import (
    Engine,
    Phase,
    Replica,
    ServingMode,
    SpecError,
    WorkloadCluster,
)


class InvalidReplicaError(SpecError):
    """A replica whose engines don't fit together (names, phases)."""


@dataclass(frozen=True)
class Composed:
    """One composed Object and what it wraps.

    Attributes:
        key: The composed resource's stable name within the replica.
        resource: The Object's manifest.
        kind: The wrapped object's kind.
        name: The wrapped object's name on the cluster.
        workload: Its availability decides whether the replica serves.
    """

    key: str
    resource: Mapping[str, Any]
    kind: str
    name: str
    workload: bool = False


def plan(replica: Replica, cluster: WorkloadCluster) -> tuple[Composed, ...]:
    """Return every Object the replica composes on ``cluster``, sorted by key.

    Raises:
        SpecError: The replica's engines can't run as written (see the message).
    """
    replica = _checked(replica)
    found: list[tuple[Manifest, bool]] = [(objects.namespace(replica), True)]
    for engine in replica.engines:
        found += [(m, False) for m in engines.manifests(replica, engine)]
    found += [(m, False) for m in routing.endpoint_picker(replica)]
    found.append((routing.route(replica, cluster), False))
    composed = [
        Composed(
            key=manifest.key,
            resource=objects.wrap(replica, cluster, manifest, keep=keep),
            kind=str(manifest.manifest["kind"]),
            name=str(manifest.manifest["metadata"]["name"]),
            workload=manifest.workload,
        )
        for manifest, keep in found
    ]
    return tuple(sorted(composed, key=lambda c: c.key))


def _checked(replica: Replica) -> Replica:
    if not replica.engines:
        msg = "the replica has no engines"
        raise InvalidReplicaError(msg)
    names = [engine.name for engine in replica.engines]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        msg = f"engine names repeat: {', '.join(repeated)}"
        raise InvalidReplicaError(msg)
    if replica.serving_mode is ServingMode.UNIFIED:
        # A phase means nothing without PrefillDecode routing in front of it.
        unphased = tuple(replace(e, phase=None) for e in replica.engines)
        return replace(replica, engines=unphased)
    _check_pair(replica.engines)
    return replica


def _check_pair(found: Sequence[Engine]) -> None:
    phases = sorted(str(e.phase) for e in found)
    if phases != sorted([Phase.DECODE.value, Phase.PREFILL.value]):
        msg = (
            "serving mode PrefillDecode takes exactly two engines, one of phase Prefill "
            f"and one of phase Decode (got {', '.join(phases)})"
        )
        raise InvalidReplicaError(msg)
