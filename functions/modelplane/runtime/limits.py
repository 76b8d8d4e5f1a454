"""How deep, how many and how long: the settings a serving process lives by.

Kubernetes objects nest far deeper than protobuf decodes by default, and decoding the
deepest recurses some 16 MiB of C stack; the server and its workers set the process-wide
limit (:func:`allow_deep_messages`) and run calls on threads with stacks that take it
(:func:`thread_stacks`). The SDK's ``runtime.serve`` does neither, which is why the
runtime serves with its own code (:mod:`modelplane.runtime.serving`). The serving process
and its workers also keep the memory of one request for the next ones
(:func:`reuse_request_memory`).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import threading
from collections.abc import Iterator

from google.protobuf.internal import api_implementation

from modelplane.runtime import heap

KUBERNETES_MAX_JSON_DEPTH = 10_000
"""How deeply Kubernetes lets a JSON document nest: ``maxDepth`` of
k8s.io/apimachinery/pkg/util/json and ``maxNestingDepth`` of sigs.k8s.io/json, which the
API server decodes with. Every object a request carries is at most this deep."""

MESSAGES_PER_JSON_LEVEL = 3
"""A JSON level is three protobuf messages in a Struct: the Struct, its map entry, the Value."""

UPB_MAX_DEPTH = 65_535
"""The message depth the upb runtime decodes once oversize messages are allowed (its
default is 100, some 32 JSON levels): a Kubernetes object at its deepest fits."""

STACK_BYTES = 64 * 1024 * 1024
"""The stack of every thread that decodes or composes a call (the server's, its calls',
a worker's): decoding the deepest request takes some 16 MiB (:func:`allow_deep_messages`)
and a process's main thread often has 8. Address space only: what a request uses is
touched."""

COMPOSE_THREADS = 32
"""Calls one process composes at once. Threads share one core (the GIL), so more of
them cost no speed; they let a cheap call be answered while slow ones run. Requests are
already decoded when they wait, so this bounds nothing about memory."""

SWITCH_INTERVAL_SECONDS = 0.001
"""How long a thread holds the GIL while others wait (Python's default: 5 ms). A cheap
call passes the GIL between threads a few dozen times: behind four busy threads it
waited some 500 ms at 5 ms, 25 ms at 1 ms (benches/bench_server.py)."""


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # glibc's mallopt
REQUEST_MMAP_BYTES = 32 * 1024 * 1024
"""Blocks up to this size come from the heap, not a mapping of their own (the largest
glibc takes); an L request (~15 MiB) is one."""
RETAINED_BYTES = 256 * 1024 * 1024
"""How much freed memory a serving process or worker may keep for the next requests."""


def reuse_request_memory() -> None:
    """Have this process reuse the memory of one request for the next ones.

    Serving process: it holds each request while handing it to a worker: 4 concurrent L
    calls are 60 MiB of fresh memory, which glibc gave back once freed (gRPC's threads in
    arenas of their own, buffers above its trim threshold), so the next calls faulted the
    same pages in again (~5,000 faults and ~10-20 ms of system time a call, on the cores
    the workers compose on). Worker: an L call decodes and frees some 15 MiB of
    messages; given back (by glibc's thresholds, and by protobuf's own trim:
    :mod:`.heap`), the next call faulted them in again: ~9,700 faults and 25-30 ms of
    system time a steady L call, against ~460 and 2-8 ms kept. One arena with fixed
    thresholds keeps the memory, and the serving process's peak falls (~210 MiB against
    ~270-320: one arena, not one per thread). A call far larger than an L fleet's gives
    its memory back instead (:func:`.heap.give_back_after`). Call before the process
    starts its threads; glibc only (elsewhere nothing happens).
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:  # not glibc: its own allocator's defaults
        return
    heap.stop_protobuf_trim()  # else protobuf gives it all back every 10,000 blocks
    mallopt(_M_ARENA_MAX, 1)
    mallopt(_M_MMAP_THRESHOLD, REQUEST_MMAP_BYTES)
    mallopt(_M_TRIM_THRESHOLD, RETAINED_BYTES)


def allow_deep_messages() -> None:
    """Let protobuf decode requests as deeply nested as Kubernetes objects can be.

    The limit is process-wide. Decoding recurses on the C stack, about 250 bytes a
    message: a thread that decodes the deepest request needs some 16 MiB of stack, which
    is why ``modelplane-function`` serves from threads with :data:`STACK_BYTES`.
    """
    backend = api_implementation.Type()
    if backend in ("upb", "cpp"):
        module = "google._upb._message" if backend == "upb" else "google.protobuf.pyext._message"
        importlib.import_module(module).SetAllowOversizeProtos(True)
        return
    from google.protobuf.internal import decoder  # noqa: PLC0415  # the pure-Python backend only

    decoder.SetRecursionLimit(UPB_MAX_DEPTH)


@contextlib.contextmanager
def thread_stacks(stack_bytes: int = STACK_BYTES) -> Iterator[None]:
    """Threads started in the block get stacks of ``stack_bytes`` (the platform's default
    if refused): the server's, and the pool's that compose calls, started as needed."""
    previous = threading.stack_size()
    with contextlib.suppress(ValueError, RuntimeError):  # the platform sets stacks itself
        threading.stack_size(stack_bytes)
    try:
        yield
    finally:
        threading.stack_size(previous)
