"""The worker pool's serving process keeps freed request memory for the next requests.

Measured as the kernel counts it: bursts of large blocks allocated on fresh threads (as
gRPC's threads receive requests), freed, and allocated again. Page faults are counted, not
timed, so the result does not depend on the machine's load.
"""

from __future__ import annotations

import ctypes
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from modelplane.runtime import limits

FUNCTIONS = Path(__file__).resolve().parents[1] / "functions"
BLOCK_BYTES = 16 * 1024 * 1024  # about an L request
BLOCKS_PER_BURST = 8  # 4 concurrent calls on 2 threads

_BURSTS = f"""
import json, resource, sys, threading
sys.path.insert(0, {str(FUNCTIONS)!r})
from modelplane.runtime import limits
if sys.argv[1] == "reuse":
    limits.reuse_request_memory()

def receive():
    blocks = [b"x" * {BLOCK_BYTES} for _ in range({BLOCKS_PER_BURST // 2})]
    del blocks

faults = []
for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    threads = [threading.Thread(target=receive) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps(faults))
"""


def _faults_per_burst(mode: str) -> list[int]:
    out = subprocess.run(
        [sys.executable, "-c", _BURSTS, mode], capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout))


def _burst_pages() -> int:
    return BLOCKS_PER_BURST * BLOCK_BYTES // resource.getpagesize()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_bursts_after_the_first_fault_nothing_in() -> None:
    later = _faults_per_burst("reuse")[1:]
    # The first burst maps the memory; the later ones reuse it (a page in a hundred at most).
    assert statistics.median(later) < _burst_pages() / 100, later


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_without_it_every_burst_faults_its_memory_in_again() -> None:
    later = _faults_per_burst("default")[1:]
    # Why the serving process sets it: glibc's defaults give the memory back each time.
    assert statistics.median(later) > _burst_pages() / 2, later


def test_an_allocator_without_mallopt_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda _: object())
    limits.reuse_request_memory()  # nothing to set, nothing raised
