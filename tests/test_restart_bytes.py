"""The same request gets the same response bytes from any server process: two servers
with different hash seeds (one composing in process, one in worker processes) answer
every kind's settled request with identical bytes, over v1 and v1beta1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import registry, runtime
from modelplane.dev import render

from tests import inprocess as loop
from tests.compose import test_waiting as cases
from tests.compose.test_golden import SETUPS
from tests.requests import request
from tests.test_main import PATIENCE_SECONDS, _wait_ready

_V1 = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"
_V1BETA1 = "/apiextensions.fn.proto.v1beta1.FunctionRunnerService/RunFunction"


def _settled_request(kind: str) -> bytes:
    """The last request Crossplane sends a settled composite of ``kind`` (requirements met)."""
    xr, store, observed = cases._settled(SETUPS[kind]())
    answers: dict[str, list[loop.Doc]] = {}
    asked: dict[str, bytes] = {}
    for _ in range(5):
        req = request(xr, observed=observed or {}, required=answers)
        rsp = runtime.run(req, registry.COMPOSERS)
        wanted = {
            n: s.SerializeToString(deterministic=True)
            for n, s in rsp.requirements.resources.items()
        }
        if wanted == asked:
            return bytes(req.SerializeToString(deterministic=True))
        asked = wanted
        answers = {n: store.select(s) for n, s in rsp.requirements.resources.items()}
    pytest.fail(f"{kind}: requirements did not settle")


@pytest.fixture(scope="module")
def requests() -> dict[str, bytes]:
    return {kind: _settled_request(kind) for kind in sorted(SETUPS)}


def _answers(seed: str, workers: str, requests: dict[str, bytes]) -> Iterator[dict[str, bytes]]:
    address = f"127.0.0.1:{render.free_port()}"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "modelplane", "all", "--insecure"),
            *("--workers", workers, "--address", address),
        ],
        env={**os.environ, "PYTHONHASHSEED": seed},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with grpc.insecure_channel(
            address, options=[("grpc.max_receive_message_length", -1)]
        ) as channel:
            _wait_ready(channel, proc)
            raw = {path: channel.unary_unary(path) for path in (_V1, _V1BETA1)}
            answers = {k: raw[_V1](r, timeout=PATIENCE_SECONDS) for k, r in requests.items()}
            answers["v1beta1"] = raw[_V1BETA1](
                requests["ModelDeployment"], timeout=PATIENCE_SECONDS
            )
            yield answers
    finally:
        proc.kill()
        proc.wait()


def test_two_processes_answer_every_kind_with_the_same_bytes(requests: dict[str, bytes]) -> None:
    (one,) = list(_answers("1", "1", requests))
    (two,) = list(_answers("2", "2", requests))
    assert set(one) == {*SETUPS, "v1beta1"}
    for kind in one:
        rsp = fnv1.RunFunctionResponse.FromString(one[kind])
        fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
        assert fatal == [], kind
        assert one[kind] == two[kind], f"{kind}: the bytes differ across processes"
