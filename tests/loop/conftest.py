"""Fixtures of the loop tests: one function server per session, converged fleets cached."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from modelplane.dev import engine, render
from modelplane.dev.loop import fleets
from modelplane.dev.loop.apis import function_targets
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import PassRecord

STARTUP_TIMEOUT_SECONDS = 120.0
"""Generous: a loaded 2-core machine takes its time to import grpc and pydantic."""
QUIESCE_LIMIT = 10
"""Passes a fleet gets to stop changing before flaps and edits start from it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the loop tests when Crossplane's render engine (``bin/crossplane``) is not built."""
    try:
        engine.find_crossplane()
    except engine.EngineError as err:
        skip = pytest.mark.skip(reason=f"{err} (the loop tests run Crossplane's reconciler)")
        for item in items:
            if "loop" in item.keywords:
                item.add_marker(skip)


def _server() -> list[str]:
    script = Path(sys.executable).with_name("modelplane-function")
    return [str(script)] if script.exists() else [sys.executable, "-m", "modelplane"]


SERVER_ENV = "MODELPLANE_LOOP_FUNCTIONS"
"""``host:port`` of a function server already running (e.g. with ``--debug``) to use instead."""


@pytest.fixture(scope="session")
def loop_functions() -> Iterator[dict[str, str]]:
    """Serve every function from one ``modelplane-function all`` process for the session."""
    running = os.environ.get(SERVER_ENV)
    if running:
        yield function_targets(running)
        return
    port = render.free_port()
    address = f"127.0.0.1:{port}"
    cmd = [*_server(), "all", "--insecure", "--address", address]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while True:
            if proc.poll() is not None:
                err = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace")
                pytest.fail(f"modelplane-function exited with {proc.returncode}: {err}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"modelplane-function did not listen on {address}")
            time.sleep(0.1)
        yield function_targets(address)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Converged:
    """A fleet reconciled from scratch: every pass's record, and the control plane after.

    ``plane`` is the state once a pass changed nothing (or after :data:`QUIESCE_LIMIT`
    passes); take a :meth:`ControlPlane.clone` before changing it.
    """

    fleet: str
    plane: ControlPlane
    records: list[PassRecord]
    first: list[PassRecord] = field(default_factory=list)
    """For a fleet applied in two steps, the passes of the first step (``records`` are the
    second step's)."""

    @property
    def quiet(self) -> bool:
        """Tell whether the last pass changed nothing."""
        return bool(self.records) and self.records[-1].quiet

    def after(self, passes: int) -> PassRecord:
        """Return the record of pass ``passes`` (the last one when it converged earlier)."""
        return self.records[min(passes, len(self.records)) - 1]


@dataclass
class Fleets:
    """Every fleet converged so far in this session, by name."""

    functions: dict[str, str]
    done: dict[str, Converged] = field(default_factory=dict)

    def get(self, name: str) -> Converged:
        """Return fleet ``name`` converged (reconciling it the first time it is asked for)."""
        if name not in self.done:
            fleet = fleets.BY_NAME[name]
            plane = ControlPlane(fleet.documents(), self.functions)
            records = plane.converge(QUIESCE_LIMIT)
            first: list[PassRecord] = []
            if fleet.then:
                first = records
                for doc in fleet.then_documents():
                    plane.put(doc)
                records = plane.converge(QUIESCE_LIMIT)
            self.done[name] = Converged(name, plane, records, first)
        return self.done[name]


@pytest.fixture(scope="session")
def converged(loop_functions: dict[str, str]) -> Fleets:
    """Fleets reconciled from scratch to quiescence, once per session."""
    return Fleets(loop_functions)
