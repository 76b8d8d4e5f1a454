"""An engine's objects on the workload cluster: its workload, its Service, its claims.

A ``Standalone`` engine is a Deployment of ``copies`` pods. A gang (one ``Leader`` and
one ``Worker`` member) is a LeaderWorkerSet of ``copies`` groups, each of
``1 + worker.nodes`` pods. Either way a Service selects the pods that serve the API
(a stable in-cluster address for the engine; the route reaches them through the
replica's InferencePool instead), and each member that requests devices gets a
ResourceClaimTemplate with one request per DRA device request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from modelplane.domain.workload import names, pods
from modelplane.domain.workload.spec import (
    DeviceRequest,
    Engine,
    Member,
    Phase,
    Replica,
    Role,
    SpecError,
)

SERVICE_PORT = pods.ENGINE_PORT


class Readiness(StrEnum):
    """How the Object wrapping a manifest decides it is ready."""

    CREATED = "Created"
    """Ready once it exists on the cluster."""
    AVAILABLE = "Available"
    """Ready when every desired pod (or group) runs, available and updated: a workload
    that serves, read from its replica counts (:func:`modelplane.domain.objects.workload_query`)."""
    ACCEPTED = "Accepted"
    """Ready when a Gateway has accepted it: a route that carries traffic."""


@dataclass(frozen=True)
class Manifest:
    """One object for the workload cluster, keyed by its stable composed-resource name."""

    key: str
    manifest: Mapping[str, Any]
    readiness: Readiness = Readiness.CREATED

    @property
    def workload(self) -> bool:
        """Tell whether the object runs pods whose availability decides if the replica serves."""
        return self.readiness is Readiness.AVAILABLE


class InvalidEngineError(SpecError):
    """An engine the workload cluster cannot run as written."""

    def __init__(self, engine: str, problem: str) -> None:
        """Record which engine is wrong and why."""
        super().__init__(f"engine {engine!r}: {problem}")
        self.engine = engine
        self.problem = problem


@dataclass(frozen=True)
class EngineShape:
    """What every shape of an engine names: the one node pool its members share."""

    pool: str


@dataclass(frozen=True)
class Single(EngineShape):
    """An engine of one Standalone member: one pod per copy."""

    member: Member


@dataclass(frozen=True)
class Gang(EngineShape):
    """An engine of one Leader and one Worker member: ``1 + worker.nodes`` pods per copy."""

    leader: Member
    worker: Member


def topology(engine: Engine) -> Single | Gang:
    """Sort an engine's members into a single pod or a gang, with the pool they share.

    Raises:
        InvalidEngineError: The members are neither one Standalone nor one Leader and one
            Worker, or they are pinned to no pool or to several.
    """
    by_role: dict[Role, list[Member]] = {role: [] for role in Role}
    for member in engine.members:
        by_role[member.role].append(member)
    pool = _pool(engine)
    counts = {role: len(members) for role, members in by_role.items()}
    if counts == {Role.STANDALONE: 1, Role.LEADER: 0, Role.WORKER: 0}:
        return Single(pool=pool, member=by_role[Role.STANDALONE][0])
    if counts == {Role.STANDALONE: 0, Role.LEADER: 1, Role.WORKER: 1}:
        leader, worker = by_role[Role.LEADER][0], by_role[Role.WORKER][0]
        if worker.worker_nodes < 1:
            raise InvalidEngineError(engine.name, "its Worker member spans no nodes")
        return Gang(pool=pool, leader=leader, worker=worker)
    got = ", ".join(f"{n} {role.value}" for role, n in counts.items() if n) or "no members"
    problem = f"an engine is one Standalone member, or one Leader and one Worker ({got})"
    raise InvalidEngineError(engine.name, problem)


def _pool(engine: Engine) -> str:
    # A member without a nodeSelector claims nothing and rides its engine's pool.
    pools = sorted({m.node_pool for m in engine.members if m.node_pool})
    if len(pools) == 1:
        return pools[0]
    problem = (
        f"its members are pinned to several node pools ({', '.join(pools)})"
        if pools
        else "none of its members is pinned to a node pool"
    )
    raise InvalidEngineError(engine.name, problem)


def manifests(replica: Replica, engine: Engine) -> list[Manifest]:
    """Return the engine's workload, Service and ResourceClaimTemplates.

    Raises:
        InvalidEngineError: The engine's members or pod templates can't be run.
    """
    shape = topology(engine)
    try:
        match shape:
            case Single():
                workload = _deployment(replica, engine, shape)
                members = [shape.member]
            case Gang():
                workload = _lws(replica, engine, shape)
                members = [shape.leader, shape.worker]
    except pods.MissingEngineContainerError as err:
        raise InvalidEngineError(engine.name, str(err)) from err
    prefix = f"engine-{engine.name}"
    found = [
        Manifest(f"{prefix}-workload", workload, Readiness.AVAILABLE),
        Manifest(f"{prefix}-service", _service(replica, engine)),
    ]
    found += [
        Manifest(f"{prefix}-{m.role.value.lower()}-claims", _claim_template(replica, engine, m))
        for m in members
        if m.device_requests
    ]
    return found


def _metadata(replica: Replica, name: str, *extra: Mapping[str, str]) -> dict[str, Any]:
    labels = names.base_labels(replica)
    for more in extra:
        labels.update(more)
    return {"labels": dict(sorted(labels.items())), "name": name, "namespace": replica.namespace}


def _pod(replica: Replica, engine: Engine, member: Member, shape: Single | Gang) -> dict[str, Any]:
    serving = member.role is not Role.WORKER
    labels = {**names.base_labels(replica), **names.engine_selector(replica, engine)}
    if serving:
        labels[names.LABEL_SERVING] = names.SERVING
    if engine.phase:
        labels[names.LABEL_ROLE] = engine.phase.value.lower()
    decode = engine.phase is Phase.DECODE
    pod_shape = pods.PodShape(
        labels=labels,
        pool=shape.pool,
        claim_template=(
            names.claim_template(replica, engine, member.role) if member.device_requests else None
        ),
        serving=serving,
        engine_port=pods.DECODE_ENGINE_PORT if decode else pods.ENGINE_PORT,
        gang=isinstance(shape, Gang),
        nixl=engine.phase is not None,
        routing_sidecar=decode and serving,
        cache_claim=replica.cache_claim,
    )
    return pods.pod_template(member.template, pod_shape)


def _workload(
    replica: Replica, engine: Engine, api_version: str, kind: str, spec: dict[str, Any]
) -> dict[str, Any]:
    """An engine's workload object: named for the replica and engine, labelled to select it."""
    name = names.workload(replica, engine)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _metadata(replica, name, names.engine_selector(replica, engine)),
        "spec": spec,
    }


def _deployment(replica: Replica, engine: Engine, shape: Single) -> dict[str, Any]:
    spec = {
        "replicas": engine.copies,
        "selector": {"matchLabels": names.engine_selector(replica, engine)},
        # Pools are sized to the replica's pods; a surge pod would wait for a GPU
        # that never frees up, so an update replaces pods one at a time instead.
        "strategy": {
            "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
            "type": "RollingUpdate",
        },
        "template": _pod(replica, engine, shape.member, shape),
    }
    return _workload(replica, engine, "apps/v1", "Deployment", spec)


def _lws(replica: Replica, engine: Engine, shape: Gang) -> dict[str, Any]:
    spec = {
        "leaderWorkerTemplate": {
            "leaderTemplate": _one_per_node(_pod(replica, engine, shape.leader, shape)),
            # A gang serves only whole: one pod's restart restarts the group.
            "restartPolicy": "RecreateGroupOnPodRestart",
            "size": 1 + shape.worker.worker_nodes,
            "workerTemplate": _one_per_node(_pod(replica, engine, shape.worker, shape)),
        },
        "replicas": engine.copies,
        "startupPolicy": "LeaderCreated",
    }
    return _workload(replica, engine, "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", spec)


GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
"""The label LeaderWorkerSet gives every pod of one group (a leader and its workers)."""
HOSTNAME = "kubernetes.io/hostname"


def _one_per_node(template: dict[str, Any]) -> dict[str, Any]:
    """Keep a group's pods on distinct nodes, as the docs say (one per node).

    A required pod anti-affinity against the pods of its own group (``matchLabelKeys``
    takes this pod's group-key value), added to any the template carries; the
    scheduler's ledger charges each gang pod a node of its own to match.
    """
    spec = template.setdefault("spec", {})
    affinity = spec.setdefault("affinity", {})
    anti = affinity.setdefault("podAntiAffinity", {})
    required = list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    required.append(
        {
            "labelSelector": {"matchExpressions": [{"key": GROUP_KEY, "operator": "Exists"}]},
            "matchLabelKeys": [GROUP_KEY],
            "topologyKey": HOSTNAME,
        }
    )
    anti["requiredDuringSchedulingIgnoredDuringExecution"] = required
    return template


def _service(replica: Replica, engine: Engine) -> dict[str, Any]:
    selector = {**names.engine_selector(replica, engine), names.LABEL_SERVING: names.SERVING}
    name = service_name(replica, engine)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(replica, name, names.engine_selector(replica, engine)),
        "spec": {
            "ports": [
                {
                    "name": "http",
                    "port": SERVICE_PORT,
                    "protocol": "TCP",
                    "targetPort": SERVICE_PORT,
                }
            ],
            "selector": dict(sorted(selector.items())),
            "type": "ClusterIP",
        },
    }


def _claim_template(replica: Replica, engine: Engine, member: Member) -> dict[str, Any]:
    name = names.claim_template(replica, engine, member.role)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": _metadata(replica, name, names.engine_selector(replica, engine)),
        "spec": {"spec": {"devices": {"requests": [_request(r) for r in member.device_requests]}}},
    }


def _request(request: DeviceRequest) -> dict[str, Any]:
    exactly: dict[str, Any] = {
        "allocationMode": "ExactCount",
        "count": request.count,
        "deviceClassName": request.device_class_name,
    }
    if request.selectors:
        exactly["selectors"] = [{"cel": {"expression": cel}} for cel in request.selectors]
    return {"exactly": exactly, "name": request.name}


def service_name(replica: Replica, engine: Engine) -> str:
    """Return the name of the Service in front of an engine's serving pods."""
    return names.service_name(names.workload(replica, engine))
