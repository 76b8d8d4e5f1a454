"""The worker pool: compose calls in N worker processes; the serving process moves bytes.

The SDK serves from one process, whose calls share one core (the GIL); processes that
share the port (SO_REUSEPORT) would split connections, not calls, and Crossplane sends
all of a pod's calls to a Function on one connection. So the pool is ours: each call's
request goes, undecoded, to the least busy worker (:mod:`modelplane.runtime.worker`),
and its response comes back as bytes. A worker that dies is replaced after a back-off;
too many deaths in a minute stop the server (a crash loop fails loudly).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import reduction
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_any
from multiprocessing.process import BaseProcess
from pathlib import Path

import grpc

from modelplane.runtime import heap, protocol
from modelplane.runtime.errors import PoolError
from modelplane.runtime.protocol import DEADLINE_MESSAGE, deadline_of

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

_LIFECYCLE = threading.Lock()
"""Every start and reap of a worker process goes through this lock: multiprocessing is
not thread-safe there. ``Process.start()`` polls every child started before
(``multiprocessing.process._cleanup``), and under the fork server a poll reads a dead
child's exit status off its sentinel, once: two threads polling one dead worker race, and
the loser records 255 (what multiprocessing says when the fork server itself is gone)."""


def _start(process: BaseProcess) -> None:
    with _LIFECYCLE:
        process.start()


def _reap(process: BaseProcess, timeout: float | None = None) -> int | None:
    """Wait up to ``timeout`` for a worker to end; its exit code, None while it runs."""
    wait_for_any([process.sentinel], timeout)  # waits without reading the status
    with _LIFECYCLE:
        process.join(0)
        return process.exitcode


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
        self._context.set_forkserver_preload([protocol.WORKER, "modelplane.registry"])
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
            self._join(self._spawn())

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
            self._senders.submit(slot.send, (call_id, 0.0, protocol.CANCEL))
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
            slot.send(protocol.STOP)
        for slot in slots:
            if _reap(slot.process, WORKER_STOP_SECONDS) is None:
                slot.process.kill()
                _reap(slot.process)
            slot.conn.close()
        self._senders.shutdown(wait=False, cancel_futures=True)

    def _least_busy(self) -> _Slot | None:
        with self._lock:
            alive = [s for s in self._slots if not s.dead]
        return min(alive, key=lambda s: len(s.waiting), default=None)

    def _spawn(self) -> _Slot:
        ours, theirs = self._context.Pipe(duplex=True)
        args = (self.kinds, theirs, self.verdicts, self.debug)
        process = self._context.Process(
            target=protocol.compute_main, args=args, name="modelplane-worker"
        )
        _start(process)
        theirs.close()
        if not ours.poll(WORKER_STARTUP_SECONDS):
            process.kill()
            msg = "a worker process did not start in time"
            raise PoolError(msg)
        try:
            said = ours.recv()
        except (EOFError, OSError):
            said = None
        if said != protocol.READY:
            code = _reap(process)
            msg = str(said) if said else f"a worker process {_exit_reason(code)}"
            raise PoolError(msg)
        return _Slot(process, ours)

    def _join(self, slot: _Slot) -> None:
        """Put a started worker in the pool, then read its results: only once it is in,
        so one that dies at once is taken out of the pool it is in. A pool stopping by
        now stops it instead."""
        with self._lock:
            joined = not self._closing
            if joined:
                self._slots.append(slot)
        if not joined:
            slot.send(protocol.STOP)
            return
        reader = threading.Thread(target=self._read, args=(slot,), daemon=True, name="results")
        reader.start()

    def _read(self, slot: _Slot) -> None:
        """Hand each result to its waiting call; when the worker dies, fail its calls."""
        while True:
            try:
                call_id, kind, payload = slot.conn.recv()
                if payload == protocol.INLINE:  # its bytes follow as they are
                    payload = slot.conn.recv_bytes()
            except (EOFError, OSError):
                break
            if kind == protocol.COMPOSING:  # the worker decoded the call: which composite it is
                slot.composing[call_id] = payload.decode(errors="replace")
                continue
            slot.composing.pop(call_id, None)
            self._deliver(slot, call_id, (kind, payload))
        slot.dead = True
        try:
            # Said before its calls fail: a caller told of the death may stop the server
            # at once, and a stopping pool says nothing more.
            delay = self._mourn(slot)
        finally:
            for call_id in list(slot.waiting):
                self._deliver(slot, call_id, ("died", b""))
        if delay is not None:
            self._replace(delay)

    def _deliver(self, slot: _Slot, call_id: int, result: tuple[str, bytes]) -> None:
        waiter = slot.waiting.get(call_id)
        if waiter is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(_resolve, waiter, result)

    def _mourn(self, slot: _Slot) -> float | None:
        """Take a dead worker out and say why it died; the back-off before replacing it,
        or None: it is not replaced (the pool is stopping, or gives up)."""
        code = _reap(slot.process, WORKER_STOP_SECONDS)
        if code is None:  # its pipe closed but it lingers: its calls must not wait on it
            slot.process.kill()
            code = _reap(slot.process)
        with self._lock:
            if self._closing:
                return None
            self._slots.remove(slot)
        return self._count_death(f"worker {slot.process.pid} {_exit_reason(code)} {_doing(slot)}")

    def _replace(self, delay: float) -> None:
        """Start a worker in place of one that died, after ``delay``; each start that
        fails counts as a death (workers that keep dying stop the server)."""
        while not self._closed.wait(delay):
            try:
                fresh = self._spawn()
            except PoolError as err:
                next_delay = self._count_death(f"cannot start a worker: {err}")
                if next_delay is None:
                    return
                delay = next_delay
                continue
            self._join(fresh)
            return

    def _count_death(self, why: str) -> float | None:
        """Record a death and say ``why``; the back-off before replacing it, or None: too
        many in a minute, and the pool gives up."""
        with self._lock:
            now = time.monotonic()
            self._deaths = [t for t in self._deaths if now - t < 60] + [now]
            recent = len(self._deaths)
        if recent > RESTARTS_PER_MINUTE:
            self._fail(f"{why}; {RESTARTS_PER_MINUTE + 1} workers died within a minute")
            return None
        delay = RESTART_BACKOFF_SECONDS[min(recent, len(RESTART_BACKOFF_SECONDS)) - 1]
        _say(f"{why}; starting another" + (f" in {delay:g} s" if delay else ""))
        return delay

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

        A large request goes as a memory file
        (:data:`~modelplane.runtime.protocol.SHARED_REQUEST_BYTES`): the message carries
        its size in place of the bytes, and the file's descriptor follows it; a smaller
        one's bytes follow the message (:data:`~modelplane.runtime.protocol.INLINE`).
        """
        call_id, deadline, data = message
        shared = _memory_file(data) if data is not None else None
        try:
            with self._send_lock, contextlib.suppress(OSError, ValueError):
                if data is None:
                    self.conn.send(message)
                    return
                if shared is None:
                    # The bytes follow as they are: pickled in the tuple, they were
                    # copied twice more (~0.7 ms of CPU a MiB, both ends together).
                    self.conn.send((call_id, deadline, protocol.INLINE))
                    self.conn.send_bytes(data)
                    return
                self.conn.send((call_id, deadline, len(data)))
                reduction.send_handle(self.conn, shared, self.process.pid or 0)
        finally:
            if shared is not None:
                os.close(shared)  # the worker holds its own copy of the descriptor
            # Handed off: what gRPC freed of a large request goes back now, not kept while
            # the worker peaks (its joined bytes, a mapping of their own, go with the call).
            heap.give_back_after(len(data or b""))


def _memory_file(data: bytes) -> int | None:
    """A memory file holding ``data`` when it is large (Linux), else None (send it inline)."""
    if len(data) < protocol.SHARED_REQUEST_BYTES or not hasattr(os, "memfd_create"):
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
