"""The simulated fleet: a scenario's objects, the fleet-wide ModelReplica ledger, and what
each timeline event does to them.

The world holds objects as Kubernetes would store them (plain manifests), so the
ModelDeployment function's own readers see exactly what they would see in a cluster.
Two things stand in for controllers that do not run here:

- the InferenceCluster function's publishing: ``status.gpuPools`` is published from
  ``spec.nodePools`` and the InferenceClasses (:func:`modelplane.domain.cluster.gpu_pools`,
  the function's rule), so resizing or adding a pool changes what the scheduler reads;
  a pool whose class is not in the scenario keeps the status it was given; a pool
  removed while replicas are pinned there stays published, draining, until they have
  moved (:mod:`modelplane.simulate.pool_draining`);
- the workload clusters: a ModelReplica starts once a reconcile pass has gone by since
  it was created and its pool's schedulable nodes have room for its pods
  (:mod:`modelplane.simulate.nodes`: lost and cordoned nodes, oldest first), and
  reports Ready while it is started and its cluster is Ready. A replica is created
  with a ``creationTimestamp`` from the simulation's clock, which admission orders by.

An InferenceCluster given without any ``status`` is taken as provisioned and healthy:
Ready, with a gateway address, its pools published from their classes.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import pydantic
from google.protobuf import struct_pb2 as structpb

from modelplane import kit, planning
from modelplane.domain import cluster as cluster_domain
from modelplane.domain import draining, naming
from modelplane.domain.api import (
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    READY_TEMPLATE_FIELD,
    TEMPLATE_HASH_LABEL,
)
from modelplane.domain.scheduling.fleet import CAPACITIES, Deployment
from modelplane.models.inferenceclass import InferenceClass
from modelplane.models.modeldeployment import ModelDeployment
from modelplane.planning import as_struct, read_cluster, read_replica, read_strategy
from modelplane.simulate import edits, nodes, pool_draining
from modelplane.simulate import scenario as sc

# Where a healthy cluster given without status serves; only its presence matters to the
# scheduler. ".invalid" is reserved (RFC 2606): it can never be a real address.
SIMULATED_GATEWAY = "gateway.simulated.invalid"
DELETED = "its ModelDeployment was deleted"
# Creation times start here and tick a second per replica: only their order matters.
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

Key = tuple[str, str]  # (namespace, name)


@dataclass
class Replica:
    """A ModelReplica of the ledger: its manifest as composed, and whether it started."""

    manifest: dict[str, Any]
    started: bool
    _observed: tuple[bool, structpb.Struct] | None = field(default=None, repr=False)
    started_at: int = 0

    @property
    def name(self) -> str:
        """The replica's name."""
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """The replica's namespace."""
        return str(self.manifest["metadata"].get("namespace") or "")

    @cached_property
    def owner(self) -> Key:
        """The (namespace, deployment label value) it belongs to."""
        labels = self.manifest["metadata"].get("labels") or {}
        return self.namespace, str(labels.get(DEPLOYMENT_LABEL, ""))

    @property
    def cluster(self) -> str:
        """The cluster it is pinned to."""
        spec = self.manifest.get("spec") or {}
        labels = self.manifest["metadata"].get("labels") or {}
        return str(spec.get("clusterName") or labels.get(CLUSTER_LABEL) or "")

    def observed(self, ready: bool) -> structpb.Struct:
        """The replica as the fleet read sees it, with its Ready condition (memoized)."""
        if self._observed is None or self._observed[0] != ready:
            status: dict[str, Any] = {
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]
            }
            template = (self.manifest["metadata"].get("labels") or {}).get(TEMPLATE_HASH_LABEL)
            if ready and template:  # as the ModelReplica function publishes with its verdict
                status[READY_TEMPLATE_FIELD] = template
            doc = {**self.manifest, "status": status}
            self._observed = (ready, as_struct(doc))
        return self._observed[1]


@dataclass(frozen=True)
class Removal:
    """A replica that left the ledger outside scheduling (its deployment was deleted)."""

    deployment: Key
    replica: str
    cluster: str
    reason: str


class World:
    """Every object of the simulated fleet, changed by events and by reconciles."""

    def __init__(
        self, documents: Iterable[tuple[str, Mapping[str, Any]]], capacity: str | None = None
    ) -> None:
        """Hold the fleet's documents (later ones replace earlier ones of the same name).

        Args:
            documents: ``(where it comes from, manifest)`` pairs.
            capacity: ``Nodes`` or ``Devices`` to count every published pool so, whatever
                it declares (to compare the two); None: as each pool declares.

        Raises:
            sc.ScenarioError: an object cannot be read, named with where it came from.
        """
        self.capacity = capacity
        self.classes: dict[str, dict[str, Any]] = {}
        self.clusters: dict[str, dict[str, Any]] = {}
        self.deployments: dict[Key, dict[str, Any]] = {}
        self.caches: dict[Key, dict[str, Any]] = {}
        self.replicas: dict[Key, Replica] = {}
        # Images a template edit said never turn Ready (a bad image): replicas on one never start.
        self.bad_images: set[str] = set()
        # Nodes down per (cluster, pool); whether the next pass runs reconciles concurrently.
        self.down: dict[tuple[str, str], nodes.Down] = {}
        self.racing = False
        # Clusters a pool was removed from: published from the spec even with none left.
        self.pools_removed: set[str] = set()
        self._clock = 0
        # Readings per document; each holds its document, so the identity check is exact.
        self._readings: dict[Key, tuple[dict[str, Any], ModelDeployment, Deployment]] = {}
        self._cluster_structs: dict[str, tuple[dict[str, Any], structpb.Struct]] = {}
        # Replicas written by hand (not composed by a reconcile), to check once.
        self._unchecked: set[Key] = set()
        # Where each object of the fleet as given comes from, for messages.
        self._origins: dict[str, str] = {}
        for where, doc in documents:
            self._put(doc)
            self._origins[_describe(doc)] = where
        self.settle_objects(None)

    # --- reading, as the ModelDeployment function reads --------------------------------------

    def deployment(self, key: Key) -> tuple[ModelDeployment, Deployment]:
        """The deployment's model and its scheduler view (read once per version)."""
        doc = self.deployments[key]
        found = self._readings.get(key)
        if found is None or found[0] is not doc:
            model = ModelDeployment.model_validate(doc)
            found = (doc, model, planning.read_deployment(model, doc))
            self._readings[key] = found
        return found[1], found[2]

    def cluster_struct(self, name: str) -> structpb.Struct:
        """A cluster as the fleet read sees it (converted once per version)."""
        doc = self.clusters[name]
        found = self._cluster_structs.get(name)
        if found is None or found[0] is not doc:
            found = (doc, as_struct(edits.counted(doc, self.capacity)))
            self._cluster_structs[name] = found
        return found[1]

    def cluster_ready(self, name: str) -> bool:
        """Tell whether a cluster exists and reports Ready."""
        doc = self.clusters.get(name)
        return doc is not None and kit.condition_true(doc, "Ready")

    def replica_ready(self, replica: Replica, ready_clusters: set[str] | None = None) -> bool:
        """A replica is Ready once started, while its cluster is Ready.

        ``ready_clusters`` (from :meth:`ready_clusters`) saves reading every cluster again.
        """
        if not replica.started:
            return False
        if ready_clusters is not None:
            return replica.cluster in ready_clusters
        return self.cluster_ready(replica.cluster)

    def ready_clusters(self) -> set[str]:
        """The names of the clusters that report Ready."""
        return {name for name in self.clusters if self.cluster_ready(name)}

    def observed_replicas(self) -> list[structpb.Struct]:
        """Every replica of the ledger as the fleet read sees it, in name order."""
        ready = self.ready_clusters()
        return [r.observed(self.replica_ready(r, ready)) for _, r in sorted(self.replicas.items())]

    def owned(self, key: Key) -> Iterator[Replica]:
        """The ledger's replicas of a deployment (by its namespace and label)."""
        owner = (key[0], naming.label_value(key[1]))
        return (r for r in self.replicas.values() if r.owner == owner)

    # --- events -----------------------------------------------------------------------------

    def apply(self, located: sc.Located) -> list[Removal]:
        """Apply one event; return the replicas it removed outright.

        Raises:
            sc.ScenarioError: the event does not apply, or leaves an object unreadable.
        """
        try:
            removed = self._apply(located.event)
        except edits.EventError as exc:
            msg = f"{located.where}: {exc}"
            raise sc.ScenarioError(msg) from None
        self.settle_objects(located.where)
        return removed

    def _apply(self, event: sc.Event) -> list[Removal]:
        match event:
            case sc.Apply(documents):
                for doc in documents:
                    self._put(doc)
            case sc.Delete(kind, name, namespace):
                return self._delete(kind, name, namespace)
            case sc.EditDeployment():
                self._edit(event)
            case sc.Taint(cluster, taint):
                edits.taint(self._cluster_spec(cluster), taint)
            case sc.Untaint(cluster, key, effect):
                edits.untaint(self._cluster_spec(cluster), cluster, key, effect)
            case sc.AddPool(cluster, pool):
                self._add_pool(cluster, pool)
            case sc.RemovePool(cluster, pool):
                edits.remove_pool(*self._pool_of(cluster, pool), pool)
                self.pools_removed.add(cluster)
            case sc.SetPoolNodes(cluster, pool, nodes):
                edits.resize_pool(*self._pool_of(cluster, pool), pool, nodes)
            case sc.SetClusterReady(cluster, ready):
                self._cluster_spec(cluster)  # checks it exists; copies the document
                edits.set_ready(self.clusters[cluster].setdefault("status", {}), ready)
            case sc.NodesDown(cluster, pool, count, how):
                self._nodes_down(cluster, pool, count, how)
            case sc.RestoreNodes(cluster, pool):
                self._check_pool(cluster, pool)
                self.down.pop((cluster, pool), None)
            case sc.Race():
                self.racing = True
        return []

    def _check_pool(self, cluster: str, pool: str) -> None:
        spec = self._cluster_spec(cluster)
        edits.check_pool(cluster, spec, self.clusters[cluster].get("status") or {}, pool)

    def _pool_of(self, cluster: str, pool: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """A cluster's spec and status, copied for an edit of ``pool``, which it must have."""
        spec = self._cluster_spec(cluster)
        status: dict[str, Any] = self.clusters[cluster].setdefault("status", {})
        edits.check_pool(cluster, spec, status, pool)
        return spec, status

    def _nodes_down(self, cluster: str, pool: str, count: int, how: str) -> None:
        self._check_pool(cluster, pool)
        down = self.down.setdefault((cluster, pool), nodes.Down())
        if how == "lost":
            down.lost += count
        else:
            down.cordoned += count

    def _put(self, raw: Mapping[str, Any]) -> None:
        doc = copy.deepcopy(dict(raw))
        meta = doc["metadata"]
        name, namespace = str(meta["name"]), str(meta.get("namespace") or "")
        match doc["kind"]:
            case "InferenceClass":
                self.classes[name] = doc
            case "InferenceCluster":
                if "status" not in doc:
                    doc["status"] = _healthy_status()
                self.clusters[name] = doc
            case "ModelDeployment":
                self.deployments[(namespace, name)] = doc
            case "ModelCache":
                self.caches[(namespace, name)] = doc
            case "ModelReplica":
                started = kit.is_ready(doc)
                manifest = {k: v for k, v in doc.items() if k != "status"}
                self.replicas[(namespace, name)] = Replica(manifest, started)
                self._unchecked.add((namespace, name))

    def _delete(self, kind: str, name: str, namespace: str) -> list[Removal]:
        key = (namespace, name)
        stores: dict[str, dict[Any, Any]] = {
            "InferenceClass": self.classes,
            "InferenceCluster": self.clusters,
            "ModelDeployment": self.deployments,
            "ModelCache": self.caches,
            "ModelReplica": self.replicas,
        }
        store = stores[kind]
        found = name if kind in ("InferenceClass", "InferenceCluster") else key
        if found not in store:
            msg = f"no {kind} {kit.ref_of(namespace, name)} to delete{edits.known(store)}"
            raise edits.EventError(msg)
        del store[found]
        if kind != "ModelDeployment":
            return []
        gone = list(self.owned(key))
        for replica in gone:
            del self.replicas[(replica.namespace, replica.name)]
        return [Removal(key, r.name, r.cluster, DELETED) for r in gone]

    def _edit(self, edit: sc.EditDeployment) -> None:
        key = (edit.namespace, edit.name)
        if key not in self.deployments:
            known = edits.known(self.deployments)
            msg = f"no ModelDeployment {kit.ref_of(*key)} to edit{known}"
            raise edits.EventError(msg)
        self.deployments[key] = edits.edit_deployment(self.deployments[key], edit)
        if edit.image is not None and not edit.starts:
            self.bad_images.add(edit.image)

    def _cluster_spec(self, name: str) -> dict[str, Any]:
        """The spec of a cluster, replaced by a copy so that its readings start afresh."""
        if name not in self.clusters:
            msg = f"no InferenceCluster {name}{edits.known(self.clusters)}"
            raise edits.EventError(msg)
        doc = copy.deepcopy(self.clusters[name])
        self.clusters[name] = doc
        spec: dict[str, Any] = doc.setdefault("spec", {})
        return spec

    def _add_pool(self, cluster: str, pool: Mapping[str, Any]) -> None:
        spec = self._cluster_spec(cluster)
        pools = spec.setdefault("nodePools", [])
        if any(p.get("name") == pool["name"] for p in pools):
            msg = f"InferenceCluster {cluster} already has a pool {pool['name']}"
            raise edits.EventError(msg)
        if pool["className"] not in self.classes:
            msg = f"no InferenceClass {pool['className']} to publish pool {pool['name']} from{edits.known(self.classes)}"
            raise edits.EventError(msg)
        pools.append(dict(pool))

    # --- publishing and checking ------------------------------------------------------------------

    def settle_objects(self, where: str | None) -> None:
        """Publish every cluster's pools, then check every object reads as the function reads it.

        Raises:
            sc.ScenarioError: an object does not read, named with ``where`` (None: where
                the fleet as given holds it) and its field.
        """
        for name in sorted(self.classes):
            doc = self.classes[name]
            what = f"InferenceClass {name}"
            _check(self._at(where, what), what, partial(InferenceClass.model_validate, doc))
        for name in sorted(self.clusters):
            what = f"InferenceCluster {name}"
            self._publish(name, self._at(where, what))
            self._observe(name)
            struct = self.cluster_struct(name)
            _check(self._at(where, what), what, partial(read_cluster, struct))
        for key in sorted(self.deployments):
            what = f"ModelDeployment {kit.ref_of(*key)}"
            _check(self._at(where, what), what, partial(self.deployment, key))
            strategy = partial(read_strategy, self.deployments[key])
            _check(self._at(where, what), what, strategy)
        for key in sorted(self._unchecked & set(self.replicas)):
            manifest = self.replicas[key].manifest
            what = f"ModelReplica {kit.ref_of(*key)}"
            _check(self._at(where, what), what, partial(read_replica, as_struct(manifest)))
        self._unchecked.clear()

    def _at(self, where: str | None, what: str) -> str:
        return where if where is not None else self._origins.get(what, "(the fleet)")

    def _publish(self, name: str, where: str) -> None:
        """Publish ``status.gpuPools`` from ``spec.nodePools`` and the classes, as the
        InferenceCluster function does; a pool whose class is unknown keeps what it had."""
        doc = self.clusters[name]
        declared = (doc.get("spec") or {}).get("nodePools")
        if not declared and name not in self.pools_removed:
            return  # a cluster given with its status only keeps it
        pools = []
        for i, raw in enumerate(declared or ()):
            if (
                not isinstance(raw, Mapping)
                or not isinstance(raw.get("name"), str)
                or not isinstance(raw.get("className"), str)
            ):
                msg = f"{where}: InferenceCluster {name}: spec.nodePools[{i}] needs a name and a className"
                raise sc.ScenarioError(msg)
            pools.append(
                _declared_pool(raw, f"{where}: InferenceCluster {name}: spec.nodePools[{i}]")
            )
        classes = {n: c.get("spec") or {} for n, c in self.classes.items()}
        published, _ = cluster_domain.gpu_pools(pools, classes)
        status = doc.get("status")
        if status is None:
            status = {}
        elif not isinstance(status, dict):
            msg = f"{where}: InferenceCluster {name}: status must be a mapping"
            raise sc.ScenarioError(msg)
        shown = status.get("gpuPools") or []
        gpu_pools = pool_draining.publish(
            pools,
            cluster_domain.keep_flapping_pools(pools, published, shown),
            shown,
            self._pinned(name),
        )
        if status.get("gpuPools") != gpu_pools:
            doc = copy.deepcopy(doc)
            doc["status"] = {**status, "gpuPools": gpu_pools}
            self.clusters[name] = doc

    def _pinned(self, cluster: str) -> dict[str, tuple[str, ...]]:
        """The replicas pinned to each pool of ``cluster``, as the InferenceCluster reads them."""
        return draining.pins(r.manifest for r in self.replicas.values() if r.cluster == cluster)

    def republish(self) -> bool:
        """Publish every cluster's pools again, as the InferenceCluster function does on
        each reconcile (a draining pool goes once no replica pins it); tell whether any
        cluster changed."""
        changed = False
        for name, doc in sorted(self.clusters.items()):
            self._publish(name, f"InferenceCluster {name}")
            self._observe(name)
            if self.clusters[name] == doc:
                self.clusters[name] = doc  # the same reading: keep what is cached for it
            else:
                changed = True
        return changed

    # --- the ledger ----------------------------------------------------------------------------

    def _observe(self, name: str) -> None:
        """Publish what the cluster observes of its pools with nodes down (or no more)."""
        status = self.clusters[name].get("status")
        if not isinstance(status, dict) or not isinstance(status.get("gpuPools"), list):
            return
        down = {p: d for (c, p), d in self.down.items() if c == name}
        observed = nodes.observe(status["gpuPools"], down)
        if observed != status["gpuPools"]:
            doc = copy.deepcopy(self.clusters[name])
            doc["status"]["gpuPools"] = observed
            self.clusters[name] = doc

    def stamp(self) -> str:
        """A new replica's ``creationTimestamp``: the simulation's clock, one tick each."""
        self._clock += 1
        when = EPOCH + datetime.timedelta(seconds=self._clock)
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")

    def start_replicas(self) -> bool:
        """A pass went by: pods on lost nodes go, pending ones start where there is room.

        Tell whether any replica started or stopped.
        """
        clusters = [
            c for c in (read_cluster(self.cluster_struct(n)) for n in sorted(self.clusters)) if c
        ]
        read = [
            (r, found)
            for _, r in sorted(self.replicas.items())
            if (found := read_replica(as_struct(r.manifest))) is not None
        ]
        running = [(found, r.started_at) for r, found in read if r.started]
        changed = False
        gone = nodes.lost_pods(clusters, running, self.down)
        for replica, found in read:
            if replica.started and found.name in gone:
                replica.started = False
                changed = True
        scheduler = nodes.Scheduler(clusters, [(f, r.started_at) for r, f in read if r.started])
        for replica, found in sorted(read, key=lambda p: (p[1].created, p[0].name)):
            if replica.started or (
                self.bad_images and edits.images(replica.manifest) & self.bad_images
            ):
                continue  # started, or on an image that never turns Ready
            self._clock += 1
            if scheduler.start(found, self._clock):
                replica.started, replica.started_at = True, self._clock
                changed = True
        return changed


def _check(where: str, what: str, read: Callable[[], object]) -> None:
    """Read an object as the functions read it; a problem names the object and its field.

    Raises:
        sc.ScenarioError: it does not read.
    """
    try:
        read()
    except pydantic.ValidationError as exc:
        problem = kit.summarize(exc)
    except ValueError as exc:  # UnreadableError and read_deployment's own
        problem = str(exc)
    else:
        return
    msg = f"{where}: {what}: {problem}"
    raise sc.ScenarioError(msg) from None


def _describe(doc: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` or ``Kind name``, as messages name an object."""
    return f"{doc['kind']} {kit.ref(doc)}"


def _healthy_status() -> dict[str, Any]:
    return {
        "gateway": {"address": SIMULATED_GATEWAY},
        "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
    }


def _declared_pool(raw: Mapping[str, Any], where: str) -> cluster_domain.Pool:
    counts = {}
    for key in ("nodeCount", "minNodeCount", "maxNodeCount"):
        value = raw.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            msg = f"{where}.{key}: must be a whole number of at least 0, got {value!r}"
            raise sc.ScenarioError(msg)
        counts[key] = value
    capacity = raw.get("capacity", "Nodes")
    if capacity not in CAPACITIES:
        msg = f"{where}.capacity: must be {' or '.join(CAPACITIES)}, got {capacity!r}"
        raise sc.ScenarioError(msg)
    return cluster_domain.Pool(
        name=raw["name"],
        class_name=raw["className"],
        node_count=counts["nodeCount"] if counts["nodeCount"] is not None else 1,
        min_node_count=counts["minNodeCount"],
        max_node_count=counts["maxNodeCount"],
        capacity=capacity,
    )
