"""A function server whose workers keep dying fails loudly: it exits non-zero after a
logged back-off (so Kubernetes restarts the pod and counts it), never listening on while
answering every call UNAVAILABLE. Also: the one line it logs on start, and Go's
``--address :PORT``."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from modelplane.dev import render
from modelplane.runtime.pool import ComputePool

from tests.requests import conditions, request
from tests.test_main import (
    CLASS_XR,
    PATIENCE_SECONDS,
    _parents,
    _server,
    _slow_call,
    _wait_ready,
    instrumented,  # noqa: F401  # a fixture
)


def _running_workers(proc: subprocess.Popen[str]) -> set[int]:
    """The server's worker processes now (its grandchildren: they start from a fork server)."""
    parents = _parents()
    children = {c for c, p in parents.items() if p == proc.pid}
    return {c for c, p in parents.items() if p in children}


def test_workers_killed_in_a_loop_stop_the_server_with_a_non_zero_exit() -> None:
    with _server("inferenceclass", "--insecure", "--workers", "2") as (proc, address):
        with grpc.insecure_channel(address) as channel:
            _wait_ready(channel, proc)
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            rsp = stub.RunFunction(request(CLASS_XR), timeout=PATIENCE_SECONDS)
            assert conditions(rsp)["Accepted"][0] == "True"
        killed: set[int] = set()
        deadline = time.monotonic() + PATIENCE_SECONDS
        while proc.poll() is None and time.monotonic() < deadline:
            for pid in _running_workers(proc) - killed:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            time.sleep(0.05)
        code = proc.wait(timeout=PATIENCE_SECONDS)
        assert proc.stderr is not None
        said = proc.stderr.read().splitlines()
    assert code == 1, said
    # A death is a worker killed (idle, or while starting: the loop above kills whatever
    # worker it sees, so a replacement may die before it says it is ready, which the
    # server reports as "cannot start a worker"). Either way the replacements wait longer
    # and longer (two workers die at once, so their lines may interleave): a logged
    # back-off, then the exit.
    stop = "; 6 workers died within a minute: stopping, so that the pod restarts"
    deaths = [line for line in said if "; starting another" in line]
    assert all(
        "was killed by SIGKILL" in line or "cannot start a worker" in line for line in deaths
    ), deaths
    assert any("was killed by SIGKILL while idle" in line for line in deaths), deaths
    replaced = [d.rsplit("; ", 1)[1] for d in deaths]
    assert sorted(replaced) == [
        "starting another",
        "starting another in 0.5 s",
        "starting another in 1 s",
        "starting another in 2 s",
        "starting another in 4 s",
    ]
    assert said[-1].endswith(stop), "the exit's one line says why, last"
    assert not any("Traceback" in line for line in said), "\n".join(said)


def test_a_workers_death_names_the_composite_it_was_composing(
    tmp_path: Path,
    instrumented: Path,  # noqa: F811  # the fixture
) -> None:
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
            victim = int(started.read_text())
            os.kill(victim, signal.SIGKILL)
            with pytest.raises(grpc.RpcError) as failed:
                call.result()
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=PATIENCE_SECONDS) == 0, "one death is no crash loop"
        assert proc.stderr is not None
        said = proc.stderr.read()
    assert said == (
        f"modelplane-function: worker {victim} was killed by SIGKILL while composing "
        "InferenceClass l4; starting another\n"
    )


def test_the_server_logs_one_line_on_start_and_takes_a_go_style_address() -> None:
    port = render.free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "modelplane", "inferenceclass", "modelendpoint"),
            *("--insecure", "--workers", "2", "--address", f":{port}"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            _wait_ready(channel, proc)
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
            rsp: fnv1.RunFunctionResponse = stub.RunFunction(
                request(CLASS_XR), timeout=PATIENCE_SECONDS
            )
        assert conditions(rsp)["Accepted"][0] == "True"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=PATIENCE_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    (line,) = out.splitlines()
    logged = json.loads(line)
    assert {k: logged[k] for k in ("msg", "address", "transport", "workers", "kinds")} == {
        "msg": "serving",
        "address": f"[::]:{port}",
        "transport": "insecure",
        "workers": 2,
        "kinds": ["InferenceClass", "ModelEndpoint"],
    }


def test_a_workers_results_are_read_only_once_it_is_in_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker killed the moment it started used to be mourned by a reader thread that
    # began before its slot joined the pool: taking it out raised (a Traceback on
    # stderr, seen under load in the crash-loop test above) and it was never replaced.
    joined: list[bool] = []
    read = ComputePool._read

    def reading(pool: ComputePool, slot: Any) -> None:
        with pool._lock:
            joined.append(slot in pool._slots)
        read(pool, slot)

    monkeypatch.setattr(ComputePool, "_read", reading)
    pool = ComputePool(["InferenceClass"], 2, verdicts=tmp_path / "verdicts", debug=False)
    pool.start()
    try:
        victim = pool.pids()[0]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + PATIENCE_SECONDS
        while time.monotonic() < deadline and (len(joined) < 3 or victim in pool.pids()):
            time.sleep(0.05)
    finally:
        pool.close()
    assert joined == [True, True, True], "two started, one replacement"
