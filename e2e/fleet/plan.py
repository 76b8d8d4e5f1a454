"""What the fleet's workload clusters are, from a fleet file: one per InferenceCluster.

A fleet file (or several) holds InferenceClasses and InferenceClusters, as the docs'
platform pages do. Each InferenceCluster becomes a workload cluster of its own (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, KWOK) on its own loopback
ports inside the control plane's network namespace, with:

- per node pool, ``maxNodeCount`` (else ``nodeCount``) fake nodes, labelled
  ``modelplane.ai/pool=<pool>`` and tainted ``nvidia.com/gpu=present:NoSchedule`` as
  Modelplane's cloud pools are, each publishing one ResourceSlice of its InferenceClass's
  ``claim: DRA`` devices (Synthetic devices are matched by our scheduler only);
- one untainted system node, where pods that need no GPU run (the endpoint picker, Jobs);
- a DeviceClass per ``deviceClassName``, selecting its driver.

A later InferenceCluster document of a name already seen adds its ``spec.nodePools`` to
that cluster (only those: e2e/fleet/pools.yaml extends the getting-started clusters with
the pools the ``sharing`` scenario needs); a pool's ``capacity`` (Nodes, the default, or
Devices) is kept for the Existing InferenceCluster.

On the control plane the cluster is registered as an ``Existing`` InferenceCluster of the
same name and pools, whose kubeconfig Secret points at the workload cluster.

    python -m e2e.fleet.plan --clusters 2 FILE... > plan.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from modelplane.dev.fakes.kubernetes import resource_slices
from modelplane.domain import api

MP = "modelplane.ai/v1alpha1"
POOL_LABEL = api.POOL_LABEL  # the fleet scenarios read it here
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
SYSTEM_POOL = "system"
SYSTEM_NAMESPACE = "modelplane-system"
PORT_BASE = 20000  # cluster i listens on PORT_BASE + 100*i + ...


@dataclass(frozen=True)
class Pool:
    name: str
    class_name: str
    nodes: int
    devices: list[dict[str, Any]]  # the InferenceClass's claim: DRA devices
    capacity: str = "Nodes"  # spec.nodePools[].capacity: Devices lets pods share a node

    def node_names(self, cluster: str) -> list[str]:
        return [f"{cluster}-{self.name}-{i}" for i in range(self.nodes)]

    def per_node(self, device_class: str) -> int:
        """Devices of ``device_class`` each node publishes."""
        return sum(
            int(d.get("count", 1))
            for d in self.devices
            if str(d.get("deviceClassName") or d["driver"]) == device_class
        )


@dataclass(frozen=True)
class Cluster:
    name: str
    index: int
    pools: list[Pool]
    spec: dict[str, Any]  # the InferenceCluster's spec as the fleet file has it
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def ports(self) -> dict[str, int]:
        base = PORT_BASE + 100 * self.index
        return {
            "etcd": base + 79,
            "etcd_peer": base + 80,
            "etcd_metrics": base + 81,
            "apiserver": base + 43,
            "controller_manager": base + 57,
            "scheduler": base + 59,
            "kwok": base + 90,
        }

    @property
    def secret(self) -> str:
        return f"{self.name}-kubeconfig"


def documents(paths: Iterable[Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for f in files:
            try:
                out += [d for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)]
            except yaml.YAMLError as exc:
                sys.exit(f"fleet file {f} is not YAML: {exc}")
    return out


def plan(docs: list[dict[str, Any]], limit: int | None = None) -> list[Cluster]:
    """The workload clusters of a fleet: its first ``limit`` InferenceClusters."""
    classes = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "InferenceClass"}
    clusters: list[Cluster] = []
    for name, doc in merged_clusters(docs).items():
        pools = [pool_of(name, np, classes) for np in doc["spec"].get("nodePools") or []]
        labels = dict(doc["metadata"].get("labels") or {})
        clusters.append(Cluster(name, len(clusters) + 1, pools, dict(doc["spec"]), labels))
    return clusters[:limit] if limit else clusters


def merged_clusters(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """InferenceClusters by name, in order; a later document of a name adds its node pools."""
    out: dict[str, dict[str, Any]] = {}
    for doc in docs:
        if doc.get("kind") != "InferenceCluster":
            continue
        name = str(doc["metadata"]["name"])
        pools = list((doc.get("spec") or {}).get("nodePools") or [])
        if name not in out:
            out[name] = {**doc, "spec": {**doc.get("spec", {}), "nodePools": pools}}
            continue
        have = out[name]["spec"]["nodePools"]
        twice = {str(p["name"]) for p in have} & {str(p["name"]) for p in pools}
        if twice:
            sys.exit(
                f"InferenceCluster {name}: spec.nodePools {sorted(twice)} declared twice "
                "(a later document of a cluster may only add pools)"
            )
        have += pools
    return out


def pool_of(cluster: str, np: Mapping[str, Any], classes: Mapping[str, Any]) -> Pool:
    cls = classes.get(np["className"])
    if cls is None:
        sys.exit(
            f"InferenceCluster {cluster}: spec.nodePools[{np['name']}].className "
            f"{np['className']!r} is not an InferenceClass of the fleet file"
        )
    # claim defaults to DRA (the XRD's default); Synthetic devices have no driver to publish.
    dra = [d for d in cls["spec"].get("devices") or [] if (d.get("claim") or "DRA") == "DRA"]
    count = int(np.get("maxNodeCount") or np.get("nodeCount") or 0)
    capacity = str(np.get("capacity") or "Nodes")
    return Pool(str(np["name"]), str(np["className"]), count, dra, capacity)


def classes_of(docs: list[dict[str, Any]], clusters: list[Cluster]) -> list[dict[str, Any]]:
    used = {p.class_name for c in clusters for p in c.pools}
    return [d for d in docs if d.get("kind") == "InferenceClass" and d["metadata"]["name"] in used]


# -- the workload cluster's objects ----------------------------------------------------------


def node(name: str, pool: str | None, taints: list[Mapping[str, str]]) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"}
    if pool:
        labels[POOL_LABEL] = pool
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
        "spec": {"taints": [dict(t) for t in taints]},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def resource_slice(node_name: str, devices: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One ResourceSlice per driver on the node (usually one): the class's DRA devices."""
    by_driver: dict[str, list[dict[str, Any]]] = {}
    for dev in devices:
        for i in range(int(dev.get("count", 1))):
            entry: dict[str, Any] = {"name": f"{dev['name']}-{i}"}
            if dev.get("attributes"):
                entry["attributes"] = dict(dev["attributes"])
            if dev.get("capacity"):
                entry["capacity"] = dict(dev["capacity"])
            by_driver.setdefault(str(dev["driver"]), []).append(entry)
    return resource_slices(node_name, by_driver)


def device_classes(cluster: Cluster) -> list[dict[str, Any]]:
    seen: dict[str, str] = {}
    for pool in cluster.pools:
        for dev in pool.devices:
            seen.setdefault(str(dev.get("deviceClassName") or dev["driver"]), str(dev["driver"]))
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        }
        for name, driver in sorted(seen.items())
    ]


def workload_objects(cluster: Cluster) -> list[dict[str, Any]]:
    """Nodes, ResourceSlices and DeviceClasses of one workload cluster."""
    out = device_classes(cluster)
    out.append(node(f"{cluster.name}-{SYSTEM_POOL}-0", None, []))
    for pool in cluster.pools:
        for name in pool.node_names(cluster.name):
            out.append(node(name, pool.name, [GPU_TAINT]))
            out += resource_slice(name, pool.devices)
    return out


# -- the control plane's objects -------------------------------------------------------------


def kubeconfig(cluster: Cluster, ca_pem: str, token: str) -> str:
    import base64  # noqa: PLC0415 - only here

    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster.name,
                    "cluster": {
                        "server": f"https://127.0.0.1:{cluster.ports['apiserver']}",
                        "certificate-authority-data": base64.b64encode(ca_pem.encode()).decode(),
                    },
                }
            ],
            "users": [{"name": "admin", "user": {"token": token}}],
            "contexts": [
                {"name": cluster.name, "context": {"cluster": cluster.name, "user": "admin"}}
            ],
            "current-context": cluster.name,
        }
    )


def existing_cluster(cluster: Cluster) -> dict[str, Any]:
    """The InferenceCluster as an Existing one, reached through its kubeconfig Secret."""
    pools = [
        {"name": p.name, "className": p.class_name, "nodeCount": p.nodes, "capacity": p.capacity}
        for p in cluster.pools
    ]
    spec: dict[str, Any] = {
        "cluster": {
            "source": "Existing",
            "existing": {"secretRef": {"name": cluster.secret, "key": "kubeconfig"}},
        },
        "nodePools": pools,
    }
    if cluster.spec.get("taints"):
        spec["taints"] = cluster.spec["taints"]
    meta: dict[str, Any] = {"name": cluster.name}
    if cluster.labels:
        meta["labels"] = cluster.labels
    return {"apiVersion": MP, "kind": "InferenceCluster", "metadata": meta, "spec": spec}


def to_json(clusters: list[Cluster], classes: list[dict[str, Any]]) -> str:
    data = {
        "clusters": [{**asdict(c), "ports": c.ports, "secret": c.secret} for c in clusters],
        "classes": classes,
    }
    return json.dumps(data, indent=2)


def load(path: Path) -> tuple[list[Cluster], list[dict[str, Any]]]:
    data = json.loads(path.read_text())
    clusters = [
        Cluster(
            c["name"],
            c["index"],
            [
                Pool(p["name"], p["class_name"], p["nodes"], p["devices"], p["capacity"])
                for p in c["pools"]
            ],
            c["spec"],
            c["labels"],
        )
        for c in data["clusters"]
    ]
    return clusters, data["classes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("files", nargs="+", type=Path, help="fleet files or folders")
    parser.add_argument("--clusters", type=int, default=0, help="only the first N clusters")
    parser.add_argument("--shell", action="store_true", help="print NAME INDEX per cluster")
    args = parser.parse_args()
    missing = [str(f) for f in args.files if not f.exists()]
    if missing:
        sys.exit(f"fleet file not found: {', '.join(missing)}")
    docs = documents(args.files)
    clusters = plan(docs, args.clusters or None)
    if not clusters:
        sys.exit(f"no InferenceCluster in {', '.join(map(str, args.files))}")
    print(to_json(clusters, classes_of(docs, clusters)))


if __name__ == "__main__":
    main()
