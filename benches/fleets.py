"""Generated fleets for the ModelDeployment benchmarks: every cluster publishes 8 GPU pools
of 6 InferenceClasses, every object carries a ``uid`` and ``resourceVersion`` as objects
read from the API server do, and the deployment under test wants one replica per 10
clusters and already has half of them (so each call retains, fills and explains)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning, registry, runtime
from modelplane.dev import requirements
from modelplane.domain import api, naming

API = api.MODELPLANE
SIZES = {"S": (20, 100), "M": (200, 1_000), "L": (1_000, 10_000), "5xL": (5_000, 50_000)}
"""Clusters and ModelReplicas in the fleet, per size."""
POOLS_PER_CLUSTER = 8


def _gpu(memory: str, count: int, arch: str) -> dict[str, Any]:
    return {
        "name": "gpu",
        "claim": "DRA",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": count,
        "attributes": {"architecture": {"string": arch}},
        "capacity": {"memory": {"value": memory}},
    }


CLASSES: list[list[dict[str, Any]]] = [
    [_gpu("23034Mi", 1, "Ada Lovelace")],
    [_gpu("46068Mi", 1, "Ada Lovelace")],
    [_gpu("40960Mi", 1, "Ampere")],
    [_gpu("24564Mi", 1, "Ampere")],
    [
        _gpu("81559Mi", 8, "Hopper"),
        {
            "name": "nic",
            "claim": "Synthetic",
            "driver": "nic.nvidia.com",
            "count": 8,
            "attributes": {"linkType": {"string": "infiniband"}},
        },
    ],
    [
        _gpu("140Gi", 8, "Hopper"),
        {
            "name": "efa",
            "claim": "DRA",
            "driver": "dra.net",
            "deviceClassName": "efa.networking.k8s.aws",
            "count": 16,
        },
    ],
]
SELECTORS = [
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0\n',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0\n',
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
]


def uid(generation: int, serial: int) -> str:
    """A UUID-shaped uid, distinct per object and per generation of the fleet."""
    return f"{generation:08x}-0000-4000-8000-{serial:012x}"


def cluster(i: int) -> dict[str, Any]:
    name = f"cluster-{i:04}"
    pools = [
        {
            "name": f"pool-{p}",
            "nodes": 4 + (i + p) % 13,
            "devices": CLASSES[(i + p) % len(CLASSES)],
        }
        for p in range(POOLS_PER_CLUSTER)
    ]
    return {
        "apiVersion": API,
        "kind": "InferenceCluster",
        "metadata": {
            "name": name,
            "uid": uid(0, i),
            "resourceVersion": str(1000 + i),
            "labels": {"modelplane.ai/region": ["us", "eu", "ap"][i % 3], "tier": "gpu"},
        },
        "spec": {
            "cluster": {"source": "EKS", "eks": {"region": "us-east-1"}},
            "nodePools": [
                {"name": p["name"], "className": f"class-{(i + n) % 6}", "nodeCount": p["nodes"]}
                for n, p in enumerate(pools)
            ],
        },
        "status": {
            "gpuPools": pools,
            "gateway": {"address": f"198.51.100.{i % 250}"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
        },
    }


def member_template(model: str) -> dict[str, Any]:
    return {
        "spec": {
            "containers": [
                {
                    "name": "engine",
                    "image": "vllm/vllm-openai:v0.23.0",
                    "args": [
                        f"--model={model}",
                        "--served-model-name=qwen",
                        "--max-model-len=32768",
                        "--enable-auto-tool-choice",
                        "--tool-call-parser=hermes",
                    ],
                    "env": [
                        {
                            "name": "HF_TOKEN",
                            "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}},
                        }
                    ],
                }
            ]
        }
    }


def replica(
    deployment: str, namespace: str, cluster_: str, index: int, pool: str
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {
            "name": naming.replica_name(deployment, cluster_, index),
            "namespace": namespace,
            "uid": "",  # set by fleet_request
            "resourceVersion": "7",
            "labels": {
                api.DEPLOYMENT_LABEL: deployment,
                api.CLUSTER_LABEL: cluster_,
                api.INDEX_LABEL: str(index),
            },
        },
        "spec": {
            "clusterName": cluster_,
            "engines": [
                {
                    "name": "engine",
                    "members": [
                        {
                            "role": "Standalone",
                            "nodePoolName": pool,
                            "deviceRequests": [
                                {
                                    "name": "gpu",
                                    "deviceClassName": "gpu.nvidia.com",
                                    "count": 1,
                                    "selectors": [{"cel": SELECTORS[0]}],
                                }
                            ],
                            "template": member_template(f"org/{deployment}"),
                        }
                    ],
                }
            ],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]},
    }


def deployment(replicas: int) -> dict[str, Any]:
    member = {
        "role": "Standalone",
        "nodeSelector": {
            "devices": [{"name": "gpu", "count": 1, "selectors": [{"cel": SELECTORS[1]}]}]
        },
        "template": member_template("Qwen/Qwen3-8B"),
    }
    return {
        "apiVersion": API,
        "kind": "ModelDeployment",
        "metadata": {"name": "qwen", "namespace": "ml-team"},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": "qwen"}},
                "spec": {"engines": [{"name": "engine", "members": [member]}]},
            },
        },
    }


def _fleet(clusters: int, replicas: int) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """The deployment, the clusters and every replica of a fleet, as objects."""
    wanted = max(clusters // 10, 1)
    found = [cluster(i) for i in range(clusters)]
    own = wanted // 2
    fleet = []
    for i in range(replicas):
        if i < own:
            # This deployment's own replicas: one per cluster, on a pool that fits it.
            item = replica("qwen", "ml-team", f"cluster-{i * 7 % clusters:04}", 0, "pool-1")
        else:
            where = f"cluster-{i % clusters:04}"
            item = replica(
                f"model-{i % 97}", f"team-{i % 13}", where, i // clusters, f"pool-{i % 8}"
            )
        item["metadata"]["uid"] = uid(0, clusters + i)
        fleet.append(item)
    return deployment(wanted), found, fleet


def whole_fleet_request(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    """A request holding the fleet's clusters and every replica: what a placing call read
    before the clusters published their ledgers (and still reads when it must widen)."""
    xr, found, fleet = _fleet(clusters, replicas)
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="bench"))
    req.observed.composite.resource.CopyFrom(resource.dict_to_struct(xr))
    for name, objects in ((planning.CLUSTERS, found), (planning.REPLICAS, fleet)):
        items = req.required_resources[name].items
        for obj in objects:
            items.add().resource.CopyFrom(resource.dict_to_struct(obj))
    return req


def fleet_request(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    """The request of a placing reconcile once its requirements settle, as Crossplane sends
    it (it seeds a reconcile's first call with the last one's requirements): its own
    replicas, the clusters they run on and the replicas there, every cluster with its
    ledger (``status.ledger``, as the InferenceCluster function publishes it), and the
    replicas on the clusters it places on."""
    xr, found, fleet = _fleet(clusters, replicas)
    structs = [resource.dict_to_struct(r) for r in fleet]
    on: dict[str, list[Any]] = {}
    for obj, encoded in zip(fleet, structs, strict=True):
        on.setdefault(obj["spec"]["clusterName"], []).append(encoded)
    for obj in found:
        name = obj["metadata"]["name"]
        ledger, _ = planning.published_ledger(name, obj["status"]["gpuPools"], on.get(name, []))
        if ledger is not None:
            obj["status"]["ledger"] = ledger
    # Fleets of every size share uids (uid(0, serial)): what another fleet's calls left
    # remembered would be taken for these objects.
    planning.forget()

    def request(answers: Mapping[str, list[Any]]) -> fnv1.RunFunctionRequest:
        req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="bench"))
        req.observed.composite.resource.CopyFrom(resource.dict_to_struct(xr))
        for name, objects in answers.items():
            items = req.required_resources[name].items
            for obj in objects:
                items.add().resource.CopyFrom(resource.dict_to_struct(obj))
        return req

    _, answers = requirements.settle(
        lambda answers: runtime.run(request(answers), registry.COMPOSERS), [*found, *fleet]
    )
    planning.forget()
    return request(answers)


def renew(req: fnv1.RunFunctionRequest, generation: int) -> None:
    """Make the fleet one the server never saw: a fresh uid on every object (one object
    answered for two requirements keeps one uid, as in the API server), and new pod
    templates on other deployments' replicas (what they charge and where they run stay;
    the deployment's own keep theirs, which it composes again as they are)."""
    serials: dict[tuple[str, str, str], int] = {}
    for name in sorted(req.required_resources):
        for item in req.required_resources[name].items:
            fields = item.resource.fields
            meta = fields["metadata"].struct_value.fields
            kind = fields["kind"].string_value
            key = (kind, meta["namespace"].string_value, meta["name"].string_value)
            serial = serials.setdefault(key, len(serials))
            meta["uid"].string_value = uid(generation, serial)
            labels = meta["labels"].struct_value.fields
            if kind == "ModelReplica" and labels[api.DEPLOYMENT_LABEL].string_value != "qwen":
                engine = fields["spec"].struct_value.fields["engines"].list_value.values[0]
                member = engine.struct_value.fields["members"].list_value.values[0]
                template = member.struct_value.fields["template"].struct_value.fields
                template["generation"].string_value = str(generation)
