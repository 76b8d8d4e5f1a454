"""The modelplane-function command: flags, function selection, startup errors, and real
gRPC round trips (large, over mTLS, with workers). Deep requests: test_deep_requests.py."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from modelplane import registry, runtime
from modelplane.dev import render

from tests.requests import conditions, request
from tests.test_deep_requests import deep_fleet_request, placed

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
    assert set(runtime.select(names)) == want


def test_unknown_function_exits_non_zero() -> None:
    result = CliRunner().invoke(runtime.cli, ["no-such-kind", "--insecure"])
    assert result.exit_code != 0
    assert "unknown function 'no-such-kind'" in result.output


def test_needs_credentials_or_insecure() -> None:
    result = CliRunner().invoke(runtime.cli, ["inferenceclass"])
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
def _server(
    *args: str, program: tuple[str, ...] = ("-m", "modelplane")
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Run ``modelplane-function`` with ``args`` on a free port until the block ends."""
    address = f"127.0.0.1:{render.free_port()}"
    proc = subprocess.Popen(
        [sys.executable, *program, *args, "--address", address],
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


# --- workers ---------------------------------------------------------------------------------

# The server with InferenceClass composed slowly: each call notes the process that
# composed it and when (wall clock, comparable between processes), or, told to spin,
# works until its call is over and leaves a file saying it saw that. A file, not -c:
# worker processes import it again (as __mp_main__) and so compose the same way.
_INSTRUMENTED = """
import os, time
from crossplane.function import response
from modelplane import registry, runtime
from modelplane.domain import dra as cel

def compose(req, rsp):
    spin = req.observed.composite.resource["metadata"]["annotations"]["spin"]
    start = time.time()
    if spin == "":
        time.sleep(1.0)
    else:
        open(spin + ".started", "w").write(str(os.getpid()))
        try:
            while True:
                cel.check_call_deadline()
                time.sleep(0.01)
        except cel.Cancelled:
            open(spin, "w").write("cancelled")
            raise
    response.normal(rsp, f"{os.getpid()} {start} {time.time()}")

registry.COMPOSERS["InferenceClass"] = compose
if __name__ == "__main__":
    runtime.cli()
"""


@pytest.fixture
def instrumented(tmp_path: Path) -> Path:
    script = tmp_path / "instrumented.py"
    script.write_text(_INSTRUMENTED)
    return script


def _slow_call(
    channel: grpc.Channel, spin: str = "", timeout: float = PATIENCE_SECONDS
) -> tuple[int, float, float]:
    xr = {**CLASS_XR, "metadata": {"name": "l4", "annotations": {"spin": spin}}}
    stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
    rsp: fnv1.RunFunctionResponse = stub.RunFunction(request(xr), timeout=timeout)
    pid, start, end = rsp.results[0].message.split()
    return int(pid), float(start), float(end)


def _parents() -> dict[int, int]:
    """Every live process's parent (from /proc), zombies left out."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                found[int(stat.parent.name)] = int(fields[1])
    return found


def _descendants(pid: int) -> set[int]:
    parents = _parents()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _workers(proc: subprocess.Popen[str], count: int) -> set[int]:
    """The server's worker processes (its grandchildren: they start from a fork server),
    once there are ``count`` of them."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while True:
        parents = _parents()
        children = {c for c, p in parents.items() if p == proc.pid}
        workers = {c for c, p in parents.items() if p in children}
        if len(workers) == count or time.monotonic() > deadline:
            return workers
        time.sleep(0.1)


def _gone(pids: set[int]) -> bool:
    """Wait (patiently) until none of ``pids`` runs; True when they are all gone."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while time.monotonic() < deadline:
        if not pids & set(_parents()):
            return True
        time.sleep(0.1)
    return False


def test_workers_compose_the_calls_of_one_connection_at_once(instrumented: Path) -> None:
    """As Crossplane sends them: one connection, calls in parallel in separate workers."""
    args = (str(instrumented), "inferenceclass", "--insecure", "--workers", "2")
    with _server(*args, program=()) as (proc, address), grpc.insecure_channel(address) as channel:
        _wait_ready(channel, proc)
        workers = _workers(proc, 2)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            (a, b) = pool.map(lambda _: _slow_call(channel), range(2))
    assert {a[0], b[0]} == workers, "each call went to a different worker"
    assert a[1] < b[2], "they ran at the same time"
    assert b[1] < a[2], "they ran at the same time"


def test_sigterm_stops_every_worker() -> None:
    with _server("inferenceclass", "--insecure", "--workers", "3") as (proc, address):
        with grpc.insecure_channel(address) as channel:
            _wait_ready(channel, proc)
        workers = _workers(proc, 3)
        assert len(workers) == 3, workers
        everything = _descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=PATIENCE_SECONDS) == 0
        assert _gone(everything), "no process of the server outlives it"
        assert proc.stderr is not None
        assert proc.stderr.read() == ""


def test_workers_stop_when_the_server_is_killed() -> None:
    with _server("inferenceclass", "--insecure", "--workers", "2") as (proc, address):
        with grpc.insecure_channel(address) as channel:
            _wait_ready(channel, proc)
        everything = _descendants(proc.pid)
        assert len(_workers(proc, 2)) == 2
        proc.kill()
        proc.wait(timeout=PATIENCE_SECONDS)
        assert _gone(everything), "orphans stop too (PR_SET_PDEATHSIG)"


def test_a_worker_that_dies_is_reported_and_replaced() -> None:
    with _server("inferenceclass", "--insecure", "--workers", "2") as (proc, address):
        with grpc.insecure_channel(address) as channel:
            _wait_ready(channel, proc)
            workers = _workers(proc, 2)
            victim = min(workers)
            os.kill(victim, signal.SIGKILL)
            assert _gone({victim})
            deadline = time.monotonic() + PATIENCE_SECONDS
            while not _workers(proc, 2) - workers and time.monotonic() < deadline:
                time.sleep(0.1)
            replaced = _workers(proc, 2)
            assert len(replaced) == 2, replaced
            assert victim not in replaced
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            for _ in range(4):  # whichever worker each reaches
                rsp = stub.RunFunction(request(CLASS_XR), timeout=PATIENCE_SECONDS)
                assert conditions(rsp)["Accepted"][0] == "True"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=PATIENCE_SECONDS) == 0
        assert proc.stderr is not None
        said = proc.stderr.read()
    assert said == (
        f"modelplane-function: worker {victim} was killed by SIGKILL while idle; starting another\n"
    )


@pytest.mark.parametrize("shares_ports", [False, True], ids=["plain", "sharing-ports"])
def test_a_busy_address_is_one_clear_line_with_workers(shares_ports: bool) -> None:
    """Another program listening there is refused, even one that shares ports (as
    gRPC servers do by default)."""
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, int(shares_ports))
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        line = _one_line_error(_start("--insecure", "--address", address, "--workers", "2"))
    assert line == f"modelplane-function: cannot serve on {address}: Address already in use"


def test_a_second_server_on_the_same_address_is_refused() -> None:
    with _server("inferenceclass", "--insecure", "--workers", "2") as (proc, address):
        with grpc.insecure_channel(address) as channel:
            _wait_ready(channel, proc)
        line = _one_line_error(_start("--insecure", "--address", address, "--workers", "2"))
    assert line == f"modelplane-function: cannot serve on {address}: Address already in use"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_mtls_with_workers(tmp_path: Path) -> None:
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key", cwd=tmp_path)
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=test-ca", "-days", "1",
        "-out", "ca.crt", cwd=tmp_path,
    )  # fmt: skip
    _issue(tmp_path, "tls", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    _issue(tmp_path, "client", "/CN=crossplane", "DNS:crossplane")
    read = {n: (tmp_path / n).read_bytes() for n in ("ca.crt", "client.key", "client.crt")}
    trusted = grpc.ssl_channel_credentials(read["ca.crt"], read["client.key"], read["client.crt"])
    args = ("inferenceclass", "--tls-certs-dir", str(tmp_path), "--workers", "2")
    with _server(*args) as (proc, address), grpc.secure_channel(address, trusted) as channel:
        _wait_ready(channel, proc)
        stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(
                    lambda _: stub.RunFunction(request(CLASS_XR), timeout=PATIENCE_SECONDS),
                    range(4),
                )
            )
    assert [conditions(rsp)["Accepted"][0] for rsp in answers] == ["True"] * 4


def test_a_call_past_its_deadline_stops_in_its_worker(tmp_path: Path, instrumented: Path) -> None:
    seen = tmp_path / "cancelled"
    with _server(str(instrumented), "inferenceclass", "--insecure", "--workers", "2",
                 program=()) as (proc, address):  # fmt: skip
        with grpc.insecure_channel(address) as channel:
            _wait_ready(channel, proc)
            with pytest.raises(grpc.RpcError) as late:
                _slow_call(channel, spin=str(seen), timeout=1.0)
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        deadline = time.monotonic() + PATIENCE_SECONDS
        while not seen.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert seen.read_text() == "cancelled", "the work observed its deadline and stopped"


def test_a_deep_request_decodes_in_a_worker() -> None:
    """Workers decode requests themselves, on threads with the stack that takes."""
    req = deep_fleet_request(runtime.KUBERNETES_MAX_JSON_DEPTH)
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
        rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=PATIENCE_SECONDS)
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    assert placed(rsp) == placed(runtime.run(deep_fleet_request(None), registry.COMPOSERS))


def test_a_call_whose_worker_dies_fails_unavailable(tmp_path: Path, instrumented: Path) -> None:
    """Crossplane retries UNAVAILABLE; the dead worker is replaced meanwhile."""
    spin = tmp_path / "spin"
    started = tmp_path / "spin.started"
    args = (str(instrumented), "inferenceclass", "--insecure", "--workers", "2")
    with _server(*args, program=()) as (proc, address), grpc.insecure_channel(address) as channel:
        _wait_ready(channel, proc)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            call = pool.submit(_slow_call, channel, str(spin))
            deadline = time.monotonic() + PATIENCE_SECONDS
            while not (started.exists() and started.read_text()) and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(int(started.read_text()), signal.SIGKILL)
            with pytest.raises(grpc.RpcError) as failed:
                call.result()
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        assert failed.value.details() == runtime.WORKER_DIED_MESSAGE
