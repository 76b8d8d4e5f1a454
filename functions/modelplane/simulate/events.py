"""The events of a ``modelplane simulate`` timeline, as :mod:`.scenario` reads them.

Each is what the platform or an ML team does to the fleet (apply, delete, edit, taint,
resize, lose nodes...); :mod:`modelplane.simulate.world` applies them. Each says what
it does in one line (``describe``), for the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane import kit
from modelplane.domain import taints


@dataclass(frozen=True)
class Apply:
    """Create or replace objects (a deployment, a cluster, a class, a cache)."""

    documents: tuple[dict[str, Any], ...]

    def describe(self) -> str:
        """Say what is applied."""
        return "apply " + ", ".join(f"{d['kind']} {kit.ref(d)}" for d in self.documents)


@dataclass(frozen=True)
class Delete:
    """Delete an object: a cluster's replicas move, a deployment's replicas go."""

    kind: str
    name: str
    namespace: str = ""

    def describe(self) -> str:
        """Say what is deleted."""
        return f"delete {self.kind} {kit.ref_of(self.namespace, self.name)}"


@dataclass(frozen=True)
class DeviceSelectors:
    """New CEL selectors for one device request of one member of one engine."""

    engine: str
    role: str
    device: str
    cel: tuple[str, ...]


_UNSET: Any = object()


@dataclass(frozen=True)
class EditDeployment:
    """Edit a deployment in place: what ``kubectl edit`` would change."""

    namespace: str
    name: str
    replicas: int | None = None
    cluster_selector: dict[str, str] | None = _UNSET
    tolerations: tuple[dict[str, Any], ...] | None = None
    copies: tuple[tuple[str, int], ...] = ()
    device_selectors: tuple[DeviceSelectors, ...] = ()
    image: str | None = None
    starts: bool = True

    def describe(self) -> str:
        """Say what changes."""
        parts = []
        if self.replicas is not None:
            parts.append(f"replicas={self.replicas}")
        if self.cluster_selector is not _UNSET:
            wanted = ",".join(f"{k}={v}" for k, v in sorted((self.cluster_selector or {}).items()))
            parts.append(f"clusterSelector={wanted or '(none)'}")
        if self.tolerations is not None:
            parts.append(f"tolerations={len(self.tolerations)}")
        parts.extend(f"{engine}.copies={n}" for engine, n in self.copies)
        parts.extend(f"{d.engine}.{d.role}.{d.device} selectors" for d in self.device_selectors)
        if self.image is not None:
            parts.append(f"image={self.image}" + ("" if self.starts else " (never turns Ready)"))
        return f"edit ModelDeployment {self.namespace}/{self.name}: {', '.join(parts)}"

    @property
    def sets_cluster_selector(self) -> bool:
        """Tell whether the edit touches the clusterSelector."""
        return self.cluster_selector is not _UNSET


@dataclass(frozen=True)
class OnCluster:
    """What every event on one cluster names: the cluster."""

    cluster: str


@dataclass(frozen=True)
class Taint(OnCluster):
    """Taint a cluster (replace a taint of the same key and effect)."""

    taint: taints.Taint

    def describe(self) -> str:
        """Say it the way kubectl prints a taint."""
        return f"taint {self.cluster} {self.taint}"


@dataclass(frozen=True)
class Untaint(OnCluster):
    """Remove a cluster's taints of a key (of one effect, if given)."""

    key: str
    effect: str = ""

    def describe(self) -> str:
        """Say which taint goes."""
        effect = f":{self.effect}" if self.effect else ""
        return f"untaint {self.cluster} {self.key}{effect}"


@dataclass(frozen=True)
class AddPool(OnCluster):
    """Add a node pool to a cluster's ``spec.nodePools``; it is published from its class."""

    pool: dict[str, Any]

    def describe(self) -> str:
        """Name the pool, its class and size."""
        nodes = self.pool.get("maxNodeCount", self.pool.get("nodeCount", 1))
        size = f"{nodes} node" if nodes == 1 else f"{nodes} nodes"
        return f"add pool {self.cluster}/{self.pool['name']} ({self.pool['className']}, {size})"


@dataclass(frozen=True)
class OnPool(OnCluster):
    """What every event on one existing node pool of a cluster names: the pool."""

    pool: str

    @property
    def where(self) -> str:
        """``cluster/pool``, as the report names a pool."""
        return f"{self.cluster}/{self.pool}"


@dataclass(frozen=True)
class RemovePool(OnPool):
    """Remove a node pool from a cluster."""

    def describe(self) -> str:
        """Name the pool."""
        return f"remove pool {self.where}"


@dataclass(frozen=True)
class SetPoolNodes(OnPool):
    """Resize a pool: the nodes the scheduler may count on."""

    nodes: int

    def describe(self) -> str:
        """Name the pool and its new size."""
        return f"set pool {self.where} to {self.nodes} nodes"


@dataclass(frozen=True)
class SetClusterReady(OnCluster):
    """Mark a cluster Ready or not Ready (an outage, a recovery)."""

    ready: bool

    def describe(self) -> str:
        """Say which way."""
        return f"mark {self.cluster} {'Ready' if self.ready else 'not Ready'}"


@dataclass(frozen=True)
class NodesDown(OnPool):
    """Nodes of a pool stop taking pods: ``lost`` (deleted, dead: their pods go) or
    ``cordoned`` (unschedulable: their pods keep running, nothing new lands).

    The InferenceCluster then observes fewer nodes than the pool declares, and the
    scheduler charges against what it observes.
    """

    nodes: int
    how: str

    def describe(self) -> str:
        """Say how many nodes, of which pool, and how."""
        many = "node" if self.nodes == 1 else "nodes"
        verb = "lose" if self.how == "lost" else "cordon"
        return f"{verb} {self.nodes} {many} of {self.where}"


@dataclass(frozen=True)
class RestoreNodes(OnPool):
    """A pool's lost and cordoned nodes come back (replaced, uncordoned)."""

    def describe(self) -> str:
        """Name the pool."""
        return f"restore the nodes of {self.where}"


@dataclass(frozen=True)
class Race:
    """The step's first reconciles run concurrently: every deployment reads the fleet as
    it was when they all began (a ``kubectl apply -f dir/``, a GitOps sync), so several
    can take the same last node; admission then sorts it out."""

    def describe(self) -> str:
        """Say so."""
        return "deployments reconcile concurrently, each reading the same fleet"


Event = (
    Apply
    | Delete
    | EditDeployment
    | Taint
    | Untaint
    | AddPool
    | RemovePool
    | SetPoolNodes
    | SetClusterReady
    | NodesDown
    | RestoreNodes
    | Race
)
