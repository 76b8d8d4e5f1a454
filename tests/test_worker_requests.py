"""A request reaches its worker whole, whether it goes through the pipe or as a memory file.

Requests of at least ``runtime.SHARED_REQUEST_BYTES`` go to a worker as a memory file
passed over the pipe (Linux), smaller ones through it; either way the worker must answer
exactly what the function answers in process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from unittest import mock

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from modelplane import planning, registry, runtime
from modelplane.runtime import worker

from tests.compose.deployments import (
    inference_cluster,
    model_deployment,
    other_replica,
)
from tests.requests import request
from tests.test_main import PATIENCE_SECONDS, _server, _wait_ready


def _fleet_request(replicas: int) -> fnv1.RunFunctionRequest:
    """The getting-started deployment on a fleet of other teams' replicas."""
    clusters = [inference_cluster(f"c{i}", [("gpu-l4", 40, ())]) for i in range(4)]
    fleet = [other_replica(f"team-{i}", f"c{i % 4}", "gpu-l4") for i in range(replicas)]
    for i, doc in enumerate(fleet):
        doc["metadata"]["name"] = f"r-{i}"
    return request(
        model_deployment(replicas=2),
        required={planning.CLUSTERS: clusters, planning.REPLICAS: fleet},
    )


@pytest.mark.parametrize(
    ("replicas", "shared"), [(4, False), (3_000, True)], ids=["through-the-pipe", "memory-file"]
)
def test_a_worker_answers_what_the_function_answers(replicas: int, shared: bool) -> None:
    req = _fleet_request(replicas)
    assert (req.ByteSize() >= runtime.SHARED_REQUEST_BYTES) is shared
    limit = [
        ("grpc.max_send_message_length", 64 << 20),
        ("grpc.max_receive_message_length", 64 << 20),
    ]
    args = ("modeldeployment", "--insecure", "--workers", "2")
    with (
        _server(*args) as (proc, address),
        grpc.insecure_channel(address, options=limit) as channel,
    ):
        _wait_ready(channel, proc)
        stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
        answers = [stub.RunFunction(req, timeout=PATIENCE_SECONDS) for _ in range(2)]
    planning.forget()
    want = runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    assert [a.SerializeToString(deterministic=True) for a in answers] == [want, want]
    assert not [r.message for r in answers[0].results if r.severity == fnv1.SEVERITY_FATAL]


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memory files are Linux's")
def test_a_memory_file_is_unmapped_as_soon_as_its_request_is_read() -> None:
    """The worker lets a large request's pages go once decoded from, before the fleet is
    copied into the request: they are not held beside it (issue 24's memory at 5xL)."""
    data = _fleet_request(3_000).SerializeToString()
    fd = os.memfd_create("test-request")
    os.write(fd, data)
    calls: list[bool] = []
    decode = registry.decode_request

    def watching(raw: memoryview, release: Callable[[], None]) -> fnv1.RunFunctionRequest:
        pages = raw.obj  # the memory file's mapping

        def released() -> None:
            release()
            calls.append(pages.closed)  # type: ignore[attr-defined]

        return decode(raw, released)

    with mock.patch.object(registry, "decode_request", watching):
        req = worker._decode(len(data), fd)
    assert calls == [True]
    assert req == planning.decode_request(data)
