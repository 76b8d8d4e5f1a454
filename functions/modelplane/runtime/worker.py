"""A worker process: decode the calls that arrive on its pipe, compose them, send back bytes.

The SDK composes in the serving process only; workers are ours so that N calls compute
on N cores (see :mod:`modelplane.runtime.pool`, which starts them). The pipe protocol
is :mod:`.protocol`'s.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import reduction
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from crossplane.function import logging
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf.message import DecodeError

from modelplane import registry
from modelplane.domain import dra as cel
from modelplane.runtime import callstats, dispatch, heap, limits
from modelplane.runtime.answers import Answers
from modelplane.runtime.protocol import CANCEL, COMPOSING, INLINE, READY, STOP
from modelplane.runtime.verdicts import DiskVerdicts

COMPOSITE_CHARS = 600
"""A composite in a log line: its kind and a name of Kubernetes' longest (253 + 63)."""

_PR_SET_PDEATHSIG = 1


def compute_main(kinds: list[str], conn: Connection, verdicts: Path, debug: bool) -> None:
    """A worker process: compose the calls that arrive on ``conn`` until it closes."""
    _stop_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the serving process decides when to stop
    logging.configure(logging.Level.DEBUG if debug else logging.Level.INFO)
    limits.reuse_request_memory()
    limits.allow_deep_messages()
    sys.setswitchinterval(limits.SWITCH_INTERVAL_SECONDS)
    cel.share_verdicts(DiskVerdicts(verdicts))
    try:
        composers = {kind: registry.COMPOSERS[kind] for kind in kinds}
    except KeyError as err:
        conn.send(f"unknown kind {err}")
        return
    threading.stack_size(limits.STACK_BYTES)
    worker = Worker(conn, composers)
    conn.send(READY)
    worker.serve()


class Worker:
    """Reads calls from the pipe and composes each on a thread of its own."""

    def __init__(self, conn: Connection, composers: Mapping[str, registry.Compose]) -> None:
        """Serve ``composers`` to the server at the other end of ``conn``."""
        self.conn = conn
        self.composers = composers
        self.log = logging.get_logger()
        self.pool = ThreadPoolExecutor(limits.COMPOSE_THREADS, thread_name_prefix="compose")
        self.budgets: dict[int, cel.CallBudget] = {}
        self.lock = threading.Lock()
        self.answers: Answers[bytes] = Answers()

    def serve(self) -> None:
        """Take calls (and cancellations) until the server says stop or goes away."""
        while True:
            try:
                call_id, deadline, data = self.conn.recv()
                # A request's bytes follow; a large one's are in a memory file, whose
                # descriptor follows.
                if data == INLINE:
                    data = self.conn.recv_bytes()
                fd = reduction.recv_handle(self.conn) if isinstance(data, int) else None
            except (EOFError, OSError, RuntimeError):  # RuntimeError: the descriptor never came
                break
            if call_id == STOP[0]:
                break
            if data is CANCEL:
                with self.lock:
                    budget = self.budgets.get(call_id)
                if budget is not None:
                    budget.cancel()
                continue
            budget = cel.CallBudget(deadline)
            with self.lock:
                self.budgets[call_id] = budget
            self.pool.submit(self.answer, call_id, budget, data, fd)
        with self.lock:  # the server is stopping: nobody waits for the answers
            for budget in self.budgets.values():
                budget.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def answer(
        self, call_id: int, budget: cel.CallBudget, data: bytes | int, fd: int | None
    ) -> None:
        """Decode one call, compose it within its budget, and send back what came of it."""
        size = data if isinstance(data, int) else len(data)
        with callstats.counted(size) as named:  # a no-op unless a benchmark asks
            result = self._compose(call_id, budget, data, fd, named)
        self._send((call_id, *result))
        del result  # the response's bytes are sent: given back with the rest of the call's
        heap.give_back_after(size)

    def _compose(
        self,
        call_id: int,
        budget: cel.CallBudget,
        data: bytes | int,
        fd: int | None,
        named: Callable[[str], None],
    ) -> tuple[str, bytes]:
        """Decode one call and compose it within its budget: what came of it."""
        try:
            req = _decode(data, fd)
        except _UnreadableError as err:
            result = ("unreadable", str(err).encode())
        else:
            kind, ref = dispatch.identify(req.observed.composite.resource)
            named(kind)
            try:
                result = (
                    "ok",
                    self._answer(call_id, req, budget, f"{kind or 'an unnamed kind'} {ref}"),
                )
            except cel.Cancelled:
                self.log.bind(tag=req.meta.tag).info("call stopped: its deadline passed")
                result = ("cancelled", b"")
        finally:
            with self.lock:
                self.budgets.pop(call_id, None)
        return result

    def _answer(
        self, call_id: int, req: fnv1.RunFunctionRequest, budget: cel.CallBudget, what: str
    ) -> bytes:
        """The response's bytes: as sent before to a request named the same (nothing
        composed, so the server is not told what), else composed."""
        compose = functools.partial(self._composed, call_id, req, budget, what)
        data, again = self.answers.answer(req, compose)
        if again:
            self.log.bind(tag=req.meta.tag).debug("answered as before", bytes=len(data))
        return data

    def _composed(
        self, call_id: int, req: fnv1.RunFunctionRequest, budget: cel.CallBudget, what: str
    ) -> tuple[fnv1.RunFunctionResponse, bytes, int]:
        """Compose the call: its response, the response's bytes and their size."""
        # Which composite the call is for: the server's log line names it if this dies.
        text = " ".join(what.split())[:COMPOSITE_CHARS]
        self._send((call_id, COMPOSING, text.encode()))
        rsp = dispatch.run(req, self.composers, self.log, budget)
        data = dispatch.serialize_response(rsp)
        return rsp, data, len(data)

    def _send(self, message: tuple[Any, ...]) -> None:
        """Send a message to the server; an outcome's bytes follow it as they are
        (:data:`INLINE`: not copied into a pickle and out of it)."""
        call_id, kind, payload = message
        with self.lock, contextlib.suppress(OSError, ValueError):  # the server went away
            if not payload:
                self.conn.send(message)
                return
            self.conn.send((call_id, kind, INLINE))
            self.conn.send_bytes(payload)


class _UnreadableError(Exception):
    """A call's request cannot be read or decoded; the message says why."""


def _decode(data: bytes | int, fd: int | None) -> fnv1.RunFunctionRequest:
    """The call's request, decoded lazily (``registry.decode_request``).

    Raises:
        _UnreadableError: its memory file would not map, or its bytes do not decode.
    """
    try:
        with _request_bytes(data, fd) as (raw, release):  # a memory file goes once read
            return registry.decode_request(raw, release)  # a fleet's items stay encoded
    except (OSError, ValueError, BufferError) as err:  # its memory file would not map
        msg = f"cannot read the RunFunctionRequest: {err}"
    except DecodeError as err:
        msg = f"cannot decode the RunFunctionRequest: {err}"
    except RecursionError:
        msg = "cannot decode the RunFunctionRequest: it nests too deeply"
    raise _UnreadableError(msg)


@contextlib.contextmanager
def _request_bytes(
    data: bytes | int, fd: int | None
) -> Iterator[tuple[bytes | memoryview, Callable[[], None] | None]]:
    """A call's request: the bytes sent inline, or the pages of its memory file, with what
    unmaps them once they are read (else they go when the block ends).

    The pages count in the worker's resident memory while mapped: unmapped as soon as
    the request is decoded from them, they are not held beside the decoded request.
    """
    if fd is None:
        yield (data if isinstance(data, bytes) else b""), None
        return
    try:
        with mmap.mmap(fd, int(data), prot=mmap.PROT_READ) as pages, memoryview(pages) as view:

            def release() -> None:
                view.release()
                pages.close()

            yield view, release
    finally:
        os.close(fd)


def _stop_with_parent() -> None:
    """Have the kernel SIGTERM this worker when its parent dies, however it dies."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):  # Linux only; elsewhere best effort
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)
