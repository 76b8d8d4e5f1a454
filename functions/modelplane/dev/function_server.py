"""Serving the composition functions for ``crossplane render``: one local gRPC server.

:func:`serve` starts ``modelplane-function`` on a free loopback port, waits until it
accepts gRPC connections, and stops it by its pid on exit, also when starting fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from modelplane import registry

#: How long a function server may take to listen: generous, for a loaded machine.
STARTUP_TIMEOUT_SECONDS = 120.0
#: How often to look whether the server listens yet.
POLL_SECONDS = 0.05
#: Attempts on a fresh port when the server could not bind the one it was given.
START_ATTEMPTS = 3


class RenderError(RuntimeError):
    """A composite could not be rendered, or the functions could not be served."""


def free_port() -> int:
    """Return a TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Functions:
    """A running function server: one address serving every kind in ``kinds``."""

    address: str
    kinds: frozenset[str]

    @property
    def targets(self) -> dict[str, str]:
        """Return the address that serves each kind."""
        return dict.fromkeys(sorted(self.kinds), self.address)

    def for_composition(self, composition: Mapping[str, Any]) -> dict[str, str]:
        """Return the address of each Function the Composition's pipeline calls."""
        steps = (composition.get("spec") or {}).get("pipeline") or []
        return {str(step["functionRef"]["name"]): self.address for step in steps}


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1.0):
        return True
    return False


def _wait_ready(address: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Wait until the server at ``address`` accepts gRPC connections, or fail.

    Polls its port every 50 ms (a refused connect on loopback costs microseconds, and a
    backoff overshot the ~1.5 s a server takes to start by up to a second), giving up when
    the process exits or at ``deadline``; then waits for a gRPC channel to it to be ready.
    """
    port = int(address.rpartition(":")[2])
    while not _listening(port):
        if proc.poll() is not None:
            msg = f"the function server exited with code {proc.returncode} before listening"
            raise RenderError(msg)
        if time.monotonic() + POLL_SECONDS > deadline:
            msg = f"the function server did not listen on {address} within {STARTUP_TIMEOUT_SECONDS:.0f}s"
            raise RenderError(msg)
        time.sleep(POLL_SECONDS)
    with grpc.insecure_channel(address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=max(deadline - time.monotonic(), 1.0))
        except grpc.FutureTimeoutError:
            msg = f"the function server on {address} listens but never became ready"
            raise RenderError(msg) from None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def serve(kinds: Iterable[str] | None = None) -> Iterator[Functions]:
    """Start one function server for ``kinds`` (all of them by default); stop it on exit.

    The server is ``modelplane-function <kinds>|all --insecure --address
    127.0.0.1:<free port>``; it is ready once it accepts gRPC connections, and it is
    stopped by its pid, also when starting or rendering fails.

    Raises:
        RenderError: the server exited or did not become ready; the message carries its
            stderr.
    """
    wanted = frozenset(registry.COMPOSERS) if kinds is None else frozenset(kinds)
    names = (
        ["all"] if wanted == frozenset(registry.COMPOSERS) else sorted(k.lower() for k in wanted)
    )
    with tempfile.TemporaryFile() as log:
        for attempt in range(1, START_ATTEMPTS + 1):
            address = f"127.0.0.1:{free_port()}"
            cmd = [sys.executable, "-m", "modelplane", *names, "--insecure", "--address", address]
            log.seek(0)
            log.truncate()
            # Output goes to a file, not a pipe nobody reads: a full pipe would block it.
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
            try:
                try:
                    _wait_ready(address, proc, time.monotonic() + STARTUP_TIMEOUT_SECONDS)
                except RenderError as err:
                    log.seek(0)
                    stderr = log.read().decode(errors="replace").strip()
                    # Someone took the free port in between: try another one.
                    taken = proc.poll() is not None and "cannot serve" in stderr
                    if taken and attempt < START_ATTEMPTS:
                        continue
                    msg = f"{err}: {stderr or '(no stderr)'}"
                    raise RenderError(msg) from None
                yield Functions(address, wanted)
                return
            finally:
                _stop(proc)
