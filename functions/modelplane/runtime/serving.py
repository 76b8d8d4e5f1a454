"""Serving: a gRPC server on its own thread, stopped gracefully by SIGTERM or SIGINT.

The SDK's ``runtime.serve`` with three changes it cannot be asked for: the server runs
on a thread with a stack for the deepest request, and its calls on threads of their
own (:mod:`modelplane.runtime.limits`); it refuses an address another process already
listens on (no SO_REUSEPORT) and says why an address cannot be bound in one line
(:mod:`modelplane.runtime.address`); and ``--workers N`` composes in N processes
(:mod:`modelplane.runtime.pool`). Its grace period and services are the SDK's.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import grpc
from crossplane.function import runtime

from modelplane.runtime import limits, verdicts
from modelplane.runtime.address import bind, check_port
from modelplane.runtime.errors import CrashLoopError, PoolError, StartupError
from modelplane.runtime.pool import ComputePool
from modelplane.runtime.services import Runner, add_services

SHUTDOWN_GRACE_SECONDS = runtime.SHUTDOWN_GRACE_PERIOD_SECONDS
_JOIN_POLL_SECONDS = 0.5


def serve(
    runner: Runner,
    address: str,
    *,
    creds: grpc.ServerCredentials | None,
    options: Sequence[tuple[str, Any]] = (),
    started: Callable[[int], None] | None = None,
) -> None:
    """Serve ``runner`` on ``address`` until SIGTERM or SIGINT, then stop gracefully.

    Without ``creds`` the server is insecure. It runs on its own thread, and calls on
    threads of their own, each with a stack large enough for the deepest request
    (:data:`~modelplane.runtime.limits.STACK_BYTES`); this thread waits for it and turns the signals into
    a graceful stop. ``runner`` is a servicer composing in this process, or a pool of
    worker processes the calls' bytes are handed to.

    Raises:
        StartupError: the address cannot be bound or the credentials are refused.
    """
    check_port(address)
    limits.allow_deep_messages()
    stopper = _Stopper()
    failures: list[BaseException] = []
    config = _Config(address, creds, [*options], started)

    def run() -> None:
        try:
            asyncio.run(_serve(runner, config, stopper))
        except BaseException as exc:  # handed to the waiting thread
            failures.append(exc)

    handlers = {sig: signal.signal(sig, stopper.request) for sig in (signal.SIGTERM, signal.SIGINT)}
    switch = sys.getswitchinterval()
    sys.setswitchinterval(limits.SWITCH_INTERVAL_SECONDS)
    try:
        with limits.thread_stacks():  # the server's and the calls' threads
            thread = _start_thread(run)
            while thread.is_alive():
                thread.join(_JOIN_POLL_SECONDS)
    finally:
        sys.setswitchinterval(switch)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        closing = getattr(runner, "close", None)
        if closing is not None:
            closing()
    if failures:
        raise failures[0]


class _Config(NamedTuple):
    address: str
    creds: grpc.ServerCredentials | None
    options: list[tuple[str, Any]]
    started: Callable[[int], None] | None = None
    """Told the bound port once the server listens (it logs the start)."""


async def _serve(
    runner: Runner,
    config: _Config,
    stopper: _Stopper,
) -> None:
    # gRPC shares a port between processes by default (SO_REUSEPORT): a second server
    # on a busy port would start and silently take half its traffic.
    grpc_server = grpc.aio.server(options=[*config.options, ("grpc.so_reuseport", 0)])
    if isinstance(runner, ComputePool):
        runner.attach(asyncio.get_running_loop(), on_failure=stopper.request)
    add_services(grpc_server, runner)
    port = bind(grpc_server, config.address, config.creds)
    stop = asyncio.Event()
    await grpc_server.start()
    if config.started is not None:
        config.started(port)
    try:
        stopper.attach(asyncio.get_running_loop(), stop)
        await stop.wait()
    finally:
        stopping = grpc_server.stop(grace=SHUTDOWN_GRACE_SECONDS)
        cancel_all = getattr(runner, "cancel_all", None)
        if cancel_all is not None:
            # Calls still computing when the grace period ends stop at a safe point.
            asyncio.get_running_loop().call_later(SHUTDOWN_GRACE_SECONDS, cancel_all)
        await stopping


def _start_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, name="modelplane-function", daemon=True)
    thread.start()
    return thread


class _Stopper:
    """Carries a stop request from a signal handler to the serving thread's event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wanted = False
        self._target: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def attach(self, loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
        """Stop this event when asked (at once if asked already)."""
        with self._lock:
            self._target = (loop, stop)
            if self._wanted:
                stop.set()

    def request(self, *_: object) -> None:
        """Ask the server to stop; a signal handler (it takes the signal's arguments)."""
        with self._lock:
            self._wanted = True
            if self._target is not None:
                loop, stop = self._target
                loop.call_soon_threadsafe(stop.set)


# --- workers ------------------------------------------------------------------------------------


def serve_workers(
    kinds: Sequence[str],
    address: str,
    *,
    creds: grpc.ServerCredentials | None,
    options: Sequence[tuple[str, Any]] = (),
    workers: int,
    debug: bool = False,
    started: Callable[[int], None] | None = None,
) -> None:
    """Serve on ``address``, composing in ``workers`` processes, until SIGTERM or SIGINT.

    This process serves gRPC (so the address is this process's alone, as with one
    worker) and hands each call's bytes to the least busy worker (see
    :class:`~modelplane.runtime.pool.ComputePool`); on SIGTERM it stops taking calls, lets
    those in progress finish (the grace period), then stops the workers.

    Raises:
        StartupError: a worker cannot start, or the address cannot be bound.
    """
    check_port(address)
    # Removed by this process only (a TemporaryDirectory's finalizer could run elsewhere).
    folder = verdicts.private_folder("modelplane-verdicts-")
    pool = ComputePool(sorted(kinds), workers, verdicts=folder, debug=debug)
    try:
        try:
            pool.start()
        except PoolError as exc:
            msg = f"cannot start the workers: {exc}"
            raise StartupError(msg) from None
        serve(pool, address, creds=creds, options=options, started=started)
        if pool.failure is not None:
            raise CrashLoopError(pool.failure)
    finally:
        pool.close()
        shutil.rmtree(folder, ignore_errors=True)
