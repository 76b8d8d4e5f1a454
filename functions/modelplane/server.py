"""The gRPC FunctionRunner: find the composite's kind in the registry and run its function.

Every failure becomes a result, never a crash, and no result carries a Python
exception's text: a request the models reject is a Fatal result that names the object
and each bad field; anything else unexpected is a Fatal result that names the composite
and where the function failed, with the traceback in the function's log.

Calls run on a pool of threads, not on the server's event loop: a slow call (a fleet,
a costly selector) never holds a cheap one back, and the loop keeps accepting calls.
A call whose client deadline passes (or whose client gives up) stops at the next safe
point (before and after composing, and at every selector evaluation loop; see
``modelplane.domain.dra.cel.call_deadline``) and ends with DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import functools
import importlib
import itertools
import json
import math
import mmap
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import reduction
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
import pydantic
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import struct_pb2 as structpb
from google.protobuf.internal import api_implementation
from google.protobuf.message import DecodeError

from modelplane import registry
from modelplane.compose import _kit as kit
from modelplane.compose._kit import Compose
from modelplane.domain.dra import cel
from modelplane.planning import wire

KUBERNETES_MAX_JSON_DEPTH = 10_000
"""How deeply Kubernetes lets a JSON document nest: ``maxDepth`` of
k8s.io/apimachinery/pkg/util/json and ``maxNestingDepth`` of sigs.k8s.io/json, which the
API server decodes with. Every object a request carries is at most this deep."""

MESSAGES_PER_JSON_LEVEL = 3
"""A JSON level is three protobuf messages in a Struct: the Struct, its map entry, the Value."""

UPB_MAX_DEPTH = 65_535
"""The message depth the upb runtime decodes once oversize messages are allowed (its
default is 100, some 32 JSON levels): a Kubernetes object at its deepest fits."""

_RECURSION_FRAMES = 12

COMPOSE_THREADS = 32
"""Calls one process composes at once. Threads share one core (the GIL), so more of
them cost no speed; they let a cheap call be answered while slow ones run. Requests are
already decoded when they wait, so this bounds nothing about memory."""


def allow_deep_messages() -> None:
    """Let protobuf decode requests as deeply nested as Kubernetes objects can be.

    The limit is process-wide. Decoding recurses on the C stack, about 250 bytes a
    message: a thread that decodes the deepest request needs some 16 MiB of stack, which
    is why ``modelplane-function`` serves from a thread with a large one.
    """
    backend = api_implementation.Type()
    if backend in ("upb", "cpp"):
        module = "google._upb._message" if backend == "upb" else "google.protobuf.pyext._message"
        importlib.import_module(module).SetAllowOversizeProtos(True)
        return
    from google.protobuf.internal import decoder  # noqa: PLC0415  # the pure-Python backend only

    decoder.SetRecursionLimit(UPB_MAX_DEPTH)


class FunctionRunner(grpcv1.FunctionRunnerServiceServicer):
    """Serves the composition functions of one or more Modelplane kinds.

    Every kind runs the same image; a Function package decides which kinds its pods
    accept, so one kind's load never slows another's.
    """

    def __init__(
        self, composers: Mapping[str, Compose] | None = None, *, threads: int = COMPOSE_THREADS
    ) -> None:
        """Create a runner for the given kinds (default: every registered kind)."""
        self.composers = dict(registry.COMPOSERS if composers is None else composers)
        self.log = logging.get_logger()
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._running: set[cel.CallBudget] = set()

    async def RunFunction(  # noqa: N802  # the gRPC method name
        self, req: fnv1.RunFunctionRequest, context: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Run the function for the request's composite kind on the thread pool.

        A call whose deadline passes, or whose client cancels it, stops computing;
        the client sees DEADLINE_EXCEEDED (or has gone already).
        """
        budget = cel.CallBudget(deadline_of(context))
        work = functools.partial(run_within, budget, req, self.composers, self.log)
        with self._lock:
            self._running.add(budget)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor(), work)
        except asyncio.CancelledError:
            budget.cancel()  # the client went away: stop the work, nobody waits for it
            raise
        except cel.Cancelled:
            self.log.bind(tag=req.meta.tag).info("call stopped: its deadline passed")
            if context is None:
                raise
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, DEADLINE_MESSAGE)
            raise  # abort raises; this is for the type checker
        finally:
            with self._lock:
                self._running.discard(budget)

    def cancel_all(self) -> None:
        """Stop every call in progress at its next safe point (the server is stopping)."""
        with self._lock:
            for budget in self._running:
                budget.cancel()

    def close(self) -> None:
        """Cancel what runs and release the threads."""
        self.cancel_all()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="compose")
            return self._pool


def serialize_response(rsp: Any) -> bytes:
    """A response's bytes, the same for the same response in every process.

    Protobuf writes map entries (every Struct's fields) in its hash tables' order unless
    asked for deterministic output, so the same response differed in bytes, not in
    meaning, across restarts; sorted, it is byte for byte the same.
    """
    return bytes(rsp.SerializeToString(deterministic=True))


DEADLINE_MESSAGE = "the call's deadline passed before the function finished; nothing was composed"


def deadline_of(context: grpc.aio.ServicerContext | None) -> float:
    """The call's deadline as a :func:`time.monotonic` instant (infinity: none)."""
    remaining = context.time_remaining() if context is not None else None
    return math.inf if remaining is None else time.monotonic() + remaining


def run_within(
    budget: cel.CallBudget,
    req: fnv1.RunFunctionRequest,
    composers: Mapping[str, Compose],
    log: Any = None,
) -> fnv1.RunFunctionResponse:
    """:func:`run` under a call budget; checked before and after composing.

    Raises:
        cel.Cancelled: the call is over; its answer would reach nobody.
    """
    with cel.call_deadline(budget):
        cel.check_call_deadline()
        rsp = run(req, composers, log)
        cel.check_call_deadline()
    return rsp


def run(
    req: fnv1.RunFunctionRequest,
    composers: Mapping[str, Compose],
    log: Any = None,
) -> fnv1.RunFunctionResponse:
    """Dispatch one request synchronously; every failure becomes a result, never a crash."""
    rsp = response.to(req)
    kind, ref = identify(req.observed.composite.resource)
    logger = (log or logging.get_logger()).bind(tag=req.meta.tag, kind=kind, name=ref)
    compose = composers.get(kind)
    if compose is None:
        served = ", ".join(sorted(composers)) or "nothing"
        what = kind or "an unnamed kind"
        response.fatal(rsp, f"this function does not compose {what}; it serves {served}")
        return rsp
    try:
        compose(req, rsp)
    except pydantic.ValidationError as exc:
        # The API server enforces the XRD's schema, so this is a request from an older
        # or hand-built client; say exactly which fields are wrong.
        logger.info("invalid input", error=kit.summarize(exc))
        return _fatal(req, invalid_message(kind, ref, exc))
    except RecursionError as exc:
        # Thousands of frames of the same few functions: the innermost say enough.
        tail = traceback.format_exc(limit=-_RECURSION_FRAMES)
        logger.error("compose failed: the request nests too deeply", traceback=tail)
        where = failed_in(exc.__traceback__)
        at = f" (in {where})" if where else ""
        return _fatal(req, f"cannot compose {kind} {ref}: the request nests too deeply to read{at}")
    except Exception as exc:  # a bug must surface as a fatal result, not a dropped request
        logger.error("compose failed", error=repr(exc), traceback=traceback.format_exc())
        where = failed_in(exc.__traceback__)
        at = f" (in {where})" if where else ""
        return _fatal(
            req,
            f"internal error while composing {kind} {ref}{at}; nothing was changed, "
            "the function's log has the details",
        )
    logger.debug("composed", resources=len(rsp.desired.resources))
    return rsp


def _fatal(req: fnv1.RunFunctionRequest, message: str) -> fnv1.RunFunctionResponse:
    """A fresh response (no half-written desired state) with one Fatal result."""
    failed = response.to(req)
    response.fatal(failed, message)
    return failed


def identify(xr: structpb.Struct) -> tuple[str, str]:
    """Return the composite's kind and ``namespace/name`` (or ``name``), whatever its shape.

    A field that is missing or of the wrong type reads as empty; no name reads as
    ``(unnamed)``.
    """
    fields: Any = xr.fields
    kind = fields["kind"].string_value if "kind" in fields else ""
    meta: Any = fields["metadata"].struct_value.fields if "metadata" in fields else {}
    name = meta["name"].string_value if "name" in meta else ""
    namespace = meta["namespace"].string_value if "namespace" in meta else ""
    ref = name or "(unnamed)"
    return kind, f"{namespace}/{ref}" if namespace else ref


def invalid_message(kind: str, ref: str, exc: pydantic.ValidationError) -> str:
    """Say which object failed validation and each bad field, in one line.

    The models validate the composite and, in some functions, the objects it requires;
    a model of another kind than the composite's is named as such.
    """
    title = str(exc.title)
    what = f"{kind} {ref}" if title in (kind, "") else f"{title} required by {kind} {ref}"
    return f"invalid {what}: {kit.summarize(exc)}"


def failed_in(tb: TracebackType | None) -> str:
    """Name the innermost Modelplane function a traceback passes through.

    That is where the function failed (an exception raised inside a library is named by
    the Modelplane code that called it); never the exception's own text. Empty when no
    Modelplane code is on the traceback.
    """
    where = ""
    for frame, _ in traceback.walk_tb(tb):
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("modelplane.") and module != __name__:
            where = f"{module}.{frame.f_code.co_name}"
    return where


class DiskVerdicts:
    """Verdicts of costly selectors shared by one server's worker processes.

    A selector near the cost limit may take a second of CPU on a device (its work limit,
    ``cel.WORK_LIMIT``); with this store each (selector, device) is evaluated once by the
    whole server, not once per worker: a lookup takes some 30 us (benches/bench_verdicts.py).
    Every verdict is decided by cost and work counts alone, so any process may reuse it.
    One small JSON file per verdict, named by the digest of (selector, device content),
    in a folder the supervisor creates private to its user (0700; files 0600) and
    removes; written whole then renamed, so a reader sees a verdict or nothing.
    """

    MAX_WRITES = 65_536
    """Verdicts one process writes at most (each a few hundred bytes)."""

    def __init__(self, folder: Path) -> None:
        """Keep verdicts in ``folder`` (which must exist)."""
        self.folder = folder
        self._writes = 0

    def get(self, key: str) -> cel.Verdict | None:
        """The verdict under ``key``; None when absent or unreadable."""
        try:
            data = json.loads((self.folder / key).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        matched, error = data.get("matched"), data.get("error")
        if not isinstance(matched, bool) or not isinstance(error, (str, type(None))):
            return None
        cost, work = data.get("cost"), data.get("work")
        return cel.Verdict(
            matched,
            error,
            cost if isinstance(cost, int) else None,
            over_limit=data.get("over_limit") is True,
            over_work=data.get("over_work") is True,
            work=work if isinstance(work, int) else 0,
        )

    def put(self, key: str, verdict: cel.Verdict) -> None:
        """Keep ``verdict`` (best effort: a full disk only costs re-evaluation)."""
        if self._writes >= self.MAX_WRITES:
            return
        self._writes += 1
        text = json.dumps(dataclasses.asdict(verdict), sort_keys=True)
        partial = self.folder / f".{key}.{os.getpid()}.{threading.get_ident()}"
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(text)
            partial.replace(self.folder / key)
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink()


def private_folder(prefix: str) -> Path:
    """A new folder only this user can enter (0700, whatever the umask)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o700)
    return folder


# --- compute processes --------------------------------------------------------------------------

WORKER_STACK_BYTES = 64 * 1024 * 1024
"""A compute thread's stack: decoding the deepest request takes some 16 MiB
(:func:`allow_deep_messages`). Address space only: what a request uses is touched."""
SWITCH_INTERVAL_SECONDS = 0.001
"""How long a thread holds the GIL while others wait (Python's default: 5 ms). A cheap
call passes the GIL between threads a few dozen times: behind four busy threads it
waited some 500 ms at 5 ms, 25 ms at 1 ms (benches/bench_server.py)."""
WORKER_STARTUP_SECONDS = 120.0
"""How long a compute process may take to start (a loaded machine is slow)."""
WORKER_STOP_SECONDS = 30.0
"""How long a stopping compute process may take to finish what it composes."""
RESTARTS_PER_MINUTE = 5
"""A compute process that dies is replaced, after a back-off that doubles with each
death in the last minute (:data:`RESTART_BACKOFF_SECONDS`); one more death than this in
a minute and the server stops with a non-zero exit (:attr:`ComputePool.failure`), so
that Kubernetes restarts the pod with its own back-off and its restart count shows the
problem, rather than a pod that listens, looks healthy and answers every call
UNAVAILABLE."""
RESTART_BACKOFF_SECONDS = (0.0, 0.5, 1.0, 2.0, 4.0)
"""The wait before starting a worker to replace the first, second, ... death of the
last minute: the first is replaced at once, a crash loop is slowed down."""
WORKER_DIED_MESSAGE = "the function's worker process exited while composing; nothing was composed"
SHARED_REQUEST_BYTES = 1024 * 1024
"""A request at least this large reaches its worker as a memory file (Linux's memfd)
passed over the pipe, not through it: copying 112 MiB through the pipe (pickled, in
64 KiB turns) took ~290 ms, writing it to a memory file ~45 ms, and the worker decodes
from the file's pages without a copy of its own."""
_READY = "ready"
_COMPOSING = "composing"
_CANCEL = None
_STOP = (0, 0.0, None)
"""Call ids start at 1: this message asks a worker to stop. (Closing the pipe would not
reach it while a reader thread here is blocked on the pipe.)"""


class PoolError(Exception):
    """The compute processes cannot start; the message says why in one line."""


class ComputePool:
    """Compose calls in N worker processes; the serving process only moves bytes.

    Requests reach a worker as the bytes gRPC received (the serving process never
    decodes them) and the response comes back as bytes, so N calls compute on N cores
    whatever connection they came on: Crossplane sends all of a Function's calls on one
    HTTP/2 connection per pod. Each call goes to the worker with the fewest calls in
    progress (ties to the first, so calls one at a time find one worker's caches warm);
    a worker composes several at once on threads, so a cheap call is never stuck
    behind slow ones. Workers start from a fork server (a fresh interpreter, no
    gRPC state), so one that dies is replaced safely while the server runs.
    """

    def __init__(self, kinds: list[str], workers: int, *, verdicts: Path, debug: bool) -> None:
        """Prepare ``workers`` processes composing ``kinds`` (registry kind names)."""
        self.kinds = kinds
        self.size = workers
        self.verdicts = verdicts
        self.debug = debug
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["modelplane.server", "modelplane.registry"])
        self._slots: list[_Slot] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._deaths: list[float] = []
        self._closing = False
        self._closed = threading.Event()
        self._on_failure: Callable[[], None] | None = None
        self.failure: str | None = None
        """Why the pool gave up (workers keep dying); the server then exits non-zero."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._senders = ThreadPoolExecutor(max(2, workers), thread_name_prefix="send")

    def start(self) -> None:
        """Start every worker and wait until each is ready.

        Raises:
            PoolError: a worker could not start.
        """
        for _ in range(self.size):
            self._slots.append(self._spawn())

    def attach(
        self, loop: asyncio.AbstractEventLoop, on_failure: Callable[[], None] | None = None
    ) -> None:
        """Deliver results to ``loop`` (the server's); call ``on_failure`` (from any
        thread) when the pool gives up, to stop the server."""
        self._loop = loop
        self._on_failure = on_failure
        if self.failure is not None and on_failure is not None:
            on_failure()

    async def run(self, data: bytes, context: grpc.aio.ServicerContext) -> bytes:
        """One RunFunction call: its request bytes in, its response bytes out.

        The worker gets the call's deadline as a :func:`time.monotonic` instant (one
        clock for every process of the machine) and stops at it; a call its client
        cancels is cancelled in the worker too.
        """
        loop = asyncio.get_running_loop()
        call_id = next(self._ids)
        waiter: asyncio.Future[tuple[str, bytes]] = loop.create_future()
        slot = self._least_busy()
        if slot is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, WORKER_DIED_MESSAGE)
            raise AssertionError  # abort raises
        slot.waiting[call_id] = waiter
        if slot.dead:  # it died since it was chosen; its reader may have missed this call
            _resolve(waiter, ("died", b""))
        try:
            await loop.run_in_executor(
                self._senders, slot.send, (call_id, deadline_of(context), data)
            )
            kind, payload = await waiter
        except asyncio.CancelledError:
            self._senders.submit(slot.send, (call_id, 0.0, _CANCEL))
            raise
        finally:
            slot.waiting.pop(call_id, None)
        if kind == "ok":
            return payload
        if kind == "cancelled":
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, DEADLINE_MESSAGE)
        if kind == "unreadable":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, payload.decode())
        await context.abort(grpc.StatusCode.UNAVAILABLE, WORKER_DIED_MESSAGE)
        raise AssertionError  # abort raises

    def pids(self) -> list[int]:
        """The workers' process ids."""
        with self._lock:
            return [s.process.pid or 0 for s in self._slots]

    def close(self) -> None:
        """Stop every worker: it finishes nothing more, and exits."""
        self._closed.set()
        with self._lock:
            self._closing = True
            slots, self._slots = self._slots, []
        for slot in slots:
            slot.send(_STOP)
        for slot in slots:
            slot.process.join(WORKER_STOP_SECONDS)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join()
            slot.conn.close()
        self._senders.shutdown(wait=False, cancel_futures=True)

    def _least_busy(self) -> _Slot | None:
        with self._lock:
            alive = [s for s in self._slots if not s.dead]
        return min(alive, key=lambda s: len(s.waiting), default=None)

    def _spawn(self) -> _Slot:
        ours, theirs = self._context.Pipe(duplex=True)
        args = (self.kinds, theirs, self.verdicts, self.debug)
        process = self._context.Process(target=compute_main, args=args, name="modelplane-worker")
        process.start()
        theirs.close()
        if not ours.poll(WORKER_STARTUP_SECONDS):
            process.kill()
            msg = "a worker process did not start in time"
            raise PoolError(msg)
        try:
            said = ours.recv()
        except (EOFError, OSError):
            said = None
        if said != _READY:
            process.join()
            msg = str(said) if said else f"a worker process {_exit_reason(process.exitcode)}"
            raise PoolError(msg)
        slot = _Slot(process, ours)
        reader = threading.Thread(target=self._read, args=(slot,), daemon=True, name="results")
        reader.start()
        return slot

    def _read(self, slot: _Slot) -> None:
        """Hand each result to its waiting call; when the worker dies, fail its calls."""
        while True:
            try:
                call_id, kind, payload = slot.conn.recv()
            except (EOFError, OSError):
                break
            if kind == _COMPOSING:  # the worker decoded the call: which composite it is
                slot.composing[call_id] = payload.decode(errors="replace")
                continue
            slot.composing.pop(call_id, None)
            self._deliver(slot, call_id, (kind, payload))
        slot.dead = True
        for call_id in list(slot.waiting):
            self._deliver(slot, call_id, ("died", b""))
        self._replace(slot)

    def _deliver(self, slot: _Slot, call_id: int, result: tuple[str, bytes]) -> None:
        waiter = slot.waiting.get(call_id)
        if waiter is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(_resolve, waiter, result)

    def _replace(self, slot: _Slot) -> None:
        """Start a worker in place of one that died, after a back-off; give up (and stop
        the server) when workers keep dying."""
        slot.process.join()
        with self._lock:
            if self._closing:
                return
            self._slots.remove(slot)
        why = f"worker {slot.process.pid} {_exit_reason(slot.process.exitcode)} {_doing(slot)}"
        while True:
            delay = self._count_death()
            if delay is None:
                self._fail(f"{why}; {RESTARTS_PER_MINUTE + 1} workers died within a minute")
                return
            _say(f"{why}; starting another" + (f" in {delay:g} s" if delay else ""))
            if self._closed.wait(delay):
                return
            try:
                fresh = self._spawn()
            except PoolError as err:
                why = f"cannot start a worker: {err}"
                continue
            break
        with self._lock:
            if not self._closing:
                self._slots.append(fresh)
                return
        fresh.send(_STOP)

    def _count_death(self) -> float | None:
        """Record a death; the back-off before replacing it, or None: too many."""
        with self._lock:
            now = time.monotonic()
            self._deaths = [t for t in self._deaths if now - t < 60] + [now]
            recent = len(self._deaths)
        if recent > RESTARTS_PER_MINUTE:
            return None
        return RESTART_BACKOFF_SECONDS[min(recent, len(RESTART_BACKOFF_SECONDS)) - 1]

    def _fail(self, why: str) -> None:
        with self._lock:
            if self.failure is not None or self._closing:
                return
            self.failure = f"{why}: stopping, so that the pod restarts"
            on_failure = self._on_failure
        if on_failure is None:
            _say(self.failure)
        else:
            on_failure()  # the server stops and exits with this as its last line


def _doing(slot: _Slot) -> str:
    """What a dead worker was composing: each call's composite, or that it was idle."""
    composing = sorted(set(slot.composing.values()))
    if not composing:
        return "while idle" if not slot.waiting else "before reading its call"
    return "while composing " + ", ".join(composing)


class _Slot:
    """One worker process, its pipe, and the calls it is composing."""

    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.waiting: dict[int, asyncio.Future[tuple[str, bytes]]] = {}
        self.composing: dict[int, str] = {}
        """The composite ("Kind namespace/name") of each call the worker has decoded."""
        self.dead = False
        self._send_lock = threading.Lock()

    def send(self, message: tuple[int, float, bytes | None]) -> None:
        """Send one call (or a cancellation) to the worker; a dead worker is noticed by
        the reader, which fails the call.

        A large request goes as a memory file (:data:`SHARED_REQUEST_BYTES`): the message
        carries its size in place of the bytes, and the file's descriptor follows it.
        """
        call_id, deadline, data = message
        shared = _memory_file(data) if data is not None else None
        try:
            with self._send_lock, contextlib.suppress(OSError, ValueError):
                if shared is None:
                    self.conn.send(message)
                    return
                self.conn.send((call_id, deadline, len(data or b"")))
                reduction.send_handle(self.conn, shared, self.process.pid or 0)
        finally:
            if shared is not None:
                os.close(shared)  # the worker holds its own copy of the descriptor


def _memory_file(data: bytes) -> int | None:
    """A memory file holding ``data`` when it is large (Linux), else None (send it inline)."""
    if len(data) < SHARED_REQUEST_BYTES or not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create("modelplane-request", os.MFD_CLOEXEC)
    except OSError:
        return None  # out of memory files: the pipe still works
    try:
        with memoryview(data) as view:
            written = 0
            while written < len(view):
                written += os.write(fd, view[written:])
    except OSError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def _request_bytes(data: bytes | int, fd: int | None) -> Iterator[bytes | memoryview]:
    """A call's request: the bytes sent inline, or the pages of its memory file (closed after)."""
    if fd is None:
        yield data if isinstance(data, bytes) else b""
        return
    try:
        with mmap.mmap(fd, int(data), prot=mmap.PROT_READ) as pages, memoryview(pages) as view:
            yield view
    finally:
        os.close(fd)


def _resolve(waiter: asyncio.Future[tuple[str, bytes]], result: tuple[str, bytes]) -> None:
    if not waiter.done():
        waiter.set_result(result)


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _say(text: str) -> None:
    sys.stderr.write(f"modelplane-function: {text}\n")
    sys.stderr.flush()


# --- inside a compute process ---------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def compute_main(kinds: list[str], conn: Connection, verdicts: Path, debug: bool) -> None:
    """A worker process: compose the calls that arrive on ``conn`` until it closes."""
    _stop_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the serving process decides when to stop
    logging.configure(logging.Level.DEBUG if debug else logging.Level.INFO)
    allow_deep_messages()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    cel.share_verdicts(DiskVerdicts(verdicts))
    try:
        composers = {kind: registry.COMPOSERS[kind] for kind in kinds}
    except KeyError as err:
        conn.send(f"unknown kind {err}")
        return
    threading.stack_size(WORKER_STACK_BYTES)
    worker = _Worker(conn, composers)
    conn.send(_READY)
    worker.serve()


class _Worker:
    def __init__(self, conn: Connection, composers: Mapping[str, Compose]) -> None:
        self.conn = conn
        self.composers = composers
        self.log = logging.get_logger()
        self.pool = ThreadPoolExecutor(COMPOSE_THREADS, thread_name_prefix="compose")
        self.budgets: dict[int, cel.CallBudget] = {}
        self.lock = threading.Lock()

    def serve(self) -> None:
        while True:
            try:
                call_id, deadline, data = self.conn.recv()
                # A large request's bytes are in a memory file, whose descriptor follows.
                fd = reduction.recv_handle(self.conn) if isinstance(data, int) else None
            except (EOFError, OSError, RuntimeError):  # RuntimeError: the descriptor never came
                break
            if call_id == _STOP[0]:
                break
            if data is _CANCEL:
                with self.lock:
                    budget = self.budgets.get(call_id)
                if budget is not None:
                    budget.cancel()
                continue
            budget = cel.CallBudget(deadline)
            with self.lock:
                self.budgets[call_id] = budget
            self.pool.submit(self.compose, call_id, budget, data, fd)
        with self.lock:  # the server is stopping: nobody waits for the answers
            for budget in self.budgets.values():
                budget.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def compose(
        self, call_id: int, budget: cel.CallBudget, data: bytes | int, fd: int | None
    ) -> None:
        try:
            result = self._answer(call_id, budget, data, fd)
        finally:
            with self.lock:
                self.budgets.pop(call_id, None)
        with self.lock, contextlib.suppress(OSError, ValueError):
            self.conn.send((call_id, *result))

    def _answer(
        self, call_id: int, budget: cel.CallBudget, data: bytes | int, fd: int | None
    ) -> tuple[str, bytes]:
        try:
            with _request_bytes(data, fd) as raw:  # a memory file goes once decoded
                req = wire.decode_request(raw)  # a fleet's items stay encoded until read
        except (OSError, ValueError, BufferError) as err:  # its memory file would not map
            return "unreadable", f"cannot read the RunFunctionRequest: {err}".encode()
        except DecodeError as err:
            return "unreadable", f"cannot decode the RunFunctionRequest: {err}".encode()
        except RecursionError:
            return "unreadable", b"cannot decode the RunFunctionRequest: it nests too deeply"
        self._tell_composite(call_id, req)
        try:
            rsp = run_within(budget, req, self.composers, self.log)
        except cel.Cancelled:
            self.log.bind(tag=req.meta.tag).info("call stopped: its deadline passed")
            return "cancelled", b""
        return "ok", serialize_response(rsp)

    def _tell_composite(self, call_id: int, req: fnv1.RunFunctionRequest) -> None:
        """Tell the server which composite the call is for: a death's log line names it."""
        kind, ref = identify(req.observed.composite.resource)
        text = " ".join(f"{kind or 'an unnamed kind'} {ref}".split())[:_COMPOSITE_CHARS]
        with self.lock, contextlib.suppress(OSError, ValueError):
            self.conn.send((call_id, _COMPOSING, text.encode()))


_COMPOSITE_CHARS = 600
"""A composite in a log line: its kind and a name of Kubernetes' longest (253 + 63)."""


def _stop_with_parent() -> None:
    """Have the kernel SIGTERM this worker when its parent dies, however it dies."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):  # Linux only; elsewhere best effort
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)
