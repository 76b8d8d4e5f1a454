"""Builders for scheduler tests: devices, pools, clusters, deployments and replicas.

Shapes mirror the docs' fleets: an L4 pool answers ``gpu`` with 23034Mi of memory, an
H200 pool 140Gi plus 16 EFA interfaces, a BYO H100 pool a Synthetic InfiniBand nic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from modelplane.domain.dra import Attribute, Device
from modelplane.domain.scheduler import CelSelectors, schedule
from modelplane.domain.scheduling.fit import Selectors
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    Claim,
    Deployment,
    DeviceRequest,
    Engine,
    ExistingReplica,
    Fleet,
    FleetCluster,
    Member,
    PinnedEngine,
    Pool,
    PoolDevice,
    labels,
)
from modelplane.domain.scheduling.placement import Placement
from modelplane.domain.taints import Taint, Toleration

NVIDIA = "gpu.nvidia.com"


def memory_at_least(quantity: str) -> str:
    """The docs' capacity selector: a GPU with at least ``quantity`` of memory."""
    return f'device.capacity["{NVIDIA}"].memory.compareTo(quantity("{quantity}")) >= 0'


def architecture(name: str) -> str:
    """The docs' attribute selector."""
    return f'device.attributes["{NVIDIA}"].architecture == "{name}"'


def driver(name: str) -> str:
    """The docs' driver selector."""
    return f'device.driver == "{name}"'


def gpu(
    memory: str = "23034Mi",
    *,
    count: int = 1,
    arch: str = "Ada Lovelace",
    claim: Claim = "DRA",
    name: str = "gpu",
) -> PoolDevice:
    """An NVIDIA GPU entry of a class."""
    device = Device.build(
        NVIDIA,
        attributes={"architecture": Attribute("string", arch)},
        capacity={"memory": memory},
    )
    return PoolDevice(name, device, count, claim, NVIDIA if claim == "DRA" else "")


def efa(count: int = 16) -> PoolDevice:
    """The EFA entry of the docs' H200 class: a DRA device with no attributes."""
    return PoolDevice("efa", Device.build("dra.net"), count, "DRA", "efa.networking.k8s.aws")


def nic(count: int = 8, claim: Claim = "Synthetic") -> PoolDevice:
    """The InfiniBand nic of the docs' BYO H100 class."""
    device = Device.build("nic.nvidia.com", attributes={"linkType": Attribute("string", "ib")})
    return PoolDevice("nic", device, count, claim, "nic.nvidia.com" if claim == "DRA" else "")


def pool(name: str, nodes: int, *devices: PoolDevice) -> Pool:
    """A published pool (an L4 pool when no devices are given)."""
    return Pool(name, nodes, tuple(devices) or (gpu(),))


def cluster(
    name: str,
    *pools: Pool,
    labels_: Mapping[str, str] | None = None,
    ready: bool = True,
    gateway: str = "10.0.0.1",
    taints: Sequence[Taint] = (),
    unpublished: bool = False,
) -> FleetCluster:
    """A cluster: Ready with a gateway address unless told otherwise."""
    return FleetCluster(
        name,
        labels(labels_),
        tuple(taints),
        ready,
        gateway,
        None if unpublished else tuple(pools),
    )


def request(name: str = "gpu", count: int = 1, *selectors: str) -> DeviceRequest:
    """A device request; with no selectors given it asks for at least 20Gi of memory."""
    chosen = selectors or ((memory_at_least("20Gi"),) if name == "gpu" else ())
    return DeviceRequest(name, count, tuple(chosen))


def standalone(*requests: DeviceRequest) -> Member:
    """A Standalone member (one GPU of at least 20Gi when no request is given)."""
    return Member("Standalone", tuple(requests) if requests else (request(),))


def leader(*requests: DeviceRequest) -> Member:
    """A gang's Leader."""
    return Member("Leader", tuple(requests))


def worker(nodes: int, *requests: DeviceRequest) -> Member:
    """A gang's Worker spanning ``nodes`` nodes."""
    return Member("Worker", tuple(requests), nodes)


def engine(name: str = "qwen", *members: Member, copies: int = 1) -> Engine:
    """An engine (one Standalone member when none is given)."""
    return Engine(name, tuple(members) or (standalone(),), copies)


def deployment(
    name: str = "qwen",
    replicas: int = 1,
    *engines: Engine,
    namespace: str = "ml-team",
    selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Toleration] = (),
) -> Deployment:
    """A deployment (one Standalone engine named after it when none is given)."""
    return Deployment(
        namespace,
        name,
        replicas,
        tuple(engines) or (engine(name),),
        labels(selector),
        tuple(tolerations),
    )


def existing(
    deployment_: str,
    cluster_: str,
    index: int = 0,
    pins: Mapping[str, tuple[str, int]] | None = None,
    *,
    namespace: str = "ml-team",
) -> ExistingReplica:
    """A replica in the fleet; ``pins`` maps engine -> (pool, nodes charged)."""
    engines = tuple(PinnedEngine(e, p, n) for e, (p, n) in sorted((pins or {}).items()))
    return ExistingReplica(
        namespace, deployment_, cluster_, index, engines, f"{deployment_}-{cluster_}-{index}"
    )


def fleet(*clusters: FleetCluster, replicas: Sequence[ExistingReplica] = ()) -> Fleet:
    """A fleet of clusters and existing replicas."""
    return Fleet(tuple(clusters), tuple(replicas))


def selectors() -> Selectors:
    """The real CEL engine."""
    return CelSelectors()


def run(
    dep: Deployment,
    fleet_: Fleet,
    *,
    cache: CacheFootprint | None = None,
    ready: Iterable[str] = (),
) -> Placement:
    """Schedule with the real CEL engine; ``ready`` names the existing replicas that are Ready."""
    return schedule(dep, fleet_, cache=cache, selectors=selectors(), ready=ready)


def where(placement: Placement) -> list[tuple[str, int, tuple[str, ...]]]:
    """Each placed replica as (cluster, index, pools of its engines)."""
    return [
        (r.cluster, r.index, tuple(e.pool for e in r.engines or ())) for r in placement.replicas
    ]


def reasons(placement: Placement) -> dict[str, list[str]]:
    """Each passed-over cluster's reason types, by cluster."""
    return {p.cluster: [type(r).__name__ for r in p.reasons] for p in placement.passed_over}
