"""The FunctionRunner: dispatch on the composite's kind, and no request ever crashes it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import registry, server
from modelplane.compose._kit import Compose

from tests.requests import as_dict, request

CLASS = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "l4"},
    "spec": {
        "devices": [
            {
                "name": "gpu",
                "driver": "gpu.nvidia.com",
                "deviceClassName": "gpu.nvidia.com",
                "count": 1,
            }
        ]
    },
}


def _explode(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    del req, rsp
    msg = "boom"
    raise KeyError(msg)


@dataclass
class Case:
    reason: str
    xr: Mapping[str, Any]
    composers: dict[str, Compose]
    want_fatal: str | None


CASES = [
    Case("a registered kind runs its function", CLASS, registry.COMPOSERS, None),
    Case(
        "an unknown kind is fatal and names what the function serves",
        {**CLASS, "kind": "Mystery"},
        registry.COMPOSERS,
        "this function does not compose Mystery; it serves ",
    ),
    Case(
        "a kind this process doesn't serve is fatal",
        CLASS,
        {"ModelService": registry.COMPOSERS["InferenceClass"]},
        "this function does not compose InferenceClass; it serves ModelService",
    ),
    Case(
        "an exception inside a function becomes a fatal result",
        CLASS,
        {"InferenceClass": _explode},
        "internal error composing InferenceClass l4: 'boom'",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.reason for c in CASES])
def test_dispatch(case: Case) -> None:
    runner = server.FunctionRunner(case.composers)
    rsp = asyncio.run(runner.RunFunction(request(case.xr), None))
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    if case.want_fatal is None:
        assert fatal == [], f"{case.reason}: unexpected fatal results {fatal}"
    else:
        assert len(fatal) == 1, f"{case.reason}: want one fatal result, got {fatal}"
        assert fatal[0].startswith(case.want_fatal), f"{case.reason}: got {fatal[0]!r}"
    assert rsp.meta.tag == "test", "the response echoes the request's tag"


def test_exception_keeps_no_partial_state() -> None:
    """A crashed function must not return half-written desired state."""

    def half_then_explode(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        rsp.desired.resources["partial"].resource.update({"kind": "ConfigMap"})
        _explode(req, rsp)

    rsp = server.run(request(CLASS), {"InferenceClass": half_then_explode})
    assert "partial" not in rsp.desired.resources


def test_same_request_same_bytes() -> None:
    req = request(CLASS)
    first = server.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    again = server.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    assert first == again
    assert as_dict(server.run(req, registry.COMPOSERS))["meta"]["tag"] == "test"


def test_malformed_spec_is_fatal_with_the_bad_field() -> None:
    bad = {**CLASS, "spec": {"devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "count": -1}]}}
    rsp = server.run(request(bad), registry.COMPOSERS)
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    assert len(fatal) == 1
    assert fatal[0].startswith("invalid InferenceClass l4: spec.devices.0.count:"), fatal[0]
