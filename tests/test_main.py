"""The modelplane-function command: flags, function selection, and a real gRPC round trip."""

from __future__ import annotations

import subprocess
import sys

import grpc
import pytest
from click.testing import CliRunner
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from modelplane import main, registry
from modelplane.dev import render

from tests.requests import conditions, request


@pytest.mark.parametrize(
    ("names", "want"),
    [
        pytest.param((), set(registry.COMPOSERS), id="default-all"),
        pytest.param(("all",), set(registry.COMPOSERS), id="all"),
        pytest.param(("inferenceclass",), {"InferenceClass"}, id="by-kind"),
        pytest.param(
            ("modelplane-function-inferenceclass",), {"InferenceClass"}, id="by-function-name"
        ),
        pytest.param(("InferenceClass",), {"InferenceClass"}, id="case-insensitive"),
    ],
)
def test_select(names: tuple[str, ...], want: set[str]) -> None:
    assert set(main.select(names)) == want


def test_unknown_function_exits_non_zero() -> None:
    result = CliRunner().invoke(main.cli, ["no-such-kind", "--insecure"])
    assert result.exit_code != 0
    assert "unknown function 'no-such-kind'" in result.output


def test_needs_credentials_or_insecure() -> None:
    result = CliRunner().invoke(main.cli, ["inferenceclass"])
    assert result.exit_code != 0
    assert "--tls-certs-dir" in result.output


def test_missing_certificates_exit_non_zero(tmp_path: object) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "modelplane",
            "--tls-certs-dir",
            str(tmp_path),
            "--address",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "tls.crt" in done.stderr


def test_grpc_round_trip_with_a_message_over_4_mib() -> None:
    """A fleet-scale request (here ~6 MiB) must pass the server's message limit."""
    xr = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "metadata": {"name": "big", "annotations": {"padding": "x" * (6 * 1024 * 1024)}},
        "spec": {
            "devices": [
                {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "g", "count": 1}
            ]
        },
    }
    req = request(xr)
    assert req.ByteSize() > 4 * 1024 * 1024
    with render.serve(["InferenceClass"]) as running:
        target = running.targets["InferenceClass"]
        limit = [
            ("grpc.max_send_message_length", 64 << 20),
            ("grpc.max_receive_message_length", 64 << 20),
        ]
        with grpc.insecure_channel(target, options=limit) as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=30)
    assert conditions(rsp)["Accepted"][0] == "True"
