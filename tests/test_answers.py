"""A request named as one answered before gets the response composed then
(:mod:`modelplane.runtime.answers`), and any change to what it holds is a new name
(:func:`modelplane.planning.request_identity`).

Requests here are written as Crossplane's Go code writes them: every fleet object's map
entries in an order of their own (:func:`_encoded_in_order`), so the same request is never
the same bytes; the worker decodes them as it decodes a served call.
"""

from __future__ import annotations

import copy
import math
from multiprocessing import Pipe
from typing import Any

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning, registry, runtime
from modelplane.domain.dra import CallBudget
from modelplane.runtime.answers import Answers
from modelplane.runtime.worker import Worker

from tests.compose.deployments import inference_cluster, model_deployment, other_replica
from tests.compose.test_fleet_identity import _encoded_in_order, _identified
from tests.requests import request
from tests.test_main import PATIENCE_SECONDS, _server, _wait_ready

Doc = dict[str, Any]
TAG = "3f1c"  # Crossplane's tag: the same for a request sent again unchanged


def _fleet(replicas: int = 3) -> dict[str, list[Doc]]:
    clusters = [
        _identified(inference_cluster(f"c{i}", [("gpu-l4", 4, ())]), f"uc-{i}", "1")
        for i in range(2)
    ]
    fleet = [
        _identified(other_replica(f"team-{i}", f"c{i % 2}", "gpu-l4"), f"ur-{i}", "1")
        for i in range(replicas)
    ]
    return {planning.CLUSTERS: clusters, planning.REPLICAS: fleet}


def _xr() -> Doc:
    xr = model_deployment(replicas=2)
    xr["metadata"] |= {"uid": "xr-1", "resourceVersion": "10"}
    return xr


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _wire(
    xr: Doc, required: dict[str, list[Doc]], order: int, *, tag: str = TAG, **parts: Any
) -> bytes:
    """The request's bytes as Go may write them: each object's map entries in ``order``."""
    head = request(xr, tag=tag, observed=parts.get("observed"))
    if "context" in parts:
        head.context.update(parts["context"])
    for name, details in parts.get("details", {}).items():
        head.observed.resources[name].connection_details.update(details)
    data: bytes = head.SerializeToString()
    for name, docs in required.items():
        items = b"".join(_field(1, _field(1, _encoded_in_order(d, order))) for d in docs)
        data += _field(8, _field(1, name.encode()) + _field(2, items))
    return data


def _name(data: bytes) -> bytes | None:
    return planning.request_identity(planning.decode_request(data))


def test_a_request_encoded_anew_is_named_the_same() -> None:
    first, again = _wire(_xr(), _fleet(), 0), _wire(_xr(), _fleet(), 1)
    assert first != again  # Go's map order: other bytes, the same request
    assert _name(first) == _name(again) is not None


def _another_version(fleet: dict[str, list[Doc]]) -> None:
    fleet[planning.REPLICAS][1]["metadata"]["resourceVersion"] = "2"


def _one_more(fleet: dict[str, list[Doc]]) -> None:
    extra = _identified(other_replica("team-9", "c1", "gpu-l4"), "ur-9", "1")
    fleet[planning.REPLICAS].append(extra)


def _listed_otherwise(fleet: dict[str, list[Doc]]) -> None:
    fleet[planning.REPLICAS].reverse()


def _loop_call(fleet: dict[str, list[Doc]]) -> None:
    """A later call of Crossplane's requirement loop: the first call's tag, more required."""
    fleet[planning.OWN] = []


@pytest.mark.parametrize(
    "change",
    [_another_version, _one_more, _listed_otherwise, _loop_call],
    ids=["a new resourceVersion", "one more object", "listed otherwise", "the loop's next call"],
)
def test_a_change_to_what_is_required_is_a_new_name(change: Any) -> None:
    fleet = _fleet()
    before = _name(_wire(_xr(), fleet, 0))
    change(fleet)
    assert _name(_wire(_xr(), fleet, 1)) != before


@pytest.mark.parametrize(
    "part",
    [
        {"context": {"apiextensions.crossplane.io/environment": {"zone": "b"}}},
        {
            "observed": {
                "r": {"kind": "ModelReplica", "metadata": {"uid": "o", "resourceVersion": "1"}}
            }
        },
        {"details": {"r": {"password": b"new"}}},
        {"tag": "another"},
    ],
    ids=["the context", "an observed resource", "its connection details", "the tag"],
)
def test_a_change_besides_the_fleet_is_a_new_name(part: dict[str, Any]) -> None:
    observed = {"r": {"kind": "ModelReplica", "metadata": {"uid": "o", "resourceVersion": "0"}}}
    base: dict[str, Any] = {"observed": observed, "details": {"r": {"password": b"old"}}}
    assert _name(_wire(_xr(), _fleet(), 0, **base)) != _name(
        _wire(_xr(), _fleet(), 0, **(base | part))
    )


def test_a_composite_without_identity_is_named_by_content() -> None:
    plain = model_deployment(replicas=2)
    edited = model_deployment(replicas=3)
    assert _name(_wire(plain, _fleet(), 0)) != _name(_wire(edited, _fleet(), 0))
    identified = _xr()
    assert _name(_wire(identified, _fleet(), 0)) != _name(_wire(plain, _fleet(), 0))


def test_objects_without_identity_are_named_by_content_in_any_order() -> None:
    plain = {n: [copy.deepcopy(d) for d in docs] for n, docs in _fleet().items()}
    for docs in plain.values():
        for doc in docs:
            del doc["metadata"]["uid"], doc["metadata"]["resourceVersion"]
    name = _name(_wire(_xr(), plain, 0))
    assert name == _name(_wire(_xr(), plain, 2)) is not None
    plain[planning.REPLICAS][0]["spec"]["clusterName"] = "c1"
    assert _name(_wire(_xr(), plain, 0)) != name


def test_a_request_without_a_tag_is_not_named() -> None:
    assert _name(_wire(_xr(), _fleet(), 0, tag="")) is None


def _response(*severities: int) -> fnv1.RunFunctionResponse:
    rsp = fnv1.RunFunctionResponse()
    for severity in severities:
        rsp.results.add(severity=severity, message="m")
    return rsp


def test_a_tag_is_named_only_once_seen_before() -> None:
    kept: Answers[bytes] = Answers()
    req = planning.decode_request(_wire(_xr(), _fleet(), 0))
    assert kept.name(req) is None  # a first sighting: naming it would cost a fleet read
    assert kept.name(req) == planning.request_identity(req)


def test_a_request_that_cannot_be_named_is_composed(monkeypatch: pytest.MonkeyPatch) -> None:
    def unnameable(req: fnv1.RunFunctionRequest) -> bytes:
        raise RecursionError

    monkeypatch.setattr(registry, "request_identity", unnameable)
    worker = _worker()
    data = _wire(_xr(), _fleet(), 0)
    assert [_answered(worker, data) for _ in range(3)] == [_composed(data)] * 3
    assert worker.answers.hits == 0


def test_what_is_kept_is_recalled_and_a_fatal_response_is_not_kept() -> None:
    kept: Answers[str] = Answers()
    kept.keep(b"a", _response(fnv1.SEVERITY_NORMAL), "answer a", 8)
    kept.keep(b"b", _response(fnv1.SEVERITY_FATAL), "answer b", 8)
    assert (kept.recall(b"a"), kept.recall(b"b"), kept.recall(None)) == ("answer a", None, None)
    assert kept.hits == 1


def test_the_least_recently_used_go_first_by_count_and_by_bytes() -> None:
    kept: Answers[str] = Answers(entries=2, kept_bytes=100)
    for name in (b"a", b"b"):
        kept.keep(name, _response(), name.decode(), 10)
    kept.recall(b"a")
    kept.keep(b"c", _response(), "c", 10)
    assert [kept.recall(n) for n in (b"a", b"b", b"c")] == ["a", None, "c"]
    kept.keep(b"d", _response(), "d", 95)  # with a or c: over the bytes
    assert (len(kept), kept.recall(b"d")) == (1, "d")
    kept.keep(b"e", _response(), "e", 101)  # larger than everything kept may be
    assert kept.recall(b"e") is None


def _worker() -> Worker:
    ours, _theirs = Pipe()
    return Worker(ours, registry.COMPOSERS)


def _answered(worker: Worker, data: bytes) -> bytes:
    req = planning.decode_request(data)
    return worker._answer(1, req, CallBudget(math.inf), "ModelDeployment test")


def _composed(data: bytes) -> bytes:
    planning.forget()
    rsp = runtime.run(planning.decode_request(data), registry.COMPOSERS)
    return runtime.serialize_response(rsp)


def test_a_worker_answers_a_request_sent_again_as_it_composed_it() -> None:
    worker = _worker()
    sent = [_wire(_xr(), _fleet(), order) for order in range(4)]
    answers = [_answered(worker, data) for data in sent]
    assert answers == [_composed(sent[0])] * 4
    assert worker.answers.hits == 2  # the first names nothing, the second is kept


def test_the_loop_s_next_call_under_the_same_tag_is_composed_anew() -> None:
    worker, fleet = _worker(), _fleet()
    for order in range(3):
        _answered(worker, _wire(_xr(), fleet, order))
    fleet[planning.CLUSTERS] = []  # every cluster gone: the next call places nothing
    later = _wire(_xr(), fleet, 3)
    assert _answered(worker, later) == _composed(later) != _composed(_wire(_xr(), _fleet(), 0))


def test_a_served_worker_answers_the_loop_s_next_call_for_what_it_holds() -> None:
    """Served, with a worker pool: a request sent again, then a call under the same tag
    holding other required resources, each answered as composed in process."""
    fleet = _fleet()
    sent = [_wire(_xr(), fleet, order) for order in range(3)]
    fleet[planning.CLUSTERS] = []
    sent.append(_wire(_xr(), fleet, 3))
    with (
        _server("modeldeployment", "--insecure", "--workers", "2") as (proc, address),
        grpc.insecure_channel(address) as channel,
    ):
        _wait_ready(channel, proc)
        call = channel.unary_unary(
            "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction",
            request_serializer=None,
            response_deserializer=None,
        )
        got = [call(data, timeout=PATIENCE_SECONDS) for data in sent]
    assert got == [_composed(data) for data in sent]
    assert got[-1] != got[0]


def test_the_runner_in_process_answers_a_copy() -> None:
    runner = runtime.FunctionRunner()
    req = planning.decode_request(_wire(_xr(), _fleet(), 0))
    budget = CallBudget(math.inf)
    first, second, third = (runner._answer(req, budget) for _ in range(3))
    assert first == second == third
    assert third is not second
    assert runner.answers.hits == 1
