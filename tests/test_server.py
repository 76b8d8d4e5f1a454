"""The FunctionRunner: dispatch on the composite's kind, and no request ever crashes it."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import grpc
import pydantic
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format
from modelplane import kit, registry, runtime
from modelplane.domain import dra as cel
from modelplane.domain import naming
from modelplane.kit import Compose

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
        "internal error while composing InferenceClass l4; nothing was changed",
    ),
    Case(
        "a composite without a kind is named as such",
        {"metadata": {"name": "l4"}},
        registry.COMPOSERS,
        "this function does not compose an unnamed kind",
    ),
    Case(
        "a kind of the wrong type reads as no kind",
        {**CLASS, "kind": 7},
        registry.COMPOSERS,
        "this function does not compose an unnamed kind",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.reason for c in CASES])
def test_dispatch(case: Case) -> None:
    runner = runtime.FunctionRunner(case.composers)
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

    rsp = runtime.run(request(CLASS), {"InferenceClass": half_then_explode})
    assert "partial" not in rsp.desired.resources


def test_same_request_same_bytes() -> None:
    req = request(CLASS)
    first = runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    again = runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    assert first == again
    assert as_dict(runtime.run(req, registry.COMPOSERS))["meta"]["tag"] == "test"


def _fatal(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]


# What a message must never show: Python's own words for what went wrong.
PYTHON_TEXT = ("Traceback", "Error", "NoneType", "object has no attribute", "'boom'", "boom")


def _no_python(message: str) -> None:
    shown = [t for t in PYTHON_TEXT if t in message]
    assert not shown, f"the message shows {shown}: {message!r}"


def test_malformed_spec_is_fatal_with_the_bad_field() -> None:
    bad = {**CLASS, "spec": {"devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "count": -1}]}}
    rsp = runtime.run(request(bad), registry.COMPOSERS)
    fatal = _fatal(rsp)
    assert len(fatal) == 1
    assert fatal[0].startswith("invalid InferenceClass l4: spec.devices[0].count:"), fatal[0]


class _Member(pydantic.BaseModel):
    role: Literal["Standalone", "Leader", "Worker"]


class _Engine(pydantic.BaseModel):
    members: list[_Member]


class _Spec(pydantic.BaseModel):
    engines: list[_Engine]


class ModelDeployment(pydantic.BaseModel):
    spec: _Spec


class InferenceCluster(pydantic.BaseModel):
    nodes: int


BAD_ROLE = {"spec": {"engines": [{"members": [{"role": "Standalone"}, {"role": "Boss"}]}]}}
NAMESPACED = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelDeployment",
    "metadata": {"name": "qwen", "namespace": "ml-team"},
}


def _validating(model: type[pydantic.BaseModel], data: dict[str, Any]) -> Compose:
    def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        del req, rsp
        model.model_validate(data)

    return compose


@pytest.mark.parametrize(
    ("model", "data", "want"),
    [
        pytest.param(
            ModelDeployment,
            BAD_ROLE,
            "invalid ModelDeployment ml-team/qwen: spec.engines[0].members[1].role: Input should be",
            id="the-composite",
        ),
        pytest.param(
            InferenceCluster,
            {"nodes": "many"},
            "invalid InferenceCluster required by ModelDeployment ml-team/qwen: nodes: Input should",
            id="a-required-object",
        ),
    ],
)
def test_validation_errors_name_the_object_and_each_field(
    model: type[pydantic.BaseModel], data: dict[str, Any], want: str
) -> None:
    rsp = runtime.run(request(NAMESPACED), {"ModelDeployment": _validating(model, data)})
    (fatal,) = _fatal(rsp)
    assert fatal.startswith(want), fatal


def test_many_validation_errors_are_counted() -> None:
    members = [{"role": "Boss"} for _ in range(8)]
    data = {"spec": {"engines": [{"members": members}]}}
    rsp = runtime.run(request(NAMESPACED), {"ModelDeployment": _validating(ModelDeployment, data)})
    (fatal,) = _fatal(rsp)
    assert fatal.count("role:") == 5
    assert fatal.endswith("(and 3 more)"), fatal


def test_an_internal_error_names_the_composite_and_where_not_the_exception() -> None:
    def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        del req, rsp
        naming.replica_name(cast("str", None), "c", 0)  # a bug: None has no [:57]

    rsp = runtime.run(request(NAMESPACED), {"ModelDeployment": compose})
    (fatal,) = _fatal(rsp)
    assert fatal.startswith(
        "internal error while composing ModelDeployment ml-team/qwen "
        "(in modelplane.domain.naming.replica_name); nothing was changed"
    ), fatal
    _no_python(fatal)
    assert len(rsp.desired.resources) == 0


def test_an_internal_error_is_logged_with_its_traceback() -> None:
    logged: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def bind(self, **_: Any) -> Log:
            return self

        def error(self, event: str, **fields: Any) -> None:
            logged.append((event, fields))

        def debug(self, event: str, **fields: Any) -> None:
            del event, fields

    runtime.run(request(CLASS), {"InferenceClass": _explode}, Log())
    ((event, fields),) = logged
    assert event == "compose failed"
    assert "KeyError: 'boom'" in fields["traceback"]


def test_a_request_too_deep_to_read_is_fatal_and_says_so() -> None:
    def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        del rsp
        json_format.MessageToDict(req.observed.composite.resource)

    req = request(NAMESPACED)
    deep = req.observed.composite.resource.fields["spec"].struct_value
    for _ in range(2_000):
        deep = deep.fields["a"].struct_value
    rsp = runtime.run(req, {"ModelDeployment": compose})
    (fatal,) = _fatal(rsp)
    assert fatal.startswith(
        "cannot compose ModelDeployment ml-team/qwen: the request nests too deeply to read"
    ), fatal


@pytest.mark.parametrize(
    ("xr", "want"),
    [
        pytest.param(NAMESPACED, ("ModelDeployment", "ml-team/qwen"), id="namespaced"),
        pytest.param(CLASS, ("InferenceClass", "l4"), id="cluster-scoped"),
        pytest.param({"kind": "X", "metadata": ["a"]}, ("X", "(unnamed)"), id="metadata-a-list"),
        pytest.param(
            {"kind": "X", "metadata": {"name": 3}}, ("X", "(unnamed)"), id="name-a-number"
        ),
        pytest.param({"kind": ["X"]}, ("", "(unnamed)"), id="kind-a-list"),
        pytest.param({}, ("", "(unnamed)"), id="empty"),
    ],
)
def test_identify_reads_any_shape(xr: dict[str, Any], want: tuple[str, str]) -> None:
    assert runtime.identify(request(xr).observed.composite.resource) == want


@pytest.mark.parametrize(
    ("loc", "want"),
    [
        pytest.param(
            ("spec", "engines", 0, "members", 1, "role"), "spec.engines[0].members[1].role"
        ),
        pytest.param((0, "name"), "[0].name"),
        pytest.param((), "(the object)"),
    ],
)
def test_field_path(loc: tuple[int | str, ...], want: str) -> None:
    assert kit.field_path(loc) == want


# --- deadlines and concurrency ----------------------------------------------------------------


class _Context:
    """What RunFunction reads of a gRPC call: its deadline, and abort."""

    def __init__(self, remaining: float | None) -> None:
        self.remaining = remaining
        self.aborted: tuple[grpc.StatusCode, str] | None = None

    def time_remaining(self) -> float | None:
        return self.remaining

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = (code, details)
        raise _AbortedError


class _AbortedError(Exception):
    pass


class _Spinner:
    """A compose that works until its call is over, noting what it observed."""

    def __init__(self) -> None:
        self.rounds = 0
        self.stopped = threading.Event()
        self.started = threading.Event()

    def __call__(self, req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        del req, rsp
        self.started.set()
        try:
            while True:
                cel.check_call_deadline()
                self.rounds += 1
                time.sleep(0.01)
        except cel.Cancelled:
            self.stopped.set()
            raise


def test_a_call_past_its_deadline_stops_its_work_and_says_so() -> None:
    spinner = _Spinner()
    runner = runtime.FunctionRunner({"InferenceClass": spinner})
    context = _Context(remaining=0.2)
    with pytest.raises(_AbortedError):
        asyncio.run(runner.RunFunction(request(CLASS), cast("Any", context)))
    assert spinner.stopped.is_set(), "the compose observed the deadline"
    assert context.aborted == (grpc.StatusCode.DEADLINE_EXCEEDED, runtime.DEADLINE_MESSAGE)
    runner.close()


def test_a_call_its_client_cancels_stops_its_work() -> None:
    spinner = _Spinner()
    runner = runtime.FunctionRunner({"InferenceClass": spinner})

    async def cancel_midway() -> None:
        call = asyncio.ensure_future(runner.RunFunction(request(CLASS), None))
        await asyncio.get_running_loop().run_in_executor(None, spinner.started.wait)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(cancel_midway())
    assert spinner.stopped.wait(60), "the compose observed the cancellation"
    runner.close()


def test_a_call_without_a_deadline_runs_to_the_end() -> None:
    runner = runtime.FunctionRunner(registry.COMPOSERS)
    rsp = asyncio.run(runner.RunFunction(request(CLASS), cast("Any", _Context(remaining=None))))
    assert _fatal(rsp) == []
    runner.close()


def test_a_slow_call_does_not_hold_back_a_cheap_one() -> None:
    """Both run on the pool: the cheap call finishes while the slow one still works."""
    release = threading.Event()
    order: list[str] = []

    def slow(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        del req, rsp
        release.wait(60)
        order.append("slow")

    def cheap(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        del req, rsp
        order.append("cheap")
        release.set()

    runner = runtime.FunctionRunner({"InferenceClass": slow, "ModelService": cheap})

    async def both() -> None:
        slow_call = asyncio.ensure_future(runner.RunFunction(request(CLASS), None))
        await asyncio.sleep(0)
        await runner.RunFunction(request({**CLASS, "kind": "ModelService"}), None)
        await slow_call

    asyncio.run(both())
    assert order == ["cheap", "slow"]
    runner.close()


def test_disk_verdicts_are_shared_through_their_folder(tmp_path: Path) -> None:
    writer, reader = runtime.DiskVerdicts(tmp_path), runtime.DiskVerdicts(tmp_path)
    verdict = cel.Verdict(
        False, "operation cancelled: work limit of 2000000 exceeded", 12, True, True, 2_000_123
    )
    assert reader.get("k") is None
    writer.put("k", verdict)
    read = reader.get("k")
    assert read == verdict
    assert read is not None
    assert (read.over_limit, read.over_work, read.work) == (True, True, 2_000_123)
    assert [p.name for p in tmp_path.iterdir()] == ["k"], "no partial file left behind"
    assert (tmp_path / "k").stat().st_mode & 0o777 == 0o600


def test_the_verdict_folder_is_private_to_its_user_whatever_the_umask() -> None:
    previous = os.umask(0)
    try:
        folder = runtime.private_folder("modelplane-test-verdicts-")
    finally:
        os.umask(previous)
    try:
        assert folder.stat().st_mode & 0o777 == 0o700
        assert folder.stat().st_uid == os.getuid()
    finally:
        folder.rmdir()


@pytest.mark.parametrize(
    "text", ["", "{", '{"matched": "yes"}', '{"matched": true, "error": 3}'], ids=repr
)
def test_a_damaged_disk_verdict_reads_as_absent(tmp_path: Path, text: str) -> None:
    (tmp_path / "k").write_text(text)
    assert runtime.DiskVerdicts(tmp_path).get("k") is None
