"""The ModelDeployment function served by ``modelplane-function`` in a subprocess, over a
local socket, with what its processes pay: CPU time, peak RSS and peak PSS from /proc."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import grpc
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from benches.procfs import cpu_seconds, peak_rss_mib, process_tree, pss_mib

T = TypeVar("T")
RUN_FUNCTION = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"
MAX_MESSAGE = 256 * 1024 * 1024
STARTUP_SECONDS = 300  # the served function's start, workers included, on a loaded machine


class Served:
    """The function served by ``modelplane-function`` in a subprocess, for gRPC round trips."""

    def __enter__(self) -> Served:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        address = f"127.0.0.1:{port}"
        self.address = address
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "modelplane",
                "modeldeployment",
                "--insecure",
                "--address",
                address,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        options = [
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
        ]
        self.channel = grpc.insecure_channel(address, options=options)
        grpc.channel_ready_future(self.channel).result(timeout=STARTUP_SECONDS)
        self.stub = self.channel.unary_unary(
            RUN_FUNCTION,
            request_serializer=None,  # requests are sent as encoded
            response_deserializer=fnv1.RunFunctionResponse.FromString,
        )
        return self

    def call(self, data: bytes) -> fnv1.RunFunctionResponse:
        """One round trip of an encoded request."""
        rsp: fnv1.RunFunctionResponse = self.stub(data, timeout=120)
        return rsp

    def cpu_seconds(self) -> float:
        """The CPU time the server's processes have used so far (Linux; 0 elsewhere).

        Unlike wall time, it hardly grows when other work shares the cores.
        """
        return sum(cpu_seconds(pid) for pid in process_tree(self.proc.pid))

    def peak_rss_mib(self) -> float:
        """The peak resident memory of the server, summed over its processes (Linux).

        With ``--workers`` the served process receives every request and its workers
        compose them: each holds its own peak, and the machine pays for all of them.
        """
        return sum(peak_rss_mib(pid) for pid in process_tree(self.proc.pid))

    def peak_pss_mib(self, during: Callable[[], T]) -> tuple[T, float]:
        """Run ``during`` and return what it returns with the server's peak memory over it,
        summed over its processes as proportional set sizes (sampled every 20 ms).

        Summed peak RSS counts every page the processes share (the fork server's modules,
        which each worker maps copy-on-write) once per process; PSS splits a shared page
        among the processes that map it, so the sum is what the machine pays.
        """
        peak, done = 0.0, threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, sum(pss_mib(p) for p in process_tree(self.proc.pid)))
                done.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            out = during()
        finally:
            done.set()
            sampler.join()
        return out, peak

    def __exit__(self, *_: object) -> None:
        self.channel.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
