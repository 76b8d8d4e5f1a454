"""The ``modelplane-function`` command: serve one or more Modelplane composition functions.

The flags follow the Crossplane function template so operators find what they expect.
The server is the SDK's (``crossplane.function.runtime.serve``: the v1 and v1beta1
FunctionRunner services and reflection, SIGTERM stops it gracefully) with three changes:
it decodes requests as deeply nested as Kubernetes objects can be, from threads with
the stack that takes; it refuses an address another process already listens on; and
``--workers N`` composes in N processes, so N calls compute in parallel.

With more than one worker this process serves gRPC and only moves bytes: each call's
request goes, undecoded, to the least busy worker process, and its response comes back
the same way (:class:`modelplane.server.ComputePool`). So calls run in parallel even
when they share one connection, as all of a Crossplane pod's calls to a Function do
(processes sharing the port with SO_REUSEPORT would split connections, not calls).
A worker that dies is replaced; on SIGTERM the workers stop with the server; one whose
server dies is stopped by the kernel (PR_SET_PDEATHSIG): no orphans.

A startup failure (bad flag, unknown function, missing or unreadable certificates, an
address that cannot be bound) is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import signal
import ssl
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import click
import grpc
from crossplane.function import logging, runtime
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from crossplane.function.proto.v1beta1 import run_function_pb2 as fnv1beta1
from grpc_reflection.v1alpha import reflection

from modelplane import registry, server
from modelplane.planning import wire
from modelplane.server import FunctionRunner

# Fleet-scale requests (every InferenceCluster and ModelReplica of the fleet) run to
# tens of MiB; gRPC's default 4 MiB would reject them. Crossplane itself sends up to
# what the function accepts, so the function sets the ceiling.
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024

SERVER_STACK_BYTES = 64 * 1024 * 1024
"""The serving thread's stack. Decoding the deepest request protobuf allows takes some
16 MiB (:func:`modelplane.server.allow_deep_messages`); a process's main thread often has
8. It is address space: only what a request uses is ever touched."""

CERT_FILES = ("tls.crt", "tls.key", "ca.crt")
SHUTDOWN_GRACE_SECONDS = runtime.SHUTDOWN_GRACE_PERIOD_SECONDS
_JOIN_POLL_SECONDS = 0.5
_RUNNERS = [n for n in runtime.SERVICE_NAMES if n.endswith(".FunctionRunnerService")]
_PORTED = re.compile(r"(?:dns:(?:///)?|ipv4:|ipv6:)?(?:\[[^\]]*\]|[^:\[\]]*):(\d+)")


class StartupError(Exception):
    """The server cannot start; the message says why in one line."""


class CrashLoopError(Exception):
    """The server stopped because its workers keep dying; the message says why."""


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("functions", nargs=-1)
@click.option("--debug", "-d", is_flag=True, help="Emit debug logs.")
@click.option(
    "--address",
    default="0.0.0.0:9443",
    show_default=True,
    help="Address at which to listen for gRPC connections.",
)
@click.option(
    "--tls-certs-dir",
    envvar="TLS_SERVER_CERTS_DIR",
    help="Serve using mTLS certificates (tls.crt, tls.key, ca.crt) from this directory.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Run without mTLS credentials. If you supply this flag --tls-certs-dir is ignored.",
)
@click.option(
    "--max-message-size",
    type=click.IntRange(min=4 * 1024 * 1024),
    default=DEFAULT_MAX_MESSAGE_BYTES,
    show_default=True,
    help="Largest gRPC message, in bytes, the server receives or sends.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes serving calls in parallel on the one port "
    "(default: the CPUs this process may run on).",
)
def cli(
    functions: tuple[str, ...],
    debug: bool,
    address: str,
    tls_certs_dir: str | None,
    insecure: bool,
    max_message_size: int,
    workers: int | None,
) -> None:
    """Serve the named Modelplane functions (default: all of them).

    FUNCTIONS are kind names such as ``inferenceclass`` or ``modeldeployment``
    (a ``modelplane-function-`` prefix is accepted), or ``all``.
    """
    composers = select(functions)
    logging.configure(logging.Level.DEBUG if debug else logging.Level.INFO)
    if not insecure and not tls_certs_dir:
        msg = "give --tls-certs-dir (or TLS_SERVER_CERTS_DIR) or --insecure"
        raise click.UsageError(msg)
    options = [
        ("grpc.max_receive_message_length", max_message_size),
        ("grpc.max_send_message_length", max_message_size),
    ]
    count = workers or default_workers()
    address = listen_address(address)
    started = functools.partial(
        log_start, address, tls=not insecure, workers=count, kinds=sorted(composers)
    )
    try:
        creds = None if insecure else load_credentials(tls_certs_dir or "")
        if count == 1:
            runner = FunctionRunner(composers)
            serve(runner, address, creds=creds, options=options, started=started)
        else:
            serve_workers(
                composers,
                address,
                creds=creds,
                options=options,
                workers=count,
                debug=debug,
                started=started,
            )
    except (StartupError, CrashLoopError) as exc:
        _die(str(exc))
    except Exception as exc:  # anything else still ends in one line, not a traceback
        _die(f"cannot serve on {address}: {_one_line(str(exc)) or type(exc).__name__}")


def listen_address(address: str) -> str:
    """The address gRPC binds: Go's ``:9443`` (every interface, as the Crossplane function
    template's flag takes it) is ``[::]:9443``; anything else as given."""
    return f"[::]{address}" if address.startswith(":") else address


def log_start(address: str, port: int, *, tls: bool, workers: int, kinds: list[str]) -> None:
    """Say, in one log line, where and how the server listens and what it composes."""
    logging.get_logger().info(
        "serving",
        address=re.sub(r":\d+$", f":{port}", address),  # the port bound, when asked for 0
        transport="mTLS" if tls else "insecure",
        workers=workers,
        kinds=kinds,
    )


def _die(message: str) -> None:
    click.echo(f"modelplane-function: {message}", err=True)
    sys.exit(1)


def default_workers() -> int:
    """The CPUs this process may run on (its affinity, which containers narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def select(functions: tuple[str, ...]) -> dict[str, registry.Compose]:
    """Resolve function names to the composers to serve.

    Raises:
        click.BadParameter: a name that is no Modelplane function.
    """
    if not functions or "all" in functions:
        return dict(registry.COMPOSERS)
    chosen = {}
    for name in functions:
        kind = registry.kind_for(name)
        if kind is None:
            known = ", ".join(registry.names())
            msg = f"unknown function {name!r}; known: {known}, all"
            raise click.BadParameter(msg, param_hint="FUNCTIONS")
        chosen[kind] = registry.COMPOSERS[kind]
    return chosen


# --- credentials ----------------------------------------------------------------------------


def load_credentials(tls_certs_dir: str) -> grpc.ServerCredentials:
    """Load mTLS server credentials (``tls.crt``, ``tls.key``, ``ca.crt``) from a directory.

    Raises:
        StartupError: the directory or a file is missing, unreadable or not PEM.
    """
    folder = Path(tls_certs_dir)
    where = f"--tls-certs-dir {tls_certs_dir}"
    if not folder.is_dir():
        problem = "is not a directory" if folder.exists() else "does not exist"
        msg = f"{where} {problem}"
        raise StartupError(msg)
    missing = [name for name in CERT_FILES if not (folder / name).is_file()]
    if missing:
        needed = ", ".join(CERT_FILES)
        msg = f"{where} lacks {', '.join(missing)}: it must hold {needed}"
        raise StartupError(msg)
    try:
        crt, key, ca = ((folder / name).read_bytes() for name in CERT_FILES)
    except OSError as exc:
        msg = f"{where}: cannot read {Path(str(exc.filename)).name}: {exc.strerror}"
        raise StartupError(msg) from exc
    _check_pem(folder, where)
    return grpc.ssl_server_credentials([(key, crt)], root_certificates=ca, require_client_auth=True)


def _check_pem(folder: Path, where: str) -> None:
    """Refuse what gRPC would refuse later with a misleading "failed to bind"."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(folder / "tls.crt", folder / "tls.key", password=b"")
    except ssl.SSLError as exc:
        msg = (
            f"{where}: tls.crt and tls.key are not a PEM certificate and its unencrypted key "
            f"({exc.reason or 'unreadable'})"
        )
        raise StartupError(msg) from exc
    try:
        context.load_verify_locations(cafile=folder / "ca.crt")
    except ssl.SSLError as exc:
        msg = f"{where}: ca.crt is not a PEM CA certificate ({exc.reason or 'unreadable'})"
        raise StartupError(msg) from exc


# --- serving --------------------------------------------------------------------------------


def serve(
    runner: grpcv1.FunctionRunnerServiceServicer | server.ComputePool,
    address: str,
    *,
    creds: grpc.ServerCredentials | None,
    options: Sequence[tuple[str, Any]] = (),
    started: Callable[[int], None] | None = None,
) -> None:
    """Serve ``runner`` on ``address`` until SIGTERM or SIGINT, then stop gracefully.

    Without ``creds`` the server is insecure. It runs on its own thread, and calls on
    threads of their own, each with a stack large enough for the deepest request
    (:data:`SERVER_STACK_BYTES`); this thread waits for it and turns the signals into
    a graceful stop. ``runner`` is a servicer composing in this process, or a pool of
    worker processes the calls' bytes are handed to.

    Raises:
        StartupError: the address cannot be bound or the credentials are refused.
    """
    _check_port(address)
    server.allow_deep_messages()
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
    sys.setswitchinterval(server.SWITCH_INTERVAL_SECONDS)
    try:
        with _thread_stacks(SERVER_STACK_BYTES):  # the server's and the calls' threads
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
    runner: grpcv1.FunctionRunnerServiceServicer | server.ComputePool,
    config: _Config,
    stopper: _Stopper,
) -> None:
    # gRPC shares a port between processes by default (SO_REUSEPORT): a second server
    # on a busy port would start and silently take half its traffic.
    grpc_server = grpc.aio.server(options=[*config.options, ("grpc.so_reuseport", 0)])
    if isinstance(runner, server.ComputePool):
        runner.attach(asyncio.get_running_loop(), on_failure=stopper.request)
        # Bytes in, bytes out: v1 and v1beta1 messages are the same on the wire.
        raw = grpc.unary_unary_rpc_method_handler(runner.run)
        grpc_server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(s, {"RunFunction": raw}) for s in _RUNNERS]
        )
    else:
        add_v1: Any = wire.add_function_runner  # decodes a fleet lazily (compose/model_deployment)
        add_v1(runner, grpc_server)
        _add_v1beta1(runtime.BetaFunctionRunner(wrapped=runner), grpc_server)
    reflection.enable_server_reflection(runtime.SERVICE_NAMES, grpc_server)
    port = _bind(grpc_server, config.address, config.creds)
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


def _add_v1beta1(beta: Any, grpc_server: grpc.aio.Server) -> None:
    """The v1beta1 service, its responses written deterministically like v1's."""
    handler = grpc.unary_unary_rpc_method_handler(
        beta.RunFunction,
        request_deserializer=fnv1beta1.RunFunctionRequest.FromString,
        response_serializer=server.serialize_response,
    )
    service = next(n for n in _RUNNERS if ".v1beta1." in n)
    grpc_server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(service, {"RunFunction": handler})]
    )


def _bind(grpc_server: grpc.aio.Server, address: str, creds: grpc.ServerCredentials | None) -> int:
    """Add the listening port and return it; gRPC's own complaint (on stderr) becomes our
    one line."""
    with _stderr_captured() as captured:
        try:
            if creds is None:
                port = grpc_server.add_insecure_port(address)
            else:
                port = grpc_server.add_secure_port(address, creds)
        except RuntimeError:
            port = 0
    if port == 0:
        msg = f"cannot serve on {address}: {_grpc_reason(captured()) or 'gRPC could not bind it'}"
        raise StartupError(msg)
    if said := captured():
        sys.stderr.write(said)
    return int(port)


def _check_port(address: str) -> None:
    """Refuse a port past 65535, which gRPC would silently wrap around."""
    ported = _PORTED.fullmatch(address)
    port = ported.group(1) if ported is not None else ""
    if len(port) > len("65535") or (port and int(port) > 65535):
        msg = f"cannot serve on {address}: port {port} is not from 0 to 65535"
        raise StartupError(msg)


def _grpc_reason(logged: str) -> str:
    """The gist of what gRPC logged about a failed port: its last error, one line."""
    errors = [line.split("] ", 1)[-1] for line in logged.splitlines() if line.startswith("E")]
    if not errors:
        return ""
    text = errors[-1].removeprefix("Failed to add port to server: ")
    bind = re.search(r"Error in bind for address '[^']*': ([^)]*)\)", text)
    if bind:
        return bind.group(1)
    if text.startswith("Unable to create secure server"):
        return "; ".join(e.rstrip(".") for e in errors[:-1]) or text
    return _one_line(text)


@contextlib.contextmanager
def _stderr_captured() -> Iterator[Callable[[], str]]:
    """Collect what is written to file descriptor 2 (gRPC's C core logs there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        text: list[str] = []
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: "".join(text)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text.append(sink.read().decode(errors="replace"))


def _start_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, name="modelplane-function", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def _thread_stacks(stack_bytes: int) -> Iterator[None]:
    """Threads started in the block get stacks of ``stack_bytes`` (the platform's default
    if refused): the server's, and the pool's that compose calls, started as needed."""
    previous = threading.stack_size()
    with contextlib.suppress(ValueError, RuntimeError):  # the platform sets stacks itself
        threading.stack_size(stack_bytes)
    try:
        yield
    finally:
        threading.stack_size(previous)


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


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- workers ----------------------------------------------------------------------------------


def serve_workers(
    composers: Mapping[str, registry.Compose],
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
    :class:`modelplane.server.ComputePool`); on SIGTERM it stops taking calls, lets
    those in progress finish (the grace period), then stops the workers.

    Raises:
        StartupError: a worker cannot start, or the address cannot be bound.
    """
    _check_port(address)
    # Removed by this process only (a TemporaryDirectory's finalizer could run elsewhere).
    verdicts = server.private_folder("modelplane-verdicts-")
    pool = server.ComputePool(sorted(composers), workers, verdicts=verdicts, debug=debug)
    try:
        try:
            pool.start()
        except server.PoolError as exc:
            msg = f"cannot start the workers: {exc}"
            raise StartupError(msg) from None
        serve(pool, address, creds=creds, options=options, started=started)
        if pool.failure is not None:
            raise CrashLoopError(pool.failure)
    finally:
        pool.close()
        shutil.rmtree(verdicts, ignore_errors=True)
