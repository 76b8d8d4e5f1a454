"""A serving process and its workers keep freed request memory for the next requests.

Measured as the kernel counts it: bursts of large blocks allocated on fresh threads (as
gRPC's threads receive requests), freed, and allocated again; and bursts of a large
request decoded by protobuf, freed, then the many small messages a call makes and frees.
Page faults are counted, not timed, so the result does not depend on the machine's load.
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
from modelplane.runtime import heap, limits

FUNCTIONS = Path(__file__).resolve().parents[1] / "functions"
BLOCK_BYTES = 16 * 1024 * 1024  # about an L request
BLOCKS_PER_BURST = 8  # 4 concurrent calls on 2 threads

_BURSTS = f"""
import json, resource, sys, threading
sys.path.insert(0, {str(FUNCTIONS)!r})
from modelplane.runtime import heap, limits
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


# A request's worth of decoded messages freed, then 12,000 small messages made and freed
# (past the 10,000 arena blocks at which protobuf's runtime calls malloc_trim).
_PROTOBUF_BURSTS = f"""
import ctypes, json, resource, sys
sys.path.insert(0, {str(FUNCTIONS)!r})
from google.protobuf import struct_pb2
from modelplane.runtime import heap, limits
mallopt = ctypes.CDLL(None).mallopt
mallopt(-3, limits.REQUEST_MMAP_BYTES)  # glibc's thresholds as reuse_request_memory sets them
mallopt(-1, limits.RETAINED_BYTES)
if sys.argv[1] == "stop":
    assert heap.stop_protobuf_trim()
text = struct_pb2.Value(string_value="x" * 8192)
request = struct_pb2.Struct(fields={{f"k{{i}}": text for i in range(2000)}}).SerializeToString()
small = struct_pb2.Struct(fields={{"a": struct_pb2.Value(string_value="x")}}).SerializeToString()
faults = []
for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    decoded = struct_pb2.Struct.FromString(request)
    del decoded
    for _ in range(12_000):
        struct_pb2.Struct.FromString(small)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps(faults))
"""
_REQUEST_PAGES = 2000 * 8192 // resource.getpagesize()


def _protobuf_faults(mode: str) -> list[int]:
    out = subprocess.run(
        [sys.executable, "-c", _PROTOBUF_BURSTS, mode], capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout))


_GLIBC_UPB = sys.platform.startswith("linux") and heap.stop_protobuf_trim()


@pytest.mark.skipif(not _GLIBC_UPB, reason="protobuf's upb runtime on glibc")
def test_protobuf_no_longer_gives_the_heap_back_between_requests() -> None:
    later = _protobuf_faults("stop")[1:]
    assert statistics.median(later) < _REQUEST_PAGES / 100, later


@pytest.mark.skipif(not _GLIBC_UPB, reason="protobuf's upb runtime on glibc")
def test_without_it_protobuf_trims_and_every_request_faults_in_again() -> None:
    later = _protobuf_faults("default")[1:]
    # Why the processes stop it: glibc's thresholds alone do not keep the memory.
    assert statistics.median(later) > _REQUEST_PAGES / 2, later


def test_a_library_without_the_relocation_is_left_alone() -> None:
    assert heap._trim_slot(b"not an ELF file", 0) is None
    elf = Path(sys.executable).resolve().read_bytes()  # the interpreter calls no malloc_trim
    assert heap._trim_slot(elf, 0) is None


@pytest.mark.skipif(not _GLIBC_UPB, reason="protobuf's upb runtime on glibc")
def test_stopping_it_twice_is_stopping_it_once() -> None:
    assert heap.stop_protobuf_trim()
    assert heap.stop_protobuf_trim()


# A call's memory as a worker or the serving process frees it: many blocks, each below
# the heap's mapping threshold (gRPC's slices, protobuf's arena blocks), with a small
# live object between them (what the call keeps), then freed; the kernel's count of
# the process's anonymous memory says what it kept.
_KEPT = f"""
import json, sys
from pathlib import Path
sys.path.insert(0, {str(FUNCTIONS)!r})
from modelplane.runtime import heap, limits
limits.reuse_request_memory()

def anon_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024

request_bytes = int(sys.argv[1])
before = anon_mib()
blocks, kept = [], []
for _ in range(request_bytes // (1 << 20)):
    blocks.append(b"x" * (1 << 20))
    kept.append(bytes(64))
del blocks
freed = anon_mib()
gave = heap.give_back_after(request_bytes)
print(json.dumps([before, freed, anon_mib(), gave]))
"""


def _kept_mib(request_bytes: int) -> tuple[int, int, int, bool]:
    """The process's anonymous MiB before the call, once it freed it, after
    :func:`heap.give_back_after`, and whether that gave anything back."""
    out = subprocess.run(
        [sys.executable, "-c", _KEPT, str(request_bytes)],
        capture_output=True,
        text=True,
        check=True,
    )
    before, freed, after, gave = json.loads(out.stdout)
    return before, freed, after, gave


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_a_call_far_larger_than_l_gives_its_memory_back() -> None:
    size = heap.GIVE_BACK_AFTER_BYTES * 2
    _, freed, after, gave = _kept_mib(size)
    assert gave
    # Freed, the heap's thresholds kept it (for the next call); given back, it is gone.
    assert freed - after > size // (1 << 20) // 2, (freed, after)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_an_l_sized_call_keeps_its_memory_for_the_next() -> None:
    size = heap.GIVE_BACK_AFTER_BYTES - (1 << 20)
    before, _, after, gave = _kept_mib(size)
    assert not gave
    # Freed, and still the process's: most of the call's memory, for the next call.
    assert after - before > size // (1 << 20) // 2, (before, after)


def test_an_allocator_without_malloc_trim_gives_nothing_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    assert not heap.give_back_after(heap.GIVE_BACK_AFTER_BYTES)
