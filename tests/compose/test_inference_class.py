"""InferenceClass: data only; accepted and ready."""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import registry, runtime

from tests.requests import conditions, request


def _class(*device_names: str) -> dict[str, object]:
    devices = [
        {"name": n, "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 1}
        for n in device_names
    ]
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "metadata": {"name": "c"},
        "spec": {"devices": devices},
    }


def test_accepted_and_ready() -> None:
    rsp = runtime.run(request(_class("nic", "gpu")), registry.COMPOSERS)
    assert conditions(rsp) == {"Accepted": ("True", "Accepted", "publishes gpu, nic")}
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED  # Crossplane derives Ready
    assert len(rsp.desired.resources) == 0, "a class composes nothing"
    assert [r for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
