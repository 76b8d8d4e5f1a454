"""Requests that nest deep (a free-form pod template of another team's ModelReplica, down
to Kubernetes' own JSON depth limit): protobuf's default refuses them, the served function
reads them and places as it would without them."""

from __future__ import annotations

import subprocess
import sys

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import struct_pb2 as structpb
from modelplane import planning, registry, runtime
from modelplane.dev import render

from tests.compose.deployments import (
    inference_cluster,
    model_deployment,
    other_replica,
)
from tests.requests import request

# Generous: a loaded 2-core machine may take a while; nothing here measures time.
PATIENCE_SECONDS = 120


def _nest(value: structpb.Struct, depth: int) -> None:
    """Nest ``depth`` objects under ``value`` ({"a": {"a": ... {"leaf": "x"}}})."""
    for _ in range(depth):
        value = value.fields["a"].struct_value
    value["leaf"] = "x"


def deep_fleet_request(deep_replica_depth: int | None) -> fnv1.RunFunctionRequest:
    """The getting-started deployment on a fleet where another team's replica nests deep.

    The depth counts JSON levels inside the replica's pod template, a free-form object
    Kubernetes stores as given (down to its own limit).
    """
    xr = model_deployment(replicas=2)
    clusters = [inference_cluster("eks-a", [("gpu-l4", 4, ())])]
    replicas = [other_replica("theirs", "eks-a", "gpu-l4")]
    req = request(xr, required={planning.CLUSTERS: clusters, planning.REPLICAS: replicas})
    if deep_replica_depth is not None:
        obj = req.required_resources[planning.REPLICAS].items[0].resource
        engine = obj.fields["spec"].struct_value.fields["engines"].list_value.values[0]
        member = engine.struct_value.fields["members"].list_value.values[0].struct_value
        _nest(
            member.fields["template"].struct_value.fields["metadata"].struct_value,
            deep_replica_depth,
        )
    return req


def _run_over_grpc(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    limit = [
        ("grpc.max_send_message_length", 64 << 20),
        ("grpc.max_receive_message_length", 64 << 20),
    ]
    with render.serve(["ModelDeployment"]) as running:
        target = running.targets["ModelDeployment"]
        with grpc.insecure_channel(target, options=limit) as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=PATIENCE_SECONDS)
    return rsp


def placed(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return sorted(
        key for key, r in rsp.desired.resources.items() if r.resource["kind"] == "ModelReplica"
    )


def test_protobuf_alone_refuses_a_request_nested_100_levels() -> None:
    """Why the server raises the limit: protobuf's default stops near 32 JSON levels."""
    data = deep_fleet_request(100).SerializeToString()
    probe = subprocess.run(
        [sys.executable, "-c", _DECODE_PROBE, "default"],
        input=data,
        capture_output=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert probe.returncode != 0
    assert b"DecodeError" in probe.stderr
    allowed = subprocess.run(
        [sys.executable, "-c", _DECODE_PROBE, "deep"],
        input=data,
        capture_output=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert allowed.returncode == 0, allowed.stderr


_DECODE_PROBE = """
import sys
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import runtime
if sys.argv[1] == "deep":
    runtime.allow_deep_messages()
fnv1.RunFunctionRequest.FromString(sys.stdin.buffer.read())
"""


@pytest.mark.parametrize(
    "depth",
    [
        pytest.param(100, id="100-levels"),
        pytest.param(runtime.KUBERNETES_MAX_JSON_DEPTH, id="kubernetes-limit"),
    ],
)
def test_a_deeply_nested_replica_of_another_team_breaks_no_deployment(depth: int) -> None:
    """One such ModelReplica anywhere must not stop every ModelDeployment reading the fleet."""
    rsp = _run_over_grpc(deep_fleet_request(depth))
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    assert fatal == []
    assert placed(rsp) == placed(runtime.run(deep_fleet_request(None), registry.COMPOSERS))
    assert len(placed(rsp)) == 2
