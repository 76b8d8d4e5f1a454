"""A selector-heavy request gets the same placement on an idle machine and on one whose
CPUs are saturated: verdicts are counted in cost units, never timed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane.domain import dra as cel

from tests.compose.deployments import (
    call,
    gpu_device,
    inference_cluster,
    member,
    model_deployment,
    of_kind,
)
from tests.requests import conditions

# Admitted by the API server (941,612 cost units, estimated and actual), some 0.6 s of
# CPU per device here: past the old one-second wall-clock budget on a busy machine.
HEAVY = (
    "lists.range(100).all(i, lists.range(100).all(j, lists.range(13).all(k, k >= 0))) && "
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'
)


def _deployment() -> dict[str, object]:
    heavy = member(memory="")
    heavy["nodeSelector"] = {"devices": [{"name": "gpu", "selectors": [{"cel": HEAVY}]}]}
    return model_deployment("qwen", 3, engines=[{"name": "qwen", "members": [heavy]}])


def _clusters() -> list[dict[str, object]]:
    # Two distinct devices (so two evaluations), three clusters.
    return [
        inference_cluster(name, [("gpu", 2, [gpu_device(memory)])])
        for name, memory in (("a", "23034Mi"), ("b", "81559Mi"), ("c", "23034Mi"))
    ]


def _compose() -> fnv1.RunFunctionResponse:
    cel.clear_caches()  # as a fresh worker: every verdict computed anew, under this load
    return call(_deployment(), _clusters())


@pytest.fixture
def saturated() -> Iterator[None]:
    """Every CPU busy with a process of ours (twice over), stopped by its pid after."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    try:
        yield
    finally:
        for burner in burners:
            os.kill(burner.pid, signal.SIGKILL)
            burner.wait()


def test_idle_and_saturated_give_identical_placements(saturated: None) -> None:
    # The fixture's load starts before this body; the idle run goes first in its own test.
    loaded = _compose()
    assert loaded.SerializeToString(deterministic=True) == IDLE[0]


IDLE: list[bytes] = []


@pytest.fixture(autouse=True, scope="module")
def idle_run() -> None:
    """Compose once before any load exists; every replica is placed."""
    rsp = _compose()
    placed = sorted(r["spec"]["clusterName"] for r in of_kind(rsp, "ModelReplica").values())
    assert placed == ["a", "b", "c"]
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    IDLE.append(rsp.SerializeToString(deterministic=True))


# Admitted (estimated 999,927 units), but a thousand automaton steps per cost unit here:
# it runs into the work limit on every device.
PAST_WORK = "lists.range(9345).all(i, '" + "a" * 1000 + "'.findAll('a|b').size() > 0)"


def test_a_selector_past_its_limit_is_the_deployments_condition_not_no_match() -> None:
    heavy = member(memory="")
    heavy["nodeSelector"] = {"devices": [{"name": "gpu", "selectors": [{"cel": PAST_WORK}]}]}
    xr = model_deployment("qwen", 2, engines=[{"name": "qwen", "members": [heavy]}])
    cel.clear_caches()
    rsp = call(xr, _clusters())
    assert of_kind(rsp, "ModelReplica") == {}, "nothing new placed"
    status, reason, message = conditions(rsp)["ReplicasScheduled"]
    assert (status, reason) == ("False", "SelectorCostExceeded")
    assert message.startswith('engine qwen Standalone device gpu: selector "lists.range(9345)')
    assert (
        f"does more than {cel.WORK_LIMIT} units of work (CEL cost plus regular-expression "
        "steps) on device gpu.nvidia.com (gpu.nvidia.com/memory=23034Mi)"
    ) in message
    assert message.endswith("; keeping 0 placed replicas, placing none")
