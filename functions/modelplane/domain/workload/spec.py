"""What a ModelReplica asks for, and where it lands: the inputs of the workload plan.

A replica is one complete serving instance on one cluster. Its engines mirror the
deployment's, except that each member names the node pool the scheduler pinned it to
and the DRA device requests it matched, in place of a ``nodeSelector``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

GATEWAY_NAME = "modelplane"
"""The Gateway the serving stack installs on every workload cluster, unless its
InferenceCluster's ``status.gateway`` names another."""
GATEWAY_NAMESPACE = "modelplane-system"
"""That Gateway's namespace; its listener must admit routes from every namespace."""


class SpecError(ValueError):
    """A replica that can't run as written; the message says why."""


class Role(StrEnum):
    """A member's part in its engine: one pod on its own, or a gang's leader or workers."""

    STANDALONE = "Standalone"
    LEADER = "Leader"
    WORKER = "Worker"


class Phase(StrEnum):
    """Which half of a disaggregated (PrefillDecode) pair an engine serves."""

    PREFILL = "Prefill"
    DECODE = "Decode"


class ServingMode(StrEnum):
    """Whether prefill and decode run together or as a routed pair of engines."""

    UNIFIED = "Unified"
    PREFILL_DECODE = "PrefillDecode"


class ProviderConfigKind(StrEnum):
    """The provider-kubernetes config kinds an Object can name."""

    CLUSTER = "ClusterProviderConfig"
    NAMESPACED = "ProviderConfig"


@dataclass(frozen=True)
class DeviceRequest:
    """One DRA device request: ``count`` devices of a class, each matching every selector."""

    name: str
    device_class_name: str
    count: int = 1
    selectors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Member:
    """One pod shape of an engine.

    Attributes:
        role: Standalone, Leader or Worker.
        template: The member's pod template (``metadata`` and ``spec``), as plain JSON.
        node_pool: The pool the scheduler pinned the member to; None rides the engine's.
        device_requests: The DRA devices each of its pods claims.
        worker_nodes: For a Worker, how many worker pods (one per node) the gang has.
    """

    role: Role
    template: Mapping[str, Any] = field(default_factory=dict)
    node_pool: str | None = None
    device_requests: tuple[DeviceRequest, ...] = ()
    worker_nodes: int = 0


@dataclass(frozen=True)
class Engine:
    """One inference engine: a Standalone pod or a Leader/Worker gang, ``copies`` times."""

    name: str
    members: tuple[Member, ...]
    copies: int = 1
    phase: Phase | None = None


@dataclass(frozen=True)
class Replica:
    """The replica as the workload plan needs it.

    Attributes:
        name: The ModelReplica's name.
        namespace: Its namespace; the engines run in a namespace of the same name.
        engines: Its engines, in spec order.
        serving_mode: Unified, or PrefillDecode for a routed prefill/decode pair.
        deployment: The ``modelplane.ai/deployment`` label it carries, if any.
        cache_claim: The name of its ModelCache's PVC on the cluster, if it has a cache.
    """

    name: str
    namespace: str
    engines: tuple[Engine, ...]
    serving_mode: ServingMode = ServingMode.UNIFIED
    deployment: str | None = None
    cache_claim: str | None = None


@dataclass(frozen=True)
class WorkloadCluster:
    """Where the replica's objects go: the provider config that reaches the cluster.

    Attributes:
        name: The InferenceCluster's name.
        provider_config: The provider-kubernetes config that reaches the cluster.
        provider_config_kind: Its kind (the InferenceCluster composes a cluster-scoped one).
        gateway_name: The Gateway the serving stack installs on the cluster.
        gateway_namespace: That Gateway's namespace.
    """

    name: str
    provider_config: str
    provider_config_kind: ProviderConfigKind = ProviderConfigKind.CLUSTER
    gateway_name: str = GATEWAY_NAME
    gateway_namespace: str = GATEWAY_NAMESPACE
