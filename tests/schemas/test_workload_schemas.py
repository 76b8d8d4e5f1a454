"""Every manifest a ModelReplica composes validates against its kind's real schema.

The schemas are the pinned ones of tools/schemas/modules.txt; run
``tools/schemas/fetch.sh`` (about ten seconds, through the Go module proxy) to fetch
them. Without them, or without bin/crank, these tests skip.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from modelplane.dev import render, schemas
from modelplane.domain.workload import (
    DeviceRequest,
    Engine,
    Member,
    Phase,
    Replica,
    Role,
    ServingMode,
    WorkloadCluster,
    cache_claim,
    plan,
)

from tests.compose import test_model_replica_render as recipes

pytestmark = [
    pytest.mark.crank,
    pytest.mark.skipif(
        not schemas.available(), reason="schemas not fetched: run tools/schemas/fetch.sh"
    ),
]

GPU = DeviceRequest("gpu", "gpu.nvidia.com", 8, ('device.driver == "gpu.nvidia.com"\n',))
NIC = DeviceRequest("nic", "efa.networking.k8s.aws", 16)
CLUSTER = WorkloadCluster("eks", "eks")

RICH_POD: dict[str, Any] = {
    "metadata": {"annotations": {"a": "b"}, "labels": {"app": "x"}},
    "spec": {
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "x"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                        "weight": 1,
                    }
                ]
            }
        },
        "containers": [
            {
                "args": ["--tp", "8"],
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "T", "valueFrom": {"secretKeyRef": {"key": "k", "name": "s"}}},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                ],
                "image": "vllm/vllm-openai:v0.23.0",
                "name": "engine",
                "resources": {"limits": {"cpu": "16", "memory": "64Gi"}},
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
            },
            {"image": "busybox", "name": "logs", "ports": [{"containerPort": 9000}]},
        ],
        "imagePullSecrets": [{"name": "regcred"}],
        "terminationGracePeriodSeconds": 90,
        "tolerations": [{"effect": "NoSchedule", "key": "dedicated", "operator": "Exists"}],
    },
}


def _member(role: Role, **fields: Any) -> Member:
    return Member(role, copy.deepcopy(RICH_POD), "gpu-h200", **fields)


CASES: list[Replica] = [
    # standalone-no-claims
    Replica("solo-abcde", "ml-team", (Engine("solo", (_member(Role.STANDALONE),)),)),
    # gang-cache-claims
    Replica(
        "gang-abcde",
        "ml-team",
        (
            Engine(
                "gang",
                (
                    _member(Role.LEADER),
                    _member(Role.WORKER, device_requests=(GPU, NIC), worker_nodes=3),
                ),
                copies=2,
            ),
        ),
        deployment="gang",
        cache_claim=cache_claim("weights"),
    ),
    # prefill-decode-gang
    Replica(
        "pd-abcde",
        "ml-team",
        (
            Engine("p", (_member(Role.STANDALONE, device_requests=(GPU,)),), phase=Phase.PREFILL),
            Engine(
                "d",
                (
                    _member(Role.LEADER, device_requests=(GPU, NIC)),
                    _member(Role.WORKER, device_requests=(GPU, NIC), worker_nodes=1),
                ),
                phase=Phase.DECODE,
            ),
        ),
        ServingMode.PREFILL_DECODE,
        cache_claim=cache_claim("weights"),
    ),
    # two-engines
    Replica(
        "two-abcde",
        "ml-team",
        (
            Engine("a", (_member(Role.STANDALONE, device_requests=(GPU,)),), copies=3),
            Engine("b", (_member(Role.STANDALONE, device_requests=(GPU,)),)),
        ),
    ),
]


def _assert_valid(docs: list[dict[str, Any]]) -> None:
    report = schemas.validate(docs)
    assert report.ok, "\n".join(report.failures + report.missing) or report.output
    assert report.validated == len(docs)


def test_planned_manifests_validate() -> None:
    # One crank run for every case: a failure line names the object, and so its case.
    objects = [c.resource for case in CASES for c in plan(case, CLUSTER)]
    _assert_valid(schemas.unwrap(objects))


def test_recipe_replicas_validate(functions: render.Functions) -> None:
    objects = [o for case in recipes.CASES for o in recipes.rendered(functions, case.folder)[1]]
    assert len(objects) > 9 * 4, (
        "every recipe composes at least a namespace, workload, service, route"
    )
    _assert_valid(schemas.unwrap(objects))


def test_the_validator_catches_what_an_api_server_would_refuse() -> None:
    objects = [c.resource for c in plan(CASES[1], CLUSTER)]
    docs = schemas.unwrap(objects)
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["size"] = "4"
    rct = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClass"] = "gpu"
    obj = next(d for d in docs if d["kind"] == "Object")
    obj["spec"]["readiness"] = {"policy": "DeriveFromCelQuery"}
    report = schemas.validate([lws, rct, obj])
    failures = "\n".join(report.failures)
    assert "leaderWorkerTemplate.size" in failures
    assert 'unknown field: "deviceClass"' in failures
    assert "celQuery must be set" in failures
