"""The modelplane-function command: flags, function selection, startup errors, and real
gRPC round trips (large, deep, over mTLS)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import struct_pb2 as structpb
from modelplane import main, registry, server
from modelplane.compose import model_deployment as md
from modelplane.dev import render

from tests.compose.test_model_deployment import (
    inference_cluster,
    model_deployment,
    other_replica,
)
from tests.requests import conditions, request

# Generous: a loaded 2-core machine may take a while; nothing here measures time.
PATIENCE_SECONDS = 120

CLASS_XR: dict[str, Any] = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "l4"},
    "spec": {
        "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "g", "count": 1}]
    },
}


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


# --- startup errors: one line on stderr, a non-zero exit, no traceback ----------------------


def _start(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelplane", "inferenceclass", *args],
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, f"want one line on stderr, got:\n{done.stderr}"
    assert lines[0].startswith("modelplane-function: "), lines[0]
    assert "Traceback" not in done.stderr
    return lines[0]


def _write_certs(folder: Path, **contents: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in contents.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder


@pytest.mark.parametrize(
    ("certs", "says"),
    [
        pytest.param(None, "does not exist", id="missing-directory"),
        pytest.param({}, "lacks tls.crt, tls.key, ca.crt", id="empty-directory"),
        pytest.param({"tls_crt": "x", "tls_key": "x"}, "lacks ca.crt", id="no-ca"),
        pytest.param(
            {"tls_crt": "x", "tls_key": "x", "ca_crt": "x"},
            "tls.crt and tls.key are not a PEM certificate",
            id="not-pem",
        ),
    ],
)
def test_bad_certificates_are_one_clear_line(
    tmp_path: Path, certs: dict[str, str] | None, says: str
) -> None:
    folder = tmp_path / "tls"
    if certs is not None:
        _write_certs(folder, **certs)
    line = _one_line_error(_start("--tls-certs-dir", str(folder), "--address", "127.0.0.1:0"))
    assert f"--tls-certs-dir {folder}" in line
    assert says in line, line


def test_a_file_for_a_certificate_directory_is_one_clear_line(tmp_path: Path) -> None:
    file = tmp_path / "certs"
    file.write_text("")
    line = _one_line_error(_start("--tls-certs-dir", str(file), "--address", "127.0.0.1:0"))
    assert line.endswith("is not a directory"), line


def test_a_busy_address_is_one_clear_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        line = _one_line_error(_start("--insecure", "--address", address))
    assert line == f"modelplane-function: cannot serve on {address}: Address already in use"


@pytest.mark.parametrize(
    ("address", "says"),
    [
        pytest.param("127.0.0.1:99999", "port 99999 is not from 0 to 65535", id="port-too-high"),
        pytest.param("nonsense:::1", "address lookup failed", id="not-an-address"),
    ],
)
def test_an_address_that_cannot_be_bound_is_one_clear_line(address: str, says: str) -> None:
    line = _one_line_error(_start("--insecure", "--address", address))
    assert line.startswith(f"modelplane-function: cannot serve on {address}: "), line
    assert says in line, line


# --- serving ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _server(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Run ``modelplane-function`` with ``args`` on a free port until the block ends."""
    address = f"127.0.0.1:{render.free_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelplane", *args, "--address", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc, address
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=PATIENCE_SECONDS)


def _wait_ready(channel: grpc.Channel, proc: subprocess.Popen[str]) -> None:
    try:
        grpc.channel_ready_future(channel).result(timeout=PATIENCE_SECONDS)
    except grpc.FutureTimeoutError:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the server did not become ready: {err}")


def test_sigterm_stops_the_server_gracefully() -> None:
    with _server("inferenceclass", "--insecure") as (proc, address):
        with grpc.insecure_channel(address) as channel:
            _wait_ready(channel, proc)
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            rsp: fnv1.RunFunctionResponse = stub.RunFunction(
                request(CLASS_XR), timeout=PATIENCE_SECONDS
            )
        assert conditions(rsp)["Accepted"][0] == "True"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=PATIENCE_SECONDS) == 0
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read()


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _issue(cwd: Path, name: str, subject: str, san: str) -> None:
    """A key and a certificate for ``name``, signed by the CA in ``cwd``."""
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=cwd)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=cwd)
    (cwd / f"{name}.ext").write_text(f"subjectAltName={san}\n")
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", f"{name}.ext", "-out", f"{name}.crt",
        cwd=cwd,
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_mtls_round_trip_and_a_client_without_a_certificate_is_refused(tmp_path: Path) -> None:
    """Crossplane's way: ``--tls-certs-dir`` with tls.crt, tls.key and ca.crt."""
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key", cwd=tmp_path)
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=test-ca", "-days", "1",
        "-out", "ca.crt", cwd=tmp_path,
    )  # fmt: skip
    _issue(tmp_path, "tls", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    _issue(tmp_path, "client", "/CN=crossplane", "DNS:crossplane")
    read = {n: (tmp_path / n).read_bytes() for n in ("ca.crt", "client.key", "client.crt")}
    trusted = grpc.ssl_channel_credentials(read["ca.crt"], read["client.key"], read["client.crt"])
    with _server("inferenceclass", "--tls-certs-dir", str(tmp_path)) as (proc, address):
        with grpc.secure_channel(address, trusted) as channel:
            _wait_ready(channel, proc)
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            rsp: fnv1.RunFunctionResponse = stub.RunFunction(
                request(CLASS_XR), timeout=PATIENCE_SECONDS
            )
        assert conditions(rsp)["Accepted"][0] == "True"
        anonymous = grpc.ssl_channel_credentials(read["ca.crt"])
        with grpc.secure_channel(address, anonymous) as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.RpcError) as refused:
                stub.RunFunction(request(CLASS_XR), timeout=PATIENCE_SECONDS)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


# --- deep requests ---------------------------------------------------------------------------


def _nest(value: structpb.Struct, depth: int) -> None:
    """Nest ``depth`` objects under ``value`` ({"a": {"a": ... {"leaf": "x"}}})."""
    for _ in range(depth):
        value = value.fields["a"].struct_value
    value["leaf"] = "x"


def _fleet_request(deep_replica_depth: int | None) -> fnv1.RunFunctionRequest:
    """The getting-started deployment on a fleet where another team's replica nests deep.

    The depth counts JSON levels inside the replica's pod template, a free-form object
    Kubernetes stores as given (down to its own limit).
    """
    xr = model_deployment(replicas=2)
    clusters = [inference_cluster("eks-a", [("gpu-l4", 4, ())])]
    replicas = [other_replica("theirs", "eks-a", "gpu-l4")]
    req = request(xr, required={md.CLUSTERS: clusters, md.REPLICAS: replicas})
    if deep_replica_depth is not None:
        obj = req.required_resources[md.REPLICAS].items[0].resource
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


def _placed(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return sorted(
        key for key, r in rsp.desired.resources.items() if r.resource["kind"] == "ModelReplica"
    )


def test_protobuf_alone_refuses_a_request_nested_100_levels() -> None:
    """Why the server raises the limit: protobuf's default stops near 32 JSON levels."""
    data = _fleet_request(100).SerializeToString()
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
from modelplane import server
if sys.argv[1] == "deep":
    server.allow_deep_messages()
fnv1.RunFunctionRequest.FromString(sys.stdin.buffer.read())
"""


@pytest.mark.parametrize(
    "depth",
    [
        pytest.param(100, id="100-levels"),
        pytest.param(server.KUBERNETES_MAX_JSON_DEPTH, id="kubernetes-limit"),
    ],
)
def test_a_deeply_nested_replica_of_another_team_breaks_no_deployment(depth: int) -> None:
    """One such ModelReplica anywhere must not stop every ModelDeployment reading the fleet."""
    rsp = _run_over_grpc(_fleet_request(depth))
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    assert fatal == []
    assert _placed(rsp) == _placed(server.run(_fleet_request(None), registry.COMPOSERS))
    assert len(_placed(rsp)) == 2
