"""What e2e/fleet/plan.py makes of a fleet file: the workload clusters' nodes, labels,
taints, ResourceSlices and DeviceClasses, and the Existing InferenceClusters."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.domain import dra as cel
from modelplane.domain.dra import Device

from e2e.fleet import plan
from e2e.fleet import rollout_scenarios as rollouts
from e2e.fleet.context import matching_per_node, pool_fits, slice_device

ROOT = Path(__file__).resolve().parents[2]
GETTING_STARTED = [
    ROOT / "examples/getting-started/platform.yaml",
    ROOT / "examples/getting-started/scale-the-platform/eks/platform-scale.yaml",
]
POOLS = ROOT / "e2e/fleet/pools.yaml"
E2E_FLEET = [*GETTING_STARTED, POOLS]  # what make e2e-fleet runs (tools/fleet/run.sh)
GPU = "gpu.nvidia.com"
QWEN_SELECTOR = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module")
def e2e_fleet() -> dict[str, plan.Cluster]:
    return {c.name: c for c in plan.plan(plan.documents(E2E_FLEET), 2)}


def test_e2e_fleet_is_the_first_two_clusters_with_the_added_pools(
    e2e_fleet: dict[str, plan.Cluster],
) -> None:
    pools = {
        name: [(p.name, p.class_name, p.nodes, p.capacity) for p in c.pools]
        for name, c in e2e_fleet.items()
    }
    assert pools == {
        "eks-us-east": [
            ("gpu-l4", "l4-1x-g6", 1, "Nodes"),
            ("gpu-l4-extra", "l4-1x-g6", 1, "Nodes"),
            ("gpu-t4-shared", "t4-4x-g4dn", 2, "Devices"),
        ],
        "eks-us-west": [
            ("gpu-l40s", "l40s-1x-g6e", 1, "Nodes"),
            ("gpu-v100", "v100-4x-p3", 1, "Nodes"),
        ],
    }
    east = e2e_fleet["eks-us-east"]
    assert east.index == 1
    assert e2e_fleet["eks-us-west"].index == 2
    assert east.labels == {"modelplane.ai/region": "us-east"}
    assert east.spec["cluster"]["source"] == "EKS"  # the first document's spec is kept
    assert len(set(east.ports.values())) == len(east.ports)
    assert not set(east.ports.values()) & set(e2e_fleet["eks-us-west"].ports.values())


def test_without_a_limit_every_cluster_is_planned() -> None:
    names = [c.name for c in plan.plan(plan.documents(GETTING_STARTED))]
    assert names == ["eks-us-east", "eks-us-west", "eks-eu-central"]


def test_nodes_carry_the_pool_label_and_the_gpu_taint(e2e_fleet: dict[str, plan.Cluster]) -> None:
    nodes = by_kind(plan.workload_objects(e2e_fleet["eks-us-east"]), "Node")
    assert sorted(nodes) == [
        "eks-us-east-gpu-l4-0",
        "eks-us-east-gpu-l4-extra-0",
        "eks-us-east-gpu-t4-shared-0",
        "eks-us-east-gpu-t4-shared-1",
        "eks-us-east-system-0",
    ]
    for name, node in nodes.items():
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == name
        assert node["metadata"]["annotations"] == {plan.KWOK_ANNOTATION: "fake"}
        if name.endswith("system-0"):
            assert plan.POOL_LABEL not in labels
            assert node["spec"]["taints"] == []
        else:
            pool = name.removeprefix("eks-us-east-").rsplit("-", 1)[0]
            assert labels[plan.POOL_LABEL] == pool
            assert node["spec"]["taints"] == [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
            ]


def test_each_pool_node_publishes_its_class_devices(e2e_fleet: dict[str, plan.Cluster]) -> None:
    objects = plan.workload_objects(e2e_fleet["eks-us-east"])
    slices = by_kind(objects, "ResourceSlice")
    per_node = {s["spec"]["nodeName"]: s for s in slices.values()}
    assert sorted(per_node) == [
        "eks-us-east-gpu-l4-0",
        "eks-us-east-gpu-l4-extra-0",
        "eks-us-east-gpu-t4-shared-0",
        "eks-us-east-gpu-t4-shared-1",
    ]
    t4 = per_node["eks-us-east-gpu-t4-shared-1"]
    assert t4["metadata"]["name"] == "eks-us-east-gpu-t4-shared-1-gpu-nvidia-com"
    assert t4["spec"]["driver"] == GPU
    assert t4["spec"]["pool"] == {
        "name": "eks-us-east-gpu-t4-shared-1",
        "generation": 1,
        "resourceSliceCount": 1,
    }
    assert t4["spec"]["devices"] == [
        {
            "name": f"gpu-{i}",
            "attributes": {"architecture": {"string": "Turing"}},
            "capacity": {"memory": {"value": "15360Mi"}},
        }
        for i in range(4)
    ]
    l4 = per_node["eks-us-east-gpu-l4-0"]["spec"]["devices"]
    assert l4 == [
        {
            "name": "gpu-0",
            "attributes": {"architecture": {"string": "Ada Lovelace"}},
            "capacity": {"memory": {"value": "23034Mi"}},
        }
    ]
    pool = pool_named(e2e_fleet, "eks-us-east", "gpu-t4-shared")
    assert pool.per_node(GPU) == 4
    assert pool.per_node("other.example.com") == 0


def test_the_device_class_selects_every_published_device(
    e2e_fleet: dict[str, plan.Cluster],
) -> None:
    objects = plan.workload_objects(e2e_fleet["eks-us-west"])
    classes = by_kind(objects, "DeviceClass")
    assert list(classes) == [GPU]
    (selector,) = classes[GPU]["spec"]["selectors"]
    devices = [
        slice_device(s["spec"]["driver"], d)
        for s in by_kind(objects, "ResourceSlice").values()
        for d in s["spec"]["devices"]
    ]
    assert len(devices) == 1 + 4  # one L40S node, one 4x V100 node
    assert all(cel.matches(selector["cel"]["expression"], d).matched for d in devices)
    other = Device.build("nic.example.com", {}, {})
    assert not cel.matches(selector["cel"]["expression"], other).matched


def test_the_sharing_pools_are_out_of_the_getting_started_models_reach(
    e2e_fleet: dict[str, plan.Cluster],
) -> None:
    """The other scenarios count on it: the model's >= 20Gi selector matches only the L4
    nodes (the getting-started one and the added one) and the L40S node, never the 4-GPU
    pools the sharing scenario uses."""
    matched: Counter[str] = Counter()
    for cluster in e2e_fleet.values():
        for rs in by_kind(plan.workload_objects(cluster), "ResourceSlice").values():
            for d in rs["spec"]["devices"]:
                if cel.matches(QWEN_SELECTOR, slice_device(rs["spec"]["driver"], d)).matched:
                    matched[rs["spec"]["nodeName"]] += 1
    assert matched == {
        "eks-us-east-gpu-l4-0": 1,
        "eks-us-east-gpu-l4-extra-0": 1,
        "eks-us-west-gpu-l40s-0": 1,
    }


FLEET = """
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: h100-8x}
spec:
  devices:
  - {name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 8,
     capacity: {memory: {value: 81559Mi}}}
  - {name: nic, claim: Synthetic, driver: nic.nvidia.com, count: 8,
     attributes: {linkType: {string: infiniband}}}
  - {name: rdma, claim: DRA, driver: rdma.example.com, deviceClassName: rdma, count: 2}
  - {name: spare, claim: DRA, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, count: 0}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: byo}
spec:
  cluster: {source: Existing}
  taints: [{key: modelplane.ai/maintenance, effect: NoSchedule}]
  nodePools:
  - {name: big, className: h100-8x, nodeCount: 1, maxNodeCount: 3, capacity: Devices}
"""


def test_synthetic_devices_are_not_published_and_drivers_get_a_slice_each() -> None:
    (cluster,) = plan.plan(docs(FLEET))
    (pool,) = cluster.pools
    assert pool.nodes == 3  # maxNodeCount, what the scheduler counts
    assert [d["name"] for d in pool.devices] == ["gpu", "rdma", "spare"]  # claim defaults to DRA
    objects = plan.workload_objects(cluster)
    slices = [o for o in objects if o["kind"] == "ResourceSlice"]
    assert len(slices) == 3 * 2  # per node: gpu.nvidia.com and rdma.example.com
    drivers = {s["spec"]["driver"] for s in slices}
    assert drivers == {GPU, "rdma.example.com"}
    first = {s["spec"]["driver"]: s for s in slices if s["spec"]["nodeName"] == "byo-big-0"}
    assert [d["name"] for d in first[GPU]["spec"]["devices"]] == [f"gpu-{i}" for i in range(8)]
    assert [d["name"] for d in first["rdma.example.com"]["spec"]["devices"]] == [
        "rdma-0",
        "rdma-1",
    ]
    assert all(s["spec"]["pool"]["name"] == s["spec"]["nodeName"] for s in slices)
    published = [d for s in slices for d in s["spec"]["devices"]]
    assert not [d for d in published if d["name"].startswith(("nic", "spare"))]
    classes = by_kind(objects, "DeviceClass")
    assert sorted(classes) == [GPU, "rdma"]
    assert classes["rdma"]["spec"]["selectors"] == [
        {"cel": {"expression": 'device.driver == "rdma.example.com"'}}
    ]
    assert pool.per_node(GPU) == 8


def test_the_existing_cluster_keeps_pools_capacity_taints_and_labels() -> None:
    (cluster,) = plan.plan(docs(FLEET))
    got = plan.existing_cluster(cluster)
    assert got == {
        "apiVersion": plan.MP,
        "kind": "InferenceCluster",
        "metadata": {"name": "byo"},
        "spec": {
            "cluster": {
                "source": "Existing",
                "existing": {"secretRef": {"name": "byo-kubeconfig", "key": "kubeconfig"}},
            },
            "nodePools": [
                {"name": "big", "className": "h100-8x", "nodeCount": 3, "capacity": "Devices"}
            ],
            "taints": [{"key": "modelplane.ai/maintenance", "effect": "NoSchedule"}],
        },
    }


def test_the_plan_round_trips_through_json(tmp_path: Path) -> None:
    clusters = plan.plan(plan.documents(E2E_FLEET), 2)
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json(clusters, plan.classes_of(plan.documents(E2E_FLEET), clusters)))
    loaded, classes = plan.load(path)
    assert loaded == clusters
    assert sorted(c["metadata"]["name"] for c in classes) == [
        "l4-1x-g6",
        "l40s-1x-g6e",
        "t4-4x-g4dn",
        "v100-4x-p3",
    ]
    data = json.loads(path.read_text())
    assert data["clusters"][0]["ports"]["apiserver"] == plan.PORT_BASE + 143


def test_a_pool_declared_twice_is_refused() -> None:
    again = FLEET + "---\n" + FLEET.split("---", 1)[1]
    with pytest.raises(SystemExit, match=r"InferenceCluster byo: spec.nodePools \['big'\]"):
        plan.plan(docs(again))


def test_an_unknown_class_is_named() -> None:
    bad = FLEET.replace("className: h100-8x", "className: a100")
    with pytest.raises(SystemExit, match=r"spec.nodePools\[big\].className 'a100'"):
        plan.plan(docs(bad))


def test_a_file_that_is_not_yaml_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "fleet.yaml"
    bad.write_text("kind: [unclosed\n")
    with pytest.raises(SystemExit, match=f"fleet file {bad} is not YAML"):
        plan.documents([bad])


def test_what_our_scheduler_fits_on_a_pool_by_its_capacity(
    e2e_fleet: dict[str, plan.Cluster],
) -> None:
    """What the e2e scenarios expect our scheduler to place (e2e/fleet/context.py)."""
    t4 = pool_named(e2e_fleet, "eks-us-east", "gpu-t4-shared")
    v100 = pool_named(e2e_fleet, "eks-us-west", "gpu-v100")
    turing = ['device.attributes["gpu.nvidia.com"].architecture == "Turing"']
    assert matching_per_node(t4, turing) == 4
    assert matching_per_node(v100, turing) == 0
    assert pool_fits(t4, turing, 2) == 2 * 2  # Devices: two 2-GPU pods per 4-GPU node
    assert pool_fits(t4, turing, 1) == 2 * 4
    assert pool_fits(t4, turing, 3) == 2  # 3 + 3 > 4: one per node
    assert pool_fits(t4, turing, 5) == 0  # no node holds 5
    volta = ['device.attributes["gpu.nvidia.com"].architecture == "Volta"']
    assert pool_fits(v100, volta, 2) == 1  # Nodes: a whole node per pod
    assert pool_fits(v100, volta, 1) == 1
    assert pool_fits(v100, turing, 1) == 0
    assert pool_fits(e2e_fleet["eks-us-east"].pools[0], [QWEN_SELECTOR], 1) == 1


def test_the_fleet_has_room_for_the_rolling_update_scenarios(
    e2e_fleet: dict[str, plan.Cluster],
) -> None:
    """rollout and bad-image run qwen-demo at three replicas (e2e/fleet/rollout_scenarios.py):
    the L4 and L40S pools fit one each, the T4 and V100 ones (under 20Gi) none."""
    fits = {
        (c.name, p.name): pool_fits(p, [QWEN_SELECTOR], 1)
        for c in e2e_fleet.values()
        for p in c.pools
    }
    assert fits == {
        ("eks-us-east", "gpu-l4"): 1,
        ("eks-us-east", "gpu-l4-extra"): 1,
        ("eks-us-east", "gpu-t4-shared"): 0,
        ("eks-us-west", "gpu-l40s"): 1,
        ("eks-us-west", "gpu-v100"): 0,
    }
    assert sum(fits.values()) == rollouts.REPLICAS


def pool_named(fleet: dict[str, plan.Cluster], cluster: str, pool: str) -> plan.Pool:
    return next(p for p in fleet[cluster].pools if p.name == pool)
