"""A request decoded with its fleet left encoded answers exactly as one decoded whole."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from modelplane import planning, registry, runtime
from modelplane.planning import wire

from tests.compose.deployments import (
    as_fleet,
    call,
    inference_cluster,
    model_deployment,
    other_replica,
)
from tests.compose.test_fleet_read import BAD_CLUSTERS, BAD_REPLICAS
from tests.requests import request

Doc = dict[str, Any]
CLUSTERS = [inference_cluster(f"c{i}", labels={"tier": "gpu"}) for i in range(3)]


def _encoded(
    xr: Doc, clusters: Sequence[Doc], replicas: Sequence[Doc], *, extra: bool = False
) -> bytes:
    req = request(xr, required={planning.CLUSTERS: clusters, planning.REPLICAS: replicas})
    for name in (planning.CLUSTERS, planning.REPLICAS):
        req.required_resources[name].SetInParent()  # answered, even when empty
    if extra:  # Crossplane before v2 answers in extra_resources
        for name in (planning.CLUSTERS, planning.REPLICAS):
            req.extra_resources[name].CopyFrom(req.required_resources[name])
            del req.required_resources[name]
    return bytes(req.SerializeToString())


def _answers(data: bytes) -> tuple[bytes, bytes, bytes]:
    """The response to a request decoded whole, then fleet-encoded cold and warm."""
    planning.forget()
    whole = runtime.run(fnv1.RunFunctionRequest.FromString(data), registry.COMPOSERS)
    planning.forget()
    cold = runtime.run(wire.decode_request(data), registry.COMPOSERS)
    warm = runtime.run(wire.decode_request(data), registry.COMPOSERS)
    return tuple(bytes(r.SerializeToString(deterministic=True)) for r in (whole, cold, warm))  # type: ignore[return-value]


def _settled() -> tuple[Doc, list[Doc]]:
    """A deployment of two replicas, placed and Ready, beside another team's."""
    xr = model_deployment(replicas=2)
    placed = as_fleet(call(xr, CLUSTERS, []), ready=True)
    return xr, [*placed, other_replica("llama", "c0", "gpu-l4")]


@pytest.mark.parametrize("extra", [False, True], ids=["required", "extra"])
def test_a_settled_deployment_answers_the_same(extra: bool) -> None:
    xr, replicas = _settled()
    whole, cold, warm = _answers(_encoded(xr, CLUSTERS, replicas, extra=extra))
    assert cold == whole
    assert warm == whole


def test_an_empty_fleet_answers_the_same() -> None:
    whole, cold, warm = _answers(_encoded(model_deployment(), [], []))
    assert cold == warm == whole


def test_a_moving_replica_answers_the_same() -> None:
    xr, replicas = _settled()
    xr = model_deployment(replicas=2, selector={"tier": "cpu"})  # every cluster left out
    whole, cold, warm = _answers(_encoded(xr, CLUSTERS, replicas))
    assert cold == warm == whole


@pytest.mark.parametrize(("mutate", "_says"), BAD_REPLICAS)
def test_an_unreadable_replica_answers_the_same(mutate: Any, _says: Any) -> None:
    xr, replicas = _settled()
    for i in (0, -1):  # this deployment's, and another team's
        broken = copy.deepcopy(replicas)
        mutate(broken[i])
        whole, cold, warm = _answers(_encoded(xr, CLUSTERS, broken))
        assert cold == warm == whole


@pytest.mark.parametrize(("mutate", "_says"), BAD_CLUSTERS)
def test_an_unreadable_cluster_answers_the_same(mutate: Any, _says: Any) -> None:
    xr, replicas = _settled()
    clusters = copy.deepcopy(CLUSTERS)
    mutate(clusters[1])
    whole, cold, warm = _answers(_encoded(xr, clusters, replicas))
    assert cold == warm == whole


def test_another_kind_s_request_decodes_whole() -> None:
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelCache", "metadata": {"name": "c"}}
    req = request(xr, required={planning.CLUSTERS: CLUSTERS})
    data = req.SerializeToString()
    assert wire.decode_request(data) == fnv1.RunFunctionRequest.FromString(data)


def test_the_fleet_stays_encoded_and_the_rest_decodes() -> None:
    xr, replicas = _settled()
    data = _encoded(xr, CLUSTERS, replicas)
    req = wire.decode_request(data)
    items = wire.encoded_items(req.required_resources[planning.REPLICAS])
    assert all(isinstance(i, bytes) for i in items)
    assert len(items) == len(replicas)
    assert req.observed.composite == fnv1.RunFunctionRequest.FromString(data).observed.composite


def test_the_registry_decodes_as_planning_does() -> None:
    """The runtime decodes through the registry alone: the fleet stays encoded there too."""
    xr, replicas = _settled()
    data = _encoded(xr, CLUSTERS, replicas)
    req = registry.decode_request(data)
    assert req == wire.decode_request(data)
    items = planning.encoded_items(req.required_resources[planning.CLUSTERS])
    assert [isinstance(i, bytes) for i in items] == [True] * len(CLUSTERS)
    planning.forget()
    answer = runtime.run(req, registry.COMPOSERS)
    planning.forget()
    whole = runtime.run(fnv1.RunFunctionRequest.FromString(data), registry.COMPOSERS)
    assert planning.deterministic_bytes(answer) == planning.deterministic_bytes(whole)


class _Runner:
    def RunFunction(self, req: fnv1.RunFunctionRequest, _: Any) -> fnv1.RunFunctionResponse:
        return runtime.run(req, registry.COMPOSERS)


def test_a_server_registered_with_the_wire_decoder_answers_the_same() -> None:
    xr, replicas = _settled()
    data = _encoded(xr, CLUSTERS, replicas)
    served = grpc.server(ThreadPoolExecutor(1))
    runtime.add_function_runner(_Runner(), served)
    port = served.add_insecure_port("127.0.0.1:0")
    served.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            answer = stub.RunFunction(fnv1.RunFunctionRequest.FromString(data), timeout=30)
    finally:
        served.stop(None)
    planning.forget()
    whole = runtime.run(fnv1.RunFunctionRequest.FromString(data), registry.COMPOSERS)
    assert answer.SerializeToString(deterministic=True) == whole.SerializeToString(
        deterministic=True
    )


def test_the_buffer_is_released_once_read_before_the_fleet_is_copied() -> None:
    """``release`` comes once the buffer is read: the request decodes the same after it
    (a read of the buffer afterwards would fail: the view is released)."""
    xr, replicas = _settled()
    data = _encoded(xr, CLUSTERS, replicas)
    view = memoryview(bytearray(data))
    calls: list[int] = []

    def release() -> None:
        calls.append(len(calls))
        view.release()

    assert wire.decode_request(view, release) == wire.decode_request(data)
    assert calls == [0]


def test_a_request_decoded_whole_keeps_its_buffer() -> None:
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelCache", "metadata": {"name": "c"}}
    data = request(xr, required={planning.CLUSTERS: CLUSTERS}).SerializeToString()
    calls: list[int] = []
    assert wire.decode_request(data, lambda: calls.append(1)) == fnv1.RunFunctionRequest.FromString(
        data
    )
    assert calls == []
