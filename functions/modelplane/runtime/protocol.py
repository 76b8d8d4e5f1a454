"""What the serving process and its workers say to each other, and the calls' deadlines.

The serving process of a worker pool only moves bytes, so it imports this and never the
functions (:mod:`.worker` composes, and imports them): a lighter serving process, whose
memory is gRPC's and the requests' alone. The pipe protocol, both ways, is a tuple per
message:

- to the worker: ``(call_id, deadline, request)``, ``request`` :data:`INLINE` when
  the call's bytes follow as one message of bytes, or their size when they follow as a
  memory file (:data:`SHARED_REQUEST_BYTES`), or :data:`CANCEL`; :data:`STOP` asks the
  worker to stop;
- from the worker: :data:`READY` once, then ``(call_id, kind, payload)``: the
  composite a call is for (:data:`COMPOSING`), then its outcome (``ok`` with the
  response's bytes, ``cancelled``, ``unreadable`` with why); a payload that is not
  empty is :data:`INLINE`, its bytes following as one message of bytes.
"""

from __future__ import annotations

import importlib
import math
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

SHARED_REQUEST_BYTES = 1024 * 1024
"""A request at least this large reaches its worker as a memory file (Linux's memfd)
passed over the pipe, not through it: copying 112 MiB through the pipe (pickled, in
64 KiB turns) took ~290 ms, writing it to a memory file ~45 ms, and the worker decodes
from the file's pages without a copy of its own."""
INLINE = "inline"
READY = "ready"
COMPOSING = "composing"
CANCEL = None
STOP = (0, 0.0, None)
"""Call ids start at 1: this message asks a worker to stop. (Closing the pipe would not
reach it while a reader thread in the server is blocked on the pipe.)"""
WORKER = "modelplane.runtime.worker"
"""The module a worker process runs (the fork server imports it, and the registry, once)."""

DEADLINE_MESSAGE = "the call's deadline passed before the function finished; nothing was composed"


def deadline_of(context: Any) -> float:
    """The call's deadline (a gRPC servicer context's) as a :func:`time.monotonic`
    instant (infinity: none)."""
    remaining = context.time_remaining() if context is not None else None
    return math.inf if remaining is None else time.monotonic() + remaining


def compute_main(kinds: list[str], conn: Connection, verdicts: Path, debug: bool) -> None:
    """A worker process's entry: :func:`modelplane.runtime.worker.compute_main`, imported
    there (the serving process names it without importing the functions)."""
    importlib.import_module(WORKER).compute_main(kinds, conn, verdicts, debug)
